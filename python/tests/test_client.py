"""gavel.Client against a real gavel serve, and against a small server that answers 429 and 503."""

from __future__ import annotations

import email.utils
import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gavel
from conftest import start_serve

COMPARED = ["rollout_id", "task_id", "verifier_id", "status", "passed", "reward", "checks_total", "checks_passed",
            "required_total", "required_passed", "error_kind", "error", "input_hash"]


def test_client_matches_grade(serve_url: str, rows: list[dict[str, Any]], rollouts: Path) -> None:
    want = gavel.grade(rollouts, keep=["model"])
    with gavel.Client(serve_url, batch_size=7) as c:
        got = c.grade(rows, keep=["model"])
        assert c.connections == 1, "every batch over one kept-alive connection"
    assert got.exit_status == 0
    assert got.rewards.num_rows == len(rows) == 40
    assert got.rewards.select(COMPARED + ["model"]).to_pylist() == want.rewards.select(COMPARED + ["model"]).to_pylist()
    assert got.rewards.column("source_row").to_pylist() == list(range(40))
    assert set(got.rewards.column("source_file").to_pylist()) == {"request"}
    assert got.checks.to_pylist() == want.checks.to_pylist()
    assert got.judgements is None


def test_client_default_ids_run_across_batches(serve_url: str, rows: list[dict[str, Any]]) -> None:
    anonymous = [{k: v for k, v in r.items() if k != "rollout_id"} for r in rows[:10]]
    got = gavel.Client(serve_url, batch_size=4).grade(anonymous)
    want = [f"request#{i}" for i in range(10)]
    assert got.rewards.column("rollout_id").to_pylist() == want
    assert set(got.checks.column("rollout_id").to_pylist()) <= set(want)


def test_client_error_rows(serve_url: str) -> None:
    got = gavel.Client(serve_url).grade([{"task_id": "TASK-004", "output": "$1,234.50"}, {"final_state": {}}])
    assert got.rewards.column("status").to_pylist()[1] == "error"
    assert got.rewards.column("error_kind").to_pylist()[1] == "input"
    assert got.exit_status == 3


def test_client_bad_request(serve_url: str) -> None:
    with pytest.raises(gavel.GavelError) as e:
        gavel.Client(serve_url).grade([{"task_id": "TASK-001"}], keep=["input_hash"])
    assert e.value.http_status == 400
    assert "input_hash is a rewards column" in e.value.message
    assert e.value.hint


def test_client_verifiers(serve_url: str) -> None:
    ids = {v["id"] for v in gavel.Client(serve_url).verifiers()}
    assert {"VER-001", "VER-002"} <= ids


@pytest.fixture(scope="module")
def token_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from start_serve(tmp_path_factory.mktemp("serve"), "--token-env", "GAVEL_TEST_TOKEN", env={"GAVEL_TEST_TOKEN": "s3cret"})


def test_client_token(token_url: str) -> None:
    got = gavel.Client(token_url, token="s3cret").grade([{"task_id": "TASK-001"}])
    assert got.rewards.num_rows == 1
    with pytest.raises(gavel.GavelError) as e:
        gavel.Client(token_url).grade([{"task_id": "TASK-001"}])
    assert e.value.http_status == 401


