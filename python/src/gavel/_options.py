"""The options of :func:`gavel.grade`: one keyword argument per flag of ``gavel grade``.

:class:`GradeOptions` is the one place that names them. Each key is a flag
spelled with underscores (``judge_model`` is ``--judge-model``; ``from_`` is
``--from``, since ``from`` is a Python keyword), and its annotation carries
how the value becomes command-line arguments. A test compares these keys
with ``gavel grade --help``, so a flag added to the binary fails the tests
until it is added here.
"""

from __future__ import annotations

import datetime
import os
import typing
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Annotated, Literal, TypedDict

__all__ = ["GradeOptions", "PathArg", "option_args", "MANAGED_FLAGS"]

PathArg = str | os.PathLike[str]
"""A local path or an object-storage URL (``s3://``, ``gs://``, ``azblob://``)."""

Duration = str | float | datetime.timedelta
"""A duration: seconds as a number, a :class:`datetime.timedelta`, or Go's
spelling (``"90s"``, ``"2m"``)."""


class Kind(Enum):
    """How an option's value is written on the command line."""

    VALUE = "value"
    """``--flag VALUE``."""
    FLAG = "flag"
    """A boolean: ``--flag`` when true, nothing when false."""
    REPEATED = "repeated"
    """``--flag A --flag B`` for each value of a sequence (or one value)."""
    JOINED = "joined"
    """``--flag A,B``: the values of a sequence joined by commas."""
    PAIRS = "pairs"
    """``--flag K=V,K2=V2`` from a mapping (or a string as written)."""
    REPEATED_PAIRS = "repeated_pairs"
    """``--flag K=V --flag K2=V2`` from a mapping (or ``"K=V"`` strings)."""
    DURATION = "duration"
    """``--flag 1.5s`` from seconds or a timedelta (or a string as written)."""


