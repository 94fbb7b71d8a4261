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
	t := declareTables(c)
	stage1AVX2(c, t)
	stage1AVX512(c, t)
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

// state holds the registers of what one block carries to the next, as
// stage1State does between calls.
type state struct {
	data, blocks, marks, st  GPVirtual
	escaped, inString, fault GPVirtual
	even                     GPVirtual
}

// prologue loads the arguments and the carried state.
func prologue(c *build.Context, name, doc string) state {
	c.Function(name)
	c.Attributes(attr.NOSPLIT)
	c.SignatureExpr("func(data *byte, blocks int, marks *uint64, st *[7]uint64)")
	c.Pragma("noescape")
	c.Doc(
		name+" reads blocks blocks of 64 bytes of data, writes their marks",
		"and carries st on, as portableBlock does for each block, and records",
		"invalid UTF-8 in st as a fault. "+doc,
	)
	var s state
	s.data, s.blocks, s.marks, s.st = c.GP64(), c.GP64(), c.GP64(), c.GP64()
	c.Load(c.Param("data"), s.data)
	c.Load(c.Param("blocks"), s.blocks)
	c.Load(c.Param("marks"), s.marks)
	c.Load(c.Param("st"), s.st)
	s.escaped, s.inString, s.fault = c.GP64(), c.GP64(), c.GP64()
	c.MOVQ(Mem{Base: s.st, Disp: 32}, s.escaped)
	c.MOVQ(Mem{Base: s.st, Disp: 40}, s.inString)
	c.MOVQ(Mem{Base: s.st, Disp: 48}, s.fault)
	s.even = c.GP64()
	c.MOVQ(U64(0x5555555555555555), s.even)
	return s
}

// marksOf writes the marks of a block from its masks of quotes,
// backslashes and control characters, as blockMarks does, and moves on to
// the next block.
func marksOf(c *build.Context, s state, q, bs, ctl GPVirtual) {
	c.Comment("Escapes: the byte after a backslash that ends a run of odd length.")
	b := c.GP64()
	c.MOVQ(s.escaped, b)
	c.NOTQ(b)
	c.ANDQ(bs, b) // bs &^ prevEscaped
	follows := c.GP64()
	c.LEAQ(Mem{Base: b, Index: b, Scale: 1}, follows) // b << 1
	c.ORQ(s.escaped, follows)
	odd := c.GP64()
	c.MOVQ(follows, odd)
	c.ORQ(s.even, odd)
	c.NOTQ(odd)
	c.ANDQ(b, odd) // b &^ even &^ follows
	c.ADDQ(b, odd) // sequences starting on even bits, and the carry
	c.SETCS(s.escaped.As8())
	c.MOVBQZX(s.escaped.As8(), s.escaped)
	c.SHLQ(U8(1), odd)
	c.XORQ(s.even, odd)
	c.ANDQ(follows, odd) // the escaped bytes
	c.MOVQ(odd, b)
	c.NOTQ(b)
	c.ANDQ(b, q)  // quotes not escaped
	c.ANDQ(b, bs) // backslashes that start an escape

	c.Comment("Strings: the prefix XOR of the quotes, on from the last block.")
	x := c.GP64()
	c.MOVQ(q, x)
	for _, k := range []int{1, 2, 4, 8, 16, 32} {
		t := c.GP64()
		c.MOVQ(x, t)
		c.SHLQ(U8(k), t)
		c.XORQ(t, x)
	}
	c.XORQ(s.inString, x)
	c.ANDQ(x, ctl)
	c.ORQ(ctl, s.fault)
	c.SARQ(U8(63), x)
	c.MOVQ(x, s.inString)
	c.ORQ(bs, q)
	c.MOVQ(q, Mem{Base: s.marks})

	c.ADDQ(U32(64), s.data)
	c.ADDQ(U32(8), s.marks)
	c.DECQ(s.blocks)
	c.JNZ(LabelRef("block"))
}

