"""The trainers' reward functions against a real gavel serve, with their callers' request shapes."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gavel
import gavel.rewards
from gavel.rewards import verl

from conftest import doc_blocks, run_doc_blocks, start_serve

SPEC = """verifiers:
  - id: VER-MATH
    task: TASK-MATH
    name: the answer holds the ground truth
    checks:
      - id: answer
        type: expr
        expr: "output.contains(string(has(meta.ground_truth) ? meta.ground_truth : meta.label))"
      - id: short
        type: expr
        optional: true
        expr: "size(output) < 20"
"""


@pytest.fixture(scope="module")
def math_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("math")
    spec = tmp / "math.yaml"
    spec.write_text(SPEC)
    yield from start_serve(tmp, "--spec", str(spec))


def test_verl_compute_score(math_url: str) -> None:
    # As verl's naive reward manager calls it: keyword arguments, extra_info from the dataset.
    got = verl.compute_score(
        data_source="openai/gsm8k", solution_str="The answer is 42.", ground_truth="42",
        extra_info={"split": "train", "index": 7, "task_id": "TASK-MATH"}, url=math_url,
    )
    assert got == {"score": 1.0, "passed": 1.0, "checks_passed": 2.0, "checks_total": 2.0, "error": 0.0}
    got = verl.compute_score("openai/gsm8k", "I would say that the answer is 41.", "42", None, url=math_url, task="TASK-MATH")
    assert got["score"] == 0.0 and got["passed"] == 0.0 and got["error"] == 0.0


def test_verl_batch(math_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GAVEL_URL", math_url)
    monkeypatch.setenv("GAVEL_TASK", "TASK-MATH")
    # As verl's batch reward manager calls it.
    got = verl.compute_score_batch(
        data_sources=["a", "a", "a"], solution_strs=["42", "It is 41, or so I think.", "It is 42, or so I think."],
        ground_truths=["42", "42", "42"], extra_infos=[{}, {"rollout_reward_scores": {}}, {"index": 3}],
    )
    assert [g["score"] for g in got] == [1.0, 0.0, 0.5]


def test_verl_failures(math_url: str) -> None:
    # No ground truth: the required check cannot be evaluated, the rollout is an error, never a 0.
    with pytest.raises(gavel.GavelError, match="rollout 0 could not be graded: verifier: "):
        verl.compute_score("a", "42", None, {"task_id": "TASK-MATH"}, url=math_url)
    got = verl.compute_score("a", "42", None, {"task_id": "TASK-MATH"}, url=math_url, on_error=-1.0)
    assert got["score"] == -1.0 and got["error"] == 1.0
    with pytest.raises(gavel.GavelError, match='no verifier binds task "TASK-NOPE"'):
        verl.compute_score("a", "42", "42", {"task_id": "TASK-NOPE"}, url=math_url, on_error=0.0)
    with pytest.raises(gavel.GavelError, match="names no task"):
        verl.compute_score("a", "42", "42", {}, url=math_url)


def test_trl_reward_function(math_url: str) -> None:
    f = gavel.rewards.trl(math_url, task="TASK-MATH")
    # Standard format: strings; the dataset's columns come as keyword lists, with TRL's own arguments beside them.
    got = f(
        prompts=["What is 6*7?", "What is 6*7?", "What is 6*7?"],
        completions=["42", "It is 41, or so I think.", "no idea"],
        completion_ids=[[1], [2], [3]], trainer_state=object(), log_extra=print, log_metric=print,
        ground_truth=["42", "42", None],
    )
    assert got == [1.0, 0.0, None]  # the last could not be graded: None, TRL's "no opinion"
    # Conversational format, the task from a task_id column.
    g = gavel.rewards.trl(math_url)
    got = g(
        prompts=[[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 6*7?"}]],
        completions=[[{"role": "assistant", "content": "42"}]],
        task_id=["TASK-MATH"], ground_truth=["42"],
    )
    assert got == [1.0]
    with pytest.raises(gavel.GavelError, match="names no task"):
        g(prompts=["p"], completions=["42"], ground_truth=["42"])


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_openrlhf_request(math_url: str) -> None:
    # As OpenRLHF's SingleTurnAgentExecutor posts to --remote_rm_url: lists of one query (prompt and response), its prompt, its label.
    prompt = "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n"
    status, got = _post(math_url + "/get_reward?task=TASK-MATH", {"query": [prompt + "42<|im_end|>"], "prompts": [prompt], "labels": ["42"]})
    assert status == 200, got
    assert got["rewards"] == [1.0] and got["scores"] == [1.0]
    assert set(got["extra_logs"]) == {"passed", "checks_passed", "checks_total"}


def test_trainers_docs(math_url: str, tmp_path: Path) -> None:
    """The python blocks of docs/trainers.md run against a server with the same spec."""
    page = Path(__file__).resolve().parents[2] / "docs" / "trainers.md"
    blocks = doc_blocks(page)
    # verl's and TRL's, and those of turn rewards (gavel.turn_rewards_to_*).
    assert len(blocks) >= 5
    assert sum("gavel.turn_rewards_to_" in code for _, _, code in blocks) >= 3
    run_doc_blocks(blocks, tmp_path, {"http://127.0.0.1:8095": math_url}, page)
