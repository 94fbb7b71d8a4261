"""gavel.grade: runs the gavel binary on files or on in-memory data."""

from __future__ import annotations

import errno
import io
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, Union, Unpack, cast

import pyarrow as pa
import pyarrow.ipc as ipc

from ._binary import binary
from ._client import json_default
from ._errors import GavelError
from ._frames import json_columns, memory_args, pandas_table
from ._functions import Verifiers, binary_env, current_env, serving
from ._functions import take as take_functions
from ._options import GradeOptions, PathArg, option_args
from ._pipe import PipeSink
from ._results import Results, read

if TYPE_CHECKING:
    import pandas
    import polars
    import ray.data

__all__ = ["grade", "Data"]

Data = Union[
    PathArg,
    Sequence[PathArg],
    Sequence[Mapping[str, Any]],
    pa.Table,
    pa.RecordBatch,
    pa.RecordBatchReader,
    "pandas.DataFrame",
    "polars.DataFrame",
    "ray.data.Dataset",
]
"""What :func:`grade` grades: paths or URLs (one or a list), which the binary
reads itself; or rows in memory: a pyarrow ``Table``, ``RecordBatch`` or
``RecordBatchReader``, a pandas or Polars ``DataFrame`` (or any object with
``__arrow_c_stream__``), a Ray ``Dataset`` (its blocks fetched to this
process one at a time), or a list of dicts."""


def grade(
    data: Data,
    *,
    verifiers: Verifiers | None = None,
    pure: bool | None = None,
    **options: Unpack[GradeOptions],
) -> Results:
    """Grades rollouts with gavel's verifiers and returns the results.

    ``data`` is one of :data:`Data`. Paths and URLs (files, directories,
    globs, ``s3://...``) are read by the binary, as ``gavel grade`` reads
    its inputs. Rows in memory are sent to the binary as an Arrow IPC
    stream on its standard input, batch by batch, without a temporary file
    (a pyarrow table or a Polars frame written from its own buffers,
    without a conversion), and a list of dicts as JSON Lines, one dict a
    line; the rewards come back as an Arrow stream on its standard output.
    Rows in memory are graded with ``struct_nulls="absent"`` unless it is
    given: a null field of a struct is no member, as in the JSON objects
    such structs are most often inferred from; a pandas frame's object
    columns that hold the states and the log are sent as JSON text.

    ``options`` are the flags of ``gavel grade`` (:class:`GradeOptions`):
    ``spec=``, ``tasks=``, ``map=``, ``keep=``, ``judge_model=``,
    ``workers=``, ...; a repeatable flag takes a list, a boolean flag
    ``True``. With ``out=`` the run writes that result directory and keeps
    it; without it, paths are graded into a temporary directory that is
    read into memory and removed, and rows in memory are streamed with no
    directory at all (then :attr:`Results.judgements` is ``None``: a
    streamed run refuses several judgements per check).

    ``verifiers={"TASK-OR-PATTERN": fn, ...}`` grades with Python
    functions too, beside the spec files and Go verifiers: each ``fn``
    takes a rollout as a dict and returns a reward, a dict or a list of
    checks, as for :func:`gavel.remote.serve`; a value is a function or a
    pair ``(fn, "VERSION")``, and a pattern a task id, a prefix ending in
    ``*`` or ``"all"``. ``pure=`` is then required: True declares that each
    function gives the same answer to the same rollout every time (its
    answers are cached and its rows reused by its version; a function
    without one is neither), False that it may not (never cached nor
    reused). The functions run in worker processes forked from this one,
    one per CPU, behind a service on 127.0.0.1 that the call starts and
    stops (see docs/python.md, "Functions as verifiers").

    Rows with status ``error`` are rows of the results (``exit_status``
    3). A usage or configuration error (exit status 2) or a fatal error
    (exit status 1) raises :class:`GavelError` with the binary's message.
    """
    functions = take_functions(verifiers, pure, "grade")
    if functions is not None:
        # The functions' service runs for the call; the binary reaches it
        # through its environment (binary_env) and the spec file it adds.
        with serving(functions) as served, binary_env(served.env):
            return grade(data, **cast(GradeOptions, served.options(options)))
    opts: dict[str, object] = dict(options)
    out = cast("PathArg | None", opts.pop("out", None))
    if out is not None and os.fspath(out).startswith(AZBLOB):
        # Refused before the binary writes what could not be read back.
        raise ValueError(f"grade: out={os.fspath(out)!r}: {AZBLOB_UNREADABLE}")
    args = option_args(opts)
    if isinstance(data, (str, os.PathLike)):
        if os.fspath(data) == "-":
            raise ValueError("grade: '-' is the binary's standard input, not a path: pass the rows themselves")
        return _grade_paths([os.fspath(data)], args, out)
    if isinstance(data, Sequence) and not isinstance(data, (bytes, bytearray)):
        if not data:
            raise ValueError("grade: no data (an empty list)")
        if all(isinstance(d, (str, os.PathLike)) for d in data):
            return _grade_paths([os.fspath(d) for d in data], args, out)  # type: ignore[arg-type]
        if all(isinstance(d, Mapping) for d in data):
            return _grade_stream(_Lines(data), args, out)  # type: ignore[arg-type]
        raise TypeError("grade: a list must hold only paths or only rows (dicts)")
    # Rows in memory: null struct fields are absent members (gavel._frames).
    return _grade_stream(_reader(data, json_columns(opts)), memory_args(opts), out)


