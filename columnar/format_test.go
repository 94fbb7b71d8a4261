package columnar

import "testing"

func TestResolveHTTP(t *testing.T) {
	for _, tt := range []struct {
		ctype, want string
	}{
		{"", InputJSON},
		{"application/json", InputJSON},
		{"application/x-ndjson", InputJSONL},
		{"Application/JSONL; charset=utf-8", InputJSONL},
		{" application/x-jsonlines ;q=1", InputJSONL},
		{"text/plain", InputJSON},
	} {
		if got, ok := Resolve(Source{HTTP: true, ContentType: tt.ctype}); got != tt.want || !ok {
			t.Errorf("Resolve(body, Content-Type %q) = %s, %v; want %s", tt.ctype, got, ok, tt.want)
		}
	}
}
