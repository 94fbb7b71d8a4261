"""Reward functions for trainers, each a thin layer over :class:`gavel.Client`.

None of the trainers' protocols names a task or carries world states, so
each maps its fields onto a rollout the same way (docs/trainers.md): the
output is the response, the prompt and the ground truth become metadata
(``meta.prompt``, ``meta.ground_truth`` or ``meta.label``, readable by
specs), and the task comes from an explicit field or else from a default
given when the function is made. A rollout whose task binds no verifier is
an error naming the task.

- :mod:`gavel.rewards.verl`: ``compute_score`` for verl's
  ``custom_reward_function``, and a batched variant;
- :func:`gavel.rewards.trl`: a reward function for TRL's trainers.

OpenRLHF and NeMo Gym talk to ``gavel serve`` directly (``POST
/get_reward``, ``POST /verify``).
"""

from __future__ import annotations

from . import verl
from ._trl import reward_function as trl

__all__ = ["trl", "verl"]
