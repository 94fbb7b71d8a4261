"""Math-Verify's throughput on answer pairs, the peer of gavel's math check.

Reads JSON Lines of pairs {"gold": ..., "answer": ...} (other fields are
ignored) and times verify(parse(gold), parse(answer)) over all of them, one
after another, with Math-Verify's default settings, as its users call it. A
gold that is bare LaTeX (no "$" other than an escaped "\\$", no "\\boxed")
is wrapped in $...$ first, as datasets store it. One untimed pair first
warms up Math-Verify's lazy imports. Prints one JSON object on standard
output:

    {"pairs": N, "seconds": S, "pairs_per_second": R, "cpu_seconds": C, "true": T, "right": K}

seconds is wall time, cpu_seconds this process's CPU time, true the pairs
Math-Verify judged equal (an exception counts as not equal), right those it
judged as the pair's "equal" field says (only when every pair has one). Pin it to one
core from the caller (taskset -c 0 python ...) to compare per core.

Math-Verify bounds each parse and each comparison with signal.alarm (5 s by
default), which only works on the main thread, so the pairs run there. An
alarm cannot interrupt work inside one C call (a huge integer power), so a
watchdog (faulthandler) ends the run with a traceback when one pair takes
longer than --hang-seconds; the numbers of such a run are not printed.
Math-Verify's few small caches favour repeated pairs: use distinct pairs.

Usage: python bench/python/mathverify.py [--hang-seconds 60] pairs.jsonl
(needs pip install math-verify)
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import re
import sys
import time
from typing import Any

from math_verify import parse, verify  # type: ignore[import-untyped]


def wrap_gold(gold: str) -> str:
    """Bare LaTeX gold in $...$; a gold with $ (not an escaped \\$) or \\boxed as it is."""
    if re.search(r"(?<!\\)\$", gold) or "\\boxed" in gold:
        return gold
    return f"${gold}$"


def judge(gold: str, answer: str) -> bool:
    """Math-Verify's verdict with its defaults; an exception is False."""
    try:
        return bool(verify(parse(wrap_gold(gold)), parse(answer)))
    except Exception:
        return False


def read_pairs(path: str) -> list[tuple[str, str, bool | None]]:
    """The pairs of path: gold, answer, and the truth ("equal") when given."""
    pairs: list[tuple[str, str, bool | None]] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            row: dict[str, Any] = json.loads(line)
            gold, answer = row.get("gold"), row.get("answer")
            if not isinstance(gold, str) or not isinstance(answer, str):
                raise SystemExit(f"{path}:{n}: want string fields gold and answer")
            equal = row.get("equal")
            pairs.append((gold, answer, equal if isinstance(equal, bool) else None))
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pairs", help="JSON Lines file of {gold, answer}")
    ap.add_argument("--hang-seconds", type=float, default=60.0, help="end the run when one pair takes longer (default 60)")
    args = ap.parse_args()

    pairs = read_pairs(args.pairs)
    if not pairs:
        raise SystemExit(f"{args.pairs}: no pairs")
    judge("1", "$1$")  # warm-up, untimed

    true = right = 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for gold, answer, equal in pairs:
        faulthandler.dump_traceback_later(args.hang_seconds, exit=True)
        verdict = judge(gold, answer)
        true += verdict
        right += verdict == equal
    faulthandler.cancel_dump_traceback_later()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0

    json.dump(
        {
            "pairs": len(pairs),
            "seconds": round(wall, 4),
            "pairs_per_second": round(len(pairs) / wall, 2),
            "cpu_seconds": round(cpu, 4),
            "true": true,
            # Verdicts equal to the pairs' "equal" field (the truth), when
            # every pair has one.
            **({"right": right} if all(p[2] is not None for p in pairs) else {}),
        },
        sys.stdout,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
