package report

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// runProbeScript runs in a copy of the run report (the page itself has no
// script) and records what the browser laid out: each bar segment's and
// track's rendered width, each section, and the page's scroll width at
// the window's width.
const runProbeScript = `<script>
for (const seg of document.querySelectorAll(".seg")) {
  seg.setAttribute("data-rendered-width", seg.getBoundingClientRect().width.toFixed(2));
  seg.setAttribute("data-track-width", seg.parentElement.getBoundingClientRect().width.toFixed(2));
}
const ids = [...document.querySelectorAll("section[id]")].map(s => s.id + ":" + (s.getBoundingClientRect().height > 0 ? "shown" : "hidden"));
document.body.setAttribute("data-sections", ids.join(" "));
document.body.setAttribute("data-scroll-width", String(document.documentElement.scrollWidth));
document.body.setAttribute("data-client-width", String(document.documentElement.clientWidth));
document.body.setAttribute("data-probed", "yes");
</script>`

// TestRunReportHTMLInBrowser opens a run report with a baseline in
// headless Chromium 1280 pixels wide: every section is shown, nothing
// overflows horizontally (long ids and unbroken JSON included), and each
// bar segment is as wide as its count, to the scale of its table.
func TestRunReportHTMLInBrowser(t *testing.T) {
	rows := sampleRun()
	// A long check id and a long unbroken actual must wrap, not overflow.
	longID := "check-" + strings.Repeat("x", 150)
	rows = append(rows, runRow{"r14", "V2", "failed", 0.0, "", "", []string{"c=pass", "d=fail=" + strings.Repeat("[1,2,3]", 80), longID + "=fail"}})
	rep, err := BuildRunReport(writeRun(t, rows), RunConfig{Baseline: baselineOf(t)})
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	dom := renderInBrowser(t, page.String(), runProbeScript, "<script", "http://", "https://", "<link", "<img", "@import", "url(")

	sections := regexp.MustCompile(`data-sections="([^"]*)"`).FindStringSubmatch(dom)
	if sections == nil || sections[1] != "summary:shown verifiers:shown checks:shown most-failed:shown errors:shown baseline:shown" {
		t.Errorf("sections = %q, want every section shown", sections)
	}
	scroll := regexp.MustCompile(`data-scroll-width="([0-9]+)" data-client-width="([0-9]+)"`).FindStringSubmatch(dom)
	if scroll == nil {
		t.Fatalf("no scroll width recorded; DOM:\n%s", dom)
	}
	sw, _ := strconv.Atoi(scroll[1])
	cw, _ := strconv.Atoi(scroll[2])
	if cw < 1000 || cw > 1280 || sw > cw {
		t.Errorf("page is %d px wide in a %d px window: it overflows horizontally (or the window is not 1280 px)", sw, cw)
	}

	// Bars: every segment's width is count / scale of the track, the
	// scale being the largest total of the segment's table.
	tracks := regexp.MustCompile(`(?s)<div class="track" data-max="([0-9]+)">(.*?)</div>`).FindAllStringSubmatch(dom, -1)
	seg := regexp.MustCompile(`<span class="seg (\w+)" data-count="([0-9]+)"[^>]*data-rendered-width="([0-9.]+)" data-track-width="([0-9.]+)"`)
	segments := 0
	for _, tr := range tracks {
		scale, _ := strconv.ParseFloat(tr[1], 64)
		for _, s := range seg.FindAllStringSubmatch(tr[2], -1) {
			segments++
			n, _ := strconv.ParseFloat(s[2], 64)
			w, _ := strconv.ParseFloat(s[3], 64)
			track, _ := strconv.ParseFloat(s[4], 64)
			if track < 100 {
				t.Errorf("a track is %v px wide", track)
			}
			if want := n / scale * track; !near(w, want, 1) {
				t.Errorf("%s segment of %v (scale %v) is %v px wide, want %v", s[1], n, scale, w, want)
			}
		}
	}
	// 3 verifiers (1 + 3 + 3 segments) and 5 checks (3 + 2 + 2 + 2 + 1).
	if len(tracks) != 8 || segments != 17 {
		t.Errorf("rendered %d bars with %d segments, want 8 with 17; DOM:\n%s", len(tracks), segments, dom)
	}
	for _, want := range []string{
		`<h3>V1 / a: failed 5 of 7</h3>`, `<td class="name"><code>r2</code></td><td class="name">a on r2</td><td><pre>[1]</pre></td><td><pre>true</pre></td>`,
		`<td class="name">input</td><td>2</td>`, `class="changed regression"`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("DOM lacks %q", want)
		}
	}
}