def _reader(data: object, json_cols: Sequence[str] = ()) -> pa.RecordBatchReader:
    """Returns a reader over in-memory data, without copying where Arrow
    allows; a pandas frame's object columns named in json_cols are sent as
    JSON text (gavel._frames.pandas_table)."""
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.Table):
        return data.to_reader()
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data]).to_reader()
    ray_data = sys.modules.get("ray.data")
    if ray_data is not None and isinstance(data, ray_data.Dataset):
        return _ray_reader(data)
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(data, pd.DataFrame):
        # pandas' own stream would carry the index as a column.
        return pandas_table(data, json_cols).to_reader()
    if hasattr(data, "__arrow_c_stream__"):
        # Polars, DuckDB and other Arrow producers hand over their buffers.
        return pa.RecordBatchReader.from_stream(data)
    if hasattr(data, "collect") and type(data).__module__.startswith("polars"):
        raise TypeError("grade: a Polars LazyFrame: call .collect() first")
    raise TypeError(
        f"grade: cannot grade a {type(data).__module__}.{type(data).__qualname__}: want paths, "
        "a pyarrow Table or RecordBatchReader, a pandas or Polars DataFrame, or a list of dicts"
    )


def _ray_reader(ds: Any) -> pa.RecordBatchReader:
    """Returns a reader over a Ray Dataset's blocks, fetched one at a time.

    The schema is the dataset's, or else its first block's; a later block
    whose types differ (a column of nulls in one block) is cast to it.
    """
    blocks = iter(ds.iter_batches(batch_size=None, batch_format="pyarrow"))
    schema = getattr(ds.schema(), "base_schema", None)
    first: pa.Table | None = None
    if not isinstance(schema, pa.Schema):
        first = next(blocks, None)
        if first is None:
            raise ValueError("grade: the Ray Dataset has no rows")
        schema = first.schema

    def batches() -> Iterator[pa.RecordBatch]:
        for t in itertools.chain([first] if first is not None else [], blocks):
            if not t.schema.equals(schema):
                t = t.select(schema.names).cast(schema)
            yield from t.to_batches()

    return pa.RecordBatchReader.from_batches(schema, batches())


AZBLOB = "azblob://"
AZBLOB_UNREADABLE = (
    "gavel.read cannot read Azure Blob Storage (pyarrow has no azblob:// filesystem): "
    "write the results to a directory, s3:// or gs://, or run the gavel binary itself"
)


class _Lines:
    """Rows given as dicts, sent to the binary as JSON Lines: one dict a
    line, read as ``gavel grade`` reads a JSON Lines file, so that a member
    one row lacks stays absent, and a value of the wrong type (a ``log``
    that is a number, an ``output`` that is not a string) is that row's
    input error, whatever the other rows hold.
    """

    def __init__(self, rows: Iterable[Mapping[str, Any]]) -> None:
        # Encoded before the binary starts: a row that is not JSON raises
        # TypeError, naming its index and field, with nothing graded.
        self.data = b"".join(_json_line(row, i) for i, row in enumerate(rows))

    def chunks(self, size: int = 1 << 20) -> Iterator[memoryview]:
        """Yields the lines in slices of at most size bytes."""
        view = memoryview(self.data)
        for at in range(0, len(view), size):
            yield view[at : at + size]


def _json_line(row: Mapping[str, Any], i: int) -> bytes:
    """Returns row as one line of JSON, newline included."""
    try:
        return (json.dumps(row, ensure_ascii=False, separators=(",", ":"), default=json_default) + "\n").encode()
    except (TypeError, ValueError) as e:
        for k, v in row.items():
            try:
                json.dumps(v, default=json_default)
            except (TypeError, ValueError) as fe:
                raise TypeError(f"grade: row {i}, field {k}: {fe}") from e
        raise TypeError(f"grade: row {i}: {e}") from e


