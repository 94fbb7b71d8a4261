package cli

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// interrupt cancels a context on the first SIGINT or SIGTERM and remembers
// which signal it was, so that the exit status can say so (128 + the
// signal's number: 130 for SIGINT, 143 for SIGTERM). A second signal ends
// the process at once with that status.
type interrupt struct {
	sig  atomic.Value // syscall.Signal
	ch   chan os.Signal
	done chan struct{}
}

// notifyInterrupt returns a context cancelled by SIGINT or SIGTERM.
func notifyInterrupt(parent context.Context) (context.Context, *interrupt) {
	ctx, cancel := context.WithCancel(parent)
	in := &interrupt{ch: make(chan os.Signal, 2), done: make(chan struct{})}
	signal.Notify(in.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-in.ch:
			in.sig.Store(s.(syscall.Signal))
			cancel()
		case <-in.done:
			cancel()
			return
		}
		select {
		case s := <-in.ch:
			os.Exit(128 + int(s.(syscall.Signal)))
		case <-in.done:
		}
	}()
	return ctx, in
}

// stop stops listening for signals.
func (in *interrupt) stop() {
	signal.Stop(in.ch)
	close(in.done)
}

// exitStatus returns the exit status for a run that ended with code: a run
// that failed after a signal exits with 128 + the signal's number.
func (in *interrupt) exitStatus(code int) int {
	s, ok := in.sig.Load().(syscall.Signal)
	if !ok || code == 0 {
		return code
	}
	return 128 + int(s)
}
