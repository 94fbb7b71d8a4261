package serve

import (
	"encoding/json"
	"strings"
	"testing"
)

// The Bearer scheme is case-insensitive (RFC 9110 section 11.1); the
// token is not.
func TestTokenSchemeCase(t *testing.T) {
	_, ts := newServer(t, Config{Token: "s3cret"})
	for _, auth := range []string{"Bearer s3cret", "bearer s3cret", "BEARER s3cret", "bEaReR s3cret"} {
		if got := do(t, ts, "GET", "/v1/verifiers", "", "", "Authorization", auth); got.code != 200 {
			t.Errorf("GET /v1/verifiers with %q = %d %s, want 200", auth, got.code, got.body)
		}
	}
	for _, auth := range []string{"Bearer S3CRET", "Basic s3cret", "Bearers3cret", "Bearer  s3cret x", "s3cret"} {
		if got := do(t, ts, "GET", "/v1/verifiers", "", "", "Authorization", auth); got.code != 401 {
			t.Errorf("GET /v1/verifiers with %q = %d, want 401", auth, got.code)
		}
	}
}

// A JSON Lines line of exactly --max-body bytes is graded; one byte more
// is a row with status error, like any longer line.
func TestJSONLinesLineLimitExact(t *testing.T) {
	const limit = 4096
	_, ts := newServer(t, Config{MaxBody: limit})
	line := func(n int) string {
		head, tail := `{"task_id": "TASK-C01", "output": "`, `"}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	for _, term := range []string{"\n", "\r\n"} {
		for _, tt := range []struct {
			n       int
			tooLong bool
		}{{limit, false}, {limit + 1, true}, {limit + 2, true}} {
			got := do(t, ts, "POST", "/v1/grade", "application/x-ndjson", line(tt.n)+term)
			var row struct {
				Rewards struct {
					Status string  `json:"status"`
					Error  *string `json:"error"`
				} `json:"rewards"`
			}
			if err := json.Unmarshal([]byte(got.body), &row); got.code != 200 || err != nil {
				t.Fatalf("line of %d bytes = %d %s (%v), want 200 and one row", tt.n, got.code, got.body, err)
			}
			r := row.Rewards
			tooLong := r.Status == "error" && r.Error != nil && strings.Contains(*r.Error, "longer than the limit of 4096 bytes")
			if tooLong != tt.tooLong || !tt.tooLong && r.Status == "error" {
				t.Errorf("line of %d bytes ending %q: status %q, error %v; want too long: %v", tt.n, term, r.Status, r.Error, tt.tooLong)
			}
		}
	}
}
