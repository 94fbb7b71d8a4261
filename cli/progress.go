package cli

import (
	"io"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// progressBar shows rows graded, rollouts/s and, when the total is known,
// the ETA.
type progressBar struct {
	w      io.Writer
	bar    *progressbar.ProgressBar
	reused int64
}

func newProgressBar(w io.Writer) *progressBar { return &progressBar{w: w} }

func (p *progressBar) SetTotal(total int64) {
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription("grading"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("rollouts"),
		progressbar.OptionSetPredictTime(total > 0),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionFullWidth(),
	)
	if p.reused > 0 {
		p.Reused(0)
	}
}

// Reused counts rollouts whose results were taken from --reuse's directory;
// the bar's description says how many.
func (p *progressBar) Reused(n int) {
	p.reused += int64(n)
	if p.bar != nil {
		p.bar.Describe("grading (" + strconv.FormatInt(p.reused, 10) + " reused)")
	}
}

func (p *progressBar) Add(n int) {
	if p.bar != nil {
		p.bar.Add(n)
	}
}

func (p *progressBar) Finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

// lateBar is a progress bar that shows only once its work has taken a
// second, so that quick steps print nothing.
type lateBar struct {
	w           io.Writer
	desc, items string
	start       time.Time
	total, done int64
	bar         *progressbar.ProgressBar
}

func newLateBar(w io.Writer, desc, items string) *lateBar {
	return &lateBar{w: w, desc: desc, items: items, start: time.Now(), total: -1}
}

func (p *lateBar) SetTotal(total int64) {
	p.total = total
	if p.bar != nil {
		p.bar.ChangeMax64(total)
	}
}

func (p *lateBar) Add(n int) {
	p.done += int64(n)
	if p.bar == nil {
		if time.Since(p.start) < time.Second {
			return
		}
		p.bar = progressbar.NewOptions64(p.total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(p.desc),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString(p.items),
			progressbar.OptionSetPredictTime(p.total > 0),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionFullWidth(),
		)
		p.bar.Add64(p.done)
		return
	}
	p.bar.Add(n)
}

func (p *lateBar) Finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
