"""A reward function for TRL's trainers, graded by a running ``gavel serve``.

::

    import gavel.rewards
    trainer = GRPOTrainer(..., reward_funcs=[gavel.rewards.trl("http://127.0.0.1:8080", task="TASK-MATH")])

TRL calls it with the prompts, the completions (strings, or message lists
in conversational datasets) and every other dataset column as a keyword
argument, one value per completion. Each completion is one rollout: its
output is the completion (the content of its assistant messages, joined
by newlines), ``meta.prompt`` the prompt (the text of its last user
message), and every other column metadata of its own name (a
``ground_truth`` or ``label`` column is ``meta.ground_truth`` or
``meta.label``); the task is the ``task_id`` column, else ``task``. The
function answers gavel's reward per completion, or ``None`` (TRL's "no
opinion") for a rollout gavel could not grade, never 0.0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._errors import GavelError
from ._common import client_for, grade_rows, metadata

__all__ = ["reward_function"]

# The keyword arguments TRL adds beside the dataset's columns.
_TRL_KWARGS = frozenset({"completion_ids", "trainer_state", "log_extra", "log_metric", "environments"})

RewardFunction = Callable[..., list[float | None]]


def reward_function(url: str, *, task: str | None = None, token: str | None = None) -> RewardFunction:
    """Returns a TRL reward function ``f(prompts, completions, **kwargs) -> list[float | None]``."""

    def gavel(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        n = len(completions)
        columns = {k: v for k, v in kwargs.items() if k not in _TRL_KWARGS and isinstance(v, Sequence) and not isinstance(v, str) and len(v) == n}
        rows = []
        for i in range(n):
            where = f"completion {i}"
            fields = {k: v[i] for k, v in columns.items()}
            row_task = fields.get("task_id") or task
            if not row_task:
                raise GavelError(f"{where} names no task: add a task_id column to the dataset, or pass task=")
            row = metadata(fields, where)
            if prompts is not None and i < len(prompts):
                row["prompt"] = _text(prompts[i], "user", f"{where}: prompt")
            row.update(rollout_id=f"trl#{i}", task_id=str(row_task), output=_text(completions[i], "assistant", where))
            rows.append(row)
        return [g.reward for g in grade_rows(client_for(url, token), rows)]

    return gavel


def _text(value: Any, role: str, where: str) -> str:
    """Returns a prompt or completion as text: itself, or its messages of role.

    For the assistant's completion, the contents of all its assistant
    messages joined by newlines; for a prompt, its last user message.
    """
    if isinstance(value, str):
        return value
    if not isinstance(value, Sequence):
        raise TypeError(f"{where}: want a string or a list of messages, got {type(value).__name__}")
    texts = []
    for m in value:
        if not isinstance(m, Mapping):
            raise TypeError(f"{where}: want messages as dicts with role and content")
        if m.get("role") != role:
            continue
        content = m.get("content")
        if isinstance(content, list):  # content parts
            content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text")
        texts.append("" if content is None else str(content))
    if role == "user":
        return texts[-1] if texts else ""
    return "\n".join(texts)
