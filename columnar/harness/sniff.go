package harness

import (
	"bytes"
	"fmt"
)

// A file read in one format that is clearly a file of another gets a hint
// naming the right one. The guess is cheap and made only when a reader
// fails or finds nothing of its own: from the first bytes of the file
// while the stream still holds them (a reader that fails on its first
// byte), or from the keys of the top-level object the reader walked (a
// tau2 reader that read an Inspect log through and found no simulations).

// FormatError is the error of a file read in one format that looks like a
// file of another.
type FormatError struct {
	// Err is the reader's error.
	Err error
	// Looks is the format the file looks like.
	Looks Format
	// Desc describes what the file looks like: "a tau-bench results
	// array".
	Desc string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%v (this looks like %s; try --from %s)", e.Err, e.Desc, e.Looks)
}

func (e *FormatError) Unwrap() error { return e.Err }

// maxSniffKeys bounds the top-level keys a reader keeps for a guess.
const maxSniffKeys = 16

// keyList is the top-level keys of a file as a reader walks them, the
// first maxSniffKeys of them.
type keyList []string

func (k *keyList) add(key string) {
	if len(*k) < maxSniffKeys {
		*k = append(*k, key)
	}
}

func (k keyList) has(key string) bool {
	for _, x := range k {
		if x == key {
			return true
		}
	}
	return false
}

// looksByKeys guesses the format of a file whose top-level value is an
// object with keys (or whose first line is, for the JSON Lines formats).
func looksByKeys(keys keyList) (Format, string) {
	switch {
	case keys.has("eval"):
		return Inspect, "an Inspect log"
	case keys.has("simulations"), keys.has("info") && (keys.has("tasks") || keys.has("timestamp")):
		return Tau2, "a tau2 results file"
	case keys.has("schema_version") && (keys.has("steps") || keys.has("agent")):
		return ATIF, "an ATIF trajectory"
	case keys.has("responses_create_params"), keys.has(gymTaskIndex) && keys.has("response"):
		return NemoGym, "NeMo Gym rollouts"
	case keys.has("messages"):
		return Messages, "JSON Lines of chat messages"
	}
	return "", ""
}

// looksByElement guesses the format of a file whose top-level value is
// an array whose first element is an object with keys.
func looksByElement(keys keyList) (Format, string) {
	if keys.has("traj") || keys.has("task_id") && keys.has("reward") {
		return TauBench, "a tau-bench results array"
	}
	return "", ""
}

var zipMagic = []byte("PK\x03\x04")

// sniff guesses the format of a file from its first bytes: a zip archive
// is an Inspect .eval archive; an array and an object are told by the keys
// they show in prefix (a value cut by the prefix's end ends the guess).
func sniff(prefix []byte) (Format, string) {
	if IsZip(prefix) {
		return Inspect, "an Inspect .eval archive"
	}
	// A stream over prefix alone: at eof, fill reads nothing more and
	// never moves the bytes.
	s := &stream{buf: prefix, w: len(prefix), eof: true}
	if bytes.HasPrefix(prefix, bom) {
		s.r = len(bom)
	}
	c, ok := s.peek()
	switch {
	case ok && c == '[':
		if s.delim("", '[') != nil {
			return "", ""
		}
		if c, ok := s.peek(); !ok || c != '{' || s.delim("", '{') != nil {
			return "", ""
		}
		return looksByElement(objectKeys(s))
	case ok && c == '{':
		if s.delim("", '{') != nil {
			return "", ""
		}
		return looksByKeys(objectKeys(s))
	}
	return "", ""
}

// objectKeys walks the keys of the object s is in, up to its end, an
// error or maxSniffKeys keys.
func objectKeys(s *stream) keyList {
	var keys keyList
	for len(keys) < maxSniffKeys {
		k, end, err := s.key("")
		if err != nil || end {
			break
		}
		keys.add(k)
		if s.value("") != nil {
			break
		}
	}
	return keys
}

// guess returns the format the file read in format f looks like when it
// is another: by keys, the top-level keys the reader walked, when given;
// else by the first bytes of the file, when s still holds them. It
// returns "" when the file looks like nothing else.
func guess(f Format, s *stream, keys keyList) (Format, string) {
	var looks Format
	var desc string
	switch {
	case keys != nil:
		looks, desc = looksByKeys(keys)
	case s != nil && s.off == 0:
		looks, desc = sniff(s.buf[:s.w])
	}
	if looks == f {
		return "", ""
	}
	return looks, desc
}

// hint returns err, an error of the file read in format f, as a
// FormatError when the file looks like one of another format (see
// guess).
func hint(err error, f Format, s *stream, keys keyList) error {
	if looks, desc := guess(f, s, keys); looks != "" {
		return &FormatError{Err: err, Looks: looks, Desc: desc}
	}
	return err
}
