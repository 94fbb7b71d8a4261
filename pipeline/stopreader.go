package pipeline

import (
	"errors"
	"io"
	"sync"
)

// stopReader reads standard input so that a run that stops itself (a
// failed write, such as standard output closed by its reader) is not held
// up by it. A read of a pipe whose writer keeps it open and sends nothing
// blocks, and a blocked read of a file descriptor in blocking mode cannot
// be interrupted; so each Read is done by a goroutine of its own, into a
// buffer of the reader's, while Read waits for it or for stop. Once
// stopped, Read fails at once and the pending read, if any, is given up:
// its goroutine ends when the read returns (at the latest when the
// process exits), and its bytes are dropped.
//
// Read is not safe for concurrent use; a read is never started once one
// was given up. A reader that never blocks (a
// file, a buffer) has no goroutine left once Read returns.
type stopReader struct {
	r       io.Reader
	stopped chan struct{}
	stop    func()
	buf     []byte // read into by the goroutines, one at a time
}

// maxStopRead bounds one read of a stopReader.
const maxStopRead = 64 << 10

type readResult struct {
	n   int
	err error
}

func newStopReader(r io.Reader) *stopReader {
	s := &stopReader{r: r, stopped: make(chan struct{})}
	s.stop = sync.OnceFunc(func() { close(s.stopped) })
	return s
}

// Read reads into p what one Read of the underlying reader returns.
func (s *stopReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := s.err(); err != nil {
		return 0, err
	}
	// A short read is a read: the buffer stays small whatever the
	// caller asks (a record batch's body, read whole).
	p = p[:min(len(p), maxStopRead)]
	if cap(s.buf) < len(p) {
		s.buf = make([]byte, len(p))
	}
	buf := s.buf[:len(p)]
	done := make(chan readResult, 1)
	go func() {
		n, err := s.r.Read(buf)
		done <- readResult{n, err}
	}()
	select {
	case res := <-done:
		return copy(p, buf[:res.n]), res.err
	case <-s.stopped:
	}
	// The given-up read keeps its buffer, which is never reused.
	s.buf = nil
	return 0, s.err()
}

// err returns why reads fail, or nil while they do not.
func (s *stopReader) err() error {
	select {
	case <-s.stopped:
		return errStdinStopped
	default:
		return nil
	}
}

// errStdinStopped is what reads of a stopped stopReader return.
var errStdinStopped = errors.New("read standard input: the run stopped")
