"""gavel.ray: grading a Ray Dataset in Ray tasks, with the binary in each.

:func:`grade` maps the batches of a Ray ``Dataset`` through the gavel
binary: each task sends its batch, a pyarrow table, to ``gavel grade`` as
an Arrow IPC stream and returns the rewards the binary streams back, so
the rows never pass through Python one by one. The result is a lazy
``Dataset`` of rewards, graded as it is consumed, on as many nodes and
CPUs as Ray gives the tasks.

With ``checks=True`` the rewards and checks of each batch come back packed
in one row of two list columns (one list of rewards rows, one of checks
rows, each a struct of that table's columns), so that the batch is graded
once and each table keeps its own schema, with no assumption on how the
checks line up with the rewards; the packed dataset is materialized, and
the two datasets returned unpack their column of it, block by block,
with no work per row.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Literal, Unpack, cast, overload

import pyarrow as pa
import pyarrow.compute as pc

from ._frames import memory_args
from ._functions import Functions, Verifiers, binary_env, serving
from ._functions import take as take_functions
from ._grade import run_stream
from ._options import GradeOptions, option_args

try:
    import ray.data
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError("gavel.ray needs Ray Data: pip install 'gavel[ray]' (or 'ray[data]')") from e

__all__ = ["grade"]

REFUSED: dict[str, str] = {
    "out": "the rewards are the Dataset returned; write it with its write_parquet (or any writer of Ray's)",
    "resume": "Ray retries a failed task on its batch; there is no result directory to resume",
    "reuse": "each task grades one batch into memory, with no result directory to take results from",
    "shard": "Ray shares the Dataset's blocks among its tasks; give it a part of the Dataset instead",
    "baseline": "there is no result directory to compare; write the rewards and run gavel diff",
    "fail_on": "it goes with baseline=",
    "tmp": "it goes with baseline=",
    "cpuprofile": "every task would write the same file",
    "memprofile": "every task would write the same file",
}
"""Options of ``gavel grade`` that :func:`grade` refuses, each with why."""

MANAGED_MAP_ARGS = frozenset({"fn", "fn_args", "fn_kwargs", "batch_format", "zero_copy_batch"})
"""Arguments of ``Dataset.map_batches`` that :func:`grade` sets itself."""

BATCH_SIZE = 25_000
"""Rows per run of the binary unless ``map_batches_args`` says otherwise:
enough that starting a process, and its first and last record batches,
are a small part of a task (25,000 rows grade about a quarter faster than
10,000 on 11 KB rollouts, measured), and Ray bundles smaller blocks up to
it."""

Batch = Any
"""A batch as ``Dataset.map_batches`` types it (a union of formats); with
``batch_format="pyarrow"`` it is a pyarrow table."""


@overload
def grade(
    dataset: ray.data.Dataset,
    *,
    checks: Literal[False] = ...,
    map_batches_args: Mapping[str, Any] | None = ...,
    verifiers: Verifiers | None = ...,
    pure: bool | None = ...,
    **options: Unpack[GradeOptions],
) -> ray.data.Dataset: ...


@overload
def grade(
    dataset: ray.data.Dataset,
    *,
    checks: Literal[True],
    map_batches_args: Mapping[str, Any] | None = ...,
    verifiers: Verifiers | None = ...,
    pure: bool | None = ...,
    **options: Unpack[GradeOptions],
) -> tuple[ray.data.Dataset, ray.data.Dataset]: ...


def grade(
    dataset: ray.data.Dataset,
    *,
    checks: bool = False,
    map_batches_args: Mapping[str, Any] | None = None,
    verifiers: Verifiers | None = None,
    pure: bool | None = None,
    **options: Unpack[GradeOptions],
) -> ray.data.Dataset | tuple[ray.data.Dataset, ray.data.Dataset]:
    """Grades a Ray Dataset of rollouts in Ray tasks and returns the rewards as a Dataset.

    Each batch of ``dataset`` (:data:`BATCH_SIZE` rows unless
    ``map_batches_args`` gives a ``batch_size``) goes to one run of the
    gavel binary in a Ray task, as Arrow, and its rewards come back as
    Arrow: the rows, and their columns, are those ``gavel grade``
    writes for the same rollouts, whatever the partitioning, except
    ``source_file``, which is ``"-"``, and ``source_row``, the row's index
    within its batch (a task does not know where its batch starts in the
    Dataset): identify rows by ``rollout_id`` and ``verifier_id``, or by
    the columns ``keep=`` copies. The order of the rows across batches is
    Ray's (see its ``preserve_order`` execution option).

    Without ``checks`` the Dataset returned is lazy: nothing runs until it
    is consumed. With ``checks=True`` the grading runs now, once, into
    Ray's object store, and a pair ``(rewards, checks)`` of Datasets is
    returned.

    ``options`` are the flags of ``gavel grade``, as for
    :func:`gavel.grade`; ``workers`` defaults to the CPUs of a task (1,
    unless ``map_batches_args`` says ``num_cpus``). Options about a result
    directory or a whole run (``out``, ``resume``, ``reuse``, ``shard``,
    ``baseline``, ``fail_on``, ``tmp``, the profiles) and a ``format``
    other than ``"arrow"`` raise :class:`ValueError`. ``map_batches_args``
    are passed on to ``Dataset.map_batches`` (``batch_size``,
    ``num_cpus``, ``concurrency``, ``memory``, ``runtime_env``, ...).

    ``verifiers=`` and ``pure=`` grade with Python functions, as for
    :func:`gavel.grade`: each task serves the functions it was given (sent
    to it by Ray), in as many worker processes as it has CPUs, for the
    time of its batch.

    Rows with status ``error`` are rows of the rewards. A usage or fatal
    error of the binary fails its task with a :class:`gavel.GavelError`;
    Ray then raises an error of its own, carrying the GavelError's
    message, where the Dataset is consumed (in :func:`grade` itself with
    ``checks=True``). Every node running the tasks needs the
    gavel package (with its binary) installed.
    """
    functions = take_functions(verifiers, pure, "gavel.ray.grade")
    opts: dict[str, object] = dict(options)
    for key, why in REFUSED.items():
        # Not "in (None, False)": 0 == False, and fail_on=0 is an option given.
        if opts.get(key) is not None and opts.get(key) is not False:
            raise ValueError(f"gavel.ray.grade: {key}= makes no sense per batch: {why}")
    if opts.get("format") not in (None, "arrow"):
        raise ValueError(
            f"gavel.ray.grade: format={opts['format']!r}: the rewards come back as Arrow batches; "
            "write the Dataset in the format you want"
        )
    opts.pop("format", None)
    map_args = dict(map_batches_args or {})
    managed = sorted(MANAGED_MAP_ARGS & map_args.keys())
    if managed:
        raise ValueError(f"gavel.ray.grade: map_batches_args: gavel.ray.grade sets {', '.join(managed)} itself")
    cpus = max(1, int(map_args.get("num_cpus") or 1))
    if opts.get("workers") is None:
        opts["workers"] = cpus
    map_args.setdefault("batch_size", BATCH_SIZE)
    args = memory_args(opts)  # null struct fields are absent members (gavel._frames)
    graded = dataset.map_batches(
        functools.partial(_grade_batch, args=args, checks=checks, functions=functions, processes=cpus),
        batch_format="pyarrow",
        zero_copy_batch=True,
        **map_args,
    )
    if not checks:
        return graded
    packed = graded.materialize()
    return (
        packed.map_batches(functools.partial(_unpack, column="rewards"), batch_format="pyarrow", batch_size=None),
        packed.map_batches(functools.partial(_unpack, column="checks"), batch_format="pyarrow", batch_size=None),
    )


def _grade_batch(
    batch: Batch, args: list[str], checks: bool, functions: Functions | None = None, processes: int = 1
) -> pa.Table:
    """Grades one batch with the binary: its rewards, or its rewards and
    checks packed in one row. With functions, the task serves them, in
    processes worker processes, while the binary runs."""
    assert isinstance(batch, pa.Table)
    if functions is None:
        _, _, rewards, checks_table, _ = run_stream(batch.to_reader(), args, checks=checks)
    else:
        with serving(functions, processes) as served, binary_env(served.env):
            extra = option_args({"spec": [served.spec_path], "allow_impure": functions.impure})
            _, _, rewards, checks_table, _ = run_stream(batch.to_reader(), [*args, *extra], checks=checks)
    assert rewards is not None
    if not checks:
        return rewards
    assert checks_table is not None
    return pa.table({"rewards": _one_list(rewards), "checks": _one_list(checks_table)})


def _one_list(table: pa.Table) -> pa.ListArray[Any]:
    """Returns a list array of one element: the rows of table, as structs."""
    values = table.to_struct_array().combine_chunks()
    return pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values)


def _unpack(batch: Batch, column: str) -> pa.Table:
    """Returns the table packed in column of batch's rows, one after the other."""
    assert isinstance(batch, pa.Table)
    values = cast("pa.ChunkedArray[pa.StructScalar]", pc.list_flatten(batch.column(column)))
    return pa.Table.from_struct_array(values)
