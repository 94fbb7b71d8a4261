"""gavel.grade(verifiers=...): Python functions as verifiers, served for the call on 127.0.0.1."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import gavel
import gavel._functions as functions

ROOT = Path(__file__).resolve().parents[2]


def exact(rollout: dict[str, Any]) -> float:
    """1.0 when the output is the expected answer; a KeyError without one."""
    return 1.0 if rollout["output"].strip() == rollout["expected_answer"] else 0.0


def checks(rollout: dict[str, Any]) -> list[dict[str, Any]]:
    """Two checks; the second's detail names the process that ran it and that process's parent."""
    out = rollout.get("output", "")
    return [
        {"id": "answered", "label": "The output is not empty", "required": True, "status": "pass" if out else "fail",
         "actual": len(out), "expected": {"min": 1}},
        {"id": "pid", "status": "pass", "detail": f"{os.getpid()} {os.getppid()}", "score": 0.5},
    ]


def echo(rollout: dict[str, Any]) -> Any:
    """Returns the rollout's answer as it is (a reward, checks, or something that is not an
    answer; "nan" as a float NaN, which JSON cannot carry); raises on "raise"."""
    answer = rollout["answer"]
    if answer == "raise":
        raise ValueError(f"no answer for {rollout['rollout_id']}")
    return math.nan if answer == "nan" else answer


def rewards_of(res: gavel.Results) -> dict[str, tuple[str, str, float | None, str | None]]:
    """rollout_id -> (verifier_id, status, reward, error)."""
    return {r["rollout_id"]: (r["verifier_id"], r["status"], r["reward"], r["error"]) for r in res.rewards.to_pylist()}


def test_functions_beside_go_verifiers(rows: list[dict[str, Any]]) -> None:
    """Functions grade their tasks; the Go verifiers keep theirs; the answers' shapes are read as gavel's own."""
    crm = gavel.grade(rows)
    math = [
        {"rollout_id": "m1", "task_id": "math/1", "output": " 42", "expected_answer": "42"},
        {"rollout_id": "m2", "task_id": "math/2", "output": "41", "expected_answer": "42"},
        {"rollout_id": "m3", "task_id": "math/3", "output": "7"},
        {"rollout_id": "c1", "task_id": "chat/1", "output": "Hello"},
        {"rollout_id": "c2", "task_id": "chat/2", "output": ""},
    ]
    res = gavel.grade([*rows, *math], verifiers={"math/*": exact, "chat/*": checks}, pure=True)
    got = rewards_of(res)
    # The CRM rows are graded as without functions.
    crm_rows = rewards_of(crm)
    assert {k: got[k] for k in crm_rows} == crm_rows
    assert got["m1"] == ("exact", "passed", 1.0, None)
    assert got["m2"] == ("exact", "failed", 0.0, None)
    vid, status, reward, error = got["m3"]
    assert (vid, status, reward) == ("exact", "error", None)
    assert error == ('check "remote": remote verifier exact at http://functions.gavel.invalid/exact:'
                     " could not grade the rollout: \"KeyError: 'expected_answer'\"")
    assert got["c1"] == ("checks", "passed", 1.0, None)  # checks passed / checks, as gavel's own
    assert got["c2"] == ("checks", "failed", 0.5, None)
    c1 = [c for c in res.checks.to_pylist() if c["rollout_id"] == "c1"]
    assert [(c["check_id"], c["status"], c["actual"], c["expected"], c["score"]) for c in c1] == [
        ("answered", "pass", "5", '{"min":1}', None), ("pid", "pass", None, None, 0.5)]
    assert res.exit_status == 3


def test_patterns_bind_as_in_specs() -> None:
    """A task's verifier is the function of its id, else of its longest prefix, else of all."""

    def by_id(r: dict[str, Any]) -> float:
        return 1.0

    def by_prefix(r: dict[str, Any]) -> float:
        return 1.0

    def by_longer_prefix(r: dict[str, Any]) -> float:
        return 1.0

    def anything(r: dict[str, Any]) -> float:
        return 1.0

    tasks = ["math/1", "math/2", "math/geo/1", "chat/1", "TASK-001"]
    rows = [{"rollout_id": t, "task_id": t, "output": "x"} for t in tasks]
    res = gavel.grade(rows, verifiers={"all": anything, "math/*": by_prefix, "math/geo/*": by_longer_prefix, "math/1": by_id},
                      pure=True)
    got = {k: v[0] for k, v in rewards_of(res).items()}
    # TASK-001 is the Go verifier's, bound by its id.
    assert got == {"math/1": "by_id", "math/2": "by_prefix", "math/geo/1": "by_longer_prefix", "chat/1": "anything",
                   "TASK-001": "VER-001"}
    # One function bound to two patterns is one verifier.
    res = gavel.grade(rows, verifiers={"math/*": anything, "chat/1": anything}, pure=True)
    assert {k: v[0] for k, v in rewards_of(res).items() if k != "TASK-001"} == dict.fromkeys(tasks[:4], "anything")


