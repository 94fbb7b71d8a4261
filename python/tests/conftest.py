"""Fixtures: generated rollouts, and gavel serve started on a free local port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gavel


def _gen(out: Path, rollouts: int, seed: int, bad_share: float = 0.0) -> Path:
    subprocess.run(
        [gavel.binary(), "gen", "--out", str(out), "--rollouts", str(rollouts), "--seed", str(seed), "--bad-share", str(bad_share)],
        check=True,
        capture_output=True,
    )
    return out


@pytest.fixture(scope="session")
def rollouts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 generated CRM rollouts in JSON Lines, none deliberately broken."""
    return _gen(tmp_path_factory.mktemp("data") / "rollouts.jsonl", 40, 1)


@pytest.fixture(scope="session")
def bad_rollouts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 generated rollouts of which some cannot be judged (rows with status error)."""
    return _gen(tmp_path_factory.mktemp("data") / "bad.jsonl", 40, 3, 0.2)


@pytest.fixture(scope="session")
def rows(rollouts: Path) -> list[dict[str, Any]]:
    """The rollouts of the rollouts fixture, as dicts."""
    return [json.loads(line) for line in rollouts.read_text().splitlines() if line.strip()]


TURNS_SPEC = """verifiers:
  - id: WEATHER-TURNS
    task: weather
    name: the weather in Oslo, turn by turn
    checks:
      - {id: answered, type: expr, expr: 'output.contains("Oslo")'}
    turn_checks:
      - id: asks-for-oslo
        type: expr
        when: size(turn.tool_calls) > 0
        expr: turn.tool_calls.all(c, c.kwargs.city == "Oslo")
  - id: PLAIN
    task: plain
    name: no turns scored
    checks:
      - {id: answered, type: expr, expr: 'output != ""'}
"""
"""A verifier that scores turns (a turn that calls a tool asks for Oslo;
a turn that calls none is not scored) and one that scores none."""


def _chat(rollout_id: str, task_id: str, city: str) -> dict[str, Any]:
    return {
        "rollout_id": rollout_id,
        "task_id": task_id,
        "messages": [
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": "4C"},
            {"role": "assistant", "content": f"It is 4C in {city}."},
        ],
    }


CHATS = [_chat("oslo", "weather", "Oslo"), _chat("bergen", "weather", "Bergen"), _chat("plain", "plain", "Oslo")]
"""Three chats (gavel grade --from messages): two graded turn by turn, one
by a verifier that scores no turns."""

CHATS_TURN_REWARDS = {"oslo": [1.0, None], "bergen": [0.0, None], "plain": None}
"""The turn_rewards of CHATS by rollout_id: the second turn calls no tool,
so it is not scored."""


@pytest.fixture(scope="session")
def chats(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """CHATS as a messages file, and TURNS_SPEC as a spec file."""
    d = tmp_path_factory.mktemp("turns")
    (d / "chats.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CHATS))
    (d / "turns.yaml").write_text(TURNS_SPEC)
    return d / "chats.jsonl", d / "turns.yaml"


def free_port() -> int:
    """Returns a TCP port free on 127.0.0.1 at the time of asking."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_serve(tmp: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """Starts gavel serve on a free port of 127.0.0.1, yields its URL, stops it by its pid."""
    port = free_port()
    log = open(tmp / f"serve-{port}.log", "wb")
    proc = subprocess.Popen(
        [gavel.binary(), "serve", "--addr", f"127.0.0.1:{port}", *args],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"gavel serve exited with {proc.returncode}: {(tmp / f'serve-{port}.log').read_text()}")
            try:
                with urllib.request.urlopen(url + "/readyz", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("gavel serve did not become ready within 30s")
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def serve_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a gavel serve with the built-in verifiers."""
    yield from start_serve(tmp_path_factory.mktemp("serve"))


DOCS = Path(__file__).resolve().parents[2] / "docs" / "python.md"
REMOTE_DOCS = DOCS.with_name("remote-verifiers.md")
"""docs/remote-verifiers.md, whose python blocks test_remote.py runs."""


def doc_blocks(page: Path = DOCS) -> list[tuple[str, int, str]]:
    """Returns the python blocks of a docs page (docs/python.md unless
    told): the directive before each (`<!-- python: ... -->`, "" when
    none), its first line, and its code."""
    blocks: list[tuple[str, int, str]] = []
    directive = ""
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("<!-- python: ") and line.endswith(" -->"):
            directive = line.removeprefix("<!-- python: ").removesuffix(" -->")
        elif line == "```python":
            start = i + 1
            end = lines.index("```", start)
            blocks.append((directive, start + 1, "\n".join(lines[start:end])))
            directive = ""
            i = end
        elif line.strip() and not line.startswith("<!--"):
            directive = ""
        i += 1
    return blocks


def run_doc_blocks(
    blocks: list[tuple[str, int, str]], cwd: Path, replace: dict[str, str] | None = None, page: Path = DOCS
) -> None:
    """Runs blocks of a docs page in order, in one namespace, in cwd (where
    docs/python.md's examples find rollouts.parquet and rollouts.jsonl)."""
    if page == DOCS:
        _gen(cwd / "rollouts.parquet", 300, 1, 0.02)
        _gen(cwd / "rollouts.jsonl", 300, 1)
    namespace: dict[str, Any] = {}
    old = os.getcwd()
    os.chdir(cwd)
    try:
        for _, line, code in blocks:
            for k, v in (replace or {}).items():
                code = code.replace(k, v)
            exec(compile(code, f"{page}:{line}", "exec"), namespace)
    finally:
        os.chdir(old)
