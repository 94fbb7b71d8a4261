"""Results of a run, and reading them from a result directory."""

from __future__ import annotations

import io
import json
import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.ipc as ipc
import pyarrow.json as pajson
import pyarrow.parquet as pq

from ._errors import GavelError
from ._options import PathArg

__all__ = [
    "Results",
    "read",
    "REWARDS_SCHEMA",
    "CHECKS_SCHEMA",
    "JUDGEMENTS_SCHEMA",
    "FLAGS_FIELD",
    "OUTPUT_HASH_FIELD",
    "KIND_FIELD",
    "TURN_REWARDS_FIELD",
    "TURNS_FIELD",
    "TURN_FIELD",
]


def _fields(*fields: pa.Field[Any]) -> list[pa.Field[Any]]:
    return list(fields)


REWARDS_SCHEMA = pa.schema(
    _fields(
        pa.field("rollout_id", pa.string(), nullable=False),
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("verifier_id", pa.string()),
        pa.field("status", pa.string(), nullable=False),
        pa.field("passed", pa.bool_()),
        pa.field("reward", pa.float64()),
        pa.field("checks_total", pa.int32(), nullable=False),
        pa.field("checks_passed", pa.int32(), nullable=False),
        pa.field("required_total", pa.int32(), nullable=False),
        pa.field("required_passed", pa.int32(), nullable=False),
        pa.field("error_kind", pa.string()),
        pa.field("error", pa.string()),
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("source_row", pa.int64(), nullable=False),
        pa.field("input_hash", pa.string()),
    )
)
"""The fixed columns of the rewards table; in a run with flags
:data:`FLAGS_FIELD` and :data:`OUTPUT_HASH_FIELD` follow them, in a run
that scores turns :data:`TURN_REWARDS_FIELD` and :data:`TURNS_FIELD`, then
the kept metadata columns (nullable strings)."""

FLAGS_FIELD: pa.Field[Any] = pa.field("flags", pa.list_(pa.field("item", pa.string(), nullable=False)), nullable=False)
"""The rewards' ``flags`` column of a run with flags (health flags are on by
default): the ids of the flags raised on the rollout, after ``input_hash``."""

OUTPUT_HASH_FIELD: pa.Field[Any] = pa.field("output_hash", pa.string())
"""The rewards' ``output_hash`` column of a run with flags, after
``flags``: the hash of the rollout's output (null when its input could not
be read)."""

KIND_FIELD: pa.Field[Any] = pa.field("kind", pa.string(), nullable=False)
"""The checks' ``kind`` column of a run with flags: ``check`` or
``flag``."""

TURN_REWARDS_FIELD: pa.Field[Any] = pa.field("turn_rewards", pa.list_(pa.field("item", pa.float64())))
"""The rewards' ``turn_rewards`` column of a run that scores turns
(docs/turns.md), after those of flags: the reward of each agent turn, in
order, ``None`` for a turn not scored; the list is ``None`` when the
rollout's verifier scores no turns or its status is ``error``."""

TURNS_FIELD: pa.Field[Any] = pa.field("turns", pa.int32())
"""The rewards' ``turns`` column of a run that scores turns, after
``turn_rewards``: the number of agent turns, ``None`` when the rollout has
no conversation."""

TURN_FIELD: pa.Field[Any] = pa.field("turn", pa.int32())
"""The checks' ``turn`` column of a run that scores turns, last: the index
of the agent turn the check is credited to, ``None`` for none."""


def flag_fields(schema: pa.Schema, names: Iterable[str]) -> list[pa.Field[Any]]:
    """Returns the fields of schema, then those of a run with flags and of
    a run that scores turns that names holds (the rewards' flags and turn
    rewards, the checks' kind and turn), in the binary's order."""
    fields = list(schema)
    present = set(names)
    if schema.equals(REWARDS_SCHEMA):
        if FLAGS_FIELD.name in present:
            fields.append(FLAGS_FIELD)
            if OUTPUT_HASH_FIELD.name in present:
                fields.append(OUTPUT_HASH_FIELD)
        if TURN_REWARDS_FIELD.name in present:
            fields.append(TURN_REWARDS_FIELD)
            if TURNS_FIELD.name in present:
                fields.append(TURNS_FIELD)
    if schema.equals(CHECKS_SCHEMA):
        if KIND_FIELD.name in present:
            fields.append(KIND_FIELD)
        if TURN_FIELD.name in present:
            fields.append(TURN_FIELD)
    return fields

CHECKS_SCHEMA = pa.schema(
    _fields(
        pa.field("rollout_id", pa.string(), nullable=False),
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("verifier_id", pa.string()),
        pa.field("check_index", pa.int32(), nullable=False),
        pa.field("check_id", pa.string(), nullable=False),
        pa.field("label", pa.string(), nullable=False),
        pa.field("required", pa.bool_(), nullable=False),
        pa.field("status", pa.string(), nullable=False),
        pa.field("detail", pa.string(), nullable=False),
        pa.field("actual", pa.string()),
        pa.field("expected", pa.string()),
        pa.field("score", pa.float64()),
        pa.field("issues", pa.list_(pa.field("item", pa.string(), nullable=False))),
        pa.field("suggestion", pa.string()),
    )
)
"""The columns of the checks table."""

