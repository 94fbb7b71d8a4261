"""Results.judgements, from a run whose rubric checks two judge models judge twice each."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gavel
from gavel._results import JUDGEMENTS_SCHEMA

SPEC = """verifiers:
  - id: VER-HELP
    task: TASK-HELP
    name: helpful answer
    checks:
      - {id: helpful, type: rubric, rubric: The answer solves the user's problem.}
"""


class JudgeHandler(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible judge: score 1 when the prompt holds the output "PASS: done", else 0."""

    protocol_version = "HTTP/1.1"

    def reply(self, doc: dict[str, Any]) -> None:
        body = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.reply({"id": self.path.rsplit("/", 1)[-1], "object": "model", "created": 0, "owned_by": "test"})

    def do_POST(self) -> None:
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        user = "".join(m["content"] for m in req["messages"] if m["role"] == "user")
        ok = "PASS: done" in user
        verdict = {"score": 1 if ok else 0, "issues": [] if ok else ["no PASS"], "suggestion": "" if ok else "Say PASS."}
        content = json.dumps(verdict)
        self.reply({"id": "c", "object": "chat.completion", "created": 0, "model": req["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None},
                                 "finish_reason": "stop", "logprobs": None}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def judge_url() -> Iterator[str]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), JudgeHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "jsonl"])
def test_judgements(judge_url: str, tmp_path: Path, fmt: str) -> None:
    (tmp_path / "judged.yaml").write_text(SPEC)
    rows = tmp_path / "rollouts.jsonl"
    rows.write_text("".join(
        json.dumps({"rollout_id": f"r{i}", "task_id": "TASK-HELP", "output": "PASS: done" if i % 2 else "no"}) + "\n" for i in range(4)))
    res = gavel.grade(rows, spec=tmp_path / "judged.yaml", judge_model=["strict", "other"], judge_samples=2,
                      judge_url=judge_url, judge_cache="off", format=fmt)
    assert res.judgements is not None
    assert res.judgements.schema.equals(JUDGEMENTS_SCHEMA)
    assert res.judgements.num_rows == 4 * 2 * 2
    assert res.judgements.column("judge_model").to_pylist()[:4] == ["strict", "strict", "other", "other"]
    assert res.rewards.column("passed").to_pylist() == [False, True, False, True]
    assert res.checks.column("score").to_pylist() == [0.0, 1.0, 0.0, 1.0]
