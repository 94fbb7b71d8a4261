"""Benchmark of Python functions as verifiers: gavel.grade(verifiers=...).

Two functions, each over the same small rows (a task id and an output of
100 characters, as dicts in memory):

- ``costly``: about 1 ms of CPU per rollout (a loop calibrated here, on
  this machine, before the runs). Timed, alternately, REPEAT times each:
  a plain Python loop calling it over the rows in this process, and
  gavel.grade(rows, verifiers={"all": costly}, pure=True), whose worker
  processes (one per CPU) run it. Target: gavel.grade reaches at least
  1.6 x the loop's rollouts/s on 2 CPUs.
- ``free``: returns 1.0 and costs nothing. gavel.grade over the rows.
  Target: at least 20,000 rollouts/s.

gavel.grade is timed whole, from the call to the results in memory: the
service's start, the binary's, the rows' encoding and the results'
decoding included. Every run is checked: each row passed, with the
function's reward (a failed check exits 1). Prints rollouts/s (median of
REPEAT), the ratio, each target met or not, the CPUs and the load average
before and after. Run it on an idle machine.

Usage: python bench/python/functions.py [--costly-rollouts 10000] [--free-rollouts 200000] [--repeat 3]
(with the package importable and its binary found: make bench-python-fn)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

import gavel

COSTLY_RATIO_TARGET = 1.6
FREE_TARGET = 20_000.0

_spins = 1
"""Iterations of costly's loop; set by calibrate, before the workers are
forked (they inherit it)."""


def _spin(n: int) -> int:
    x = 0
    for i in range(n):
        x ^= i
    return x


def costly(rollout: dict[str, Any]) -> float:
    """About 1 ms of CPU (calibrate), then a reward that depends on the rollout."""
    _spin(_spins)
    return 1.0 if rollout["output"] else 0.0


def free(rollout: dict[str, Any]) -> float:
    return 1.0


def calibrate(target_s: float = 0.001) -> int:
    """Returns the iterations of _spin that take target_s of CPU here."""
    n = 10_000
    while True:
        start = time.process_time()
        _spin(n)
        took = time.process_time() - start
        if took > 0.05:
            return max(1, int(n * target_s / took))
        n *= 2


def make_rows(n: int) -> list[dict[str, Any]]:
    text = "The answer is 42, as the ledger shows: the weighted total is $1,234.50 and every check passed. Done."
    assert len(text) == 100
    return [{"rollout_id": f"r{i:07d}", "task_id": "fn-bench", "output": text} for i in range(n)]


def loop(rows: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    for r in rows:
        costly(r)
    return len(rows) / (time.perf_counter() - start)


def graded(rows: list[dict[str, Any]], fn: Any) -> float:
    start = time.perf_counter()
    res = gavel.grade(rows, verifiers={"all": fn}, pure=True, quiet=True)
    took = time.perf_counter() - start
    rewards = res.rewards
    statuses = set(rewards.column("status").to_pylist())
    if rewards.num_rows != len(rows) or statuses != {"passed"}:
        raise SystemExit(f"{fn.__name__}: {rewards.num_rows} rows with statuses {statuses}; want {len(rows)} passed")
    return len(rows) / took


def main() -> int:
    global _spins
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--costly-rollouts", type=int, default=10_000)
    ap.add_argument("--free-rollouts", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    cpus = len(os.sched_getaffinity(0))
    load = os.getloadavg()
    print(f"gavel {gavel.binary()}; {cpus} CPUs; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    _spins = calibrate()
    costly_rows = make_rows(args.costly_rollouts)
    start = time.process_time()
    for r in costly_rows[:500]:
        costly(r)
    per_call = (time.process_time() - start) / 500
    print(f"costly: {per_call * 1e3:.3f} ms of CPU per call ({_spins} iterations)")

    loops, grades = [], []
    for _ in range(args.repeat):
        loops.append(loop(costly_rows))
        grades.append(graded(costly_rows, costly))
    lr, gr = statistics.median(loops), statistics.median(grades)
    ratio = gr / lr
    ok_costly = ratio >= COSTLY_RATIO_TARGET
    print(f"costly, {len(costly_rows)} rollouts: loop {lr:,.0f} rollouts/s; gavel.grade {gr:,.0f} rollouts/s;"
          f" {ratio:.2f} x the loop (target >= {COSTLY_RATIO_TARGET} x on 2 CPUs): {'met' if ok_costly else 'not met'}")

    free_rows = make_rows(args.free_rollouts)
    frees = [graded(free_rows, free) for _ in range(args.repeat)]
    fr = statistics.median(frees)
    ok_free = fr >= FREE_TARGET
    print(f"free, {len(free_rows)} rollouts: gavel.grade {fr:,.0f} rollouts/s"
          f" (target >= {FREE_TARGET:,.0f}): {'met' if ok_free else 'not met'}")
    load = os.getloadavg()
    print(f"load average after {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
