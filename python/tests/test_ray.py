"""gavel.ray.grade, and gavel.grade on a Ray Dataset, on a local Ray cluster.

The cluster (2 CPUs, no dashboard, on 127.0.0.1) is started by the
ray_cluster fixture and stopped at the end of the module, which then checks
that every process Ray started is gone. Without Ray installed the tests are
skipped, unless GAVEL_REQUIRE_RAY=1, which makes that a failure (CI sets it).

The rewards of a Ray Dataset are compared with those of ``gavel grade`` on
the same file after sorting both by rollout_id and verifier_id (Ray does not
keep the order of the blocks), and without source_file and source_row, which
in a Ray task name the batch ("-") and the row's index in it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gavel
from conftest import CHATS, CHATS_TURN_REWARDS, _gen

if os.environ.get("GAVEL_REQUIRE_RAY") == "1":
    import ray
    import ray.data
else:
    ray = pytest.importorskip("ray")
    import ray.data

import gavel.ray  # noqa: E402 - needs ray, imported above or skipped

ROLLOUTS = 2000
BLOCKS = 8


def _descendants(pid: int) -> set[int]:
    """Returns the pids of the running descendants of process pid, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name, in parentheses, may hold spaces: fields follow the last ')'.
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    """Reports whether pid is a process that has not exited (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return "?"


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    """A Ray cluster of this process, stopped at the end; its processes must be gone then."""
    before = _descendants(os.getpid())
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        object_store_memory=200 * 1024 * 1024,
        log_to_driver=False,
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield
    finally:
        # Ray starts workers as the tests need them: gather them all before stopping.
        started = _descendants(os.getpid()) - before
        names = " ".join(_name(p) for p in started)
        ray.shutdown()
    # Else the check below would pass on finding nothing.
    assert "raylet" in names and "gcs_server" in names, f"Ray's processes not found among {names}"
    deadline = time.monotonic() + 30
    left = {p for p in started if _alive(p)}
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = {p for p in left if _alive(p)}
    message = "Ray processes left after ray.shutdown(): " + ", ".join(f"{p} {_name(p)}" for p in sorted(left))
    for p in left:  # only the processes this module's cluster started, by pid
        os.kill(p, signal.SIGKILL)
    assert not left, message


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Generated rollouts, some of them broken (rows with status error)."""
    return _gen(tmp_path_factory.mktemp("ray") / "rollouts.parquet", ROLLOUTS, 1, 0.02)


@pytest.fixture(scope="module")
def want(parquet: Path) -> gavel.Results:
    """What gavel grade writes for the rollouts."""
    return gavel.grade(parquet, keep=["model"])


def _blocks(table: pa.Table, sizes: list[int]) -> Any:
    """Returns a Dataset of table cut into blocks of these sizes."""
    assert sum(sizes) == table.num_rows
    parts, start = [], 0
    for n in sizes:
        parts.append(table.slice(start, n))
        start += n
    return ray.data.from_arrow(parts)


def _collect(ds: Any) -> pa.Table:
    return pa.concat_tables(ray.get(ds.to_arrow_refs()))


def _sorted_rewards(t: pa.Table) -> list[dict[str, Any]]:
    t = t.drop_columns(["source_file", "source_row"])
    return t.sort_by([("rollout_id", "ascending"), ("verifier_id", "ascending")]).to_pylist()


def _sorted_checks(t: pa.Table) -> list[dict[str, Any]]:
    keys = [("rollout_id", "ascending"), ("verifier_id", "ascending"), ("check_index", "ascending")]
    return t.sort_by(keys).to_pylist()


# Uneven blocks, and a single row in one of them.
SIZES = [1, 299, 250, 250, 400, 100, 350, 150, 200]


