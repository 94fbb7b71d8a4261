package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/results"
)

func TestSummaryThroughputLine(t *testing.T) {
	tests := []struct {
		name  string
		reuse *results.ReuseSummary
		want  string
	}{
		{"graded", nil, "graded 50 rollouts (200 checks) in 2.0s, 25 rollouts/s\n"},
		{"reuse found nothing", &results.ReuseSummary{Graded: 50}, "graded 50 rollouts (200 checks) in 2.0s, 25 rollouts/s\n"},
		{"fully reused", &results.ReuseSummary{Reused: 50, CopiedParts: 1}, "reused 50 rollouts (200 checks) in 2.0s, 25 rollouts/s\n"},
		{"partly reused", &results.ReuseSummary{Reused: 40, Graded: 10}, "graded 10 and reused 40 rollouts (200 checks) in 2.0s, 25 rollouts/s\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			s := &results.Summary{Checks: 200, ElapsedSeconds: 2, RowsPerSecond: 25, Reuse: tt.reuse}
			s.Rollouts = 50
			printSummary(&b, "graded", s, "out")
			if first, _, _ := strings.Cut(b.String(), "\n"); first+"\n" != tt.want {
				t.Errorf("first line %q, want %q", first+"\n", tt.want)
			}
		})
	}
}