JUDGEMENTS_SCHEMA = pa.schema(
    _fields(
        pa.field("rollout_id", pa.string(), nullable=False),
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("verifier_id", pa.string()),
        pa.field("check_index", pa.int32(), nullable=False),
        pa.field("check_id", pa.string(), nullable=False),
        pa.field("judge_model", pa.string(), nullable=False),
        pa.field("sample", pa.int32(), nullable=False),
        pa.field("seed", pa.int64(), nullable=False),
        pa.field("temperature", pa.float64(), nullable=False),
        pa.field("score", pa.float64()),
        pa.field("status", pa.string(), nullable=False),
        pa.field("issues", pa.string()),
        pa.field("suggestion", pa.string()),
        pa.field("error", pa.string()),
    )
)
"""The columns of the judgements table."""

SUMMARY_FILE = "summary.json"


@dataclass
class Results:
    """The results of one run of ``gavel grade``.

    Rows with status ``error`` are rows of :attr:`rewards` like the others,
    with ``error_kind`` and ``error``; :attr:`exit_status` is then 3.
    """

    rewards: pa.Table
    """One row per rollout, in input order (``docs/outputs.md`` lists the columns)."""
    checks: pa.Table
    """One row per check of each rollout."""
    summary: dict[str, Any] | None
    """The run's ``summary.json``: counts by status and error kind, pass rate,
    mean reward, per verifier and per task. ``None`` when the results came
    as a stream without a result directory."""
    exit_status: int = 0
    """0 when no row has status ``error``, 3 when some do."""
    judgements: pa.Table | None = None
    """One row per single judgement of a rubric check, when the run wrote
    that table (several judge models or samples); else ``None``."""
    out: str | None = None
    """The result directory or URL the run wrote and kept, or ``None``."""
    log: str = field(default="", repr=False)
    """What the binary wrote to its standard error (notes, warnings)."""

    def __repr__(self) -> str:
        judgements = "None" if self.judgements is None else f"<{self.judgements.num_rows} rows>"
        return (
            f"Results(rewards=<{self.rewards.num_rows} rows>, checks=<{self.checks.num_rows} rows>, "
            f"judgements={judgements}, exit_status={self.exit_status}, out={self.out!r})"
        )


def _filesystem(where: str) -> tuple[pafs.FileSystem, str]:
    if where.startswith("azblob://"):
        raise GavelError(
            f"read {where}: pyarrow has no azblob:// filesystem: copy the results to a directory "
            "(or write them to s3:// or gs://) to read them here"
        )
    if "://" in where:
        try:
            return pafs.FileSystem.from_uri(where)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise GavelError(f"read {where}: {e}") from e
    return pafs.LocalFileSystem(), os.path.abspath(where)


def _parts(fs: pafs.FileSystem, root: str, table: str) -> list[pafs.FileInfo]:
    sel = pafs.FileSelector(posixpath.join(root, table), allow_not_found=True)
    infos = [i for i in fs.get_file_info(sel) if i.type == pafs.FileType.File]
    return sorted((i for i in infos if posixpath.basename(i.path).startswith("part-")), key=lambda i: i.path)


def _read_part(fs: pafs.FileSystem, info: pafs.FileInfo, schema: pa.Schema) -> pa.Table:
    path = info.path
    if path.endswith(".parquet"):
        return pq.read_table(path, filesystem=fs)
    if path.endswith(".arrow"):
        with fs.open_input_file(path) as f:
            return ipc.open_file(f).read_all()
    if path.endswith(".jsonl"):
        with fs.open_input_stream(path) as f:
            data = f.read()
        if not data:
            return schema.empty_table()
        # The known columns keep their types however many nulls they hold;
        # kept metadata columns are strings. Every line has the columns of
        # the first.
        first = json.loads(data.split(b"\n", 1)[0])
        known = pa.schema(flag_fields(schema, first))
        opts = pajson.ParseOptions(explicit_schema=known, unexpected_field_behavior="infer")
        t = pajson.read_json(io.BytesIO(data), parse_options=opts)
        want = pa.schema([known.field(f.name) if f.name in known.names else pa.field(f.name, pa.string()) for f in t.schema])
        return t.cast(want)
    raise GavelError(f"read {path}: not a result part (want .parquet, .arrow or .jsonl)")


def _read_table(fs: pafs.FileSystem, root: str, table: str, schema: pa.Schema) -> pa.Table | None:
    parts = _parts(fs, root, table)
    if not parts:
        return None
    tables = [_read_part(fs, p, schema) for p in parts]
    return pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]


def read(where: PathArg, *, exit_status: int | None = None) -> Results:
    """Reads the results of a finished run from its result directory or URL.

    ``where`` is what ``gavel grade --out`` was given: a local directory or
    an object-storage URL that pyarrow's file systems read (``s3://``,
    ``gs://``). The rewards, checks and (when written) judgements parts are
    read in part order, whatever their format; ``summary`` is the
    directory's ``summary.json``. ``exit_status`` is 3 when some rewards
    row has status ``error``, else 0, unless given.
    """
    text = os.fspath(where)
    fs, root = _filesystem(text)
    try:
        with fs.open_input_stream(posixpath.join(root, SUMMARY_FILE)) as f:
            summary = json.loads(f.read())
    except FileNotFoundError as e:
        raise GavelError(f"read {text}: no {SUMMARY_FILE}: not a finished result directory") from e
    rewards = _read_table(fs, root, "rewards", REWARDS_SCHEMA)
    checks = _read_table(fs, root, "checks", CHECKS_SCHEMA)
    if exit_status is None:
        exit_status = 3 if summary.get("error", 0) > 0 else 0
    return Results(
        rewards=rewards if rewards is not None else REWARDS_SCHEMA.empty_table(),
        checks=checks if checks is not None else CHECKS_SCHEMA.empty_table(),
        summary=summary,
        exit_status=exit_status,
        judgements=_read_table(fs, root, "judgements", JUDGEMENTS_SCHEMA),
        out=text,
    )
