"""A math-answer checker served as a gavel remote verifier.

    python examples/remote/math_reward.py --port 8123

Each rollout's ``output`` is compared with its metadata's
``expected_answer``. When the expected answer is a number, the last number
in the output is the answer, and the two are compared as exact rationals:
"1,234.50", "$1234.5" and "2469/2" are all 1234.5, and "1e3" is 1000.
Otherwise both are compared as text, trimmed, case-folded, a final period
dropped. The reward is 1.0 or 0.0. A rollout without an expected answer
cannot be graded: the function raises, and gavel records an error for that
rollout, never a 0.

gavel sends a rollout's metadata fields at the top level of the body, as
``gavel serve``'s /v1/grade reads them (so the script can be tried with
curl on the rows of rollouts.jsonl); a nested ``meta`` object is read too.

The function is pure (the same rollout always gets the same reward), so
the service declares ``pure=True`` and the spec ``pure: true``.
"""

from __future__ import annotations

import argparse
import os
import re
from fractions import Fraction
from typing import Any

from gavel.remote import serve

# A number as people write them: a sign, a currency sign, thousands
# separators, a decimal part, an exponent, or a fraction a/b.
NUMBER = re.compile(
    r"[-+]?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?:/\d+)?"
    r"|[-+]?\$?\.\d+(?:[eE][-+]?\d+)?"
)


def parse_number(text: str) -> Fraction | None:
    """Returns text as an exact number when the whole of it is one ("1,234.50", "3/4"), else None."""
    text = text.strip().rstrip(".").strip()
    if not NUMBER.fullmatch(text):
        return None
    return _fraction(text)


def _fraction(token: str) -> Fraction | None:
    token = token.replace("$", "").replace(",", "")
    try:
        return Fraction(token)
    except (ValueError, ZeroDivisionError):
        return None


def last_number(text: str) -> Fraction | None:
    """Returns the last number written in text, or None when it has none."""
    found = NUMBER.findall(text)
    return _fraction(found[-1]) if found else None


def normalize(text: str) -> str:
    return " ".join(text.strip().rstrip(".").casefold().split())


def expected_answer(rollout: dict[str, Any]) -> str:
    """Returns the rollout's expected answer as text; raises ValueError when it has none."""
    value = rollout.get("expected_answer")
    meta = rollout.get("meta")
    if value is None and isinstance(meta, dict):
        value = meta.get("expected_answer")
    if value is None:
        raise ValueError(f"rollout {rollout.get('rollout_id', '?')} has no expected_answer")
    return str(value)


def reward(rollout: dict[str, Any]) -> float:
    """1.0 when the output's answer is the expected answer, else 0.0."""
    expected = expected_answer(rollout)
    output = rollout.get("output") or ""
    want = parse_number(expected)
    if want is not None:
        return 1.0 if last_number(output) == want else 0.0
    return 1.0 if normalize(output) == normalize(expected) else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the math-answer checker as a gavel remote verifier.")
    parser.add_argument("--port", type=int, default=8123)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--processes", type=int, default=None, help="worker processes (default: one per CPU; 0: threads)")
    parser.add_argument("--token-env", metavar="NAME", help="require Authorization: Bearer $NAME")
    args = parser.parse_args()
    token = os.environ[args.token_env] if args.token_env else None
    serve(reward, host=args.host, port=args.port, pure=True, processes=args.processes, token=token)


if __name__ == "__main__":
    main()
