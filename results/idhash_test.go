package results

import "testing"

// TestHashIDStable pins hashID: hash files outlive the process, so a
// change of the function must come with a new file name.
func TestHashIDStable(t *testing.T) {
	for _, tt := range []struct {
		id   string
		want uint64
	}{
		{"", 0x226e040144470ef3},
		{"x", 0x76cb069bc7986875},
		{"rollout-00000001", 0xa37675d6d0f98f13},
		{"3f2b8a4e-1c9d-4e7a-9b1f-6d2c8e0a5b73", 0xa4311b9e97c8d85b},
	} {
		if got := hashID(tt.id); got != tt.want {
			t.Errorf("hashID(%q) = %#x, want %#x", tt.id, got, tt.want)
		}
		if got := hashID([]byte(tt.id)); got != tt.want {
			t.Errorf("hashID([]byte(%q)) = %#x, want %#x", tt.id, got, tt.want)
		}
	}
}
