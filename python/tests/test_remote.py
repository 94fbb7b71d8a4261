"""gavel.remote.serve: a Python function as a gavel remote verifier, over HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import REMOTE_DOCS, doc_blocks, free_port, run_doc_blocks
from gavel.remote import RemoteServer, serve

ROOT = Path(__file__).resolve().parents[2]


# The functions served. Module level, so that worker processes can load them.


def exact(rollout: dict[str, Any]) -> float:
    """1.0 when the output is meta.expected, 0.0 when not; raises without meta.expected."""
    meta = rollout.get("meta") or {}
    if "expected" not in meta:
        raise ValueError(f"rollout {rollout.get('rollout_id')}: no meta.expected")
    return 1.0 if rollout.get("output") == meta["expected"] else 0.0


def echo(rollout: dict[str, Any]) -> Any:
    """Returns meta.answer as it is ("nan" as a float NaN, which JSON cannot carry)."""
    answer = rollout["meta"]["answer"]
    return math.nan if answer == "nan" else answer


def checked(rollout: dict[str, Any]) -> list[dict[str, Any]]:
    """Two checks; the second's detail is the pid of the process that ran this."""
    return [
        {"id": "has-output", "label": "The output is not empty", "required": True,
         "status": "pass" if rollout.get("output") else "fail", "actual": rollout.get("output"), "expected": "non-empty"},
        {"label": "pid", "status": "pass", "detail": str(os.getpid()), "score": 0.5},
    ]


def slow_pid(rollout: dict[str, Any]) -> list[dict[str, Any]]:
    time.sleep(0.5)
    return [{"status": "pass", "detail": str(os.getpid())}]


def die_on(rollout: dict[str, Any]) -> float:
    """Ends its worker process abruptly when meta.die is set, else 0.5."""
    if rollout.get("meta", {}).get("die"):
        os._exit(3)
    return 0.5


release = threading.Event()


def held(rollout: dict[str, Any]) -> float:
    """Waits (in a thread of the test's process) until the test sets release."""
    release.wait(30)
    return 1.0


