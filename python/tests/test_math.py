"""The math check from Python: gavel.grade, verl's compute_score through
gavel serve, and the python blocks of docs/math.md."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import gavel
from conftest import doc_blocks, run_doc_blocks, start_serve
from gavel.rewards.verl import compute_score, compute_score_batch

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "math" / "math.yaml"
TRAINER_SPEC = ROOT / "examples" / "math" / "trainer.yaml"
PAGE = ROOT / "docs" / "math.md"


@pytest.fixture(scope="module")
def math_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gavel serve with examples/math/trainer.yaml, default task TASK-MATH."""
    yield from start_serve(tmp_path_factory.mktemp("serve-math"), "--spec", str(TRAINER_SPEC), "--default-task", "TASK-MATH")


def test_grade_rows(tmp_path: Path) -> None:
    rows = [
        {"rollout_id": "a", "task_id": "math", "output": "Thus $\\boxed{2\\sqrt{2}}$.", "answer": "\\sqrt{8}"},
        {"rollout_id": "b", "task_id": "math", "output": "The answer is (C).", "answer": "B"},
        {"rollout_id": "c", "task_id": "math", "output": "I could not finish.", "answer": "7"},
        {"rollout_id": "d", "task_id": "math", "output": "7", "answer": "\\frac{1}{"},
    ]
    res = gavel.grade(rows, spec=str(SPEC), out=tmp_path / "out")
    assert res.exit_status == 3  # the unreadable gold is an error row
    rewards = {r["rollout_id"]: r for r in res.rewards.to_pylist()}
    assert rewards["a"]["reward"] == 1.0
    assert rewards["b"]["reward"] == 0.0
    assert rewards["c"]["reward"] == 0.0
    assert rewards["d"]["status"] == "error" and rewards["d"]["reward"] is None
    assert rewards["d"]["error_kind"] == "verifier" and "cannot be read" in rewards["d"]["error"]
    checks = {c["rollout_id"]: c for c in res.checks.to_pylist()}
    assert checks["a"]["actual"] == '"2*sqrt(2)"' and checks["a"]["expected"] == '"sqrt(8)"'
    assert checks["c"]["detail"].startswith("no answer found") and checks["c"]["actual"] is None
    assert res.summary is not None and res.summary["unextracted"] == {"MATH-ANSWER/answer": 1}


def test_grade_matches_the_binary_on_files(tmp_path: Path) -> None:
    files = [str(ROOT / "examples" / "math" / n) for n in ("gsm8k.jsonl", "competition.jsonl")]
    res = gavel.grade(files, spec=str(SPEC))
    assert res.exit_status == 0
    assert res.rewards.num_rows == 10
    assert res.rewards.column("passed").to_pylist().count(True) == 7
    # Two inputs are two parts: the summary merges their counts.
    assert res.summary is not None and res.summary["unextracted"] == {"MATH-ANSWER/answer": 1}
    whole = gavel.grade([files[1]], spec=str(SPEC))
    assert whole.summary is not None and "unextracted" not in whole.summary


def test_verl_compute_score(math_url: str) -> None:
    assert compute_score("gsm8k", "3 + 4 = 7\n#### 7", "7", url=math_url, task="TASK-MATH")["score"] == 1.0
    assert compute_score("math", "So $x = \\boxed{\\frac{1}{2}}$.", "0.5", url=math_url, task="TASK-MATH")["score"] == 1.0
    assert compute_score("math", "The answer is 8.", "7", url=math_url, task="TASK-MATH")["score"] == 0.0
    scores = compute_score_batch(["m", "m"], ["\\boxed{(1, 2)}", "\\boxed{(2, 1)}"], ["(1,2)", "(1,2)"], url=math_url, task="TASK-MATH")
    assert [s["score"] for s in scores] == [1.0, 0.0]
    # A gold that is not an answer is the rollout's error, never a 0.
    with pytest.raises(gavel.GavelError):
        compute_score("math", "7", "\\frac{1}{", url=math_url, task="TASK-MATH")


def test_docs_examples(tmp_path: Path, math_url: str) -> None:
    blocks = doc_blocks(PAGE)
    assert len(blocks) >= 2
    assert any(d.startswith("serve ") for d, _, _ in blocks)
    os.symlink(ROOT / "examples", tmp_path / "examples")
    run_doc_blocks(blocks, tmp_path, {"http://127.0.0.1:8096": math_url}, page=PAGE)
