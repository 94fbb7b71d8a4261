package pipeline

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
)

// appendJSONString appends s as a JSON string, read in place.
func appendJSONString(dst, s []byte) []byte {
	return columnar.AppendJSONString(dst, unsafe.String(unsafe.SliceData(s), len(s)))
}

// describeJSON rewords a state view syntax error for a user.
func describeJSON(err error) error {
	var se *jsonview.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %s", se.Offset, se.Msg)
	}
	return err
}
