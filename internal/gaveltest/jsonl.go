package gaveltest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// DecodeJSONL returns the rows of the JSON Lines file at path, each
// decoded into a map, failing t when the file cannot be read or a line is
// not a JSON object.
func DecodeJSONL(t testing.TB, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rows = append(rows, m)
	}
	return rows
}
