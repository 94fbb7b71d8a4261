package columnar

import (
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// arrow-go compresses each Parquet page with EncodeAll on a pooled
// klauspost encoder whose window is the library default, 8 MiB, and the
// encoder keeps a history buffer of twice the window: 16 MiB of heap per
// encoder, for pages that hold at most a few MiB. resultZstd is the codec
// gavel's result parts are compressed with instead: the same zstd frames
// (any reader decodes them), at the fastest level, with a 1 MiB window,
// which keeps the history buffer at 2 MiB. It is registered with arrow-go
// when the package is initialized: arrow-go's codecs are process-wide, so
// every arrow-go Parquet writer in a process that links columnar uses it
// (the datasets gavel gen writes included), whatever ran before.
//
// The output does not depend on the window for pages up to 1 MiB (the
// data page size result parts are written with), and depends on nothing
// but the page's bytes: compression stays deterministic.

// resultWindow is the zstd window of result parts.
const resultWindow = 1 << 20

func init() {
	base, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		panic("columnar: arrow-go has no zstd codec: " + err.Error())
	}
	compress.RegisterCodec(compress.Codecs.Zstd, &resultZstd{Codec: base})
}

type resultZstd struct {
	compress.Codec // decoding, streams and bounds stay arrow-go's
	pool           sync.Pool
}

func (z *resultZstd) encoder() *zstd.Encoder {
	if e, ok := z.pool.Get().(*zstd.Encoder); ok {
		return e
	}
	e, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(resultWindow), zstd.WithAllLitEntropyCompression(true))
	if err != nil {
		panic("columnar: zstd encoder options: " + err.Error()) // constant options
	}
	return e
}

// Encode compresses src, appending to dst[:0] as arrow-go's codec does.
func (z *resultZstd) Encode(dst, src []byte) []byte {
	e := z.encoder()
	defer z.pool.Put(e)
	return e.EncodeAll(src, dst[:0])
}

// EncodeLevel ignores the level: result parts are always written at the
// fastest level.
func (z *resultZstd) EncodeLevel(dst, src []byte, _ int) []byte { return z.Encode(dst, src) }
