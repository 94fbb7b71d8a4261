"""gavel.grade on paths (the binary reads them) and gavel.read."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import gavel


def binary_run(inputs: list[Path], out: Path, *flags: str) -> int:
    """Runs gavel grade directly, as a user would, and returns its exit status."""
    proc = subprocess.run([gavel.binary(), "grade", "--quiet", *flags, "--out", str(out), *map(str, inputs)], capture_output=True)
    return proc.returncode


def test_grade_path_matches_the_binary(rollouts: Path, tmp_path: Path) -> None:
    assert binary_run([rollouts], tmp_path / "direct") == 0
    want = gavel.read(tmp_path / "direct")
    got = gavel.grade(rollouts)
    assert got.exit_status == 0
    assert got.out is None
    assert got.rewards.equals(want.rewards)
    assert got.checks.equals(want.checks)
    assert got.summary is not None and want.summary is not None
    assert got.summary["rollouts"] == want.summary["rollouts"] == 40
    assert got.judgements is None
    assert repr(got) == f"Results(rewards=<40 rows>, checks=<{got.checks.num_rows} rows>, judgements=None, exit_status=0, out=None)"


def test_grade_out_is_kept(rollouts: Path, tmp_path: Path) -> None:
    out = tmp_path / "kept"
    res = gavel.grade([rollouts, str(rollouts)], out=out, format="jsonl", keep=["model", "sample"])
    assert res.out == str(out)
    assert sorted(p.name for p in (out / "rewards").iterdir()) == ["part-00000.jsonl", "part-00001.jsonl"]
    assert res.rewards.num_rows == 80
    assert res.rewards.schema.names[-2:] == ["model", "sample"]
    assert res.rewards.schema.field("sample").type == pa.string()
    again = gavel.read(out)
    assert again.rewards.equals(res.rewards)


def test_error_rows_are_rows(bad_rollouts: Path) -> None:
    res = gavel.grade(bad_rollouts)
    assert res.exit_status == 3
    statuses = res.rewards.column("status").to_pylist()
    assert "error" in statuses
    assert res.summary is not None and res.summary["error"] == statuses.count("error")
    errors = res.rewards.filter(pc.equal(res.rewards["status"], "error"))
    assert all(k is not None for k in errors.column("error_kind").to_pylist())
    assert all(r is None for r in errors.column("reward").to_pylist())


def test_options_reach_the_binary(rollouts: Path) -> None:
    res = gavel.grade(rollouts, set={"model": "m-fixed"}, keep="model", workers=1, timeout=5.0)
    assert set(res.rewards.column("model").to_pylist()) == {"m-fixed"}


def test_usage_error_raises(rollouts: Path) -> None:
    with pytest.raises(gavel.GavelError) as e:
        gavel.grade(rollouts, format="xml")
    assert e.value.exit_status == 2
    assert e.value.message == '--format: unknown output format "xml" (want parquet, arrow or jsonl)'
    assert e.value.hint == "gavel grade --format jsonl ..."
    assert "[exit 2]" in str(e.value)


def test_missing_input_raises(tmp_path: Path) -> None:
    with pytest.raises(gavel.GavelError) as e:
        gavel.grade(tmp_path / "absent.jsonl")
    assert e.value.exit_status == 2
    assert "absent.jsonl: no such file or directory" in e.value.message


def test_fatal_error_raises(tmp_path: Path) -> None:
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"garbage")
    with pytest.raises(gavel.GavelError) as e:
        gavel.grade(bad)
    assert e.value.exit_status == 1
    assert "bad.parquet: not a parquet file" in e.value.message


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ([], "no data"),
        (["a.jsonl", {"task_id": "x"}], "only paths or only rows"),
        (42, "cannot grade a builtins.int"),
    ],
)
def test_bad_data(data: object, error: str) -> None:
    with pytest.raises((TypeError, ValueError)) as e:
        gavel.grade(data)  # type: ignore[arg-type]
    assert error in str(e.value)


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "jsonl"])
def test_read_every_format(rollouts: Path, tmp_path: Path, fmt: str) -> None:
    assert binary_run([rollouts], tmp_path / fmt, "--format", fmt, "--keep", "model") == 0
    assert binary_run([rollouts], tmp_path / "ref", "--keep", "model") == 0
    got, want = gavel.read(tmp_path / fmt), gavel.read(tmp_path / "ref")
    assert got.rewards.schema.equals(want.rewards.schema), f"{fmt}: {got.rewards.schema}"
    assert got.rewards.to_pylist() == want.rewards.to_pylist()
    assert got.checks.schema.equals(want.checks.schema), f"{fmt}: {got.checks.schema}"
    assert got.checks.to_pylist() == want.checks.to_pylist()


def test_read_file_url(rollouts: Path, tmp_path: Path) -> None:
    assert binary_run([rollouts], tmp_path / "r") == 0
    res = gavel.read((tmp_path / "r").as_uri())
    assert res.rewards.num_rows == 40
    assert res.exit_status == 0


def test_read_not_a_result(tmp_path: Path) -> None:
    with pytest.raises(gavel.GavelError) as e:
        gavel.read(tmp_path)
    assert "no summary.json" in str(e.value)


def test_schemas_match_the_binary(rollouts: Path, chats: tuple[Path, Path], tmp_path: Path) -> None:
    """The package's table schemas are those the binary writes: with the
    columns of a run with flags (health flags are on by default), and
    without them with --health off; in a run that scores turns, with the
    turn columns after them."""
    from gavel._results import (
        CHECKS_SCHEMA,
        FLAGS_FIELD,
        KIND_FIELD,
        OUTPUT_HASH_FIELD,
        REWARDS_SCHEMA,
        TURN_FIELD,
        TURN_REWARDS_FIELD,
        TURNS_FIELD,
    )

    model = pa.field("model", pa.string())
    for fmt in ("arrow", "jsonl", "parquet"):
        assert binary_run([rollouts], tmp_path / fmt, "--format", fmt, "--keep", "model") == 0
        res = gavel.read(tmp_path / fmt)
        assert res.rewards.schema.equals(REWARDS_SCHEMA.append(FLAGS_FIELD).append(OUTPUT_HASH_FIELD).append(model)), fmt
        assert res.checks.schema.equals(CHECKS_SCHEMA.append(KIND_FIELD)), fmt
    assert binary_run([rollouts], tmp_path / "plain", "--format", "arrow", "--keep", "model", "--health", "off") == 0
    res = gavel.read(tmp_path / "plain")
    assert res.rewards.schema.equals(REWARDS_SCHEMA.append(model))
    assert res.checks.schema.equals(CHECKS_SCHEMA)

    messages, spec = chats
    for fmt in ("arrow", "jsonl", "parquet"):
        out = tmp_path / f"turns-{fmt}"
        assert binary_run([messages], out, "--from", "messages", "--spec", str(spec), "--format", fmt, "--set", "model=m", "--keep", "model") == 0
        res = gavel.read(out)
        flags = REWARDS_SCHEMA.append(FLAGS_FIELD).append(OUTPUT_HASH_FIELD)
        assert res.rewards.schema.equals(flags.append(TURN_REWARDS_FIELD).append(TURNS_FIELD).append(model)), fmt
        assert res.checks.schema.equals(CHECKS_SCHEMA.append(KIND_FIELD).append(TURN_FIELD)), fmt
    assert binary_run([messages], tmp_path / "turns-plain", "--from", "messages", "--spec", str(spec), "--format", "jsonl", "--health", "off") == 0
    res = gavel.read(tmp_path / "turns-plain")
    assert res.rewards.schema.equals(REWARDS_SCHEMA.append(TURN_REWARDS_FIELD).append(TURNS_FIELD))
    assert res.checks.schema.equals(CHECKS_SCHEMA.append(TURN_FIELD))


def test_binary_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GAVEL_BINARY", str(tmp_path / "nothing"))
    with pytest.raises(FileNotFoundError) as e:
        gavel.binary()
    assert "GAVEL_BINARY names" in str(e.value)


def test_binary_is_packaged() -> None:
    if os.environ.get("GAVEL_BINARY"):
        pytest.skip("GAVEL_BINARY names another binary")
    path = Path(gavel.binary())
    assert path == Path(gavel.__file__).parent / "bin" / "gavel"


def test_platform_wheel() -> None:
    """The installed wheel is a platform wheel for the binary's architecture, not a pure one."""
    if os.environ.get("GAVEL_BINARY"):
        pytest.skip("GAVEL_BINARY names another binary")
    wheel = importlib.metadata.distribution("gavel").read_text("WHEEL") or ""
    assert "Root-Is-Purelib: false" in wheel
    arch = {"x86_64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}[platform.machine()]
    assert f"Tag: py3-none-manylinux_2_17_{arch}" in wheel


def test_stdin_is_not_a_path() -> None:
    with pytest.raises(ValueError) as e:
        gavel.grade("-")
    assert "pass the rows themselves" in str(e.value)


def test_python_m_gavel() -> None:
    proc = subprocess.run([sys.executable, "-m", "gavel", "grade", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stdout.startswith("Usage: gavel grade [flags] INPUT...")
    proc = subprocess.run([sys.executable, "-m", "gavel", "grade", "--wokers", "2"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "unknown flag --wokers" in proc.stderr


def test_python_m_gavel_without_a_binary(tmp_path: Path) -> None:
    env = {**os.environ, "GAVEL_BINARY": str(tmp_path / "nothing")}
    proc = subprocess.run([sys.executable, "-m", "gavel", "--version"], capture_output=True, text=True, env=env)
    assert proc.returncode == 1
    assert proc.stderr.startswith("gavel: $GAVEL_BINARY names ")


def test_error_pickles_with_its_fields() -> None:
    import pickle

    e = gavel.GavelError("bad flag", exit_status=2, hint="gavel grade --help", stderr="gavel: bad flag\n")
    got = pickle.loads(pickle.dumps(e))
    assert (type(got), str(got), got.exit_status, got.hint, got.stderr) == (type(e), str(e), 2, e.hint, e.stderr)


def test_azblob_out_is_refused(rollouts: Path) -> None:
    """out= on Azure Blob Storage is refused before the binary runs: gavel.read could not read it back."""
    with pytest.raises(ValueError, match="azblob"):
        gavel.grade(rollouts, out="azblob://gavel/out")
    with pytest.raises(gavel.GavelError, match="no azblob:// filesystem"):
        gavel.read("azblob://gavel/out")