def post(url: str, body: Any, raw: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """POSTs body as JSON (or raw bytes) and returns the status and the decoded answer."""
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture(scope="module")
def threads() -> Iterator[RemoteServer]:
    """echo served in threads, impure."""
    with serve(echo, port=0, pure=False, processes=0, block=False) as s:
        yield s


@pytest.fixture
def pool() -> Iterator[RemoteServer]:
    """exact served by two worker processes, pure (one server per test, so
    that the tests counting child processes see only their own)."""
    with serve(exact, port=0, pure=True, processes=2, block=False) as s:
        yield s


def test_single_reward(pool: RemoteServer, threads: RemoteServer) -> None:
    assert pool.url == f"http://127.0.0.1:{pool.port}/"
    assert post(pool.url, {"task_id": "t", "output": "42", "meta": {"expected": "42"}}) == (200, 1.0)
    assert post(pool.url, {"task_id": "t", "output": "41", "meta": {"expected": "42"}}) == (200, 0.0)
    # {"reward": x} is a reward, its other keys dropped; an int is a reward too.
    assert post(threads.url, {"meta": {"answer": {"reward": 0.25, "why": "a note"}}}) == (200, 0.25)
    assert post(threads.url, {"meta": {"answer": 1}}) == (200, 1.0)
    # Any path but the two GET routes grades.
    assert post(pool.url + "grade", {"output": "a", "meta": {"expected": "a"}}) == (200, 1.0)


def test_checks() -> None:
    with serve(checked, port=0, pure=True, processes=0, block=False) as s:
        status, got = post(s.url, {"task_id": "t", "output": "hi"})
    assert status == 200
    assert got == [
        {"id": "has-output", "label": "The output is not empty", "required": True, "status": "pass", "actual": "hi", "expected": "non-empty"},
        {"label": "pid", "status": "pass", "detail": str(os.getpid()), "score": 0.5},
    ]


def test_checks_in_a_dict(threads: RemoteServer) -> None:
    checks = [{"id": "a", "status": "fail", "actual": [1, 2], "expected": {"n": 3}, "score": None}]
    assert post(threads.url, {"meta": {"answer": {"checks": checks}}}) == (200, checks)


def test_batch_in_order(pool: RemoteServer) -> None:
    rows = [{"rollout_id": f"r{i}", "output": str(i % 3), "meta": {"expected": "0"}} for i in range(40)]
    status, got = post(pool.url, rows)
    assert status == 200
    assert got == [1.0 if i % 3 == 0 else 0.0 for i in range(40)]
    assert post(pool.url, []) == (200, [])
    with serve(echo, port=0, pure=True, processes=2, block=False) as s:
        assert post(s.url, [{"meta": {"answer": i / 40}} for i in range(40)]) == (200, [i / 40 for i in range(40)])


def test_raising_is_422(pool: RemoteServer) -> None:
    assert post(pool.url, {"rollout_id": "r7", "output": "1"}) == (422, {
        "error": "ValueError: rollout r7: no meta.expected",
        "hint": "the function raised on this rollout: gavel records it as an error row, never a score",
    })



def test_batch_error_is_the_rollouts_alone(pool: RemoteServer, threads: RemoteServer) -> None:
    """In a batch, a rollout the function raises on, or answers outside
    the protocol, is its element {"error": ...}; the others are graded."""
    rows = [
        {"rollout_id": "a", "output": "1", "meta": {"expected": "1"}},
        {"rollout_id": "b", "output": "1"},
        {"rollout_id": "c", "output": "2", "meta": {"expected": "1"}},
    ]
    assert post(pool.url, rows) == (200, [1.0, {"error": "ValueError: rollout b: no meta.expected"}, 0.0])
    # The message is the same as the rollout's alone, wherever it is in whichever batch.
    status, alone = post(pool.url, rows[1])
    assert status == 422 and alone["error"] == "ValueError: rollout b: no meta.expected"
    assert post(pool.url, [rows[1]] * 9 + [rows[0]]) == (200, [{"error": alone["error"]}] * 9 + [1.0])
    answers = [{"meta": {"answer": a}} for a in (0.5, 1.5, [{"status": "ok"}], "nan", [{"status": "pass"}])]
    assert post(threads.url, answers) == (200, [
        0.5,
        {"error": "BadAnswer: the function returned a reward of 1.5, outside [0, 1] (never clamped)"},
        {"error": "BadAnswer: the function returned check 0 with status 'ok'; want one of pass, fail, error"},
        {"error": "BadAnswer: the function returned a reward of nan; a reward is a number in [0, 1]"},
        [{"status": "pass"}],
    ])


@pytest.mark.parametrize(
    "answer, error",
    [
        (1.5, "BadAnswer: the function returned a reward of 1.5, outside [0, 1] (never clamped)"),
        (-0.1, "BadAnswer: the function returned a reward of -0.1, outside [0, 1] (never clamped)"),
        ("nan", "BadAnswer: the function returned a reward of nan; a reward is a number in [0, 1]"),
        ({"reward": 2}, "BadAnswer: the function returned a reward of 2.0, outside [0, 1] (never clamped)"),
        (True, "BadAnswer: the function returned the bool True; return a reward in [0, 1] (1.0 for a pass) or a list of checks"),
        ("0.5", "BadAnswer: the function returned str; return a reward in [0, 1], a dict with \"reward\" or \"checks\", or a list of checks"),
        ({"rewards": 1}, "BadAnswer: the function returned a dict with neither \"reward\" nor \"checks\" (its keys: 'rewards')"),
        ([], "BadAnswer: the function returned the list with no checks; return at least one check, or a reward"),
        ([{"id": "x", "status": "ok"}], "BadAnswer: the function returned check 0 ('x') with status 'ok'; want one of pass, fail, error"),
        ([{"status": "pass", "passed": True}], "BadAnswer: the function returned check 0 with unknown fields ['passed']; a check has "
         "['actual', 'detail', 'expected', 'id', 'label', 'required', 'score', 'status']"),
        ([{"status": "pass", "score": 1.01}], "BadAnswer: the function returned a score in check 0 of 1.01, outside [0, 1] (never clamped)"),
        ([{"status": "pass", "required": "yes"}], "BadAnswer: the function returned check 0 with required of type str; want a bool"),
    ],
)
def test_bad_answer_is_422(threads: RemoteServer, answer: Any, error: str) -> None:
    status, got = post(threads.url, {"meta": {"answer": answer}})
    assert (status, got["error"]) == (422, error)


def test_bad_json_is_400_with_byte_offset(threads: RemoteServer) -> None:
    body = '{"output": "é ünïcode", oops}'.encode()
    status, got = post(threads.url, None, raw=body)
    assert status == 400
    assert got["error"] == f"request body: invalid JSON at byte {body.index(b'oops')}: Expecting property name enclosed in double quotes"
    assert post(threads.url, None, raw=b"\xff{}")[1]["error"] == "request body: invalid UTF-8 at byte 0"
    assert post(threads.url, 3)[1]["error"] == "request body: not a JSON object or array but a number"
    assert post(threads.url, [{}, "x"])[1]["error"] == "request body: element 1 of the array: not a JSON object but a string"
    assert post(threads.url, None, raw=b'{"output": NaN}')[0] == 400


def test_big_body_is_413() -> None:
    with serve(echo, port=0, pure=True, processes=0, max_body=100, block=False) as s:
        assert post(s.url, {"meta": {"answer": 1}}) == (200, 1.0)
        status, got = post(s.url, {"output": "x" * 200, "meta": {"answer": 1}})
        assert status == 413
        assert got["error"] == "request body of 237 bytes is over max_body (100 bytes)"


@pytest.mark.parametrize("pure, mode", [(True, "stateless"), (False, "unknown")])
def test_reverify_mode(pure: bool, mode: str) -> None:
    with serve(echo, port=0, pure=pure, processes=0, block=False) as s:
        assert get(s.url + "reverify_mode") == (200, mode)
        assert get(s.url + "healthz") == (200, {"status": "ok"})
        assert get(s.url)[0] == 405
        assert post(s.url + "reverify_mode", {})[0] == 405


def test_processes_and_threads() -> None:
    with serve(checked, port=0, pure=True, processes=2, block=False) as s:
        assert s.processes == 2
        status, got = post(s.url, [{"output": "x"}] * 4)
        assert status == 200
        pids = {int(checks[1]["detail"]) for checks in got}
        assert os.getpid() not in pids
        assert len(multiprocessing.active_children()) == 2
    with serve(checked, port=0, pure=True, processes=0, block=False) as s:
        assert s.processes == 0 and s.workers >= 1
        status, got = post(s.url, [{"output": "x"}] * 4)
        assert {int(checks[1]["detail"]) for checks in got} == {os.getpid()}


def test_batch_runs_in_parallel() -> None:
    with serve(slow_pid, port=0, pure=True, processes=2, block=False) as s:
        start = time.monotonic()
        status, got = post(s.url, [{}] * 4)
        took = time.monotonic() - start
    assert status == 200
    assert len({c[0]["detail"] for c in got}) == 2
    # One after another they take 2 s at least; two at a time, 1 s and the overhead.
    assert took < 1.9, f"4 rollouts of 0.5 s on 2 processes took {took:.2f} s"


def test_shutdown_leaves_no_process() -> None:
    s = serve(checked, port=0, pure=True, processes=2, block=False)
    status, got = post(s.url, {"output": "x"})
    pid = int(got[1]["detail"])
    assert status == 200 and pid != os.getpid()
    workers = multiprocessing.active_children()
    assert pid in {p.pid for p in workers}
    s.shutdown()
    s.shutdown()  # twice is fine
    assert multiprocessing.active_children() == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(urllib.error.URLError):
        post(s.url, {"output": "x"})


def test_dead_worker_is_503_and_the_pool_restarts() -> None:
    with serve(die_on, port=0, pure=True, processes=1, block=False) as s:
        first = {p.pid for p in multiprocessing.active_children()}
        status, got = post(s.url, {"meta": {"die": True}})
        assert status == 503, got
        assert got["error"].startswith("a worker process died while grading")
        assert post(s.url, {}) == (200, 0.5)
        now = {p.pid for p in multiprocessing.active_children()}
        assert len(now) == 1 and now != first
    assert multiprocessing.active_children() == []


def test_busy_is_503_and_shutdown_lets_requests_finish() -> None:
    release.clear()
    s = serve(held, port=0, pure=True, processes=0, block=False)
    with ThreadPoolExecutor(s.max_inflight + 1) as clients:  # the held requests and shutdown
        try:
            held_requests = [clients.submit(post, s.url, {}) for _ in range(s.max_inflight)]
            deadline = time.monotonic() + 30
            while s._slots._value:  # until the held requests take every place
                assert time.monotonic() < deadline, f"{s._slots._value} places still free after 30 s"
                time.sleep(0.01)
            status, got = post(s.url, {})
            assert status == 503
            assert got["error"] == f"the service is busy ({s.max_inflight} requests in flight)"
            stopping = clients.submit(s.shutdown)
            time.sleep(0.3)
            assert not stopping.done(), "shutdown returned with requests in flight"
        finally:
            release.set()
        assert [f.result() for f in held_requests] == [(200, 1.0)] * s.max_inflight
        stopping.result()


def test_lambda_refused() -> None:
    with pytest.raises(TypeError, match=r"the function test_lambda_refused.<locals>.<lambda> cannot be sent to worker processes .*pass processes=0"):
        serve(lambda r: 1.0, port=0, pure=True, processes=1, block=False)

    def nested(r: dict[str, Any]) -> float:
        return 1.0

    with pytest.raises(TypeError, match="nested cannot be sent to worker processes"):
        serve(nested, port=0, pure=True, processes=1, block=False)
    assert multiprocessing.active_children() == []
    with serve(lambda r: 0.5, port=0, pure=True, processes=0, block=False) as s:
        assert post(s.url, {}) == (200, 0.5)


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="pure"):
        serve(echo, port=0, block=False)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"pure='yes'; want True or False"):
        serve(echo, port=0, pure="yes", block=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"processes=-1"):
        serve(echo, port=0, pure=True, processes=-1, block=False)
    with pytest.raises(ValueError, match=r"max_body=0"):
        serve(echo, port=0, pure=True, max_body=0, block=False)
    assert multiprocessing.active_children() == []