def test_errors_are_the_rollouts_alone_in_any_batch() -> None:
    """In one batch (128 rollouts a request), a rollout the function raises on or answers
    outside the contract is that rollout's error, never a 0; the same bytes for any workers."""
    answers: list[Any] = [1.0, 0.25, "raise", 1.5, [{"status": "pass"}], True, {"reward": 0.5, "note": "x"}, "nan",
                          [{"status": "ok"}], {"checks": [{"status": "fail", "required": True}]}]
    rows = [{"rollout_id": f"r{i:03d}", "task_id": "t", "output": "x", "answer": answers[i % len(answers)]}
            for i in range(300)]
    res = gavel.grade(rows, verifiers={"all": echo}, pure=True, workers=1)
    got = rewards_of(res)
    for i in range(300):
        rid = f"r{i:03d}"
        kind = i % len(answers)
        vid, status, reward, error = got[rid]
        if kind in (2, 3, 5, 7, 8):
            assert status == "error" and reward is None, (rid, got[rid])
        else:
            assert error is None, (rid, got[rid])
    assert got["r002"][3] == ('check "remote": remote verifier echo at http://functions.gavel.invalid/echo:'
                              ' could not grade the rollout: "ValueError: no answer for r002"')
    assert got["r003"][3] is not None and "BadAnswer: the function returned a reward of 1.5, outside [0, 1] (never clamped)" in got["r003"][3]
    assert got["r005"][3] is not None and "BadAnswer: the function returned the bool True" in got["r005"][3]
    assert got["r007"][3] is not None and "returned a reward of nan" in got["r007"][3]
    assert got["r000"][1:3] == ("passed", 1.0) and got["r001"][1:3] == ("failed", 0.25) and got["r006"][1:3] == ("failed", 0.5)
    assert got["r009"][1:3] == ("failed", 0.0)
    for workers in (3, 2):
        again = gavel.grade(rows, verifiers={"all": echo}, pure=True, workers=workers)
        assert again.rewards.equals(res.rewards)
        assert again.checks.equals(res.checks)


