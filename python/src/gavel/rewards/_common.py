"""What the reward adapters share: rows made JSON, and grading through a client."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._client import Client
from .._errors import GavelError

# The fields of a rollout itself, which trainer metadata may not set.
ROLLOUT_FIELDS = frozenset({"rollout_id", "task_id", "output", "final_state", "initial_state", "log"})


def jsonable(value: Any) -> Any:
    """Returns value with NumPy scalars and arrays, tuples and sets made JSON types."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    tolist = getattr(value, "tolist", None)  # NumPy arrays and scalars
    if callable(tolist):
        return jsonable(tolist())
    raise TypeError(f"{type(value).__name__} is not a JSON value")


@dataclass
class Graded:
    """One rollout's result, as the adapters answer it."""

    reward: float | None
    """gavel's reward; None when the rollout could not be graded."""
    status: str
    checks_passed: int
    checks_total: int
    error: str
    """Why it has no reward ("" when it has one)."""


_clients: dict[tuple[str, str | None], Client] = {}
_clients_lock = threading.Lock()


def client_for(url: str, token: str | None) -> Client:
    """Returns the process's client of url and token, made once and kept alive."""
    with _clients_lock:
        c = _clients.get((url, token))
        if c is None:
            c = Client(url, token)
            _clients[(url, token)] = c
        return c


def grade_rows(client: Client, rows: Sequence[dict[str, Any]]) -> list[Graded]:
    """Grades rows on the server and returns one result per row, in order.

    A row whose task binds no verifier raises :class:`GavelError` naming
    the task: that is a mistake of configuration, never a reward.
    """
    if not rows:
        return []
    res = client.grade(rows)
    rewards = res.rewards.to_pylist()
    checks = res.checks.to_pylist()
    passed: dict[str, int] = {}
    total: dict[str, int] = {}
    for c in checks:
        rid = c["rollout_id"]
        total[rid] = total.get(rid, 0) + 1
        if c["status"] == "pass":
            passed[rid] = passed.get(rid, 0) + 1
    out = []
    for r in rewards:
        if r.get("error_kind") == "no_verifier":
            raise GavelError(f"rollout {r['rollout_id']}: {r['error']}", hint="name a task a verifier of the server binds")
        reward = r.get("reward")
        error = ""
        if r["status"] == "error":
            error = f"{r.get('error_kind')}: {r.get('error')}"
        elif reward is None:
            error = f"no reward (status {r['status']})"
        rid = r["rollout_id"]
        out.append(Graded(reward if not error else None, r["status"], passed.get(rid, 0), total.get(rid, 0), error))
    return out


def metadata(fields: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Returns trainer fields as rollout metadata, refusing the rollout's own field names."""
    out: dict[str, Any] = {}
    for k, v in fields.items():
        if k in ROLLOUT_FIELDS:
            continue
        try:
            out[k] = jsonable(v)
        except TypeError as e:
            raise TypeError(f"{where}: {k}: {e}") from e
    return out