class GradeOptions(TypedDict, total=False):
    """The flags of ``gavel grade``, as keyword arguments of :func:`gavel.grade`.

    Every key is optional; an option left out takes the binary's default.
    ``gavel grade --help`` describes each flag at length.
    """

    out: Annotated[PathArg, Kind.VALUE]
    """Result directory or object-storage URL to write and keep (``--out``).
    Without it the results are read into memory and nothing is kept."""
    format: Annotated[str, Kind.VALUE]
    """Output format of the parts: ``parquet`` (the default), ``arrow`` or ``jsonl``."""
    spec: Annotated[PathArg | Sequence[PathArg], Kind.REPEATED]
    """Declarative verifier files or directories, added to the built-in verifiers."""
    tasks: Annotated[PathArg, Kind.VALUE]
    """Tasks table file (``task_id``, ``initial_state``, other fields)."""
    map: Annotated[str | Mapping[str, str], Kind.PAIRS]
    """Read fields from other columns: ``{"final_state": "world_after", "output": "response.text"}``."""
    from_: Annotated[str, Kind.VALUE]
    """Read inputs as logs of this harness: ``inspect``, ``tau-bench``, ``tau2``, ``messages``, ``nemo-gym`` or ``atif`` (``--from``)."""
    set: Annotated[Mapping[str, str] | Sequence[str], Kind.REPEATED_PAIRS]
    """Constant metadata added to every row: ``{"model": "gpt-4o"}``."""
    keep: Annotated[str | Sequence[str], Kind.JOINED]
    """Metadata columns copied into the rewards (default: those of ``model``, ``run_id``, ``sample`` present)."""
    workers: Annotated[int, Kind.VALUE]
    """Grading goroutines (default: the number of CPUs)."""
    batch_size: Annotated[int, Kind.VALUE]
    """Rows per batch; tuning only, results never depend on it."""
    max_errors: Annotated[int, Kind.VALUE]
    """Stop after this many rows with status ``error`` (0: no limit)."""
    quiet: Annotated[bool, Kind.FLAG]
    """No progress bar."""
    progress: Annotated[bool, Kind.FLAG]
    """Force a progress bar on the binary's standard error."""
    shard: Annotated[str, Kind.VALUE]
    """Grade only the input units of shard ``"I/N"`` (or ``"auto/N"`` in an array job)."""
    resume: Annotated[bool, Kind.FLAG]
    """Continue an interrupted run in ``out``, skipping completed parts."""
    reuse: Annotated[PathArg, Kind.VALUE]
    """Take unchanged rollouts' results from an earlier result directory instead of grading them again."""
    timeout: Annotated[Duration, Kind.DURATION]
    """A verifier running longer than this on one rollout gives that row status ``error``."""
    max_line_bytes: Annotated[int, Kind.VALUE]
    """A JSON Lines line longer than this is an input error for that row."""
    struct_nulls: Annotated[Literal["member", "absent"], Kind.VALUE]
    """What a null field of a struct in a nested column is to verifiers:
    ``"member"``, a member with value null (the binary's default, for
    paths), or ``"absent"``, no member (the default for rows in memory,
    whose structs are most often inferred from JSON objects)."""
    baseline: Annotated[PathArg, Kind.VALUE]
    """At the end, compare with an earlier result directory as ``gavel diff`` does."""
    fail_on: Annotated[str | int | float, Kind.VALUE]
    """With ``baseline``: fail when the regressions exceed this count or rate (``"1%"``, ``0.01``)."""
    tmp: Annotated[PathArg, Kind.VALUE]
    """With ``baseline``: where to spill partitions when the results do not line up."""
    cpuprofile: Annotated[PathArg, Kind.VALUE]
    """Write a CPU profile of the run to this file."""
    memprofile: Annotated[PathArg, Kind.VALUE]
    """Write a heap profile at the end of the run to this file."""
    judge_model: Annotated[str | Sequence[str], Kind.REPEATED]
    """Judge rubric checks with these models (the first is the first judge)."""
    judge_url_for: Annotated[Mapping[str, str] | Sequence[str], Kind.REPEATED_PAIRS]
    """Ask these judge models at these API roots: ``{"qwen2.5-7b-instruct": "http://127.0.0.1:8080/v1"}``."""
    judge_url: Annotated[str, Kind.VALUE]
    """The judge's OpenAI-compatible API root."""
    judge_api_key_env: Annotated[str, Kind.VALUE]
    """Environment variable holding the judge's API key."""
    judge_threshold: Annotated[float, Kind.VALUE]
    """A rubric check passes when the judge's score is at least this."""
    judge_samples: Annotated[int, Kind.VALUE]
    """Judgements asked of each judge model for each rubric check."""
    judge_temperature: Annotated[float, Kind.VALUE]
    """The temperature of judge samples 1 and later."""
    judge_aggregate: Annotated[str, Kind.VALUE]
    """How a check's judgements make its score: ``mean``, ``median``, ``min`` or ``majority``."""
    judge_partial: Annotated[str, Kind.VALUE]
    """When some judgements of a check fail: ``error`` or ``ok`` (aggregate the others)."""
    judge_concurrency: Annotated[int, Kind.VALUE]
    """Judge requests in flight at once, per judge server."""
    judge_timeout: Annotated[Duration, Kind.DURATION]
    """A judge request taking longer than this fails."""
    judge_max_requests: Annotated[int, Kind.VALUE]
    """Send at most this many judgements; the rubric checks beyond stay pending (0: no limit)."""
    judge_cache: Annotated[PathArg, Kind.VALUE]
    """Verdict cache directory, or ``"off"``."""
    allow_impure: Annotated[bool, Kind.FLAG]
    """Ask remote verifiers not declared stateless; their answers are neither cached nor reused."""
    remote_cache: Annotated[PathArg, Kind.VALUE]
    """Remote verifiers' answer cache directory, or ``"off"``."""
    remote_max_requests: Annotated[int, Kind.VALUE]
    """Send at most this many requests to remote verifiers; the rollouts beyond stay pending (0: no limit)."""
    verify_repeats: Annotated[int, Kind.VALUE]
    """Ask each remote verifier this many times per rollout; answers that disagree make the rollout an error, counted as flaky."""
    health: Annotated[Literal["on", "off"], Kind.VALUE]
    """Health flags: ``"on"`` marks rollouts with an empty output, no agent turn, or a harness-recorded truncation or failure; they never move a reward."""


