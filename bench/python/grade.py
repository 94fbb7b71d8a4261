"""Standard-library Python peer of the gavel benchmarks.

Grades the required checks of VER-002 and VER-004 (verifiers/crm) over a
plain JSON Lines rollout dataset with json.loads, the byte range of the file
split between worker processes, and prints {"rows": N, "passed": {...}} as
JSON.

Usage: python3 grade.py [--processes N] rollouts.jsonl
"""

import argparse
import json
import multiprocessing
import os
import re
import sys

DEPARTED, NEW_OWNER = "USR-004", "USR-003"
NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def state(value):
    """Returns a state given as a JSON value or as a string of JSON text."""
    if isinstance(value, str):
        return json.loads(value)
    return value or {}


def ver002(final, initial):
    after = final.get("opportunities") or {}
    moved = open_ = 0
    for key, o in (initial.get("opportunities") or {}).items():
        if o.get("ownerId") != DEPARTED or o.get("status") != "open":
            continue
        open_ += 1
        if (after.get(key) or {}).get("ownerId") == NEW_OWNER:
            moved += 1
    return open_ > 0 and moved == open_


def ver004(initial, output):
    stages = initial.get("stages") or {}
    total = 0.0
    for o in (initial.get("opportunities") or {}).values():
        if o.get("status") == "open":
            total += o["amount"] * stages[o["stageId"]]["probability"] / 100
    text = (output or "").replace("$", "").replace(",", "")
    return any(abs(float(x) - total) <= 0.01 for x in NUMBER.findall(text))


def grade_range(args):
    """Grades the lines that start in [start, end) of the file."""
    path, start, end = args
    rows = passed2 = passed4 = 0
    with open(path, "rb") as f:
        if start > 0:
            f.seek(start - 1)
            f.readline()  # finish the line that straddles start
        while f.tell() < end:
            line = f.readline()
            if not line:
                break
            if not line.strip():
                continue
            rows += 1
            r = json.loads(line)
            task = r.get("task_id")
            if task == "TASK-002":
                passed2 += ver002(state(r.get("final_state")), state(r.get("initial_state")))
            elif task == "TASK-004":
                passed4 += ver004(state(r.get("initial_state")), r.get("output"))
    return rows, passed2, passed4


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("path")
    a = ap.parse_args()
    size = os.path.getsize(a.path)
    n = max(a.processes, 1)
    ranges = [(a.path, size * i // n, size * (i + 1) // n) for i in range(n)]
    with multiprocessing.Pool(n) as pool:
        parts = pool.map(grade_range, ranges)
    json.dump({"rows": sum(p[0] for p in parts),
               "passed": {"TASK-002": sum(p[1] for p in parts),
                          "TASK-004": sum(p[2] for p in parts)}}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