def test_same_rows_as_gavel_grade(ray_cluster: None, parquet: Path, want: gavel.Results) -> None:
    table = pq.read_table(parquet)
    ds = _blocks(table, SIZES)
    assert ds.materialize().num_blocks() >= BLOCKS
    # One run of the binary per block, uneven ones.
    got = _collect(gavel.ray.grade(ds, keep=["model"], map_batches_args={"batch_size": None}))
    assert got.num_rows == want.rewards.num_rows
    assert _sorted_rewards(got) == _sorted_rewards(want.rewards)
    assert set(got.column("source_file").to_pylist()) == {"-"}
    assert max(got.column("source_row").to_pylist()) < max(SIZES)
    # The columns and types of an in-memory run of the binary on the whole table.
    assert got.schema == gavel.grade(table, keep=["model"]).rewards.schema
    assert "error" in got.column("status").to_pylist()


def test_any_partitioning(ray_cluster: None, parquet: Path, want: gavel.Results) -> None:
    """Another cut of the blocks, and batches smaller than a block, give the same rows."""
    ds = ray.data.read_parquet(str(parquet)).repartition(13)
    got = _collect(gavel.ray.grade(ds, keep=["model"], map_batches_args={"batch_size": 96}))
    assert _sorted_rewards(got) == _sorted_rewards(want.rewards)


def test_checks(ray_cluster: None, parquet: Path, want: gavel.Results) -> None:
    ds = _blocks(pq.read_table(parquet), SIZES)
    rewards, checks = gavel.ray.grade(ds, keep=["model"], checks=True)
    got_rewards, got_checks = _collect(rewards), _collect(checks)
    assert _sorted_rewards(got_rewards) == _sorted_rewards(want.rewards)
    assert got_checks.num_rows == want.checks.num_rows > 0
    assert _sorted_checks(got_checks) == _sorted_checks(want.checks)
    assert got_checks.schema == want.checks.schema


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"out": "results"}, "out= makes no sense per batch"),
        ({"resume": True}, "resume= makes no sense per batch"),
        ({"reuse": "earlier"}, "reuse= makes no sense per batch"),
        ({"shard": "0/2"}, "shard= makes no sense per batch"),
        ({"baseline": "earlier"}, "baseline= makes no sense per batch"),
        ({"fail_on": 0}, "fail_on= makes no sense per batch"),
        ({"cpuprofile": "cpu.prof"}, "cpuprofile= makes no sense per batch"),
        ({"format": "parquet"}, "format='parquet': the rewards come back as Arrow batches"),
        ({"map_batches_args": {"batch_format": "pandas"}}, "gavel.ray.grade sets batch_format itself"),
    ],
)
def test_options_refused(ray_cluster: None, options: dict[str, Any], message: str) -> None:
    ds = ray.data.from_items([{"task_id": "TASK-001"}])
    with pytest.raises(ValueError, match=message):
        gavel.ray.grade(ds, **options)


def test_usage_error_is_raised_where_consumed(ray_cluster: None, parquet: Path) -> None:
    ds = ray.data.read_parquet(str(parquet))
    graded = gavel.ray.grade(ds, judge_aggregate="bogus")
    # Ray Data raises its own error, which carries the GavelError's text.
    with pytest.raises(Exception, match=r'GavelError: --judge-aggregate "bogus": want one of .*\[exit 2\]'):
        graded.materialize()


def test_grade_in_one_process(ray_cluster: None, parquet: Path, want: gavel.Results) -> None:
    """gavel.grade on a Ray Dataset: its blocks, fetched in order, through one binary."""
    ds = _blocks(pq.read_table(parquet), SIZES)
    got = gavel.grade(ds, keep=["model"])
    assert got.exit_status == want.exit_status == 3
    assert got.rewards.drop_columns(["source_file"]).to_pylist() == want.rewards.drop_columns(["source_file"]).to_pylist()
    assert _sorted_checks(got.checks) == _sorted_checks(want.checks)


