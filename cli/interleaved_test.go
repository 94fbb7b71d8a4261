package cli

import (
	"flag"
	"io"
	"slices"
	"testing"
)

// TestInterleaved moves flags before the positional arguments, keeps a
// flag's value with it, and leaves a last flag without its value for the
// parser to report.
func TestInterleaved(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Bool("json", false, "")
	fs.String("fail-on", "0", "")
	for _, tt := range []struct{ in, want []string }{
		{[]string{"a", "b", "--json"}, []string{"--json", "--", "a", "b"}},
		{[]string{"a", "--fail-on", "5", "b"}, []string{"--fail-on", "5", "--", "a", "b"}},
		{[]string{"a", "--fail-on=1%", "--", "-b"}, []string{"--fail-on=1%", "--", "a", "-b"}},
		{[]string{"a", "b", "--fail-on"}, []string{"--fail-on"}},
	} {
		if got := interleaved(fs, tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("interleaved(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if err := fs.Parse(interleaved(fs, []string{"a", "b", "--fail-on"})); err == nil || err.Error() != "flag needs an argument: -fail-on" {
		t.Errorf("a last flag without its value: error %v", err)
	}
}
