"""verl's custom reward function, graded by a running ``gavel serve``.

In verl's configuration::

    custom_reward_function:
      path: /path/to/site-packages/gavel/rewards/verl.py   # or a file of yours that imports it
      name: compute_score
      reward_kwargs: {url: "http://127.0.0.1:8080", task: TASK-MATH}

(``reward_model.reward_manager: batch`` with ``name: compute_score_batch``
sends a whole batch in one request.) The server's URL, token and default
task may also come from the environment: ``GAVEL_URL``, ``GAVEL_TOKEN``,
``GAVEL_TASK``.

Each call is one rollout: ``solution_str`` is its output;
``ground_truth`` becomes ``meta.ground_truth``, ``data_source``
``meta.data_source``, and every field of ``extra_info`` metadata of its
own name (``extra_info["prompt"]`` is ``meta.prompt``); the task is
``extra_info["task_id"]``, else ``task``. The answer is a dict: ``score``
(gavel's reward) and, for verl's ``reward_extra_info``, ``passed`` (1.0 or
0.0), ``checks_passed``, ``checks_total`` and ``error`` (1.0 when the
rollout could not be graded).

verl has no "no score": a rollout gavel could not grade raises
:class:`gavel.GavelError`, unless ``on_error=X`` is given, which answers
``X`` as its score instead. That is your choice, and ``X`` is not a grade.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import GavelError
from ._common import Graded, client_for, grade_rows, metadata

__all__ = ["compute_score", "compute_score_batch"]


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    url: str | None = None,
    task: str | None = None,
    token: str | None = None,
    on_error: float | None = None,
    **_: Any,
) -> dict[str, float]:
    """Grades one rollout; verl's ``custom_reward_function`` signature."""
    return compute_score_batch(
        [data_source], [solution_str], [ground_truth], [extra_info], url=url, task=task, token=token, on_error=on_error
    )[0]


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    *,
    url: str | None = None,
    task: str | None = None,
    token: str | None = None,
    on_error: float | None = None,
    **_: Any,
) -> list[dict[str, float]]:
    """Grades a batch of rollouts in one request; verl's batch reward manager signature."""
    url = url or os.environ.get("GAVEL_URL")
    if not url:
        raise GavelError("no gavel serve to ask: pass url= (verl's reward_kwargs) or set GAVEL_URL")
    token = token if token is not None else os.environ.get("GAVEL_TOKEN") or None
    task = task or os.environ.get("GAVEL_TASK") or None
    n = len(solution_strs)
    if len(data_sources) != n or len(ground_truths) != n or (extra_infos is not None and len(extra_infos) != n):
        raise ValueError(f"compute_score_batch: {n} solution_strs, but {len(data_sources)} data_sources, {len(ground_truths)} ground_truths")
    rows = []
    for i in range(n):
        info = dict((extra_infos[i] if extra_infos is not None else None) or {})
        where = f"rollout {i}"
        row_task = info.get("task_id") or task
        if not row_task:
            raise GavelError(f"{where} names no task: give extra_info['task_id'] in the dataset, or task= (GAVEL_TASK)")
        row = metadata(info, f"{where}: extra_info")
        row.update(metadata({"data_source": data_sources[i], "ground_truth": ground_truths[i]}, where))
        row.update(rollout_id=f"verl#{i}", task_id=str(row_task), output=solution_strs[i])
        rows.append(row)
    return [_answer(g, i, on_error) for i, g in enumerate(grade_rows(client_for(url, token), rows))]


def _answer(g: Graded, i: int, on_error: float | None) -> dict[str, float]:
    if g.error:
        if on_error is None:
            raise GavelError(f"rollout {i} could not be graded: {g.error}", hint="fix the rollout or the verifier, or pass on_error= (your choice: it is not a grade)")
        return {"score": float(on_error), "passed": 0.0, "checks_passed": float(g.checks_passed), "checks_total": float(g.checks_total), "error": 1.0}
    assert g.reward is not None
    return {
        "score": float(g.reward),
        "passed": 1.0 if g.status == "passed" else 0.0,
        "checks_passed": float(g.checks_passed),
        "checks_total": float(g.checks_total),
        "error": 0.0,
    }