class FakeServe(http.server.ThreadingHTTPServer):
    """Answers /v1/grade from a script of (status, headers) and records each request's connection."""

    def __init__(self, script: list[tuple[int, dict[str, str]]], delay: float = 0.0) -> None:
        super().__init__(("127.0.0.1", 0), FakeHandler)
        self.script = script
        self.delay = delay
        self.peers: list[tuple[str, int]] = []
        self.times: list[float] = []
        self.close_after: set[int] = set()
        """Indexes of the requests after which the server closes the connection, as an idle timeout does."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class FakeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive

    def do_POST(self) -> None:
        srv: FakeServe = self.server  # type: ignore[assignment]
        body = self.rfile.read(int(self.headers["Content-Length"]))
        srv.peers.append(self.client_address)
        srv.times.append(time.monotonic())
        time.sleep(srv.delay)
        status, headers = srv.script.pop(0) if srv.script else (200, {})
        if status == 200:
            lines = [{"rewards": {"rollout_id": json.loads(l).get("rollout_id", "x"), "task_id": "T", "status": "passed", "passed": True,
                                  "reward": 1.0, "checks_total": 1, "checks_passed": 1, "required_total": 1, "required_passed": 1,
                                  "source_file": "request", "source_row": 0}, "checks": []}
                     for l in body.splitlines() if l.strip()]
            out = b"".join(json.dumps(x).encode() + b"\n" for x in lines)
        else:
            out = json.dumps({"error": f"busy {status}", "hint": "retry"}).encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
        if len(srv.times) - 1 in srv.close_after:
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def fake() -> Iterator[Any]:
    servers: list[FakeServe] = []

    def make(script: list[tuple[int, dict[str, str]]], delay: float = 0.0) -> FakeServe:
        srv = FakeServe(script, delay)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return srv

    yield make
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def test_retries_honour_retry_after(fake: Any) -> None:
    srv = fake([(429, {"Retry-After": "1"}), (503, {"Retry-After": "0"})])
    c = gavel.Client(srv.url)
    got = c.grade([{"rollout_id": "a", "task_id": "T"}, {"rollout_id": "b", "task_id": "T"}])
    assert got.rewards.column("rollout_id").to_pylist() == ["a", "b"]
    assert len(srv.times) == 3
    assert srv.times[1] - srv.times[0] >= 1.0, "waited the Retry-After of the 429"
    assert len(set(srv.peers)) == 1 and c.connections == 1, "the retries reused the connection"


def test_retries_give_up(fake: Any) -> None:
    srv = fake([(503, {"Retry-After": "0"})] * 3)
    with pytest.raises(gavel.GavelError) as e:
        gavel.Client(srv.url, retries=2).grade([{"task_id": "T"}])
    assert e.value.http_status == 503
    assert e.value.message == "busy 503"
    assert len(srv.times) == 3


def test_backoff_without_retry_after(fake: Any) -> None:
    srv = fake([(429, {})])
    gavel.Client(srv.url).grade([{"task_id": "T"}])
    assert srv.times[1] - srv.times[0] >= 0.5


def test_retry_after_date() -> None:
    c = gavel.Client("http://127.0.0.1:1")
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < c._wait(when, 0) <= 30
    assert c._wait(email.utils.formatdate(time.time() - 30, usegmt=True), 0) == 0
    assert c._wait("7", 0) == 7
    assert c._wait(None, 3) == 4
    assert c._wait("soon", 10) == c.max_backoff


def test_timeout(fake: Any) -> None:
    srv = fake([], delay=2.0)
    start = time.monotonic()
    with pytest.raises(gavel.GavelError) as e:
        gavel.Client(srv.url, timeout=0.3).grade([{"task_id": "T"}])
    assert "no answer within 0.3s" in e.value.message
    assert time.monotonic() - start < 1.5


def test_closed_connection_is_reopened(fake: Any) -> None:
    srv = fake([])
    srv.close_after = {0}
    c = gavel.Client(srv.url)
    c.grade([{"task_id": "T"}])
    got = c.grade([{"rollout_id": "b", "task_id": "T"}])
    assert got.rewards.column("rollout_id").to_pylist() == ["b"]
    assert c.connections == 2
    assert len(set(srv.peers)) == 2


def test_bad_url() -> None:
    with pytest.raises(ValueError):
        gavel.Client("localhost:8080")


def test_numpy_values(serve_url: str) -> None:
    np = pytest.importorskip("numpy")
    got = gavel.Client(serve_url).grade([{"task_id": "TASK-004", "output": "1234.5", "sample": np.int64(3), "w": np.arange(2)}], keep=["sample"])
    assert got.rewards.column("sample").to_pylist() == ["3"]
    with pytest.raises(TypeError, match="row 0: object is not JSON serializable"):
        gavel.Client(serve_url).grade([{"task_id": "T", "x": object()}])
