package jsonview

import (
	"encoding/binary"
	"math/bits"
	"os"
	"unicode/utf8"
)

// # Two stages
//
// Parse reads a text twice. Stage 1 reads it 64 bytes at a time, with
// vector instructions where the CPU has them (stage1_amd64.go), and
// writes one word of marks per block: bit k of word w is set when byte
// 64w+k is a quote that is not escaped or a backslash that starts an
// escape. A backslash starts an escape when it ends a run of backslashes
// of odd length; the byte after it is escaped, and an escaped quote is
// not marked. Stage 1 also checks, for the whole text, that it is valid
// UTF-8 and that no control character lies between a quote and the next
// one (inside a string, if the text is well formed).
//
// Stage 2 (parseIndexed) is the scalar parser's state machine, except that
// it reads no byte inside a string: the closing quote and the escapes of a
// string are the marks that follow its opening quote, and only the escapes
// are checked there. Every byte outside strings is still read and checked
// by stage 2, so that a backslash outside a string, which would make stage
// 1 mark the wrong quotes, is refused before any mark past it is used.
// Numbers are converted and strings unescaped only when they are read, as
// before.
//
// When stage 1 finds a fault, or stage 2 refuses the text, the scalar
// parser (parseScalar) reads the text again to name its first error:
// invalid texts are rare, and so their errors are the scalar parser's, at
// the same offset with the same message, whichever fault stage 1 met
// first. ParseSkipping runs on the scalar parser alone: stage 1 would
// check the members it leaves out, which it must not refuse.
//
// Stage 1 has a portable twin (stage1Portable), which other architectures
// and the purego build tag use, and which the environment variable
// portableEnv selects; the tests check that both write the same marks.

// stage1State carries what one block of stage 1 leaves for the next,
// between calls of the vector code too, which reads it at these offsets:
// words 0 to 3 hold the last 32 bytes read (the UTF-8 check looks three
// bytes back; the portable code does not use them), and the word at
// stFault is not zero once a fault was found.
type stage1State [7]uint64

// Words of stage1State.
const (
	stEscaped  = 4 // 1 when the next block's first byte is escaped
	stInString = 5 // all ones when the next block begins inside a string
	stFault    = 6 // not zero: invalid UTF-8, or a control character in a string
)

// marksLen is the number of words of marks stage 1 writes for a text of n
// bytes: one per 64 bytes, and one for the last, partial or empty, block,
// which is read padded with spaces.
func marksLen(n int) int { return n/64 + 1 }

// stage1 writes the marks of data into marks (of length marksLen) and
// reports whether data passed stage 1's checks. It runs the first vector
// stage 1 the CPU has when useVector is set, and the portable code
// otherwise; all write the same marks and give the same answer.
func stage1(data []byte, marks []uint64) bool {
	if useVector && len(vectorStage1s) > 0 {
		return vectorStage1s[0].run(data, marks)
	}
	return stage1Portable(data, marks)
}

// useVector selects the vector stage 1 where there is one. It is set from
// the environment when the program starts (see portableEnv) and changed by
// tests, never while a Parse runs.
var useVector = os.Getenv(portableEnv) == ""

// portableEnv names the environment variable that, set to any non-empty
// value, makes Parse use the portable stage 1 even where the CPU has the
// vector one: for debugging, and to compare the two.
const portableEnv = "GAVEL_JSONVIEW_PORTABLE"

// stage1Portable is stage 1 in portable Go: the marks eight bytes at a
// time, and the UTF-8 check of the standard library.
func stage1Portable(data []byte, marks []uint64) bool {
	var st stage1State
	full := len(data) / 64
	for w := range full {
		marks[w] = portableBlock((*[64]byte)(data[w*64:]), &st)
	}
	var tail [64]byte
	copy(tail[:], data[full*64:])
	for k := len(data) - full*64; k < 64; k++ {
		tail[k] = ' '
	}
	marks[full] = portableBlock(&tail, &st)
	return st[stFault] == 0 && utf8.Valid(data)
}

// portableBlock returns the marks of one block and updates st.
func portableBlock(b *[64]byte, st *stage1State) uint64 {
	var quote, backslash, control uint64
	for k := 0; k < 64; k += 8 {
		x := binary.LittleEndian.Uint64(b[k:])
		quote |= gatherHigh(zeroBytes(x^(lowBytes*'"'))) << k
		backslash |= gatherHigh(zeroBytes(x^(lowBytes*'\\'))) << k
		control |= gatherHigh(controlBytes(x)) << k
	}
	return blockMarks(quote, backslash, control, st)
}

// blockMarks returns a block's marks from its quotes, backslashes and
// control characters, one bit per byte, and carries the escape and the
// string on to the next block in st. The vector code does the same in its
// registers (marksOf in internal/asmgen). It follows simdjson's escape scanner (Langdale
// and Lemire, "Parsing Gigabytes of JSON per Second", 2019).
func blockMarks(quote, backslash, control uint64, st *stage1State) uint64 {
	const even = 0x5555555555555555
	prevEscaped := st[stEscaped]
	bs := backslash &^ prevEscaped
	followsEscape := bs<<1 | prevEscaped
	oddStarts := bs &^ even &^ followsEscape
	evenStarts, carry := bits.Add64(oddStarts, bs, 0)
	escaped := (even ^ evenStarts<<1) & followsEscape
	st[stEscaped] = carry
	quote &^= escaped
	inString := prefixXor(quote) ^ st[stInString]
	st[stInString] = uint64(int64(inString) >> 63)
	st[stFault] |= control & inString
	return quote | backslash&^escaped
}

// prefixXor returns the word whose bit k is the parity of bits 0 to k of x.
func prefixXor(x uint64) uint64 {
	x ^= x << 1
	x ^= x << 2
	x ^= x << 4
	x ^= x << 8
	x ^= x << 16
	x ^= x << 32
	return x
}

const (
	lowBytes  = 0x0101010101010101
	highBytes = 0x8080808080808080
	low7Bits  = 0x7f7f7f7f7f7f7f7f
)

// zeroBytes returns the high bit of each byte of x that is zero, exactly
// (no borrow crosses bytes).
func zeroBytes(x uint64) uint64 {
	return ^((x&low7Bits + low7Bits) | x) & highBytes
}

// controlBytes returns the high bit of each byte of x below 0x20.
func controlBytes(x uint64) uint64 {
	return ^((x&low7Bits + lowBytes*0x60) | x) & highBytes
}

// gatherHigh packs the high bits of the eight bytes of x into the low
// eight bits of the result, byte 0's first.
func gatherHigh(x uint64) uint64 {
	return (x >> 7) * 0x0102040810204080 >> 56
}