def test_token() -> None:
    with serve(echo, port=0, pure=True, processes=0, block=False, token="s3cret") as s:
        assert post(s.url, {"meta": {"answer": 1}})[0] == 401
        assert post(s.url, {"meta": {"answer": 1}}, headers={"Authorization": "Bearer nope"})[0] == 401
        assert post(s.url, {"meta": {"answer": 1}}, headers={"Authorization": "Bearer s3cret"}) == (200, 1.0)
        assert get(s.url + "healthz")[0] == 200


def test_one_log_line_per_request_without_bodies(capfd: pytest.CaptureFixture[str]) -> None:
    with serve(echo, port=0, pure=True, processes=0, block=False) as s:
        capfd.readouterr()
        post(s.url, {"output": "do-not-log-me", "meta": {"answer": 0.5}})
        post(s.url, {"meta": {"answer": 7}})
        post(s.url, [{"meta": {"answer": 1}}, {"meta": {"answer": 7}}])
        err = capfd.readouterr().err
    lines = [json.loads(line) for line in err.splitlines()]
    assert [(r["method"], r["path"], r["status"], r["rollouts"]) for r in lines] == [
        ("POST", "/", 200, 1), ("POST", "/", 422, 0), ("POST", "/", 200, 2)]
    assert "error" not in lines[0]
    assert "outside [0, 1]" in lines[1]["error"]
    assert lines[2]["error"].startswith("1 of 2 rollouts could not be graded, the first: BadAnswer: the function returned a reward of 7.0")
    assert "do-not-log-me" not in err