def test_turns(ray_cluster: None, chats: tuple[Path, Path]) -> None:
    """A run that scores turns: the rewards carry turn_rewards and turns,
    the checks turn, with the types of gavel.grade's."""
    _, spec = chats
    rows = [{**c, "output": c["messages"][-1]["content"]} for c in CHATS]
    # As a table (the messages' members in its structs' order, which the
    # input hash sees), as Ray holds the rows.
    want = gavel.grade(pa.Table.from_pylist(rows), spec=[spec])
    got = _collect(gavel.ray.grade(ray.data.from_items(rows), spec=[spec]))
    assert got.schema == want.rewards.schema
    assert {r["rollout_id"]: r["turn_rewards"] for r in got.to_pylist()} == CHATS_TURN_REWARDS
    assert _sorted_rewards(got) == _sorted_rewards(want.rewards)
    rewards, checks = gavel.ray.grade(ray.data.from_items(rows), spec=[spec], checks=True)
    got_checks = _collect(checks)
    assert got_checks.schema == want.checks.schema
    assert _sorted_checks(got_checks) == _sorted_checks(want.checks)
    assert _sorted_rewards(_collect(rewards)) == _sorted_rewards(want.rewards)


def test_functions(ray_cluster: None, parquet: Path) -> None:
    """verifiers=: each task serves the functions it was given (Ray sends them, a closure
    here), and stops their service when its batch is graded; the rows are gavel.grade's."""
    table = pq.read_table(parquet)
    # Tasks of their own, which no Go verifier binds.
    tasks = pa.array([f"fn/{t}" for t in table.column("task_id").to_pylist()], pa.string())
    table = table.set_column(table.schema.get_field_index("task_id"), "task_id", tasks)
    bad = set(table.column("rollout_id").to_pylist()[::97])

    def judged(rollout: dict[str, Any]) -> list[dict[str, Any]]:
        if rollout["rollout_id"] in bad:
            raise ValueError(f"cannot judge {rollout['rollout_id']}")
        return [
            {"id": "answered", "status": "pass" if rollout.get("output") else "fail"},
            {"id": "pid", "status": "pass", "detail": f"{os.getpid()} {os.getppid()}"},
        ]

    verifiers = {"fn/*": judged}
    want = gavel.grade(table, verifiers=verifiers, pure=True, keep=["model"])
    ds = _blocks(table, SIZES)
    rewards, checks = gavel.ray.grade(ds, verifiers=verifiers, pure=True, keep=["model"],
                                      map_batches_args={"batch_size": None}, checks=True)
    got, got_checks = _collect(rewards), _collect(checks)
    assert _sorted_rewards(got) == _sorted_rewards(want.rewards)
    judged_rows = {r["rollout_id"]: r for r in got.to_pylist() if r["verifier_id"] == "judged"}
    assert len(judged_rows) > ROLLOUTS * 0.9
    raised = [judged_rows[b] for b in bad if b in judged_rows]
    assert raised and all(r["status"] == "error" and f"ValueError: cannot judge {r['rollout_id']}" in r["error"] for r in raised)
    assert {r["status"] for r in judged_rows.values()} >= {"passed", "failed"}
    # Every batch's service and workers are gone; Ray's worker processes that ran them are not.
    pids = {int(p) for c in got_checks.to_pylist() if c["check_id"] == "pid" for p in c["detail"].split()}
    services = {int(c["detail"].split()[1]) for c in got_checks.to_pylist() if c["check_id"] == "pid"}
    assert len(services) >= 2, "want several tasks, each with its service"
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in pids if _alive(p)] == []
    with pytest.raises(TypeError, match="verifiers= needs pure="):
        gavel.ray.grade(ds, verifiers=verifiers)


def test_docs_examples(ray_cluster: None, tmp_path: Path) -> None:
    """The blocks of docs/python.md that grade a Ray Dataset run, on this cluster."""
    from conftest import doc_blocks, run_doc_blocks

    blocks = doc_blocks()
    marked = [b for b in blocks if b[0] == "ray"]
    assert marked
    run_doc_blocks([blocks[0], *marked], tmp_path, {"/data/": f"{tmp_path}/"})
    assert list((tmp_path / "rewards").glob("*.parquet"))