// epilogue stores the carried state, with bad (1 for invalid UTF-8, else
// 0) in the fault, and returns.
func epilogue(c *build.Context, s state, bad GPVirtual) {
	c.MOVQ(s.escaped, Mem{Base: s.st, Disp: 32})
	c.MOVQ(s.inString, Mem{Base: s.st, Disp: 40})
	c.ORQ(bad, s.fault)
	c.MOVQ(s.fault, Mem{Base: s.st, Disp: 48})
	c.VZEROUPPER()
	c.RET()
}

// utf8Tables declares the constants of the UTF-8 check.
type utf8Tables struct {
	byte1High, byte1Low, byte2High, third, fourth, high Mem
}

func declareTables(c *build.Context) utf8Tables {
	return utf8Tables{
		byte1High: table16(c, "utf8Byte1High", byte1High),
		byte1Low:  table16(c, "utf8Byte1Low", byte1Low),
		byte2High: table16(c, "utf8Byte2High", byte2High),
		third:     splat32(c, "utf8Third", 0xe0-0x80),
		fourth:    splat32(c, "utf8Fourth", 0xf0-0x80),
		high:      splat32(c, "highBits", 0x80),
	}
}

// stage1AVX2 writes the function of the same name: stage1Portable's
// blocks (portableBlock and blockMarks) with AVX2, and the UTF-8 check.
func stage1AVX2(c *build.Context, t utf8Tables) {
	s := prologue(c, "stage1AVX2", "It needs AVX2.")
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
	c.VBROADCASTI128(t.byte1High, tab1h)
	c.VBROADCASTI128(t.byte1Low, tab1l)
	c.VBROADCASTI128(t.byte2High, tab2h)
	prev := c.YMM()
	c.VMOVDQU(Mem{Base: s.st}, prev)
	errV := c.YMM()
	c.VPXOR(errV, errV, errV)

	c.TESTQ(s.blocks, s.blocks)
	c.JZ(LabelRef("done"))
	c.Label("block")
	var quote, backslash, control [2]GPVirtual
	for h := range 2 {
		in := c.YMM()
		c.VMOVDQU(Mem{Base: s.data, Disp: 32 * h}, in)

		c.Commentf("Half %d: quotes, backslashes and control characters.", h)
		m := c.YMM()
		quote[h], backslash[h], control[h] = c.GP64(), c.GP64(), c.GP64()
		c.VPCMPEQB(in, quoteV, m)
		c.VPMOVMSKB(m, quote[h].As32())
		c.VPCMPEQB(in, backslashV, m)
		c.VPMOVMSKB(m, backslash[h].As32())
		c.VPMAXUB(controlV, in, m)
		c.VPCMPEQB(m, controlV, m)
		c.VPMOVMSKB(m, control[h].As32())

		c.Commentf("Half %d: UTF-8, each byte with the three before it.", h)
		joined, must, prev3, a, b := c.YMM(), c.YMM(), c.YMM(), c.YMM(), c.YMM()
		c.VPERM2I128(U8(0x21), in, prev, joined)
		// A third or fourth byte of a sequence must be a continuation:
		// the byte two back is 111_____ or the byte three back 1111____.
		c.VPALIGNR(U8(14), joined, in, must)
		c.VPALIGNR(U8(13), joined, in, prev3)
		c.VPSUBUSB(t.third, must, must)
		c.VPSUBUSB(t.fourth, prev3, prev3)
		c.VPOR(prev3, must, must)
		c.VPAND(t.high, must, must)
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
	for _, p := range [][2]GPVirtual{quote, backslash, control} {
		c.SHLQ(U8(32), p[1])
		c.ORQ(p[1], p[0])
	}
	marksOf(c, s, quote[0], backslash[0], control[0])

	c.Label("done")
	c.VMOVDQU(prev, Mem{Base: s.st})
	bad := c.GP64()
	c.XORQ(bad, bad)
	c.VPTEST(errV, errV)
	c.SETNE(bad.As8())
	epilogue(c, s, bad)
}

// stage1AVX512 writes the function of the same name: stage1AVX2 on one
// 64-byte vector per block, with the masks in mask registers.
func stage1AVX512(c *build.Context, t utf8Tables) {
	s := prologue(c, "stage1AVX512", "It needs AVX-512 F and BW.")
	broadcast := func(b byte) VecVirtual {
		g := c.GP32()
		c.MOVL(U32(b), g)
		z := c.ZMM()
		c.VPBROADCASTB(g, z)
		return z
	}
	quoteV := broadcast('"')
	backslashV := broadcast('\\')
	controlV := broadcast(0x20)
	nibble := broadcast(0x0f)
	third, fourth, high := broadcast(0xe0-0x80), broadcast(0xf0-0x80), broadcast(0x80)
	tab1h, tab1l, tab2h := c.ZMM(), c.ZMM(), c.ZMM()
	c.VBROADCASTI32X4(t.byte1High, tab1h)
	c.VBROADCASTI32X4(t.byte1Low, tab1l)
	c.VBROADCASTI32X4(t.byte2High, tab2h)
	// The last 32 bytes read are the high half of prev.
	prev := c.ZMM()
	c.VPXORD(prev, prev, prev)
	c.VINSERTI64X4(U8(1), Mem{Base: s.st}, prev, prev)
	errV := c.ZMM()
	c.VPXORD(errV, errV, errV)

	c.TESTQ(s.blocks, s.blocks)
	c.JZ(LabelRef("done"))
	c.Label("block")
	in := c.ZMM()
	c.VMOVDQU64(Mem{Base: s.data}, in)

	c.Comment("Quotes, backslashes and control characters.")
	k := c.K()
	q, bs, ctl := c.GP64(), c.GP64(), c.GP64()
	c.VPCMPEQB(quoteV, in, k)
	c.KMOVQ(k, q)
	c.VPCMPEQB(backslashV, in, k)
	c.KMOVQ(k, bs)
	c.VPCMPUB(U8(1), controlV, in, k) // in < 0x20
	c.KMOVQ(k, ctl)

	c.Comment("UTF-8, each byte with the three before it.")
	joined, must, prev3, a, b := c.ZMM(), c.ZMM(), c.ZMM(), c.ZMM(), c.ZMM()
	c.VALIGNQ(U8(6), prev, in, joined) // the 16 bytes before each 16 of in
	c.VPALIGNR(U8(14), joined, in, must)
	c.VPALIGNR(U8(13), joined, in, prev3)
	c.VPSUBUSB(third, must, must)
	c.VPSUBUSB(fourth, prev3, prev3)
	c.VPTERNLOGD(U8(0xa8), high, prev3, must) // (must | prev3) & high
	c.VPALIGNR(U8(15), joined, in, joined)
	c.VPSRLW(U8(4), joined, a)
	c.VPANDD(nibble, a, a)
	c.VPSHUFB(a, tab1h, a)
	c.VPANDD(nibble, joined, b)
	c.VPSHUFB(b, tab1l, b)
	c.VPANDD(b, a, a)
	c.VPSRLW(U8(4), in, b)
	c.VPANDD(nibble, b, b)
	c.VPSHUFB(b, tab2h, b)
	c.VPANDD(b, a, a)
	c.VPTERNLOGD(U8(0xf6), must, a, errV) // errV | (a ^ must)
	c.VMOVDQA64(in, prev)
	marksOf(c, s, q, bs, ctl)

	c.Label("done")
	c.VEXTRACTI64X4(U8(1), prev, Mem{Base: s.st})
	bad := c.GP64()
	c.XORQ(bad, bad)
	c.VPTESTMQ(errV, errV, k)
	c.KORTESTW(k, k)
	c.SETNE(bad.As8())
	epilogue(c, s, bad)
}
