"""gavel.grade on a JSON Lines file read into memory by pyarrow, Polars and
pandas, against gavel grade on the file (docs/python.md, "JSON Lines read
into memory").

The file is generated CRM data: states whose records are keyed by id, so
that structs inferred from it have a field for every id of the file, and
tool calls whose arguments are written in several orders.
"""

from __future__ import annotations

import json
import math
import subprocess
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.json as pj
import pyarrow.parquet as pq
import pytest

import gavel
from gavel._frames import json_columns, pandas_table

ROLLOUTS = 2000
"""Enough for every struct to hold records of many rows (the issue's 5,000
rollouts of seed 5, of which 2,153 rewards differed when null struct
fields were members, behave the same, at twice the time)."""

SOURCE = ("source_file", "source_row")
"""Columns that name where a row was read: the file, or the stream."""


@pytest.fixture(scope="module")
def crm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ROLLOUTS generated CRM rollouts (seed 5) in JSON Lines."""
    out = tmp_path_factory.mktemp("readers") / "crm.jsonl"
    subprocess.run(
        [gavel.binary(), "gen", "--out", str(out), "--rollouts", str(ROLLOUTS), "--seed", "5"],
        check=True,
        capture_output=True,
    )
    return out


@pytest.fixture(scope="module")
def want(crm: Path) -> gavel.Results:
    """gavel grade on the file."""
    return gavel.grade(crm)


def rows_of(t: pa.Table, drop: tuple[str, ...] = SOURCE) -> dict[str, str]:
    """Returns t's rows without the columns drop names, each as JSON text
    with its keys sorted, by the row's identity (rollout and verifier, or
    rollout and check)."""
    out: dict[str, str] = {}
    for r in t.to_pylist():
        key = f"{r['rollout_id']}/{r.get('check_id', r.get('verifier_id'))}"
        assert key not in out, f"{key} twice"
        out[key] = json.dumps({k: v for k, v in r.items() if k not in drop}, sort_keys=True)
    return out


def assert_same(got: gavel.Results, want: gavel.Results, drop: tuple[str, ...] = SOURCE) -> None:
    """Fails unless got's rewards and checks are want's, byte for byte
    after sorting, the columns drop names aside."""
    for table in ("rewards", "checks"):
        g, w = rows_of(getattr(got, table), drop), rows_of(getattr(want, table), drop)
        assert g.keys() == w.keys(), f"{table}: other rows"
        differ = sorted(k for k in w if g[k] != w[k])
        assert not differ, f"{table}: {len(differ)} of {len(w)} rows differ, first {differ[0]}:\n got {g[differ[0]]}\nwant {w[differ[0]]}"
        assert sorted(g.values()) == sorted(w.values())


def in_field_order(v: Any, t: pa.DataType) -> bool:
    """Reports whether every object in v, read into type t, has its members
    in the order of t's fields: the order a struct gives them back."""
    if isinstance(v, dict) and pa.types.is_struct(t):
        at = [t.get_field_index(k) for k in v]
        if any(b <= a for a, b in zip(at, at[1:], strict=False)):
            return False
        return all(in_field_order(x, t.field(i).type) for x, i in zip(v.values(), at, strict=True))
    if isinstance(v, list) and (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return all(in_field_order(x, t.value_type) for x in v)
    return True


def same_order(crm: Path, table: pa.Table) -> set[str]:
    """Returns the rollouts of table whose objects, as its structs hold
    them, have their members in the file's order."""
    fields = ("final_state", "initial_state", "log")
    types = {f: table.schema.field(f).type for f in fields}
    kept = set()
    for line in crm.read_text().splitlines():
        row = json.loads(line)
        if all(in_field_order(row[f], types[f]) for f in fields):
            kept.add(row["rollout_id"])
    return kept


def check_structs(crm: Path, want: gavel.Results, table: pa.Table, got: gavel.Results) -> set[str]:
    """Fails unless got, the results of table's structs, are want's, the
    file's. The rows of rollouts whose members table holds in the file's
    order must be want's byte for byte; the others differ in input_hash
    (verifiers saw another order) and in nothing else. Every check row is
    want's byte for byte (the CRM verifiers' sums are exact, whatever the
    order). Returns the rollouts in the file's order."""
    kept = same_order(crm, table)
    w_rewards, g_rewards = rows_of(want.rewards), rows_of(got.rewards)
    assert g_rewards.keys() == w_rewards.keys()
    for k, w in w_rewards.items():
        wr, gr = json.loads(w), json.loads(g_rewards[k])
        if wr["rollout_id"] in kept:
            assert gr == wr, f"rewards of {k}, in the file's order, differ"
        else:
            assert gr["input_hash"] != wr["input_hash"], f"rewards of {k}: members in another order, the same input_hash"
            assert {**gr, "input_hash": None} == {**wr, "input_hash": None}, f"rewards of {k} differ"
    w_checks, g_checks = rows_of(want.checks), rows_of(got.checks)
    assert g_checks.keys() == w_checks.keys()
    for k, w in w_checks.items():
        wc, gc = json.loads(w), json.loads(g_checks[k])
        assert gc == wc, f"check {k} differs"
    return kept


def test_pyarrow_read_json(crm: Path, want: gavel.Results) -> None:
    table = pj.read_json(crm)
    got = gavel.grade(table)
    check_structs(crm, want, table, got)
    # Without struct_nulls="absent", the states hold every row's records.
    member = gavel.grade(table, struct_nulls="member")
    w, m = rows_of(want.rewards), rows_of(member.rewards)
    differ = [k for k in w if json.loads(w[k])["reward"] != json.loads(m[k])["reward"]]
    assert len(differ) > ROLLOUTS // 10, f"only {len(differ)} rewards differ with null members"
    # The same bytes whatever the workers.
    again = gavel.grade(table, workers=1)
    assert again.rewards.equals(got.rewards) and again.checks.equals(got.checks)


def test_pyarrow_one_thread_keeps_first_order(crm: Path, want: gavel.Results) -> None:
    table = pj.read_json(crm, read_options=pj.ReadOptions(use_threads=False))
    kept = check_structs(crm, want, table, gavel.grade(table, workers=3))
    # Only tool calls whose arguments came in another order than the
    # first ones' change order.
    assert len(kept) > ROLLOUTS // 2


def test_polars_read_ndjson(crm: Path, want: gavel.Results) -> None:
    df = pl.read_ndjson(crm, infer_schema_length=None)
    got = gavel.grade(df)
    check_structs(crm, want, df.to_arrow(), got)


def _pandas_brief(f: Path) -> pd.DataFrame:
    with warnings.catch_warnings():
        # pandas 3.1 deprecates convert_dates (dtype=False covers it).
        warnings.simplefilter("ignore", DeprecationWarning)
        return pd.read_json(f, lines=True, dtype=False, convert_dates=False)


def _pandas_documented(f: Path) -> pd.DataFrame:
    return pd.read_json(f, lines=True, dtype=False, precise_float=True)


@pytest.mark.parametrize("read", [_pandas_brief, _pandas_documented], ids=["convert_dates", "precise_float"])
def test_pandas_read_json(crm: Path, want: gavel.Results, read: Callable[[Path], pd.DataFrame]) -> None:
    # The states and the log go as JSON text: input_hash included.
    assert_same(gavel.grade(read(crm)), want)


def test_parquet_of_read_json(crm: Path, want: gavel.Results, tmp_path: Path) -> None:
    table = pj.read_json(crm, read_options=pj.ReadOptions(use_threads=False))
    path = tmp_path / "crm.parquet"
    pq.write_table(table, path)
    as_parquet = gavel.grade(path)
    w, p = rows_of(want.rewards), rows_of(as_parquet.rewards)
    assert sum(json.loads(w[k])["reward"] != json.loads(p[k])["reward"] for k in w) > ROLLOUTS // 10, (
        "a Parquet file's null struct fields are members by default"
    )
    check_structs(crm, want, table, gavel.grade(path, struct_nulls="absent"))
    check_structs(crm, want, table, gavel.grade(pq.read_table(path)))