def test_docs_examples(tmp_path: Path) -> None:
    """The python blocks of docs/remote-verifiers.md run, each service started and stopped."""
    blocks = doc_blocks(REMOTE_DOCS)
    assert len(blocks) >= 3 and all(d == "remote" for d, _, _ in blocks)
    run_doc_blocks(blocks, tmp_path, {"port=8123": f"port={free_port()}"}, REMOTE_DOCS)
    assert multiprocessing.active_children() == []


# The example service, examples/remote/math_reward.py, run as a script.


def _rows() -> list[dict[str, Any]]:
    text = (ROOT / "examples" / "remote" / "rollouts.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_example_math_service(tmp_path: Path) -> None:
    port = free_port()
    log = open(tmp_path / "math.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "remote" / "math_reward.py"), "--port", str(port), "--processes", "2"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "math.log").read_text()
            try:
                if get(url + "healthz")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the example service did not start within 60 s"
            time.sleep(0.1)
        rows = _rows()
        assert len(rows) == 6
        got = {r["rollout_id"]: post(url, r) for r in rows}
        assert get(url + "reverify_mode") == (200, "stateless")
        workers = [int(p) for p in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
        assert len(workers) == 2
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        log.close()
    assert code == 0, (tmp_path / "math.log").read_text()
    for pid in workers:  # SIGTERM stopped the workers too
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert got == {
        "math-1": (200, 1.0),
        "math-2": (200, 1.0),
        "math-3": (200, 0.0),
        "math-4": (200, 1.0),
        "math-5": (200, 1.0),
        "math-6": (422, {
            "error": "ValueError: rollout math-6 has no expected_answer",
            "hint": "the function raised on this rollout: gavel records it as an error row, never a score",
        }),
    }
    out = (tmp_path / "math.log").read_text()
    assert '"msg": "stopped"' in out and '"drained": true' in out
    # Sent nested under meta, as gavel's verifiers see metadata, the answers are the same.
    with serve(_example_reward(), port=0, pure=True, processes=0, block=False) as s:
        for r in rows[:5]:
            nested = {k: v for k, v in r.items() if k not in ("expected_answer",)}
            nested["meta"] = {"expected_answer": r["expected_answer"]}
            assert post(s.url, nested) == got[r["rollout_id"]]


def _running(pid: int) -> bool:
    """Whether process pid exists and is not a zombie."""
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


def test_workers_outlive_no_killed_service(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "remote" / "math_reward.py"), "--port", str(port), "--processes", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None
            try:
                if get(f"http://127.0.0.1:{port}/healthz")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the example service did not start within 60 s"
            time.sleep(0.1)
        workers = [int(p) for p in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
        assert len(workers) == 2
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    alive = list(workers)
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [pid for pid in alive if _running(pid)]
    for pid in alive:  # a failure leaves nothing behind either
        os.kill(pid, signal.SIGKILL)
    assert alive == [], "worker processes outlived their killed service"


def _example_reward() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("math_reward", ROOT / "examples" / "remote" / "math_reward.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.reward


@pytest.mark.parametrize(
    "output, expected, reward",
    [
        ("The total is $1,234.50.", "1234.5", 1.0),
        ("1234.5", "1,234.50", 1.0),
        ("It is 3/4", "0.75", 1.0),
        ("-17", "17", 0.0),
        ("no number here", "3", 0.0),
        ("1e3", "1000", 1.0),
        ("  Even. ", "even", 1.0),
        ("odd", "even", 0.0),
    ],
)
def test_example_math_reward(output: str, expected: str, reward: float) -> None:
    assert _example_reward()({"output": output, "meta": {"expected_answer": expected}}) == reward
