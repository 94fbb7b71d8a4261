package main

import (
	"io"
	"os"
	"sort"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// progressBar shows rows graded, rollouts/s and, when the total is known,
// the ETA.
type progressBar struct {
	w   io.Writer
	bar *progressbar.ProgressBar
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
