"""gavel's math check against Math-Verify: correctness on the project's
corpus and speed on generated pairs, in one run (make bench-math).

Correctness: every pair of testdata/math/corpus.jsonl is graded by gavel
(examples/math/math.yaml's check, the gold as a rollout's metadata) and by
Math-Verify (bench/python/mathverify.py); each side's verdicts are counted
against the truth the corpus was written with.

Speed: the generator writes N distinct pairs (half short answers, half 1 to
2 KB of reasoning around the answer). gavel grades all of them as one JSON
Lines file, pinned to one core (taskset -c 0), three times; Math-Verify
checks every K-th pair (a uniform sample of the same pairs: all of them
would take hours), pinned to the same core. The ratio is gavel's rows per
second (whole process, the median run) over Math-Verify's pairs per second.

Usage: python bench/python/mathbench.py --gavel bin/gavel --pairs-bin bin/bench-mathpairs \\
           --data bench/data/math [--n 200000] [--every 100]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SPEC = """verifiers:
  - id: MATH
    tasks: all
    name: The final answer equals the gold answer
    checks:
      - id: answer
        type: math
        gold: meta.gold
"""


def pinned(cmd: list[str]) -> list[str]:
    """cmd on core 0, when taskset is there."""
    return ["taskset", "-c", "0", *cmd] if subprocess.run(["which", "taskset"], capture_output=True).returncode == 0 else cmd


def timed(cmd: list[str]) -> tuple[float, float, subprocess.CompletedProcess[bytes]]:
    """Runs cmd, returning its wall seconds, its CPU seconds and the result."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc


def gavel_grade(gavel: str, spec: Path, rows: Path, out: Path, pin: bool) -> tuple[float, float]:
    cmd = [gavel, "grade", "--quiet", "--spec", str(spec), "--format", "jsonl", "--out", str(out), str(rows)]
    wall, cpu, proc = timed(pinned(cmd) if pin else cmd)
    if proc.returncode not in (0, 3):
        raise SystemExit(f"gavel grade exited {proc.returncode}: {proc.stderr.decode()}")
    return wall, cpu


def gavel_verdicts(out: Path) -> dict[str, bool]:
    verdicts: dict[str, bool] = {}
    for part in sorted((out / "checks").iterdir()):
        for line in part.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            verdicts[row["rollout_id"]] = row["status"] == "pass"
    return verdicts


def math_verify(python: str, pairs: Path, pin: bool) -> dict[str, Any]:
    cmd = [python, str(ROOT / "bench" / "python" / "mathverify.py"), str(pairs)]
    proc = subprocess.run(pinned(cmd) if pin else cmd, capture_output=True)
    if proc.returncode != 0:
        raise SystemExit(f"mathverify.py exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gavel", required=True)
    ap.add_argument("--pairs-bin", required=True, help="the generator, bench/cmd/mathpairs built")
    ap.add_argument("--data", required=True, help="directory for the generated pairs (kept and reused)")
    ap.add_argument("--n", type=int, default=200000, help="pairs gavel grades")
    ap.add_argument("--every", type=int, default=100, help="Math-Verify checks every K-th pair")
    ap.add_argument("--python", default=sys.executable, help="the Python with math-verify installed")
    args = ap.parse_args()

    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    spec = data / "math.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    report: dict[str, Any] = {"load_average": os.getloadavg()}

    with tempfile.TemporaryDirectory() as tmp:
        # Correctness on the corpus.
        corpus = [json.loads(l) for l in (ROOT / "testdata" / "math" / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if l.strip()]
        rows = Path(tmp) / "corpus-rows.jsonl"
        with rows.open("w", encoding="utf-8") as f:
            for p in corpus:
                f.write(json.dumps({"rollout_id": p["id"], "task_id": "math", "output": p["answer"], "gold": p["gold"]}) + "\n")
        gavel_grade(args.gavel, spec, rows, Path(tmp) / "corpus-out", pin=False)
        verdicts = gavel_verdicts(Path(tmp) / "corpus-out")
        gavel_right = sum(verdicts[p["id"]] == p["equal"] for p in corpus)
        mv = math_verify(args.python, ROOT / "testdata" / "math" / "corpus.jsonl", pin=False)
        report["corpus"] = {"pairs": len(corpus), "gavel_right": gavel_right, "math_verify_right": mv["right"]}

        # Speed on generated pairs.
        rows_file, pairs_file = data / f"rows-{args.n}.jsonl", data / f"pairs-{args.n}-every{args.every}.jsonl"
        if not rows_file.exists() or not pairs_file.exists():
            subprocess.run([args.pairs_bin, "-n", str(args.n), "-every", str(args.every), "-rows", str(rows_file), "-pairs", str(pairs_file)], check=True)
        runs = [gavel_grade(args.gavel, spec, rows_file, Path(tmp) / f"speed-{i}", pin=True) for i in range(3)]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        mvs = math_verify(args.python, pairs_file, pin=True)
        report["speed"] = {
            "gavel_rows": args.n,
            "gavel_seconds": round(wall, 3),
            "gavel_cpu_seconds": round(cpu, 3),
            "gavel_rows_per_second": round(args.n / wall),
            "math_verify_pairs": mvs["pairs"],
            "math_verify_seconds": mvs["seconds"],
            "math_verify_cpu_seconds": mvs["cpu_seconds"],
            "math_verify_pairs_per_second": mvs["pairs_per_second"],
            "ratio": round(args.n / wall / mvs["pairs_per_second"], 1),
        }
    report["load_average_after"] = os.getloadavg()

    c, s = report["corpus"], report["speed"]
    print(f"math: load average {report['load_average'][0]:.2f} before, {report['load_average_after'][0]:.2f} after")
    print(f"correctness on the corpus ({c['pairs']} pairs): gavel right {c['gavel_right']}, Math-Verify right {c['math_verify_right']}"
          f"  (target: gavel >= Math-Verify: {'met' if c['gavel_right'] >= c['math_verify_right'] else 'MISSED'})")
    print(f"speed, one core: gavel {s['gavel_rows_per_second']} rows/s ({s['gavel_rows']} rows in {s['gavel_seconds']} s, {s['gavel_cpu_seconds']} CPU-s),"
          f" Math-Verify {s['math_verify_pairs_per_second']} pairs/s ({s['math_verify_pairs']} pairs in {s['math_verify_seconds']} s,"
          f" {s['math_verify_cpu_seconds']} CPU-s): {s['ratio']} x  (target 100 x: {'met' if s['ratio'] >= 100 else 'MISSED'})")
    (data / "results.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