def test_pandas_values_as_json_lines(rows: list[dict[str, Any]]) -> None:
    """A pandas frame's states are graded as the same rows sent as JSON
    Lines: a dict, a string of JSON text, None and NaN (no state)."""
    rows = [dict(r) for r in rows[:8]]
    rows[1]["final_state"] = json.dumps(rows[1]["final_state"])
    rows[2]["final_state"] = None
    rows[3]["log"] = json.dumps(rows[3]["log"], indent=1)
    rows[4]["initial_state"] = {"users": {"USR-001": None}, "empty": {}}
    df = pd.DataFrame(rows)
    df.loc[5, "final_state"] = math.nan
    rows[5]["final_state"] = None
    keep = ["model", "run_id", "sample"]  # JSON Lines on standard input are not probed for them
    got, want = gavel.grade(df, keep=keep), gavel.grade(rows, keep=keep)
    assert_same(got, want)
    assert want.rewards.column("input_hash").null_count == 0


def test_pandas_json_columns_follow_map() -> None:
    assert json_columns({}) == ["final_state", "initial_state", "log"]
    assert json_columns({"map": {"final_state": "after", "log": "events"}}) == ["after", "initial_state", "events"]
    assert json_columns({"map": "initial_state=before, output=answer"}) == ["final_state", "before", "log"]
    df = pd.DataFrame({"task_id": ["T"], "after": [{"b": 1, "a": None}], "final_state": [{"x": 1}]})
    t = pandas_table(df, json_columns({"map": {"final_state": "after"}}))
    assert t.column_names == ["task_id", "after", "final_state"]
    assert t.column("after").to_pylist() == ['{"b":1,"a":null}']
    assert pa.types.is_struct(t.schema.field("final_state").type)  # not a state column: pyarrow's


def test_pandas_value_json_cannot_hold() -> None:
    df = pd.DataFrame({"task_id": ["T", "T", "T"], "final_state": [{}, {}, {"when": object()}]})
    with pytest.raises(TypeError, match=r"row 2, field final_state: .*object is not JSON serializable"):
        gavel.grade(df)
