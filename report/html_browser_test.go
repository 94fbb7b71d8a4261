package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
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
	wilson, _ := Wilson(5, 8, Z95)
	if want := ci(&wilson); !strings.Contains(dom, `data-ci="`+want+`"`) {
		t.Errorf("no whisker for A's Wilson interval %s", want)
	}
}
