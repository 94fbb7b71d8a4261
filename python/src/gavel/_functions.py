"""Python functions as verifiers of :func:`gavel.grade` and :func:`gavel.ray.grade`.

``verifiers={"TASK-OR-PATTERN": fn, ...}`` binds each function, as a
remote verifier of gavel's ``gavel`` protocol, to the tasks its pattern
names. For one call, :func:`serving`:

1. starts a process that serves the functions on 127.0.0.1, on a port the
   kernel picks, with :class:`gavel.remote.RemoteServer` (worker
   processes forked from it, one per CPU, which inherit the functions). It
   is forked from this process (:class:`_Forked`), so that the functions
   need no pickling: lambdas, closures and functions defined in a notebook
   serve as well; in a process running Ray, which must not be forked, it
   is a new interpreter and the functions go to it pickled with Ray's
   cloudpickle (:class:`_Started`);
2. writes a spec file declaring one remote verifier per function, in a
   temporary directory, for the binary's ``--spec``;
3. after the run, or on any exception (KeyboardInterrupt included), stops
   the service and its workers and removes the directory.

Each verifier's URL is the same every run, ``http://functions.gavel.invalid/ID``:
the binary connects to the service's port through
``$GAVEL_REMOTE_CONNECT_TO``, so the URL, part of the verifier's
fingerprint and of its cache keys, does not change with the port. What
changes a function's fingerprint is its version (and its id, the
patterns it binds, and the constants below, as for any spec verifier).

Designs rejected: serving from this process (a worker started after one
died would be forked from a process that holds the binary's pipes, and
the binary would never see the end of its input; the service process is
started before the binary, so nothing it forks later holds them);
pickling the functions to a service started afresh, always (a lambda, a
closure, or a function of a notebook or of a script's ``__main__``,
cannot be sent without cloudpickle, which is not a dependency; in a Ray
process, Ray's cloudpickle is there, and its functions passed it
already); forking a Ray process anyway (a driver then waited forever on
its object store); a version that never repeats
for a function given without one (its answers would fill the remote
cache, whose logs are read whole by every run and never compacted, with
entries no run can ask for): such a function runs as an impure remote
verifier instead, neither cached nor reused.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import multiprocessing
import multiprocessing.connection
import os
import pickle
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Union

from . import remote

__all__ = ["VerifierFn", "Verifiers", "Functions", "Served", "take", "serving", "binary_env", "current_env"]

Fn = Callable[[dict[str, Any]], Any]
"""A function of the contract of :func:`gavel.remote.serve`: one rollout
(a dict) in; a reward in [0, 1], a dict with ``"reward"`` or ``"checks"``,
or a list of checks out."""

VerifierFn = Union[Fn, tuple[Fn, str]]
"""A value of ``verifiers=``: a function, or a pair ``(fn, "VERSION")``."""

Verifiers = Mapping[str, VerifierFn]
"""``verifiers=``: task patterns (a task id, a prefix ending in ``*``, or
``"all"``) to functions."""

HOST: Final = "functions.gavel.invalid"
"""The host of the functions' URLs: the same every run, so that a
function's fingerprint and cache keys do not depend on the port; a
reserved name (RFC 2606) that resolves nowhere, so that a binary that
does not honour ``$GAVEL_REMOTE_CONNECT_TO`` fails to reach it rather
than reaching something else."""

BATCH: Final = 128
"""Rollouts per request. A request costs the service about 0.7 ms of CPU
beside its rollouts (reading HTTP, splitting it among the workers,
answering), the binary some more: 128 rollouts make that a few
microseconds each (64 took twice the service's CPU per rollout, measured),
and a request of 128 rollouts of 100 KB still 13 MB. Part of the
fingerprint, as a spec's ``batch`` is: a change grades again what
``--reuse`` would have taken."""

CONCURRENCY: Final = 4
"""Requests in flight to the service at once, per function: enough to keep
the workers busy while the binary reads answers and sends the next
requests (the service splits each request among all its workers, so the
number of CPUs need not be matched), and few enough that the service's
threads, one per request, do not queue on its one interpreter lock (8
took the time of a request from 2 ms to 9, measured). Part of the
fingerprint."""

TIMEOUT: Final = "24h"
"""A request's timeout: a request waits behind the others in the service's
queue, and a function may take minutes on one rollout (running a test
suite). A function that never returns holds the run, as a Go verifier
would without ``timeout=``; Ctrl-C stops both."""

MAX_BODY: Final = 1 << 30
"""The largest request the service reads: a batch of rollouts larger than
this is each of its rollouts' error, never a score."""

UNVERSIONED: Final = "unversioned"
"""The version written in the spec for a function given without one, which
runs as an impure remote verifier (never cached, never reused)."""

TOKEN_ENV: Final = "GAVEL_FUNCTIONS_TOKEN"
"""The variable, set for the binary alone, holding the bearer token the
service asks of every request (a token per call: no other process on the
machine can call the functions through it)."""

START_TIMEOUT: Final = 180.0
"""Seconds to wait for the service's workers to start."""

STOP_TIMEOUT: Final = 30.0
"""Seconds to wait for the service to stop before killing it and its workers."""


@dataclass(frozen=True)
class Bound:
    """One function as a verifier: its id, the version it was given with
    (None: none) and the task patterns it binds, in the order given."""

    id: str
    fn: Fn
    version: str | None
    patterns: tuple[str, ...]

    @property
    def route(self) -> str:
        """The path requests for this function are POSTed to."""
        return "/" + urllib.parse.quote(self.id, safe="")


@dataclass(frozen=True)
class Functions:
    """The ``verifiers=`` of one call, checked: what the service serves and the spec binds."""

    bound: tuple[Bound, ...]
    pure: bool

    def cached(self, b: Bound) -> bool:
        """Whether b's answers may be cached and its rows reused: declared
        pure, and with a version that says when its answers change."""
        return self.pure and b.version is not None

    @property
    def impure(self) -> bool:
        """Whether a function runs as an impure remote verifier (the run needs --allow-impure)."""
        return not all(self.cached(b) for b in self.bound)

    def spec(self) -> dict[str, Any]:
        """The spec declaring one remote verifier per function."""
        return {
            "verifiers": [
                {
                    "id": b.id,
                    "name": b.id,
                    "tasks": list(b.patterns),
                    "remote": {
                        "url": f"http://{HOST}{b.route}",
                        "protocol": "gavel",
                        "version": b.version if b.version is not None else UNVERSIONED,
                        "pure": self.cached(b),
                        "batch": BATCH,
                        "concurrency": CONCURRENCY,
                        "timeout": TIMEOUT,
                        "token_env": TOKEN_ENV,
                    },
                }
                for b in self.bound
            ]
        }


def take(verifiers: Verifiers | None, pure: bool | None, where: str) -> Functions | None:
    """Checks ``verifiers=`` and ``pure=`` of a call of where (``"grade"``):
    None when no function is given, else the functions to serve.

    A pattern that is not a task pattern, a value that is neither a
    function nor a pair ``(fn, version)``, two functions of one name, or
    ``pure`` missing or not a bool raise before anything runs.
    """
    if verifiers is None:
        if pure is not None:
            raise TypeError(f"{where}: pure= goes with verifiers=, which declares functions as verifiers")
        return None
    if not isinstance(verifiers, Mapping):
        raise TypeError(
            f"{where}: verifiers= is a {type(verifiers).__name__}; want a dict of task patterns to functions,"
            ' such as {"math/*": fn}'
        )
    if not verifiers:
        raise ValueError(f"{where}: verifiers= is empty; want a dict of task patterns to functions")
    if pure is None:
        raise TypeError(
            f"{where}: verifiers= needs pure=: pure=True if each function gives the same answer to the same"
            " rollout every time (gavel then caches and reuses its answers, by the version given with it),"
            " pure=False if not (its answers are never cached nor reused)"
        )
    if not isinstance(pure, bool):
        raise TypeError(f"{where}: pure={pure!r}; want True or False")
    by_fn: dict[tuple[int, str | None], list[str]] = {}
    fns: dict[tuple[int, str | None], Fn] = {}
    for pattern, value in verifiers.items():
        pattern = _pattern(pattern, where)
        fn, version = _value(pattern, value, where)
        key = (id(fn), version)
        fns[key] = fn
        by_fn.setdefault(key, []).append(pattern)
    bound: list[Bound] = []
    named: dict[str, Bound] = {}
    for key, patterns in by_fn.items():
        fn = fns[key]
        b = Bound(id=_name(fn), fn=fn, version=key[1], patterns=tuple(patterns))
        if b.id in named:
            other = named[b.id]
            what = (
                f"is given with two versions, {other.version!r} and {b.version!r}"
                if other.fn is fn
                else "names two functions"
            )
            raise ValueError(
                f"{where}: verifiers=: {b.id} {what} (for {', '.join(other.patterns)} and {', '.join(b.patterns)});"
                " a function is a verifier whose id is its name: give each verifier its own function"
            )
        named[b.id] = b
        bound.append(b)
    return Functions(bound=tuple(bound), pure=pure)


def _pattern(pattern: object, where: str) -> str:
    """Returns a task pattern as a spec writes it, or raises naming it."""
    if not isinstance(pattern, str) or not pattern:
        raise TypeError(f"{where}: verifiers=: the key {pattern!r} is not a task pattern; want a task id, a prefix ending in * (airline/*), or all")
    star = pattern.find("*")
    if pattern != "*" and star >= 0 and star != len(pattern) - 1:
        raise ValueError(f"{where}: verifiers=: task pattern {pattern!r}: * may only end a pattern (airline/*), or stand alone for all tasks")
    return "all" if pattern == "*" else pattern


def _value(pattern: str, value: object, where: str) -> tuple[Fn, str | None]:
    """Returns the function and version of a value of verifiers=."""
    if isinstance(value, tuple):
        if len(value) != 2 or not callable(value[0]):
            raise TypeError(f"{where}: verifiers[{pattern!r}] is a tuple of {len(value)}; want a function or a pair (fn, 'VERSION')")
        fn, version = value
        if isinstance(version, bool) or not isinstance(version, (str, int)) or str(version).strip() == "":
            raise TypeError(
                f"{where}: verifiers[{pattern!r}]: the version {version!r}; want a non-empty string (or an int),"
                " raised whenever the function's answers may change"
            )
        return fn, str(version)
    if not callable(value):
        raise TypeError(f"{where}: verifiers[{pattern!r}] is a {type(value).__name__}; want a function or a pair (fn, 'VERSION')")
    return value, None


def _name(fn: Fn) -> str:
    """A function's verifier id: its name."""
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or not name:
        name = type(fn).__name__
    return name


@dataclass(frozen=True)
class Served:
    """A running service: the spec file binding its functions and the
    environment the binary needs to reach it."""

    functions: Functions
    spec_path: str
    env: dict[str, str]
    pids: tuple[int, ...]
    """The service's process and its workers when it started."""

    def options(self, opts: Mapping[str, object]) -> dict[str, object]:
        """Returns opts with the spec file added to the caller's ``spec``,
        and ``allow_impure`` when a function runs impure."""
        out = dict(opts)
        spec = out.get("spec")
        specs: list[object]
        if spec is None:
            specs = []
        elif isinstance(spec, (str, os.PathLike)):
            specs = [spec]
        else:
            specs = list(spec)  # type: ignore[call-overload]
        out["spec"] = [*specs, self.spec_path]
        if self.functions.impure:
            out["allow_impure"] = True
        return out


_env: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("gavel_binary_env", default=None)


@contextlib.contextmanager
def binary_env(env: Mapping[str, str]) -> Iterator[None]:
    """Runs the binaries started in the with block (by gavel._grade, in
    this thread) with env as their whole environment: a call with
    functions reaches their service through it, however it grades."""
    token = _env.set(env)
    try:
        yield
    finally:
        _env.reset(token)


def current_env() -> Mapping[str, str] | None:
    """The environment to run the binary with (None: this process's)."""
    return _env.get()


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@contextlib.contextmanager
def serving(functions: Functions, processes: int | None = None) -> Iterator[Served]:
    """Serves functions, in a process of their own with ``processes``
    workers (one per CPU when None), for the time of the with block.

    The service and its workers are stopped, and the spec's directory
    removed, when the block ends, however it ends.
    """
    workers = processes if processes is not None else _cpus()
    if workers < 1:
        raise ValueError(f"verifiers=: {workers} worker processes; want at least 1")
    token = secrets.token_urlsafe(32)
    routes = {b.route: b.fn for b in functions.bound}
    config = _Config(routes=routes, pure=functions.pure, processes=workers,
                     max_inflight=CONCURRENCY * len(routes), token=token)
    tmp = tempfile.mkdtemp(prefix="gavel-functions-")
    service: _Service | None = None
    try:
        service = _Forked(config) if _fork_is_safe() else _Started(config)
        port, pids = service.wait_ready()
        spec_path = os.path.join(tmp, "functions.yaml")
        with open(spec_path, "w", encoding="utf-8") as f:
            json.dump(functions.spec(), f, indent=1)
        connect = f"{HOST}:80=127.0.0.1:{port}"
        earlier = os.environ.get("GAVEL_REMOTE_CONNECT_TO", "")
        env = {
            **os.environ,
            "GAVEL_REMOTE_CONNECT_TO": f"{earlier},{connect}" if earlier.strip() else connect,
            TOKEN_ENV: token,
        }
        yield Served(functions=functions, spec_path=spec_path, env=env, pids=(service.pid, *pids))
    finally:
        try:
            if service is not None:
                service.stop()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _fork_is_safe() -> bool:
    """Whether the service may be forked from this process: not when it
    runs Ray (a driver, or a task's worker), whose runtime a forked copy
    would reach from its own copies of its objects and connections (a
    driver was seen to wait forever on the object store after one)."""
    if "fork" not in multiprocessing.get_all_start_methods():  # pragma: no cover - not Linux
        return False
    ray = sys.modules.get("ray")
    is_initialized = getattr(ray, "is_initialized", None)
    return not (callable(is_initialized) and is_initialized())


@dataclass(frozen=True)
class _Config:
    """What the service's process needs: the functions by route, and how to serve them."""

    routes: dict[str, Fn]
    pure: bool
    processes: int
    max_inflight: int
    token: str


class _Service:
    """The service's process, seen from the caller: started, then stopped."""

    pid: int
    conn: multiprocessing.connection.Connection

    def alive(self) -> bool:
        raise NotImplementedError

    def exitcode(self) -> int | None:
        raise NotImplementedError

    def wait(self, timeout: float) -> None:
        raise NotImplementedError

    def kill(self) -> None:
        raise NotImplementedError

    def wait_ready(self) -> tuple[int, list[int]]:
        """Waits for the service's first message: its port and workers, or why it did not start."""
        deadline = time.monotonic() + START_TIMEOUT
        while not self.conn.poll(0.05):
            if not self.alive():
                raise RuntimeError(f"verifiers=: the functions' service exited with status {self.exitcode()} before it started")
            if time.monotonic() > deadline:
                raise RuntimeError(f"verifiers=: the functions' service did not start within {START_TIMEOUT:.0f} s")
        try:
            msg = self.conn.recv()
        except EOFError:
            self.wait(5)
            raise RuntimeError(
                f"verifiers=: the functions' service exited with status {self.exitcode()} before it started"
            ) from None
        if msg[0] != "ready":
            raise RuntimeError(f"verifiers=: the functions' service did not start: {msg[1]}")
        return int(msg[1]), list(msg[2])

    def stop(self) -> None:
        """Asks the service to stop (it terminates its workers at once: the
        run they served is over), waits, and kills it and its workers, by
        pid, if it does not exit in time."""
        try:
            self.conn.send("stop")
        except OSError:
            pass
        self.wait(STOP_TIMEOUT)
        if self.alive():
            children = _children(self.pid)
            self.kill()
            for pid in children:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        self.conn.close()


class _Forked(_Service):
    """The service forked from this process: its functions are this
    process's own, in the copy, whatever they are (no pickling)."""

    def __init__(self, config: _Config) -> None:
        ctx = multiprocessing.get_context("fork")
        self.conn, theirs = ctx.Pipe()
        self._proc = ctx.Process(target=_service_main, args=(theirs, self.conn, config), name="gavel-functions")
        try:
            self._proc.start()
        finally:
            theirs.close()
        assert self._proc.pid is not None
        self.pid = self._proc.pid

    def alive(self) -> bool:
        return self._proc.is_alive()

    def exitcode(self) -> int | None:
        return self._proc.exitcode

    def wait(self, timeout: float) -> None:
        self._proc.join(timeout)

    def kill(self) -> None:
        self._proc.kill()
        self._proc.join()

    def stop(self) -> None:
        super().stop()
        self._proc.close()


class _Started(_Service):
    """The service started as a new interpreter, for a process that must
    not be forked: the
    functions are sent to it pickled, with Ray's cloudpickle (which Ray
    itself needs them to pass), so that lambdas and closures go by value;
    it imports what they refer to from this process's sys.path."""

    def __init__(self, config: _Config) -> None:
        try:
            from ray import cloudpickle  # type: ignore[import-not-found,unused-ignore]

            dumps: Callable[[Any], bytes] = cloudpickle.dumps
        except ImportError:
            dumps = pickle.dumps
        try:
            payload = dumps(config)
        except Exception as e:
            raise TypeError(
                f"verifiers=: the functions cannot be sent to their service ({type(e).__name__}: {e}); in a process"
                " that runs Ray, they are pickled, as Ray pickles a task's: define them with def, and hold no"
                " object that cannot be pickled"
            ) from None
        self.conn, theirs = multiprocessing.Pipe()
        # Where this package is, for the import before the caller's sys.path arrives.
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        code = f"import sys; sys.path.insert(0, {root!r}); from gavel._functions import _started_main; _started_main({theirs.fileno()})"
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", code],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        finally:
            theirs.close()
        self.pid = self._proc.pid
        self.conn.send(list(sys.path))
        self.conn.send_bytes(payload)

    def alive(self) -> bool:
        return self._proc.poll() is None

    def exitcode(self) -> int | None:
        return self._proc.poll()

    def wait(self, timeout: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout)

    def kill(self) -> None:
        self._proc.kill()
        self._proc.wait()


def _children(pid: int) -> list[int]:
    """The pids of process pid's children, from /proc (empty where it cannot tell)."""
    kids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return kids


# --- in the service's process ---------------------------------------------


def _service_main(
    conn: multiprocessing.connection.Connection,
    parent_end: multiprocessing.connection.Connection | None,
    config: _Config,
) -> None:
    """The service's process: serves the functions until told to stop, or
    until the process that started it is gone (its end of conn closes)."""
    if parent_end is not None:  # forked: this process's copy of the caller's end
        parent_end.close()
    # Ctrl-C reaches the whole process group: the caller stops the service.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Forked, this process has the caller's handlers (a Ray driver's): the
    # default for SIGTERM, which ends it whatever it runs.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    remote._inherited = config.routes
    try:
        server = remote.RemoteServer(
            None,
            host="127.0.0.1",
            port=0,
            pure=config.pure,
            processes=config.processes,
            max_body=MAX_BODY,
            token=config.token,
            _routes=config.routes,
            _inherit=True,
            _max_inflight=config.max_inflight,
            _quiet=True,
        )
    except BaseException as e:  # noqa: BLE001 - told to the caller
        conn.send(("error", f"{type(e).__name__}: {e}"))
        return
    try:
        server._start()
        conn.send(("ready", server.port, server.worker_pids))
        with contextlib.suppress(EOFError, OSError):
            conn.recv()
    finally:
        server._stop(serving=True, grace=0)


def _started_main(fd: int) -> None:
    """The service started as a new interpreter (_Started): its
    configuration comes pickled on the connection FD, after the caller's
    sys.path, from which the functions' modules are imported."""
    conn = multiprocessing.connection.Connection(fd)
    try:
        path, data = conn.recv(), conn.recv_bytes()
    except (EOFError, OSError):
        return
    try:
        # The path first: unpickling imports the functions' modules.
        sys.path[:] = path
        config = pickle.loads(data)
    except BaseException as e:  # noqa: BLE001 - told to the caller
        conn.send(("error", f"the functions could not be loaded here ({type(e).__name__}: {e})"))
        return
    _service_main(conn, None, config)

