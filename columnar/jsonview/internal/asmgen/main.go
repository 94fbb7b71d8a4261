// Command asmgen writes jsonview's vector stage 1 (stage1_amd64.s) and
// its Go declarations (stage1_stub_amd64.go) with avo. Run it from
// jsonview's directory with go generate; a test checks that the committed
// files are what it writes.
package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/buildtags"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
	. "github.com/mmcloughlin/avo/reg"
)

// Output files, relative to jsonview's directory.
const (
	asmFile  = "stage1_amd64.s"
	stubFile = "stage1_stub_amd64.go"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	asm, stub, err := generate()
	if err != nil {
		log.Fatal(err)
	}
	for name, text := range map[string][]byte{asmFile: asm, stubFile: stub} {
		if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// generate returns the assembly and the stubs.
func generate() (asm, stub []byte, err error) {
	c := build.NewContext()
	c.Constraint(buildtags.Not("purego").ToConstraint())
	stage1AVX2(c)
	f, err := c.Result()
	if err != nil {
		return nil, nil, err
	}
	if err := pass.Compile.Execute(f); err != nil {
		return nil, nil, err
	}
	cfg := printer.Config{Name: "internal/asmgen", Pkg: "jsonview"}
	if asm, err = print(printer.NewGoAsm(cfg), f); err != nil {
		return nil, nil, err
	}
	if stub, err = print(printer.NewStubs(cfg), f); err != nil {
		return nil, nil, err
	}
	return asm, stub, nil
}

func print(p printer.Printer, f *ir.File) ([]byte, error) {
	b, err := p.Print(f)
	if err != nil {
		return nil, fmt.Errorf("printing: %w", err)
	}
	return b, nil
}

// table16 declares a 16-byte constant.
func table16(c *build.Context, name string, bytes [16]byte) Mem {
	m := c.StaticGlobal(name)
	c.DataAttributes(attr.RODATA | attr.NOPTR)
	for i, b := range bytes {
		c.AddDatum(i, U8(b))
	}
	return m
}

// splat32 declares a 32-byte constant of 32 times b.
func splat32(c *build.Context, name string, b byte) Mem {
	m := c.StaticGlobal(name)
	c.DataAttributes(attr.RODATA | attr.NOPTR)
	for i := 0; i < 32; i += 8 {
		c.AddDatum(i, U64(0x0101010101010101*uint64(b)))
	}
	return m
}

// The classes of Keiser and Lemire's UTF-8 check ("Validating UTF-8 in
// less than one instruction per byte", 2021), one bit each; a byte pair
// is in error when the three lookups share a bit.
const (
	tooShort   = 1 << 0 // a lead byte followed by a lead byte or ASCII
	tooLong    = 1 << 1 // ASCII followed by a continuation
	overlong3  = 1 << 2 // 11100000 100_____
	tooLarge   = 1 << 3 // above U+10FFFF
	surrogate  = 1 << 4 // 11101101 101_____
	overlong2  = 1 << 5 // 1100000_ 10______
	tooLarge1k = 1 << 6 // above U+10FFFF, 1000____ second byte
	overlong4  = 1 << 6 // 11110000 1000____
	twoConts   = 1 << 7 // a continuation after a continuation
	carry      = tooShort | tooLong | twoConts
)

// The three lookups: by the high nibble of the previous byte, its low
// nibble, and the high nibble of the byte itself.
var (
	byte1High = [16]byte{
		tooLong, tooLong, tooLong, tooLong, tooLong, tooLong, tooLong, tooLong,
		twoConts, twoConts, twoConts, twoConts,
		tooShort | overlong2,
		tooShort,
		tooShort | overlong3 | surrogate,
		tooShort | tooLarge | tooLarge1k | overlong4,
	}
	byte1Low = [16]byte{
		carry | overlong3 | overlong2 | overlong4,
		carry | overlong2,
		carry,
		carry,
		carry | tooLarge,
		carry | tooLarge | tooLarge1k,
		carry | tooLarge | tooLarge1k,
		carry | tooLarge | tooLarge1k,
		carry | tooLarge | tooLarge1k,
		carry | tooLarge | tooLarge1k,
		carry | tooLarge | tooLarge1k,
		carry | tooLarge | tooLarge1k,
		carry | tooLarge | tooLarge1k,
		carry | tooLarge | tooLarge1k | surrogate,
		carry | tooLarge | tooLarge1k,
		carry | tooLarge | tooLarge1k,
	}
	byte2High = [16]byte{
		tooShort, tooShort, tooShort, tooShort, tooShort, tooShort, tooShort, tooShort,
		tooLong | overlong2 | twoConts | overlong3 | tooLarge1k | overlong4,
		tooLong | overlong2 | twoConts | overlong3 | tooLarge,
		tooLong | overlong2 | twoConts | surrogate | tooLarge,
		tooLong | overlong2 | twoConts | surrogate | tooLarge,
		tooShort, tooShort, tooShort, tooShort,
	}
)

// stage1AVX2 writes the function of the same name: stage1Portable's
// blocks (portableBlock and blockMarks) with AVX2, and the UTF-8 check.
func stage1AVX2(c *build.Context) {
	t1h := table16(c, "utf8Byte1High", byte1High)
	t1l := table16(c, "utf8Byte1Low", byte1Low)
	t2h := table16(c, "utf8Byte2High", byte2High)

	third := splat32(c, "utf8Third", 0xe0-0x80)
	fourth := splat32(c, "utf8Fourth", 0xf0-0x80)
	high := splat32(c, "highBits", 0x80)

	c.Function("stage1AVX2")
	c.Attributes(attr.NOSPLIT)
	c.SignatureExpr("func(data *byte, blocks int, marks *uint64, st *[7]uint64)")
	c.Pragma("noescape")
	c.Doc(
		"stage1AVX2 reads blocks blocks of 64 bytes of data, writes their marks",
		"and carries st on, as portableBlock does for each block, and records",
		"invalid UTF-8 in st as a fault. It needs AVX2.",
	)
	data := c.Load(c.Param("data"), c.GP64())
	blocks := c.Load(c.Param("blocks"), c.GP64())
	marks := c.Load(c.Param("marks"), c.GP64())
	st := c.Load(c.Param("st"), c.GP64())

	broadcast := func(b byte) VecVirtual {
		g := c.GP32()
		c.MOVL(U32(b), g)
		x := c.XMM()
		c.MOVD(g, x)
		y := c.YMM()
		c.VPBROADCASTB(x, y)
		return y
	}
	quoteV := broadcast('"')
	backslashV := broadcast('\\')
	controlV := broadcast(0x1f)
	nibble := broadcast(0x0f)
	tab1h, tab1l, tab2h := c.YMM(), c.YMM(), c.YMM()
	c.VBROADCASTI128(t1h, tab1h)
	c.VBROADCASTI128(t1l, tab1l)
	c.VBROADCASTI128(t2h, tab2h)

	prev := c.YMM()
	c.VMOVDQU(Mem{Base: st}, prev)
	errV := c.YMM()
	c.VPXOR(errV, errV, errV)
	escaped, inString, fault := c.GP64(), c.GP64(), c.GP64()
	c.MOVQ(Mem{Base: st, Disp: 32}, escaped)
	c.MOVQ(Mem{Base: st, Disp: 40}, inString)
	c.MOVQ(Mem{Base: st, Disp: 48}, fault)
	even := c.GP64()
	c.MOVQ(U64(0x5555555555555555), even)

	c.TESTQ(blocks, blocks)
	c.JZ(LabelRef("done"))
	c.Label("block")
	// The three masks of each half, and the UTF-8 check.
	var quote, backslash, control [2]GPVirtual
	for h := range 2 {
		in := c.YMM()
		c.VMOVDQU(Mem{Base: data, Disp: 32 * h}, in)

		c.Commentf("Half %d: quotes, backslashes and control characters.", h)
		t := c.YMM()
		quote[h], backslash[h], control[h] = c.GP64(), c.GP64(), c.GP64()
		c.VPCMPEQB(in, quoteV, t)
		c.VPMOVMSKB(t, quote[h].As32())
		c.VPCMPEQB(in, backslashV, t)
		c.VPMOVMSKB(t, backslash[h].As32())
		c.VPMAXUB(controlV, in, t)
		c.VPCMPEQB(t, controlV, t)
		c.VPMOVMSKB(t, control[h].As32())

		c.Commentf("Half %d: UTF-8, each byte with the three before it.", h)
		joined, must, prev3, a, b := c.YMM(), c.YMM(), c.YMM(), c.YMM(), c.YMM()
		c.VPERM2I128(U8(0x21), in, prev, joined)
		// A third or fourth byte of a sequence must be a continuation:
		// the byte two back is 111_____ or the byte three back 1111____.
		c.VPALIGNR(U8(14), joined, in, must)
		c.VPALIGNR(U8(13), joined, in, prev3)
		c.VPSUBUSB(third, must, must)
		c.VPSUBUSB(fourth, prev3, prev3)
		c.VPOR(prev3, must, must)
		c.VPAND(high, must, must)
		// The special cases of each byte after the one before it.
		c.VPALIGNR(U8(15), joined, in, joined) // the byte before
		c.VPSRLW(U8(4), joined, a)
		c.VPAND(nibble, a, a)
		c.VPSHUFB(a, tab1h, a)
		c.VPAND(nibble, joined, b)
		c.VPSHUFB(b, tab1l, b)
		c.VPAND(b, a, a)
		c.VPSRLW(U8(4), in, b)
		c.VPAND(nibble, b, b)
		c.VPSHUFB(b, tab2h, b)
		c.VPAND(b, a, a)
		c.VPXOR(must, a, a)
		c.VPOR(a, errV, errV)
		c.VMOVDQU(in, prev)
	}
	q, bs, ctl := quote[0], backslash[0], control[0]
	for _, p := range [][2]GPVirtual{{q, quote[1]}, {bs, backslash[1]}, {ctl, control[1]}} {
		c.SHLQ(U8(32), p[1])
		c.ORQ(p[1], p[0])
	}

	c.Comment("Escapes: the byte after a backslash that ends a run of odd length.")
	b := c.GP64()
	c.MOVQ(escaped, b)
	c.NOTQ(b)
	c.ANDQ(bs, b) // bs &^ prevEscaped
	follows := c.GP64()
	c.LEAQ(Mem{Base: b, Index: b, Scale: 1}, follows) // b << 1
	c.ORQ(escaped, follows)
	odd := c.GP64()
	c.MOVQ(follows, odd)
	c.ORQ(even, odd)
	c.NOTQ(odd)
	c.ANDQ(b, odd) // b &^ even &^ follows
	c.ADDQ(b, odd) // sequences starting on even bits, and the carry
	c.SETCS(escaped.As8())
	c.MOVBQZX(escaped.As8(), escaped)
	c.SHLQ(U8(1), odd)
	c.XORQ(even, odd)
	c.ANDQ(follows, odd) // the escaped bytes
	c.MOVQ(odd, b)
	c.NOTQ(b)
	c.ANDQ(b, q)  // quotes not escaped
	c.ANDQ(b, bs) // backslashes that start an escape

	c.Comment("Strings: the prefix XOR of the quotes, on from the last block.")
	s := c.GP64()
	c.MOVQ(q, s)
	for _, k := range []int{1, 2, 4, 8, 16, 32} {
		t := c.GP64()
		c.MOVQ(s, t)
		c.SHLQ(U8(k), t)
		c.XORQ(t, s)
	}
	c.XORQ(inString, s)
	c.ANDQ(s, ctl)
	c.ORQ(ctl, fault)
	c.SARQ(U8(63), s)
	c.MOVQ(s, inString)
	c.ORQ(bs, q)
	c.MOVQ(q, Mem{Base: marks})

	c.ADDQ(U32(64), data)
	c.ADDQ(U32(8), marks)
	c.DECQ(blocks)
	c.JNZ(LabelRef("block"))

	c.Label("done")
	c.VMOVDQU(prev, Mem{Base: st})
	c.MOVQ(escaped, Mem{Base: st, Disp: 32})
	c.MOVQ(inString, Mem{Base: st, Disp: 40})
	bad := c.GP64()
	c.XORQ(bad, bad)
	c.VPTEST(errV, errV)
	c.SETNE(bad.As8())
	c.ORQ(bad, fault)
	c.MOVQ(fault, Mem{Base: st, Disp: 48})
	c.VZEROUPPER()
	c.RET()
}
