package spec

// The math check. The math functions of spec expressions, math_answer and
// math_equal, are verifiers.MathFunctions, shared with reward formulas.

import (
	"fmt"
	"strconv"
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"go.yaml.in/yaml/v3"

	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/mathanswer"
)

// mathFields reads a math check's gold, answer and precision.
func (l *loader) mathFields(c *check, m map[string]*yaml.Node, n *yaml.Node, what string) {
	if src, gn := l.str(m, n, "gold", what, true); gn != nil {
		c.gold = l.compile(gn, src, false)
	}
	src, an := l.str(m, n, "answer", what, false)
	if an == nil {
		src = "output"
		if l.inTurn {
			src = "turn.text" // a turn check reads its turn's text
		}
	}
	c.answer = l.compile(an, src, false)
	c.precision = mathanswer.DefaultPrecision
	if pn := m["precision"]; pn != nil {
		p, err := strconv.Atoi(pn.Value)
		if pn.Kind != yaml.ScalarNode || pn.ShortTag() != "!!int" || err != nil || p < 0 || p > mathanswer.MaxPrecision {
			l.problem(pn, fmt.Sprintf("an integer from 0 to %d (default %d)", mathanswer.MaxPrecision, mathanswer.DefaultPrecision),
				"precision of %s must be an integer from 0 to %d, not %s", what, mathanswer.MaxPrecision, pn.Value)
			return
		}
		c.precision = p
	}
}

// gradeMath runs a math check: the answer found in the answer text
// against the gold.
func (c *check) gradeMath(r *verifiers.Rollout, s *scratch, out verifiers.Check) verifiers.Check {
	var gold string
	err := c.gold.eval(r, s, func(v ref.Val) error {
		g, err := verifiers.MathText(v, "gold")
		gold = strings.Clone(g) // it may view the arena, reset after this call
		return err
	})
	if err != nil {
		out.Status, out.Detail = verifiers.Error, "gold: "+err.Error()
		return out
	}
	err = c.answer.eval(r, s, func(v ref.Val) error {
		text := ""
		if v != types.NullValue {
			t, err := verifiers.MathText(v, "answer")
			if err != nil {
				return err
			}
			text = t
		}
		out = verifiers.MathCheckOf(out, text, gold, c.precision)
		return nil
	})
	if err != nil {
		out.Status, out.Detail = verifiers.Error, "answer: "+err.Error()
	}
	return out
}