def _calls(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_versions_cache_and_reuse(tmp_path: Path) -> None:
    """A pure function with a version is cached and its rows reused by that version; without one,
    or impure, nothing it graded is cached or reused."""
    log = tmp_path / "calls.log"

    def counted(rollout: dict[str, Any]) -> float:
        with open(log, "a") as f:  # one short append per call, whole lines whatever the process
            f.write(rollout["rollout_id"] + "\n")
        return 1.0 if rollout["output"] == "yes" else 0.0

    rows = [{"rollout_id": f"r{i}", "task_id": "q/1", "output": "yes" if i % 2 else "no"} for i in range(40)]
    cache = tmp_path / "cache"

    def run(value: Any, pure: bool, **options: Any) -> tuple[gavel.Results, int]:
        before = _calls(log)
        options.setdefault("remote_cache", str(cache))
        res = gavel.grade(rows, verifiers={"q/*": value}, pure=pure, **options)
        assert res.exit_status == 0
        return res, _calls(log) - before

    first, n = run((counted, "1"), True)
    assert n == 40
    assert first.summary is not None and first.summary.get("impure_verifiers") is None
    again, n = run((counted, "1"), True)
    assert n == 0, "a second run of the same version asked the function"
    assert again.summary is not None and again.summary["remote"]["cache_hits"] == 40
    assert again.rewards.equals(first.rewards)
    _, n = run((counted, "2"), True)
    assert n == 40, "a new version was answered from the cache"
    _, n = run((counted, 2), True)  # an int version is its text
    assert n == 0
    for value, pure in ((counted, True), ((counted, "1"), False), (counted, False)):
        for _ in range(2):
            res, n = run(value, pure)
            assert n == 40, f"{value!r} pure={pure} was answered from the cache"
            assert res.summary is not None and res.summary["impure_verifiers"] == ["counted"]

    # --reuse takes the rows of a version, and of nothing without one.
    run((counted, "3"), True, out=str(tmp_path / "v3"))
    res, n = run((counted, "3"), True, out=str(tmp_path / "v3-again"), reuse=str(tmp_path / "v3"), remote_cache="off")
    assert n == 0 and res.summary is not None and res.summary["reuse"]["reused"] == 40
    res, n = run((counted, "4"), True, out=str(tmp_path / "v4"), reuse=str(tmp_path / "v3"), remote_cache="off")
    assert n == 40 and res.summary is not None and res.summary["reuse"]["reused"] == 0
    run(counted, True, out=str(tmp_path / "bare"))
    res, n = run(counted, True, out=str(tmp_path / "bare-again"), reuse=str(tmp_path / "bare"))
    assert n == 40 and res.summary is not None and res.summary["reuse"]["reused"] == 0


def test_same_fingerprint_whatever_the_port(tmp_path: Path) -> None:
    """The verifier's fingerprint is the same in two runs (its service on two ports), and changes with its version."""
    rows = [{"rollout_id": "a", "task_id": "q", "output": "yes"}]

    def fingerprint(out: str, version: str) -> str:
        gavel.grade(rows, verifiers={"q": (exact_yes, version)}, pure=True, out=str(tmp_path / out), remote_cache="off")
        manifest = json.loads((tmp_path / out / "manifest.json").read_text())
        prints = {v["id"]: v["fingerprint"] for v in manifest["verifiers"]}
        return str(prints["exact_yes"])

    a, b, c = fingerprint("a", "1"), fingerprint("b", "1"), fingerprint("c", "2")
    assert a == b != c


def exact_yes(rollout: dict[str, Any]) -> float:
    return 1.0 if rollout["output"] == "yes" else 0.0


def test_lambdas_and_closures(tmp_path: Path) -> None:
    """The workers are forked: functions that cannot be pickled serve too, with the state they hold."""
    table = {"a": 0.25, "b": 0.75}
    rows = [{"rollout_id": k, "task_id": "t", "output": k} for k in table]
    res = gavel.grade(rows, verifiers={"all": lambda r: table[r["output"]]}, pure=True)
    assert {k: v[:3] for k, v in rewards_of(res).items()} == {"a": ("<lambda>", "failed", 0.25), "b": ("<lambda>", "failed", 0.75)}


def test_with_spec_files(tmp_path: Path) -> None:
    """The functions' spec is added to the caller's; both bind."""
    spec = tmp_path / "capital.yaml"
    spec.write_text(textwrap.dedent("""\
        verifiers:
          - id: CAPITAL
            task: capital
            name: Names the capital
            checks:
              - {id: paris, type: expr, expr: output.lowerAscii().contains("paris")}
        """))
    rows = [{"rollout_id": "a", "task_id": "capital", "output": "Paris"}, {"rollout_id": "b", "task_id": "q", "output": "yes"}]
    for s in (spec, [spec]):
        res = gavel.grade(rows, spec=s, verifiers={"q": exact_yes}, pure=True)
        assert {k: v[:2] for k, v in rewards_of(res).items()} == {"a": ("CAPITAL", "passed"), "b": ("exact_yes", "passed")}


def test_from_a_file_and_a_table(tmp_path: Path) -> None:
    """Functions grade rollouts read by the binary (paths) and streamed (Arrow), alike."""
    rows = [{"rollout_id": f"r{i}", "task_id": "q", "output": "yes" if i % 3 else "no"} for i in range(50)]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    want = gavel.grade(rows, verifiers={"q": exact_yes}, pure=True)
    keep = ["rollout_id", "verifier_id", "status", "reward", "error"]
    for data in (path, pa.Table.from_pylist(rows)):
        got = gavel.grade(data, verifiers={"q": exact_yes}, pure=True)
        assert got.rewards.select(keep).equals(want.rewards.select(keep))


@pytest.mark.parametrize(
    "verifiers, pure, error, message",
    [
        ({"all": exact}, None, TypeError, r"grade: verifiers= needs pure=: pure=True if each function"),
        (None, True, TypeError, r"grade: pure= goes with verifiers="),
        ({"all": exact}, "yes", TypeError, r"grade: pure='yes'; want True or False"),
        ([exact], True, TypeError, r"verifiers= is a list; want a dict of task patterns to functions"),
        ({}, True, ValueError, r"verifiers= is empty"),
        ({"": exact}, True, TypeError, r"the key '' is not a task pattern"),
        ({"a*b": exact}, True, ValueError, r"task pattern 'a\*b': \* may only end a pattern"),
        ({"all": 3}, True, TypeError, r"verifiers\['all'\] is a int; want a function or a pair \(fn, 'VERSION'\)"),
        ({"all": (exact,)}, True, TypeError, r"verifiers\['all'\] is a tuple of 1"),
        ({"all": (exact, "")}, True, TypeError, r"the version ''; want a non-empty string"),
        ({"all": (exact, None)}, True, TypeError, r"the version None"),
        ({"a": (exact, "1"), "b": (exact, "2")}, True, ValueError, r"exact is given with two versions, '1' and '2'"),
    ],
)
def test_bad_arguments(verifiers: Any, pure: Any, error: type[Exception], message: str) -> None:
    before = set(os.listdir(tempfile.gettempdir()))
    with pytest.raises(error, match=message):
        gavel.grade([{"task_id": "t"}], verifiers=verifiers, pure=pure)
    assert not [d for d in set(os.listdir(tempfile.gettempdir())) - before if d.startswith("gavel-functions-")]


def test_two_functions_of_one_name() -> None:
    def make(x: float) -> Any:
        def same(r: dict[str, Any]) -> float:
            return x
        return same

    with pytest.raises(ValueError, match=r"same names two functions \(for a and b\)"):
        gavel.grade([{"task_id": "t"}], verifiers={"a": make(0.0), "b": make(1.0)}, pure=True)


# --- stopping: the service and its workers, by pid ------------------------


def _alive(pid: int) -> bool:
    """Whether process pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _gone(pids: set[int], within: float = 10.0) -> set[int]:
    """Waits for pids to end; returns those still running after within seconds."""
    deadline = time.monotonic() + within
    left = {p for p in pids if _alive(p)}
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = {p for p in left if _alive(p)}
    return left


def _service_pids(res: gavel.Results) -> set[int]:
    pids: set[int] = set()
    for c in res.checks.to_pylist():
        if c["check_id"] == "pid":
            pids.update(int(p) for p in c["detail"].split())
    return pids


def test_stopped_after_the_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the call, no process of the service is left, and its spec's directory is removed."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    res = gavel.grade([{"rollout_id": f"r{i}", "task_id": "t", "output": "x"} for i in range(300)],
                      verifiers={"all": checks}, pure=True)
    pids = _service_pids(res) - {os.getpid()}
    assert len(pids) >= 2, f"want the workers and their service, got {pids}"
    assert _gone(pids, 0) == set(), "the service or its workers outlived the call"
    assert not list(tmp_path.glob("gavel-functions-*"))


def _stream_then_fail(log: Path) -> Any:
    """A reader whose first batch is graded and whose second raises."""
    schema = pa.schema([("rollout_id", pa.string()), ("task_id", pa.string()), ("output", pa.string())])

    def batches() -> Iterator[pa.RecordBatch]:
        # Two batches of 200 KB: the writer passes the first whole to the binary (gavel._pipe).
        for b in range(2):
            rows = [{"rollout_id": f"r{b}-{i}", "task_id": "t", "output": "x" * 1000} for i in range(200)]
            yield pa.RecordBatch.from_pylist(rows, schema)
        deadline = time.monotonic() + 30
        while not log.exists() and time.monotonic() < deadline:  # until the function ran
            time.sleep(0.02)
        raise RuntimeError("the reader failed")

    return pa.RecordBatchReader.from_batches(schema, batches())


def test_stopped_on_an_exception(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    log = tmp_path / "pids.log"

    def noting(rollout: dict[str, Any]) -> float:
        with open(log, "a") as f:
            f.write(f"{os.getpid()} {os.getppid()}\n")
        return 1.0

    with pytest.raises(RuntimeError, match="the reader failed"):
        gavel.grade(_stream_then_fail(log), verifiers={"all": noting}, pure=True)
    pids = {int(p) for p in log.read_text().split()}
    assert len(pids) >= 2
    assert _gone(pids, 0) == set(), "the service or its workers outlived the exception"
    assert not list(tmp_path.glob("gavel-functions-*"))


CTRL_C = """
import os, sys, time
import gavel

def slow(rollout):
    with open(sys.argv[1], "a") as f:
        f.write(f"{os.getpid()} {os.getppid()}\\n")
    time.sleep(30)
    return 1.0

try:
    gavel.grade([{"rollout_id": f"r{i}", "task_id": "t", "output": "x"} for i in range(8)], verifiers={"all": slow}, pure=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_stopped_on_ctrl_c(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops the service and its workers."""
    log = tmp_path / "pids.log"
    script = tmp_path / "ctrl_c.py"
    script.write_text(CTRL_C)
    proc = subprocess.Popen([sys.executable, str(script), str(log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not (log.exists() and len(log.read_text().splitlines()) >= 2):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the function did not run within 60 s"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert out.decode().strip() == "interrupted", err.decode()
    pids = {int(p) for p in log.read_text().split()}
    assert len(pids) >= 2
    left = _gone(pids)
    for pid in left:  # a failure leaves nothing behind either
        os.kill(pid, signal.SIGKILL)
    assert left == set(), "the service or its workers outlived Ctrl-C"


def test_service_rejects_other_callers() -> None:
    """The service asks every request for the call's token: nothing else on the machine calls the functions."""
    fns = functions.take({"all": exact_yes}, True, "test")
    assert fns is not None
    import urllib.error
    import urllib.request

    with functions.serving(fns, processes=1) as served:
        port = served.env["GAVEL_REMOTE_CONNECT_TO"].rsplit(":", 1)[1]
        req = urllib.request.Request(f"http://127.0.0.1:{port}/exact_yes", data=b'{"output": "yes"}')
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        assert e.value.code == 401
        e.value.close()
        req.add_header("Authorization", "Bearer " + served.env[functions.TOKEN_ENV])
        with urllib.request.urlopen(req, timeout=10) as r:
            assert json.load(r) == 1.0
    assert _gone(set(served.pids), 0) == set()


def test_started_when_fork_is_unsafe(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a process that must not be forked (one running Ray), the service is a new
    interpreter, the functions sent pickled; the same rows, and nothing left after."""
    rows = [{"rollout_id": f"r{i}", "task_id": "t", "output": "x" if i % 2 else ""} for i in range(300)]
    want = gavel.grade(rows, verifiers={"all": checks}, pure=True)
    monkeypatch.setattr(functions, "_fork_is_safe", lambda: False)
    got = gavel.grade(rows, verifiers={"all": checks}, pure=True)
    keep = ["rollout_id", "verifier_id", "status", "reward", "error"]
    assert got.rewards.select(keep).equals(want.rewards.select(keep))
    pids = _service_pids(got) - {os.getpid()}
    assert len(pids) >= 2 and pids.isdisjoint(_service_pids(want))
    assert _gone(pids, 0) == set()
