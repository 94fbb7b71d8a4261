package pipeline

import (
	"context"
	"fmt"

	"github.com/gavelhq/gavel/verifiers"
)

// asker is a kind of verifier that asks elsewhere for its checks: the
// judge of rubric checks (judging) and remote verifiers (remoting). A
// worker leaves a batch's asks of each kind in its batchResults; the
// writer, the one goroutine that sees batches in input order, drives every
// asker of the run through this interface, in the order of plan.askers:
// it starts a batch's asks in input order (spending the run's one request
// budget, call.Budget), holds the batch in its FIFO while one is waiting,
// finishes the batch's rows with the answers, and makes the answers
// durable before a part is committed. A third kind implements asker and
// joins the list; the writer needs no edit.
//
// Rejected: one mechanism for both kinds below this interface. Judging
// asks per check (a panel's judgements, shared by key, all or none per
// check) and remoting per rollout in batches per verifier; what they share
// (retries, probe, durable cache, budget) is judge/call already.
type asker interface {
	// has reports whether res holds asks of this kind.
	has(res *batchResults) bool
	// start starts the asks of res, in input order; on an error the
	// caller releases res and stops the run.
	start(ctx context.Context, res *batchResults) error
	// waiting returns the done channel of the first unanswered ask of
	// res, or nil when every one is answered.
	waiting(res *batchResults) <-chan struct{}
	// finish applies the answers to the rows of res and computes the
	// verdicts of the rows they changed; buf is reused.
	finish(res *batchResults, buf []verifiers.Check) ([]verifiers.Check, error)
	// release forgets what the asks of res started, so that a later ask
	// of the same key asks again.
	release(res *batchResults)
	// askNow asks and answers the asks of res at once, for a RowGrader,
	// whose calls run on many goroutines.
	askNow(ctx context.Context, res *batchResults, buf []verifiers.Check) ([]verifiers.Check, error)
	// sync makes the answers so far durable.
	sync() error
	// wait returns once every ask started has ended.
	wait()
	// close waits for the asks and closes the cache; errors name it.
	close() error
}

// setAskers lists the plan's askers, in the order the writer drives
// them: the judge, then remote verifiers.
func (p *plan) setAskers() {
	p.askers = p.askers[:0]
	if p.judging != nil {
		p.askers = append(p.askers, p.judging)
	}
	if p.remoting != nil {
		p.askers = append(p.askers, p.remoting)
	}
}

// closeAskers closes the askers in the reverse of their order and
// returns the first error.
func (p *plan) closeAskers() error {
	var first error
	for i := len(p.askers) - 1; i >= 0; i-- {
		if err := p.askers[i].close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// syncAskers makes every asker's answers durable.
func (p *plan) syncAskers() error {
	for _, a := range p.askers {
		if err := a.sync(); err != nil {
			return err
		}
	}
	return nil
}

func (js *judging) has(res *batchResults) bool  { return len(res.asks) > 0 }
func (rs *remoting) has(res *batchResults) bool { return len(res.rasks) > 0 }

func (js *judging) wait()  { js.asks.Wait() }
func (rs *remoting) wait() { rs.asks.Wait() }

func (js *judging) close() error {
	js.asks.Wait()
	if err := js.base.Close(); err != nil {
		return fmt.Errorf("judge cache: %w", err)
	}
	return nil
}
