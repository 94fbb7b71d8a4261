package pipeline

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar"
)

// A file of chats (messages as a list of structs, as Hugging Face
// datasets store them) graded as rows, without --from messages, is
// graded against empty outputs: the summary warns, naming the file and
// --from messages. A file with an output column, or read with --from
// messages, gets no warning.
func TestChatWarnings(t *testing.T) {
	type message struct {
		Role    string `parquet:"role"`
		Content string `parquet:"content"`
	}
	type chat struct {
		TaskID   string    `parquet:"task_id"`
		Messages []message `parquet:"messages,list"`
	}
	type answered struct {
		TaskID   string    `parquet:"task_id"`
		Output   string    `parquet:"output"`
		Messages []message `parquet:"messages,list"`
	}
	dir := t.TempDir()
	chats := filepath.Join(dir, "chats.parquet")
	writeParquetRows(t, chats, []chat{{TaskID: "t", Messages: []message{{"user", "2+2?"}, {"assistant", "4"}}}})
	withOutput := filepath.Join(dir, "answered.parquet")
	writeParquetRows(t, withOutput, []answered{{TaskID: "t", Output: "4", Messages: []message{{"user", "2+2?"}}}})
	for _, tc := range []struct {
		name, in, from string
		warn           bool
	}{
		{"chats as rows", chats, "", true},
		{"chats with --from messages", chats, "messages", false},
		{"rows with an output", withOutput, "", false},
	} {
		res := grade(t, Config{Inputs: []string{tc.in}, From: tc.from, Out: filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")), Format: columnar.FormatJSONL})
		w := res.Summary.Warnings
		if got := len(w) == 1 && strings.Contains(w[0], tc.in+": a messages column and no output column") && strings.Contains(w[0], "--from messages"); got != tc.warn {
			t.Errorf("%s: warnings %q, want a warning: %v", tc.name, w, tc.warn)
		}
	}
}
