"""gavel.grade on rows in memory, streamed through the binary as Arrow IPC.

These tests need a gavel that reads an Arrow IPC stream on standard input
(`gavel grade - --input-format arrow-stream`) and writes the rewards as one
on standard output (`--out -`, checks in `--checks-out FILE`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import gavel

COMPARED = ["rollout_id", "task_id", "verifier_id", "status", "passed", "reward", "checks_total", "checks_passed",
            "required_total", "required_passed", "error_kind", "error", "input_hash", "model"]


def as_text(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Returns rows with their objects and arrays as JSON text, as a Parquet file holds states.

    Strings keep their characters (no \\u escapes): the input hash tells spellings apart.
    """
    return [{k: json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v for k, v in r.items()} for r in rows]


@pytest.fixture(scope="module")
def want(rollouts: Path) -> gavel.Results:
    return gavel.grade(rollouts, keep=["model"])


def same(got: gavel.Results, want: gavel.Results) -> None:
    assert got.exit_status == want.exit_status
    assert got.rewards.select(COMPARED).to_pylist() == want.rewards.select(COMPARED).to_pylist()
    assert got.rewards.column("source_row").to_pylist() == list(range(want.rewards.num_rows))
    assert got.checks.to_pylist() == want.checks.to_pylist()


def test_table(rows: list[dict[str, Any]], want: gavel.Results) -> None:
    got = gavel.grade(pa.Table.from_pylist(as_text(rows)), keep=["model"])
    same(got, want)
    assert got.judgements is None and got.out is None
    # The summary gavel wrote (--summary-out) counts as summary.json does.
    assert got.summary is not None and want.summary is not None
    for k in ("rollouts", "passed", "failed", "error", "error_kinds", "pass_rate", "mean_reward", "checks", "verifiers", "tasks"):
        assert got.summary[k] == want.summary[k], k


def test_record_batch_reader(rows: list[dict[str, Any]], want: gavel.Results) -> None:
    t = pa.Table.from_pylist(as_text(rows))
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=7))
    same(gavel.grade(reader, keep=["model"]), want)


def test_list_of_dicts(rows: list[dict[str, Any]], want: gavel.Results) -> None:
    same(gavel.grade(rows, keep=["model"]), want)


def test_pandas(rows: list[dict[str, Any]], want: gavel.Results) -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(as_text(rows)).set_index("rollout_id", drop=False)
    same(gavel.grade(df, keep=["model"]), want)


def test_polars(rows: list[dict[str, Any]], want: gavel.Results) -> None:
    pl = pytest.importorskip("polars")
    same(gavel.grade(pl.DataFrame(as_text(rows)), keep=["model"]), want)


def test_error_rows(rows: list[dict[str, Any]]) -> None:
    broken = [*rows[:3], {"rollout_id": "x", "task_id": None, "model": "m"}]
    got = gavel.grade(broken)
    assert got.exit_status == 3
    assert got.rewards.column("status").to_pylist()[3] == "error"
    assert got.rewards.column("error_kind").to_pylist()[3] == "input"


def test_usage_error(rows: list[dict[str, Any]]) -> None:
    with pytest.raises(gavel.GavelError) as e:
        gavel.grade(rows, format="jsonl")
    assert e.value.exit_status == 2


def test_usage_error_with_more_than_a_pipe_holds() -> None:
    """The binary stops before reading its input; the closed pipe is not the error raised."""
    t = pa.table({"task_id": ["TASK-001"] * 200_000, "output": ["x" * 100] * 200_000})
    with pytest.raises(gavel.GavelError) as e:
        gavel.grade(t, format="jsonl")
    assert e.value.exit_status == 2


def test_out_keeps_a_directory(rows: list[dict[str, Any]], want: gavel.Results, tmp_path: Path) -> None:
    got = gavel.grade(rows, keep=["model"], out=tmp_path / "r")
    assert got.out == str(tmp_path / "r")
    assert got.summary is not None and got.summary["rollouts"] == len(rows)
    assert got.rewards.select(COMPARED).to_pylist() == want.rewards.select(COMPARED).to_pylist()


def test_reader_failure_is_raised(rows: list[dict[str, Any]]) -> None:
    t = pa.Table.from_pylist(as_text(rows))

    def batches() -> Iterator[pa.RecordBatch]:
        yield t.to_batches()[0]
        raise RuntimeError("the caller's data failed")

    with pytest.raises(RuntimeError, match="the caller's data failed"):
        gavel.grade(pa.RecordBatchReader.from_batches(t.schema, batches()))


def test_many_batches(rows: list[dict[str, Any]]) -> None:
    """More data than a pipe holds both ways: the writer, reader and drain run at once."""
    t = pa.Table.from_pylist(as_text(rows))
    big = pa.concat_tables([t] * 100)
    got = gavel.grade(big)
    assert got.rewards.num_rows == big.num_rows


def test_docs_examples(tmp_path: Path) -> None:
    """The blocks of docs/python.md that grade rows in memory run."""
    from conftest import doc_blocks, run_doc_blocks

    blocks = doc_blocks()
    stream = [b for b in blocks if b[0] == "stream"]
    assert stream
    run_doc_blocks([blocks[0], *stream], tmp_path)


def test_list_of_dicts_is_json_lines(rows: list[dict[str, Any]], tmp_path: Path) -> None:
    """A list of dicts grades as the same rows in a JSON Lines file: a member
    the first row lacks is kept for the others, and a value of the wrong
    type is its row's input error, not an exception."""
    first = {"rollout_id": "lacking", "output": "no task"}
    bad = {**rows[1], "rollout_id": "bad-log", "log": 5}
    mixed = [first, *rows[:3], bad]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in mixed), encoding="utf-8")
    got, want = gavel.grade(mixed, keep=["model"]), gavel.grade(path, keep=["model"])
    assert got.exit_status == want.exit_status == 3
    assert got.rewards.select(COMPARED).to_pylist() == want.rewards.select(COMPARED).to_pylist()
    by_id = {r["rollout_id"]: r for r in got.rewards.to_pylist()}
    assert by_id["lacking"]["error"] == "task_id: missing, null or empty"
    assert by_id[rows[0]["rollout_id"]]["model"] == rows[0]["model"]
    assert by_id["bad-log"]["error_kind"] == "input" and "log" in by_id["bad-log"]["error"]


def test_list_of_dicts_not_json(rows: list[dict[str, Any]]) -> None:
    with pytest.raises(TypeError, match=r"row 1, field when"):
        gavel.grade([rows[0], {**rows[1], "when": object()}])
