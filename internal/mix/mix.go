// Package mix holds the integer mixing that gavel's non-cryptographic
// hashes share: a multiplier for folding in 64-bit words and a finalizer
// that spreads every input bit over every output bit. Neither resists
// attack; their users compare the hashed bytes whenever hashes agree.
package mix

// M is the multiplier words are folded in with: h = (h ^ w) * M.
const M = 0x9e3779b97f4a7c15

// Finalize is the finalizer of MurmurHash3's 64-bit variant (fmix64).
func Finalize(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