def _failed(code: int, stderr: str) -> GavelError:
    """Returns the error of a run that exited with code, in the binary's words.

    The binary prints an error as ``gavel: MESSAGE``, maybe followed by
    indented lines of detail, and, for a usage error, ``Try: HINT``;
    anything else it wrote stays in ``stderr``.
    """
    if code < 0:
        return GavelError(f"gavel was killed by signal {-code}", exit_status=code, stderr=stderr)
    msgs: list[str] = []
    hint = None
    for line in stderr.splitlines():
        if line.startswith("gavel: "):
            msgs.append(line.removeprefix("gavel: "))
        elif line.startswith("Try: "):
            hint = line.removeprefix("Try: ")
        elif msgs and line.startswith((" ", "\t")):
            msgs.append(line)  # the detail lines of a message
    if not msgs:
        msgs = stderr.strip().splitlines()[-5:] or [f"gavel exited with status {code} and no message"]
    return GavelError("\n".join(msgs), exit_status=code, hint=hint, stderr=stderr)


def _grade_paths(inputs: list[str], args: list[str], out: PathArg | None) -> Results:
    """Grades files or URLs the binary reads, into out or a temporary directory."""
    bin_path = binary()
    with tempfile.TemporaryDirectory(prefix="gavel-") as tmp:
        dest = os.fspath(out) if out is not None else os.path.join(tmp, "out")
        # "--" ends the flags: an input named like a flag stays an input.
        cmd = [bin_path, "grade", *args, "--out", dest, "--", *inputs]
        proc = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace", env=current_env()
        )
        if proc.returncode not in (0, 3):
            raise _failed(proc.returncode, proc.stderr)
        res = read(dest, exit_status=proc.returncode)
        res.log = proc.stderr
        if out is None:
            res.out = None
        return res


def _grade_stream(reader: pa.RecordBatchReader | _Lines, args: list[str], out: PathArg | None) -> Results:
    """Grades in-memory rows sent to the binary as an Arrow IPC stream.

    Without out, the rewards come back on the binary's standard output and
    the checks in an Arrow IPC file it writes (--checks-out); with out, the
    binary writes that result directory, which is then read.
    """
    if out is not None:
        code, stderr, _, _, _ = run_stream(reader, args, dest=os.fspath(out))
        res = read(os.fspath(out), exit_status=code)
        res.log = stderr
        return res
    code, stderr, rewards, checks, summary = run_stream(reader, args, checks=True, summary=True)
    assert rewards is not None and checks is not None
    return Results(rewards=rewards, checks=checks, summary=summary, exit_status=code, log=stderr)


def run_stream(
    reader: pa.RecordBatchReader | _Lines,
    args: list[str],
    *,
    checks: bool = False,
    summary: bool = False,
    dest: str = "-",
) -> tuple[int, str, pa.Table | None, pa.Table | None, dict[str, Any] | None]:
    """Runs ``gavel grade`` on reader's rows, sent as an Arrow IPC stream
    (rows given as dicts, as JSON Lines).

    Returns the exit status (0 or 3), the binary's standard error, and,
    when dest is ``-``, the rewards read from its standard output, when
    checks is true the checks it wrote to an Arrow IPC file, and when
    summary is true the summary it wrote as JSON (--summary-out; each
    ``None`` when not asked for). Any other dest is a result directory the
    binary writes.
    A usage or fatal error raises :class:`GavelError`.

    A thread writes the batches to the binary's standard input while this
    one reads the rewards stream from its standard output and another
    drains its standard error, so neither side waits on a full pipe.
    """
    bin_path = binary()
    with tempfile.TemporaryDirectory(prefix="gavel-") as tmp:
        checks_path = os.path.join(tmp, "checks.arrow")
        summary_path = os.path.join(tmp, "summary.json")
        extra = ["--checks-out", checks_path] if checks and dest == "-" else []
        if summary and dest == "-":
            extra += ["--summary-out", summary_path]
        fmt = "jsonl" if isinstance(reader, _Lines) else "arrow-stream"
        cmd = [bin_path, "grade", *args, "--input-format", fmt, *extra, "--out", dest, "-"]
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=current_env()
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        failures: list[BaseException] = []
        stderr_chunks: list[bytes] = []
        # The sink outlives the binary: the pipe may refer to the buffers it
        # holds until the binary has read them (gavel._pipe).
        sink = PipeSink(proc.stdin.fileno())
        if isinstance(reader, _Lines):
            writer = threading.Thread(target=_write_lines, args=(reader, proc.stdin, failures), daemon=True)
        else:
            writer = threading.Thread(target=_write_stream, args=(reader, proc.stdin, sink, failures), daemon=True)
        drainer = threading.Thread(target=_drain, args=(proc.stderr, stderr_chunks), daemon=True)
        writer.start()
        drainer.start()
        rewards: pa.Table | None = None
        read_err: Exception | None = None
        try:
            if dest == "-":
                try:
                    rewards = ipc.open_stream(pa.PythonFile(cast(io.IOBase, proc.stdout), mode="r")).read_all()
                except (pa.ArrowInvalid, OSError) as e:
                    read_err = e
            else:
                proc.stdout.read()
            code = proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            writer.join()
            drainer.join()
            proc.stdout.close()
            proc.stderr.close()
        stderr = b"".join(stderr_chunks).decode("utf-8", "replace")
        if failures:
            raise failures[0]
        if code not in (0, 3):
            raise _failed(code, stderr)
        if dest != "-":
            return code, stderr, None, None, None
        if read_err is not None or rewards is None:
            raise GavelError(f"read the rewards stream from gavel: {read_err}", exit_status=code, stderr=stderr)
        checks_table: pa.Table | None = None
        if checks:
            try:
                with pa.OSFile(checks_path, "r") as f:
                    checks_table = ipc.open_file(f).read_all()
            except (FileNotFoundError, pa.ArrowInvalid) as e:
                raise GavelError(f"read the checks gavel wrote: {e}", exit_status=code, stderr=stderr) from e
        summary_doc: dict[str, Any] | None = None
        if summary:
            try:
                with open(summary_path, encoding="utf-8") as sf:
                    summary_doc = json.load(sf)
            except (OSError, ValueError) as e:
                raise GavelError(f"read the summary gavel wrote: {e}", exit_status=code, stderr=stderr) from e
        return code, stderr, rewards, checks_table, summary_doc


