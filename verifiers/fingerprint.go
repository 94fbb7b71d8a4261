package verifiers

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// ScoringVersion is the version of what gavel does around every verifier:
// the verdict and reward rules (Score, Formula), the check rows it writes,
// and the form of a fingerprint. Every fingerprint covers it, so a gavel that
// scores differently changes every fingerprint once. Raise it with any
// such change.
const ScoringVersion = 1

// Fingerprint returns the fingerprint of v as manifest.json records it,
// "sha256:" and 64 hex digits. It covers ScoringVersion, v's ID, Version
// and Definition (a declarative verifier's canonical text), its reward
// formula when it is not the default, its turn reward formula and credit
// when it scores turns (Turns), and judge, the
// judge settings in effect for v as a text ("" when v is not judged): a
// fingerprint changes when, and only when, something that may change v's
// checks does. Each part is written with its length, so no two sets of
// parts give the same text.
func Fingerprint(v *Verifier, judge string) string {
	b := make([]byte, 0, 64+len(v.ID)+len(v.Definition)+len(judge))
	b = append(b, "gavel scoring "...)
	b = strconv.AppendInt(b, ScoringVersion, 10)
	b = append(b, "\nversion "...)
	b = strconv.AppendInt(b, int64(v.Version), 10)
	parts := []struct{ name, text string }{{"id", v.ID}, {"definition", v.Definition}, {"judge", judge}}
	if !v.Reward.IsFraction() {
		// The formula, declared beside the verifier, is part of its
		// behaviour wherever it is written; the default adds nothing, so
		// fingerprints of verifiers without one stay as they were.
		parts = append(parts, struct{ name, text string }{"reward", v.Reward.String()})
	}
	if v.Turns {
		// Likewise the turn scoring of a verifier that scores turns.
		parts = append(parts, struct{ name, text string }{"turns", "reward " + v.TurnReward.String() + " credit " + v.Credit})
	}
	for _, part := range parts {
		b = append(b, '\n')
		b = append(b, part.name...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(len(part.text)), 10)
		b = append(b, '\n')
		b = append(b, part.text...)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
