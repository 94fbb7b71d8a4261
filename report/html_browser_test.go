package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gavelhq/gavel/stats"
)

// requireBrowserEnv, when set to 1, makes the browser test fail rather
// than skip when no Chromium is installed (CI sets it).
const requireBrowserEnv = "GAVEL_REQUIRE_BROWSER"

// findChromium returns the path of a Chromium binary, or "".
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// renderInBrowser checks that html holds none of the strings bad (a
// page must be self-contained and readable without script; the SVG
// namespace aside), then loads it, with probe added before </body>, in
// headless Chromium at 1280 × 900 pixels and returns the DOM it ends
// with. The test skips when no Chromium is installed, unless
// requireBrowserEnv is set.
func renderInBrowser(t *testing.T, html, probe string, bad ...string) string {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, ""), b) {
			t.Errorf("page holds %q: it must be self-contained and readable without script", b)
		}
	}
	browser := findChromium()
	if browser == "" {
		if os.Getenv(requireBrowserEnv) == "1" {
			t.Fatalf("%s=1 but no chromium is installed (apt-get install chromium)", requireBrowserEnv)
		}
		t.Skipf("chromium not installed: skipping the browser test (install Debian's chromium package, or set %s=1 to make this a failure)", requireBrowserEnv)
	}
	tmp := t.TempDir()
	path := filepath.Join(tmp, "page.html")
	if err := os.WriteFile(path, []byte(strings.Replace(html, "</body>", probe+"</body>", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--window-size=1280,900", "--user-data-dir="+filepath.Join(tmp, "profile"), "--dump-dom", "file://"+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, stderr.String())
	}
	dom := string(out)
	if !strings.Contains(dom, `data-probed="yes"`) {
		t.Fatalf("the page did not finish rendering; DOM:\n%s", dom)
	}
	return dom
}

// probeScript runs in a copy of the page (the page itself has no script)
// and records what the browser laid out: each bar's and whisker's
// rendered width, and each table row's rendered height.
const probeScript = `<script>
for (const el of document.querySelectorAll("rect.bar, line.whisker:not(.cap)")) {
  el.setAttribute("data-rendered-width", el.getBoundingClientRect().width.toFixed(1));
}
for (const tr of document.querySelectorAll("tr.entry")) {
  tr.setAttribute("data-rendered-height", tr.getBoundingClientRect().height.toFixed(1));
}
document.body.setAttribute("data-probed", "yes");
</script>`

// TestLeaderboardHTMLInBrowser opens the HTML leaderboard in headless
// Chromium and checks the rendered table rows and the SVG bars and
// whiskers.
func TestLeaderboardHTMLInBrowser(t *testing.T) {
	dir := writeResults(t, leaderboardRows(), map[string]string{"V": "x"}, map[string]int64{"in.jsonl": 1})
	lb, err := BuildLeaderboard([]string{dir}, LeaderboardConfig{K: []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := lb.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	dom := renderInBrowser(t, page.String(), probeScript, "<script", "http://", "https://", "<link")

	rows := regexp.MustCompile(`(?s)<tr class="entry" data-rendered-height="([0-9.]+)">(.*?)</tr>`).FindAllStringSubmatch(dom, -1)
	if len(rows) != 2 {
		t.Fatalf("rendered %d table rows, want 2; DOM:\n%s", len(rows), dom)
	}
	cell := regexp.MustCompile(`<td[^>]*>([^<]*)</td>`)
	wantRows := [][]string{
		{"1", "A", "10", "5", "3", "1", "1", "0.6250"},
		{"2", "B", "2", "1", "1", "0", "0", "0.5000"},
	}
	for i, r := range rows {
		if h, _ := strconv.ParseFloat(r[1], 64); h <= 0 {
			t.Errorf("row %d has rendered height %s", i, r[1])
		}
		var cells []string
		for _, m := range cell.FindAllStringSubmatch(r[2], -1) {
			cells = append(cells, m[1])
		}
		if len(cells) < len(wantRows[i]) || strings.Join(cells[:len(wantRows[i])], " ") != strings.Join(wantRows[i], " ") {
			t.Errorf("row %d cells = %q, want prefix %q", i, cells, wantRows[i])
		}
	}

	// Bars: two charts of two groups. A bar's rendered width is its value
	// times the plot width (480 units at the page's 1:1 scale).
	bars := regexp.MustCompile(`<rect class="bar"[^>]*data-value="([0-9.]+)"[^>]*data-rendered-width="([0-9.]+)"`).FindAllStringSubmatch(dom, -1)
	if len(bars) != 4 {
		t.Fatalf("rendered %d bars, want 4; DOM:\n%s", len(bars), dom)
	}
	for _, b := range bars {
		v, _ := strconv.ParseFloat(b[1], 64)
		w, _ := strconv.ParseFloat(b[2], 64)
		if !near(w, v*chartPlotW, 1) {
			t.Errorf("bar of value %v rendered %v wide, want %v", v, w, v*chartPlotW)
		}
	}
	// Whiskers: both pass-rate bars have a Wilson interval; of the
	// mean-reward bars only A's (two tasks) has a bootstrap interval.
	whiskers := regexp.MustCompile(`<line class="whisker"[^>]*data-ci="\[([0-9.]+), ([0-9.]+)\]"[^>]*data-rendered-width="([0-9.]+)"`).FindAllStringSubmatch(dom, -1)
	if len(whiskers) != 3 {
		t.Fatalf("rendered %d whiskers, want 3; DOM:\n%s", len(whiskers), dom)
	}
	for _, wk := range whiskers {
		lo, _ := strconv.ParseFloat(wk[1], 64)
		hi, _ := strconv.ParseFloat(wk[2], 64)
		w, _ := strconv.ParseFloat(wk[3], 64)
		if !near(w, (hi-lo)*chartPlotW, 1.5) {
			t.Errorf("whisker [%v, %v] rendered %v wide, want %v", lo, hi, w, (hi-lo)*chartPlotW)
		}
	}
	wilson, _ := stats.Wilson(5, 8, stats.Z95)
	if want := ci(&wilson); !strings.Contains(dom, `data-ci="`+want+`"`) {
		t.Errorf("no whisker for A's Wilson interval %s", want)
	}
}

// atkProbeScript records the page's scroll width, whether each scrolling
// table box needed to scroll, and where each pass@k and pass^k mark was
// drawn in its chart.
const atkProbeScript = `<script>
document.body.setAttribute("data-scroll-width", String(document.documentElement.scrollWidth));
for (const d of document.querySelectorAll("div.scroll")) {
  d.setAttribute("data-fits", d.scrollWidth <= d.clientWidth ? "yes" : "no");
}
for (const svg of document.querySelectorAll("svg.atk-chart")) {
  const box = svg.getBoundingClientRect();
  svg.setAttribute("data-rendered-right", box.right.toFixed(1));
  for (const l of svg.querySelectorAll("polyline.line")) {
    l.setAttribute("data-fill", getComputedStyle(l).fill);
  }
  for (const m of svg.querySelectorAll(".mark")) {
    const b = m.getBoundingClientRect();
    m.setAttribute("data-rendered-cx", (b.left + b.width / 2 - box.left).toFixed(2));
    m.setAttribute("data-rendered-cy", (b.top + b.height / 2 - box.top).toFixed(2));
  }
}
document.body.setAttribute("data-probed", "yes");
</script>`

// TestLeaderboardHTMLFitsWithManyK opens the HTML leaderboard of
// `--k 1,2,3,4` in headless Chromium 1280 pixels wide: nothing overflows
// horizontally (a long group name included), no table needs to scroll, and
// each group has a chart of pass@k and pass^k whose marks, one per k with
// a value, are drawn at their values.
func TestLeaderboardHTMLFitsWithManyK(t *testing.T) {
	rows := leaderboardRows()
	long := "anthropic/claude-3-7-sonnet-20250219-thinking-budget-16384-temperature-1"
	for i, s := range []string{"passed", "failed", "passed", "passed", "failed", "passed"} {
		rows = append(rows, rr{id: fmt.Sprintf("l%d", i), task: fmt.Sprintf("T%d", 1+i%2), verifier: "V", status: s, reward: map[string]float64{"passed": 1, "failed": 0}[s], source: "in.jsonl", model: long})
	}
	dir := writeResults(t, rows, map[string]string{"V": "x"}, map[string]int64{"in.jsonl": 1})
	lb, err := BuildLeaderboard([]string{dir}, LeaderboardConfig{K: []int{1, 2, 3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := lb.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	dom := renderInBrowser(t, page.String(), atkProbeScript, "<script", "http://", "https://", "<link")

	if m := regexp.MustCompile(`data-scroll-width="(\d+)"`).FindStringSubmatch(dom); m == nil {
		t.Fatalf("no scroll width probed; DOM:\n%s", dom)
	} else if w, _ := strconv.Atoi(m[1]); w > 1280 {
		t.Errorf("page scroll width = %d px, want at most the window's 1280", w)
	}
	fits := regexp.MustCompile(`<div class="scroll" data-fits="(yes|no)"`).FindAllStringSubmatch(dom, -1)
	if len(fits) != 2 {
		t.Errorf("%d table boxes probed, want 2 (the leaderboard, pass@k and pass^k)", len(fits))
	}
	for i, f := range fits {
		if f[1] != "yes" {
			t.Errorf("table %d is wider than the window and scrolls", i+1)
		}
	}

	charts := regexp.MustCompile(`(?s)<svg class="atk-chart" data-group="([^"]*)"[^>]*data-rendered-right="([0-9.]+)"[^>]*>(.*?)</svg>`).FindAllStringSubmatch(dom, -1)
	if len(charts) != len(lb.Entries) {
		t.Fatalf("%d pass@k charts, want one per group (%d); DOM:\n%s", len(charts), len(lb.Entries), dom)
	}
	mark := regexp.MustCompile(`<(?:circle|rect) class="mark (pass-at-k|pass-hat-k)"[^>]*data-k="(\d+)" data-value="([0-9.]+)"[^>]*data-rendered-cx="([0-9.-]+)" data-rendered-cy="([0-9.-]+)"`)
	for i, c := range charts {
		e := &lb.Entries[i]
		if c[1] != groupLabel(e) {
			t.Errorf("chart %d is of group %q, want %q", i, c[1], groupLabel(e))
		}
		if right, _ := strconv.ParseFloat(c[2], 64); right > 1280 {
			t.Errorf("chart of %s ends at %v px, past the window", c[1], right)
		}
		want := map[string]string{} // "pass-at-k 2": value
		for _, st := range e.AtK {
			for series, v := range map[string]*float64{"pass-at-k": st.PassAtK, "pass-hat-k": st.PassHatK} {
				if v != nil {
					want[fmt.Sprintf("%s %d", series, st.K)] = f4(v)
				}
			}
		}
		// Joining lines are strokes: a filled polyline would paint the
		// area between its first and last mark.
		for _, f := range regexp.MustCompile(`<polyline class="line [^"]*"[^>]*data-fill="([^"]*)"`).FindAllStringSubmatch(c[3], -1) {
			if f[1] != "none" {
				t.Errorf("chart of %s: a line is filled with %s", c[1], f[1])
			}
		}
		if n := strings.Count(c[3], "<polyline"); n != 2 {
			t.Errorf("chart of %s has %d lines, want 2 (pass@k, pass^k)", c[1], n)
		}
		got := mark.FindAllStringSubmatch(c[3], -1)
		if len(got) != len(want) {
			t.Errorf("chart of %s has %d marks, want %d (pass@k and pass^k of each k with a value)", c[1], len(got), len(want))
		}
		for _, m := range got {
			key := m[1] + " " + m[2]
			if want[key] != m[3] {
				t.Errorf("chart of %s: mark %s = %s, want %q", c[1], key, m[3], want[key])
			}
			k, _ := strconv.Atoi(m[2])
			v, _ := strconv.ParseFloat(m[3], 64)
			cx, _ := strconv.ParseFloat(m[4], 64)
			cy, _ := strconv.ParseFloat(m[5], 64)
			wantX := atkLeft + atkPlotW*float64(slices.Index(lb.K, k))/float64(len(lb.K)-1)
			wantY := atkTop + atkPlotH*(1-v)
			if !near(cx, wantX, 1) || !near(cy, wantY, 1) {
				t.Errorf("chart of %s: mark %s drawn at (%v, %v), want (%v, %v)", c[1], key, cx, cy, wantX, wantY)
			}
		}
	}
}
