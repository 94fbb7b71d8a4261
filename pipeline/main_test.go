package pipeline

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: Run
// returns after every goroutine it started has exited, and a verifier call
// abandoned past the timeout exits once the verifier returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
