"""gavel._pipe.PipeSink: an Arrow IPC stream into a pipe, its bodies spliced."""

from __future__ import annotations

import fcntl
import gc
import os
import sys
import threading
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from gavel import _grade
from gavel._pipe import SPLICE_MIN, PipeSink, _vmsplice

linux = pytest.mark.skipif(_vmsplice is None, reason="vmsplice is Linux's")
F_SETPIPE_SZ = 1031


def table() -> pa.Table:
    """Rows with strings long enough that their bodies are spliced, nulls, and numbers."""
    n = 600
    text = [None if i % 7 == 3 else f'{{"row": {i}, "pad": "{"x" * (i % 300)}"}}' * 20 for i in range(n)]
    return pa.table({"rollout_id": [f"r{i}" for i in range(n)], "final_state": text, "sample": list(range(n))})


def batches(t: pa.Table) -> Iterator[pa.RecordBatch]:
    """t's rows in slices that start mid-batch, so that the writer rebases
    their offsets into buffers of its own, freed once written."""
    for b in t.to_batches():
        for start in range(0, b.num_rows, 97):
            yield b.slice(start, 97)


def through_pipe(t: pa.Table, *, splice: bool) -> tuple[bytes, PipeSink]:
    r, w = os.pipe()
    chunks: list[bytes] = []

    def drain() -> None:
        with os.fdopen(r, "rb") as f:
            chunks.append(f.read())

    reader = threading.Thread(target=drain)
    reader.start()
    sink = PipeSink(w, splice=splice)
    try:
        wr = ipc.new_stream(pa.PythonFile(sink, mode="w"), t.schema)  # type: ignore[arg-type]
        for b in batches(t):
            wr.write_batch(b)
        wr.close()
        sink.flush()
    finally:
        os.close(w)
        reader.join()
    return chunks[0], sink


def plain(t: pa.Table) -> bytes:
    out = pa.BufferOutputStream()
    wr = ipc.new_stream(out, t.schema)
    for b in batches(t):
        wr.write_batch(b)
    wr.close()
    return bytes(out.getvalue().to_pybytes())


@linux
def test_spliced_stream_is_the_written_stream() -> None:
    t = table()
    got, sink = through_pipe(t, splice=True)
    assert got == plain(t)
    assert sink.spliced > 0
    assert ipc.open_stream(got).read_all().equals(t)


def test_unspliced_stream_is_the_written_stream() -> None:
    t = table()
    got, sink = through_pipe(t, splice=False)
    assert got == plain(t)
    assert sink.spliced == 0


@linux
def test_spliced_buffers_are_held_until_read() -> None:
    # A buffer that nothing else keeps is spliced and dropped; memory of its
    # size is then allocated and overwritten. The reader must still get the
    # first buffer's bytes: the sink holds it while the pipe refers to it.
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, F_SETPIPE_SZ, 1 << 20)
    except OSError:
        pytest.skip("cannot grow the pipe")
    try:
        sink = PipeSink(w)
        size = 4 * SPLICE_MIN
        buf = pa.allocate_buffer(size)
        memoryview(buf).cast("B")[:] = b"a" * size  # type: ignore[index]
        sink.write(buf)
        assert sink.spliced == size
        del buf
        gc.collect()
        others = []
        for _ in range(8):
            o = pa.allocate_buffer(size)
            memoryview(o).cast("B")[:] = b"b" * size  # type: ignore[index]
            others.append(o)
        got = b""
        while len(got) < size:
            got += os.read(r, size - len(got))
        assert got == b"a" * size
        # Read: the next splice lets it go.
        more = pa.py_buffer(b"c" * SPLICE_MIN)
        sink.write(more)
        assert [b for _, b in sink._held] == [more]
    finally:
        os.close(w)
        os.close(r)


def test_pieces_cut_big_batches_without_copying() -> None:
    t = table()
    b = t.to_batches()[0]
    old = _grade.PIECE_BYTES
    try:
        _grade.PIECE_BYTES = b.nbytes // 5
        pieces = list(_grade._pieces(b))
    finally:
        _grade.PIECE_BYTES = old
    assert len(pieces) >= 5
    assert pa.Table.from_batches(pieces).equals(pa.Table.from_batches([b]))
    base = b.column(1).buffers()[2]
    assert base is not None
    assert all(p.column(1).buffers()[2].address == base.address for p in pieces)  # type: ignore[union-attr]
    small = pa.record_batch({"x": [1]})
    assert list(_grade._pieces(small)) == [small]


if sys.platform.startswith("linux"):

    def test_vmsplice_is_found_on_linux() -> None:
        assert _vmsplice is not None