def _write_stream(reader: pa.RecordBatchReader, stdin: IO[bytes], sink: PipeSink, failures: list[BaseException]) -> None:
    """Writes reader's batches to the binary's standard input through sink
    (over stdin's file descriptor), then closes it.

    A closed pipe means the binary stopped reading (a usage error, a fatal
    error): its exit status and message say why, so it is not a failure
    here. Any other error, such as one raised by the caller's reader, is,
    and the stream is then cut without its end marker, so that the binary
    stops on a truncated input rather than grading a part of the rows.
    """

    def write() -> None:
        w = ipc.new_stream(pa.PythonFile(cast(io.IOBase, sink), mode="w"), reader.schema)
        for batch in reader:
            for piece in _pieces(batch):
                w.write_batch(piece)
        w.close()
        sink.flush()

    _feed(write, stdin, failures)


def _write_lines(lines: _Lines, stdin: IO[bytes], failures: list[BaseException]) -> None:
    """Writes lines to the binary's standard input, then closes it, as
    _write_stream writes batches."""

    def write() -> None:
        for chunk in lines.chunks():
            stdin.write(chunk)
        stdin.flush()

    _feed(write, stdin, failures)


def _feed(write: Callable[[], None], stdin: IO[bytes], failures: list[BaseException]) -> None:
    """Runs write, which feeds the binary's standard input, then closes it.
    A closed pipe is not a failure (the binary stopped reading and says
    why); any other error is appended to failures."""
    try:
        write()
    except OSError as e:
        if e.errno not in (errno.EPIPE, errno.ECONNRESET) and not isinstance(e, BrokenPipeError):
            failures.append(e)
    except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
        failures.append(e)
    finally:
        try:
            stdin.close()
        except OSError:
            pass


PIECE_BYTES = 4 << 20
"""The size of the record batches sent to the binary's standard input.

Each batch is cut, without copying (``RecordBatch.slice``), into pieces of
about this many bytes, never less than a row. The binary reads a record
batch whole before grading its rows, and the pipe between the two holds
1 MiB: with 112 MB batches (10,000 rollouts of 11 KB, as a Parquet file
read by pyarrow gives), the binary's workers waited for each one to cross,
and the body buffers they were read into outgrew the CPU's caches. 4 MiB
pieces graded 200,000 such rollouts a quarter faster. The rows, their order
and so every output are the same whatever the pieces."""


def _pieces(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    """Cuts batch into slices of about PIECE_BYTES bytes (at least one row)."""
    rows = batch.num_rows
    size = batch.nbytes
    if rows <= 1 or size <= PIECE_BYTES:
        yield batch
        return
    step = max(1, rows * PIECE_BYTES // size)
    for start in range(0, rows, step):
        yield batch.slice(start, step)


def _drain(f: IO[bytes], chunks: list[bytes]) -> None:
    """Reads f to its end into chunks."""
    chunks.append(f.read())
