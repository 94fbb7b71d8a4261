"""Benchmark of the gavel Python package against gavel grade on a file.

Generates N rollouts (gavel gen, Parquet), reads them into a pyarrow Table,
then times, alternately, REPEAT times each:

- gavel grade on the Parquet file (the binary alone, rewards to a directory);
- gavel.grade(table): the same rows from memory through the binary's Arrow
  streams, no temporary file for the input;
- with --ray, gavel.ray.grade on a local Ray cluster of --ray-cpus CPUs,
  over ray.data.from_arrow of the table in blocks of gavel.ray.BATCH_SIZE
  rows (an untimed first run starts Ray's workers), the rewards counted.

It prints rollouts/s (median), each against gavel grade's, the load average
before and after, and, for gavel.grade(table), the peak resident memory of
Python and the gavel process together minus Python's after the table was
loaded, against the table's nbytes (the issue's bound: under 1.5 x).

Usage: python bench/python/package.py [--rollouts 200000] [--repeat 3] [--ray]
(with the package installed: make wheel, then pip install python/dist/*.whl)
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq

import gavel


def rss_kib() -> int:
    """The resident memory of this process now, in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


class PeakSampler:
    """Samples the summed resident memory of this process and its gavel children."""

    def __init__(self) -> None:
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            total = 0
            for pid in [me, *self._children(me)]:
                try:
                    with open(f"/proc/{pid}/status") as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                total += int(line.split()[1])
                except OSError:
                    pass
            self.peak_kib = max(self.peak_kib, total)
            time.sleep(0.01)

    @staticmethod
    def _children(pid: int) -> list[int]:
        """The gavel processes among pid's children (not Ray's daemons and
        workers, whose shared object store is not gavel.grade's memory)."""
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            return []
        out = []
        for k in kids:
            try:
                with open(f"/proc/{k}/comm") as f:
                    if f.read().strip() == "gavel":
                        out.append(k)
            except OSError:
                pass
        return out

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rollouts", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", default="bench/data")
    ap.add_argument("--ray", action="store_true", help="also time gavel.ray.grade")
    ap.add_argument("--ray-cpus", type=int, default=2)
    args = ap.parse_args()

    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    path = data / f"python-crm-{args.rollouts}.parquet"
    if not path.exists():
        subprocess.run([gavel.binary(), "gen", "--out", str(path), "--rollouts", str(args.rollouts), "--seed", "1"], check=True)
    print(f"load before: {os.getloadavg()[0]:.2f} (1-minute average, {os.cpu_count()} CPUs)")

    table = pq.read_table(path)
    after_load = rss_kib()
    n = table.num_rows

    times: dict[str, list[float]] = {"gavel grade (Parquet file)": [], "gavel.grade(table)": []}
    if args.ray:
        import ray

        import gavel.ray as gray

        # The object store holds the table (Ray's default is 30 % of the
        # memory), and the Dataset has a block per BATCH_SIZE rows, as
        # read_parquet of files of that size gives: a Dataset of one block
        # is one task, graded on one CPU whatever the cluster has.
        ray.init(num_cpus=args.ray_cpus, include_dashboard=False, _node_ip_address="127.0.0.1",
                 object_store_memory=max(1 << 30, 2 * table.nbytes))
        step = gray.BATCH_SIZE
        ds = ray.data.from_arrow([table.slice(i, step) for i in range(0, n, step)]).materialize()
        # A first run starts Ray's worker processes: not timed.
        if gray.grade(ds).count() != n:
            raise SystemExit("gavel.ray.grade: wrong row count in the warm-up run")
        times["gavel.ray.grade"] = []
    peak = 0
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as out:
            t = time.perf_counter()
            p = subprocess.run([gavel.binary(), "grade", "--quiet", "--out", out, str(path)])
            times["gavel grade (Parquet file)"].append(time.perf_counter() - t)
            if p.returncode not in (0, 3):
                raise SystemExit(f"gavel grade exited {p.returncode}")
        with PeakSampler() as s:
            t = time.perf_counter()
            res = gavel.grade(table)
            times["gavel.grade(table)"].append(time.perf_counter() - t)
        peak = max(peak, s.peak_kib)
        if res.rewards.num_rows != n:
            raise SystemExit(f"gavel.grade gave {res.rewards.num_rows} rows for {n}")
        del res
        if args.ray:
            t = time.perf_counter()
            rows = gray.grade(ds).count()
            times["gavel.ray.grade"].append(time.perf_counter() - t)
            if rows != n:
                raise SystemExit(f"gavel.ray.grade gave {rows} rows for {n}")

    base = n / statistics.median(times["gavel grade (Parquet file)"])
    print(f"{n} rollouts, median of {args.repeat}:")
    for name, ts in times.items():
        rate = n / statistics.median(ts)
        print(f"  {name:28s} {rate:10.0f} rollouts/s  {rate / base:.2f} x gavel grade  (runs {', '.join(f'{x:.2f}s' for x in ts)})")
    extra = (peak - after_load) * 1024
    if args.ray:
        # The driver maps the object store's copy of the table once Ray
        # holds it, which is no memory of gavel.grade's.
        print("gavel.grade(table): peak memory not measured with --ray (run without it)")
    else:
        print(f"gavel.grade(table): peak RSS of Python + gavel minus Python's after loading: {extra / 2**20:.0f} MiB, "
              f"table nbytes {table.nbytes / 2**20:.0f} MiB, ratio {extra / table.nbytes:.2f} (bound 1.5)")
    print(f"Python's own peak (ru_maxrss): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
