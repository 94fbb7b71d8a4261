"""Rewards per turn: the turn columns of gavel.grade and gavel.Client, and
the helpers that shape them for trainers (docs/trainers.md, "Turn rewards")."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gavel
from conftest import CHATS, CHATS_TURN_REWARDS, start_serve

TURN_REWARDS = [CHATS_TURN_REWARDS[c["rollout_id"]] for c in CHATS]


def _check_turns(rewards: Any, checks: Any) -> None:
    """The rows of CHATS graded: their turn rewards, turns, and the turn of each check."""
    assert rewards.column("rollout_id").to_pylist() == [c["rollout_id"] for c in CHATS]
    assert rewards.column("turn_rewards").to_pylist() == TURN_REWARDS
    assert rewards.column("turns").to_pylist() == [2, 2, 2]
    by_rollout: dict[str, list[tuple[str, int | None]]] = {}
    for row in checks.to_pylist():
        if row.get("kind", "check") == "check":
            by_rollout.setdefault(row["rollout_id"], []).append((row["check_id"], row["turn"]))
    # The trajectory check is credited to no turn; the turn check to the
    # turn that called the tool.
    assert by_rollout["oslo"] == [("answered", None), ("asks-for-oslo", 0)]
    assert by_rollout["plain"] == [("answered", None)]


def test_grade_messages_file(chats: tuple[Path, Path]) -> None:
    """gavel.grade on a file of chats (--from messages) with a spec that
    scores turns: turn_rewards, None for a turn not scored, and the list
    None for the rollout whose verifier scores no turns."""
    messages, spec = chats
    res = gavel.grade(messages, from_="messages", spec=[spec])
    assert res.exit_status == 0
    _check_turns(res.rewards, res.checks)
    assert res.rewards.column("turn_rewards").to_pylist()[0] == [1.0, None]


@pytest.mark.parametrize("as_text", [False, True])
def test_grade_rows_in_memory(chats: tuple[Path, Path], as_text: bool) -> None:
    """Rows of gavel's own schema with a messages column, in memory (the
    Arrow stream of the binary), the messages nested or as JSON text: the
    same turn columns."""
    _, spec = chats
    rows = copy.deepcopy(CHATS)
    for r in rows:
        r["output"] = r["messages"][-1]["content"]
        if as_text:
            r["messages"] = json.dumps(r["messages"])
    res = gavel.grade(rows, spec=[spec])
    _check_turns(res.rewards, res.checks)


@pytest.fixture(scope="module")
def turns_url(tmp_path_factory: pytest.TempPathFactory, chats: tuple[Path, Path]) -> Iterator[str]:
    yield from start_serve(tmp_path_factory.mktemp("serve"), "--spec", str(chats[1]))


def test_client_passes_turn_rewards(turns_url: str, chats: tuple[Path, Path]) -> None:
    """gavel.Client: /v1/grade's turn columns, typed as gavel.grade's."""
    rows = copy.deepcopy(CHATS)
    for r in rows:
        r["output"] = r["messages"][-1]["content"]
    got = gavel.Client(turns_url).grade(rows)
    _check_turns(got.rewards, got.checks)
    want = gavel.grade(rows, spec=[chats[1]])
    for name in ("turn_rewards", "turns"):
        assert got.rewards.schema.field(name).equals(want.rewards.schema.field(name))
    assert got.checks.schema.field("turn").equals(want.checks.schema.field("turn"))
    assert got.checks.drop_columns(["detail"]).to_pylist() == want.checks.drop_columns(["detail"]).to_pylist()


def test_turn_rewards_to_steps() -> None:
    tr = [None, 1.0, 0.5]
    assert gavel.turn_rewards_to_steps(tr) == [None, 1.0, 0.5]
    assert gavel.turn_rewards_to_steps(tr, unscored=0.0) == [0.0, 1.0, 0.5]
    assert gavel.turn_rewards_to_steps([float("nan"), 1.0]) == [None, 1.0]
    # Scaled to sum to the rollout's reward; unscored turns stay None.
    assert gavel.turn_rewards_to_steps(tr, total=0.75) == [None, 0.5, 0.25]
    assert gavel.turn_rewards_to_steps(tr, unscored=0.0, total=3.0) == [0.0, 2.0, 1.0]
    # Scored turns summing to 0: the last scored turn carries the total.
    assert gavel.turn_rewards_to_steps([0.0, None, 0.0, None], total=1.0) == [0.0, None, 1.0, None]
    assert gavel.turn_rewards_to_steps([None, None], total=0.0) == [None, None]
    with pytest.raises(ValueError, match="no scored turn"):
        gavel.turn_rewards_to_steps([None], total=1.0)


def test_turn_rewards_to_tokens() -> None:
    # Two turns of 3 and 2 tokens, a tool result of 2 tokens between them.
    assert gavel.turn_rewards_to_tokens([0.5, 1.0], [(0, 3), (5, 7)], 8) == [0, 0, 0.5, 0, 0, 0, 1.0, 0]
    assert gavel.turn_rewards_to_tokens([None, 1.0], [(0, 3), (5, 7)], 7, unscored=-1.0) == [0, 0, -1.0, 0, 0, 0, 1.0]
    with pytest.raises(ValueError, match="2 turn rewards for 1 spans"):
        gavel.turn_rewards_to_tokens([0.5, 1.0], [(0, 3)], 8)
    with pytest.raises(ValueError, match="span 0"):
        gavel.turn_rewards_to_tokens([0.5], [(2, 2)], 8)
