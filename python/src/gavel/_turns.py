"""Turn rewards in the shapes trainers take (docs/trainers.md, "Turn rewards")."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["turn_rewards_to_steps", "turn_rewards_to_tokens"]


def turn_rewards_to_steps(
    turn_rewards: Sequence[float | None], *, unscored: float | None = None, total: float | None = None
) -> list[float | None]:
    """Returns one reward per agent turn, from a rewards row's ``turn_rewards``.

    A turn not scored (``None``) stays ``None`` (prime-rl's "not scored",
    gavel's ``step_rewards``) unless ``unscored`` gives its value (``0.0``
    for a trainer that takes only floats, NeMo Gym's proposed
    ``step_rewards: list[float]``). With ``total`` (the rollout's reward,
    for a trainer whose turn rewards must sum to the trajectory's, as
    NeMo-RL's do) the scored turns' rewards are scaled to sum to it; when
    they sum to 0, the last scored turn gets all of it. gavel's turn
    rewards do not sum to the rollout's reward by construction: each is a
    formula over the checks credited to its turn.
    """
    steps = [unscored if r is None or math.isnan(r) else float(r) for r in turn_rewards]
    if total is None:
        return steps
    scored = [i for i, r in enumerate(steps) if r is not None]
    if not scored:
        if total != 0:
            raise ValueError(f"turn_rewards_to_steps: no scored turn to carry the total {total}")
        return steps
    s = math.fsum(r for r in steps if r is not None)
    if s == 0:
        for i in scored:
            steps[i] = 0.0
        steps[scored[-1]] = float(total)
        return steps
    return [None if r is None else r * total / s for r in steps]


def turn_rewards_to_tokens(
    turn_rewards: Sequence[float | None], spans: Sequence[tuple[int, int]], length: int, *, unscored: float = 0.0
) -> list[float]:
    """Returns a reward per token of a response of ``length`` tokens: each
    turn's reward at the last token of its assistant span, 0.0 elsewhere
    (verl's token-level reward tensor puts the trajectory reward at the
    last token; here each turn's goes at the end of its own span).

    ``spans`` are the ``(start, end)`` token offsets, end excluded, of each
    agent turn's assistant tokens in the response, one per turn in order
    (the trainer's tokenization gives them; a turn's ``message_index``
    names its message). A turn not scored puts ``unscored`` there.
    """
    if len(spans) != len(turn_rewards):
        raise ValueError(f"turn_rewards_to_tokens: {len(turn_rewards)} turn rewards for {len(spans)} spans")
    out = [0.0] * length
    for i, ((start, end), r) in enumerate(zip(spans, turn_rewards)):
        if not 0 <= start < end <= length:
            raise ValueError(f"turn_rewards_to_tokens: span {i} ({start}, {end}) is not a non-empty span of {length} tokens")
        out[end - 1] = unscored if r is None or math.isnan(r) else float(r)
    return out