MANAGED_FLAGS = frozenset({"checks-out", "input-format", "summary-out"})
"""Flags of ``gavel grade`` that the package sets itself when it streams
in-memory data through the binary, never taken from the caller."""


def flag_name(key: str) -> str:
    """Returns the flag of an option key: ``judge_model`` is ``judge-model``."""
    return key.rstrip("_").replace("_", "-")


def _kinds() -> dict[str, Kind]:
    hints = typing.get_type_hints(GradeOptions, include_extras=True)
    kinds: dict[str, Kind] = {}
    for key, hint in hints.items():
        kind = next((m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Kind)), None)
        if kind is None:
            raise TypeError(f"GradeOptions.{key}: no Kind in its annotation")
        kinds[key] = kind
    return kinds


KINDS: dict[str, Kind] = _kinds()
"""Each option's kind, read from the annotations of :class:`GradeOptions`."""


def _text(key: str, value: object) -> str:
    if isinstance(value, bool):
        raise TypeError(f"{key}={value!r}: want a value, not a boolean")
    if isinstance(value, (str, int, float)):
        return str(value)
    if isinstance(value, os.PathLike):
        return str(os.fspath(value))
    raise TypeError(f"{key}={value!r}: want a string, a number or a path, not {type(value).__name__}")


def _values(key: str, value: object) -> list[str]:
    if isinstance(value, (str, os.PathLike)):
        return [_text(key, value)]
    if isinstance(value, Sequence):
        return [_text(key, v) for v in value]
    return [_text(key, value)]


def _pairs(key: str, value: object) -> list[str]:
    if isinstance(value, Mapping):
        return [f"{_text(key, k)}={_text(key, v)}" for k, v in value.items()]
    return _values(key, value)


def _duration(key: str, value: object) -> str:
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError(f"{key}={value!r}: want a positive duration")
        if isinstance(value, float):
            text = repr(value)
            if "e" in text or "E" in text:
                # Go's durations have no exponent: write the digits, to the
                # nanosecond, gavel's resolution.
                text = format(value, ".9f").rstrip("0").rstrip(".")
                if text in ("", "0"):
                    raise ValueError(f"{key}={value!r}: want a duration of a nanosecond or more")
            return text + "s"
        return f"{value}s"
    if isinstance(value, str):
        return value
    raise TypeError(f"{key}={value!r}: want seconds, a timedelta or a string such as '90s'")


def option_args(options: Mapping[str, object]) -> list[str]:
    """Returns the command-line arguments of ``gavel grade`` for options.

    An unknown key is a :class:`TypeError` naming the nearest known one; a
    value of ``None`` is left out, as is a boolean option set to false.
    """
    args: list[str] = []
    for key, value in options.items():
        kind = KINDS.get(key)
        if kind is None:
            raise TypeError(_unknown(key))
        if value is None:
            continue
        flag = "--" + flag_name(key)
        if kind is Kind.FLAG:
            if not isinstance(value, bool):
                raise TypeError(f"{key}={value!r}: want True or False")
            if value:
                args.append(flag)
        elif kind is Kind.VALUE:
            args += [flag, _text(key, value)]
        elif kind is Kind.REPEATED:
            for v in _values(key, value):
                args += [flag, v]
        elif kind is Kind.JOINED:
            args += [flag, ",".join(_values(key, value))]
        elif kind is Kind.PAIRS:
            args += [flag, ",".join(_pairs(key, value))]
        elif kind is Kind.REPEATED_PAIRS:
            for v in _pairs(key, value):
                args += [flag, v]
        else:
            args += [flag, _duration(key, value)]
    return args


def _unknown(key: str) -> str:
    import difflib

    msg = f"unknown option {key}="
    if flag_name(key) in MANAGED_FLAGS:
        return msg + ": gavel sets --" + flag_name(key) + " itself"
    near = difflib.get_close_matches(key, list(KINDS), n=1)
    if near:
        msg += f" (did you mean {near[0]}=?)"
    return msg
