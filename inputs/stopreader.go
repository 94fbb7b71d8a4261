package inputs

import (
	"errors"
	"io"
	"sync"
)

// StopReader reads standard input so that a run that stops itself (a
// failed write, such as standard output closed by its reader) is not held
// up by it. A read of a pipe whose writer keeps it open and sends nothing
// blocks, and a blocked read of a file descriptor in blocking mode cannot
// be interrupted; so each Read is done by a goroutine of its own, straight
// into the caller's buffer, while Read waits for it or for stop. Once
// stopped, Read fails at once and the pending read, if any, is given up:
// its goroutine ends when the read returns (at the latest when the
// process exits).
//
// A given-up read may still fill the caller's buffer after Read returned
// the error: its callers (bufio's buffer, an Arrow record batch body of
// the stdin reader's own allocator) never read a buffer again once a Read
// of it failed, and nothing else reads standard input after a stop.
// Reading into a buffer of its own and copying, as it once did, cost a
// second copy of every byte (a fifth of the CPU of grading an Arrow stream
// on standard input).
//
// Read is not safe for concurrent use; a read is never started once one
// was given up. A reader that never blocks (a file, a buffer) has no
// goroutine left once Read returns.
type StopReader struct {
	r       io.Reader
	stopped chan struct{}
	Stop    func()
	done    chan readResult // one read at a time: reused
}

// maxStopRead bounds one read of a StopReader.
const maxStopRead = 1 << 20

type readResult struct {
	n   int
	err error
}

func NewStopReader(r io.Reader) *StopReader {
	s := &StopReader{r: r, stopped: make(chan struct{}), done: make(chan readResult, 1)}
	s.Stop = sync.OnceFunc(func() { close(s.stopped) })
	return s
}

// Read reads into p what one Read of the underlying reader returns.
func (s *StopReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := s.err(); err != nil {
		return 0, err
	}
	p = p[:min(len(p), maxStopRead)]
	go func() {
		n, err := s.r.Read(p)
		s.done <- readResult{n, err}
	}()
	select {
	case res := <-s.done:
		return res.n, res.err
	case <-s.stopped:
	}
	return 0, s.err()
}

// err returns why reads fail, or nil while they do not.
func (s *StopReader) err() error {
	select {
	case <-s.stopped:
		return ErrStdinStopped
	default:
		return nil
	}
}

// ErrStdinStopped is what reads of a stopped StopReader return.
var ErrStdinStopped = errors.New("read standard input: the run stopped")
