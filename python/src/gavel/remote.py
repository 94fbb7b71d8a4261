"""gavel.remote: a Python reward function served as a gavel remote verifier.

:func:`serve` puts a function ``fn(rollout) -> reward or checks`` behind
an HTTP endpoint that speaks gavel's ``gavel`` protocol (version 1), so
that a spec verifier declared ``remote: {url: ..., protocol: gavel}``
grades its rollouts by calling it. gavel POSTs one rollout (a JSON object)
or, when the verifier's ``batch`` is over 1, a JSON array of them; the
service answers one answer per rollout, in order:

- a JSON number in [0, 1], the rollout's reward;
- a JSON array of checks, each ``{"id", "label", "required", "status",
  "detail", "actual", "expected", "score"}`` (only ``status`` required,
  one of ``pass``, ``fail``, ``error``), from which gavel computes the
  verdict and reward as for its own checks.

A rollout the function cannot grade is never a score: when ``fn`` raises,
or returns something that is not an answer (a reward outside [0, 1], NaN,
a bool, a check without a status...), the request of that one rollout is
``422`` with ``{"error": "<exception type>: <message>"}``, and in a batch
that rollout's element of the answer is ``{"error": "<exception type>:
<message>"}``, the others graded; gavel records the rollout as an error.
The service is the standard library only
(:class:`http.server.ThreadingHTTPServer`), and runs ``fn`` in worker
processes, each given a part of a batch at a time (:class:`_Pool`), or in
threads, with ``processes=0``. See docs/remote-verifiers.md.
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import hmac
import json
import math
import multiprocessing
import multiprocessing.connection
import multiprocessing.context
import multiprocessing.util
import numbers
import os
import pickle
import queue
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType, TracebackType
from typing import Any, Final

__all__ = ["serve", "RemoteServer", "RewardFn", "PROTOCOL_VERSION"]

PROTOCOL_VERSION: Final = 1
"""The version of the ``gavel`` protocol this module serves (a spec's ``remote.version``)."""

RewardFn = Callable[[dict[str, Any]], float | dict[str, Any] | list[Any]]
"""A reward function: one rollout (a dict, as gavel sent it) in; a reward
in [0, 1], a dict with ``"reward"`` or ``"checks"``, or a list of checks out."""

MiB: Final = 1 << 20

CHECK_FIELDS: Final = frozenset({"id", "label", "required", "status", "detail", "actual", "expected", "score"})
"""The members a check may have (the checks table's shape); any other is refused."""

STATUSES: Final = ("pass", "fail", "error")

DRAIN_LIMIT: Final = 1 * MiB
"""A refused body up to this size is read and dropped before the answer,
so that the client, still sending, reads the answer instead of a reset."""

IDLE_TIMEOUT: Final = 30.0
"""Seconds a kept-alive connection may stay idle, or a body take to arrive."""

SLOT_WAIT: Final = 1.0
"""Seconds a request waits for a place among those in flight before it is ``503``."""

SHUTDOWN_GRACE: Final = 30.0
"""Seconds :meth:`RemoteServer.shutdown` lets requests in flight finish;
past it, worker processes still running the function are terminated."""


class _BadAnswer(Exception):
    """What fn returned is not an answer of the protocol."""


# --- in the worker: calling fn and checking its answer ---------------------

Routes = Mapping[str, RewardFn]
"""The functions of a service by the path that POSTs to them; the path
``""`` stands for every path (:func:`serve`'s one function)."""

_loaded: Routes | None = None
_load_error: str = ""
_inherited: Routes | None = None
"""The functions a service of :mod:`gavel._functions` hands its workers:
set in the service's process before it forks them, so that they share
the functions without pickling them."""


def _load(fn_pickle: bytes | None) -> None:
    """Initializer of each worker process: loads the functions once (from
    their pickle, or those the process inherited when None), keeps the
    error if it cannot."""
    global _loaded, _load_error
    # Ctrl-C reaches the whole process group: the parent shuts the pool
    # down; workers killed mid-task by it would only add tracebacks.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # SIGTERM stops a worker, whatever handler a forked one inherited (a
    # Ray driver's raises SystemExit, and its C library's own prints a
    # stack trace first).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), name="gavel-remote-orphan", daemon=True).start()
    if fn_pickle is None:
        _loaded = _inherited
        return
    try:
        _loaded = pickle.loads(fn_pickle)
    except Exception as e:  # reported by _probe, at start
        _load_error = f"{type(e).__name__}: {e}"


def _exit_with_parent(parent: int) -> None:
    """Ends the worker once its parent is gone (killed, say, with SIGKILL,
    which leaves no time to stop the pool): an orphan would wait forever."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)


def _probe() -> tuple[int, str]:
    """Returns the worker's pid and why fn could not be loaded there ("" when it was)."""
    if _loaded is None and not _load_error:
        return os.getpid(), "the function was not loaded"
    return os.getpid(), _load_error


def _run_loaded(route: str, rollouts: list[dict[str, Any]]) -> list[tuple[bool, str]]:
    """Grades a chunk of rollouts with the worker's function of route (see :func:`_run_chunk`)."""
    if _loaded is None:
        error = f"RuntimeError: the worker could not load the function: {_load_error}"
        return [(False, error)] * len(rollouts)
    return _run_chunk(_loaded[route], rollouts)


def _run_chunk(fn: Callable[[dict[str, Any]], Any], rollouts: list[dict[str, Any]]) -> list[tuple[bool, str]]:
    """Calls fn on each rollout of a chunk, in order (see :func:`_run`)."""
    return [_run(fn, r) for r in rollouts]


def _run(fn: Callable[[dict[str, Any]], Any], rollout: dict[str, Any]) -> tuple[bool, str]:
    """Calls fn on one rollout: (True, the answer as JSON text) or (False, the error)."""
    try:
        value = fn(rollout)
    except Exception as e:
        text = str(e)
        return False, f"{type(e).__name__}: {text}" if text else type(e).__name__
    try:
        answer = _answer(value)
        if type(answer) is float:
            # The text json.dumps writes for a finite float, without its
            # machinery: most functions return a reward.
            return True, float.__repr__(answer)
        return True, json.dumps(answer, allow_nan=False, separators=(",", ":"), default=_jsonable)
    except _BadAnswer as e:
        return False, f"BadAnswer: the function {e}"


def _worker_main(
    conn: multiprocessing.connection.Connection,
    fn_pickle: bytes | None,
    inherited: list[multiprocessing.connection.Connection],
) -> None:
    """A worker process: loads the functions, says whether it could, then
    grades the chunks conn brings, one at a time, until conn closes.

    inherited are the service's ends of the workers' pipes, this one's
    included, which a forked worker holds copies of: closed here, so that
    each worker sees its pipe close when the service closes its end."""
    for c in inherited:
        c.close()
    _load(fn_pickle)
    try:
        conn.send(_probe())
        while True:
            route, chunk = pickle.loads(conn.recv_bytes())
            conn.send_bytes(pickle.dumps(_run_loaded(route, chunk), pickle.HIGHEST_PROTOCOL))
    except (EOFError, OSError):  # the service closed its end: it is stopping
        pass


def _jsonable(value: Any) -> Any:
    """json.dumps' default: NumPy scalars and arrays as their Python values."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _answer(value: Any) -> float | list[dict[str, Any]]:
    """Returns fn's value as the protocol's answer, or raises _BadAnswer saying why not."""
    if isinstance(value, bool):
        raise _BadAnswer(f"returned the bool {value}; return a reward in [0, 1] (1.0 for a pass) or a list of checks")
    if isinstance(value, numbers.Real):
        return _reward(value, "reward")
    if isinstance(value, Mapping):
        if "reward" in value and "checks" in value:
            raise _BadAnswer('returned a dict with both "reward" and "checks"; return one of them')
        if "reward" in value:
            return _reward(value["reward"], "reward")
        if "checks" in value:
            return _checks(value["checks"], 'the dict\'s "checks"')
        keys = ", ".join(repr(k) for k in list(value)[:5]) or "none"
        raise _BadAnswer(f'returned a dict with neither "reward" nor "checks" (its keys: {keys})')
    if isinstance(value, (list, tuple)):
        return _checks(value, "the list")
    raise _BadAnswer(
        f"returned {type(value).__name__}; return a reward in [0, 1], a dict with"
        ' "reward" or "checks", or a list of checks'
    )


def _reward(value: Any, what: str) -> float:
    """Returns value as a reward, or raises _BadAnswer: never clamped, never NaN."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _BadAnswer(f"returned a {what} of type {type(value).__name__} ({value!r}); a reward is a number in [0, 1]")
    x = float(value)
    if math.isnan(x):
        raise _BadAnswer(f"returned a {what} of nan; a reward is a number in [0, 1]")
    if not 0.0 <= x <= 1.0:
        raise _BadAnswer(f"returned a {what} of {x!r}, outside [0, 1] (never clamped)")
    return x


def _checks(value: Any, what: str) -> list[dict[str, Any]]:
    """Returns value as the protocol's list of checks, or raises _BadAnswer naming the check and field."""
    if not isinstance(value, (list, tuple)):
        raise _BadAnswer(f"returned {what} as {type(value).__name__}; checks are a list of dicts")
    if not value:
        raise _BadAnswer(f"returned {what} with no checks; return at least one check, or a reward")
    out: list[dict[str, Any]] = []
    for i, c in enumerate(value):
        where = f"check {i}"
        if not isinstance(c, Mapping):
            raise _BadAnswer(f"returned {where} as {type(c).__name__}; a check is a dict with a status")
        unknown = sorted(str(k) for k in c if k not in CHECK_FIELDS)
        if unknown:
            raise _BadAnswer(f"returned {where} with unknown fields {unknown}; a check has {sorted(CHECK_FIELDS)}")
        if "id" in c:
            where = f"check {i} ({c['id']!r})"
        status = c.get("status")
        if status not in STATUSES:
            raise _BadAnswer(f"returned {where} with status {status!r}; want one of pass, fail, error")
        for field in ("id", "label", "detail"):
            if field in c and not isinstance(c[field], str):
                raise _BadAnswer(f"returned {where} with {field} of type {type(c[field]).__name__}; want a string")
        if "required" in c and not isinstance(c["required"], bool):
            raise _BadAnswer(f"returned {where} with required of type {type(c['required']).__name__}; want a bool")
        if c.get("score") is not None:
            _reward(c["score"], f"score in {where}")
        check = dict(c)
        if check.get("score") is not None:
            check["score"] = float(check["score"])
        for field in ("actual", "expected"):
            if field in check:
                try:
                    json.dumps(check[field], allow_nan=False, default=_jsonable)
                except (TypeError, ValueError) as e:
                    raise _BadAnswer(f"returned {where} with {field} that is not JSON: {e}") from None
        out.append(check)
    return out


# --- in the service --------------------------------------------------------


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class _WorkerDied(Exception):
    """A worker process ended (a crash, the memory killer) while grading a chunk."""


class _Worker:
    """One worker process and the pipe that brings it chunks and takes back their answers."""

    def __init__(
        self, ctx: multiprocessing.context.BaseContext, fn_pickle: bytes | None, others: list[_Worker]
    ) -> None:
        ours, theirs = ctx.Pipe()
        # Forked, the worker holds copies of the service's ends of the pipes
        # (started afresh, it holds none, and they must not be sent to it).
        inherited = [ours, *(w.conn for w in others)] if ctx.get_start_method() == "fork" else []
        # Not a daemon: a function may start processes of its own.
        self.proc = ctx.Process(  # type: ignore[attr-defined]
            target=_worker_main, args=(theirs, fn_pickle, inherited), name="gavel-remote-worker"
        )
        self.proc.start()
        theirs.close()
        self.conn: multiprocessing.connection.Connection = ours

    def stop(self) -> None:
        self.conn.close()


class _Pool:
    """The worker processes of a service, each given one chunk at a time.

    A request's handler thread sends its chunks to free workers itself
    and reads their answers back: one pickled message each way per
    chunk, with no thread in between (concurrent.futures' process pool
    took several times the CPU of a quick function per chunk, in threads
    handing the work on). A handler waits for a free worker only while it
    holds none; holding some, it first reads the answer of its oldest, so
    that handlers never wait on each other's workers. A worker that dies
    is replaced, and its chunk's request is 503.
    """

    def __init__(self, n: int, fn_pickle: bytes | None, ctx: multiprocessing.context.BaseContext, name: str) -> None:
        self._ctx = ctx
        self._fn_pickle = fn_pickle
        self._name = name
        self._lock = threading.Lock()
        self._free: queue.SimpleQueue[_Worker | None] = queue.SimpleQueue()
        self._all: list[_Worker] = []
        self._closed = False
        try:
            for _ in range(n):
                self._free.put(self._start())
        except BaseException:
            self.close(0, kill=True)
            raise
        # At interpreter exit, before multiprocessing joins its children:
        # a service never shut down must not hold the exit.
        multiprocessing.util.Finalize(self, self.close, args=(0,), kwargs={"kill": True}, exitpriority=10)

    def _start(self) -> _Worker:
        """Starts a worker and checks that it loaded the functions."""
        with self._lock:  # forked under the lock: every other worker's pipe is in _all
            w = _Worker(self._ctx, self._fn_pickle, self._all)
            self._all.append(w)
        try:
            if not w.conn.poll(120):
                raise TypeError(f"gavel.remote.serve: worker process {w.proc.pid} did not start within 120 s")
            pid, err = w.conn.recv()
        except (EOFError, OSError):
            err = f"it exited with status {w.proc.exitcode}" if not w.proc.is_alive() else "it closed its pipe"
            pid = w.proc.pid
        if err:
            raise TypeError(
                f"gavel.remote.serve: worker process {pid} could not load the function {self._name}"
                f" ({err}); define it in a module the workers can import (a script's top level,"
                ' guarded by if __name__ == "__main__":), or pass processes=0 to run it in threads'
            )
        return w

    @property
    def pids(self) -> list[int]:
        """The pids of the worker processes now."""
        with self._lock:
            return [w.proc.pid for w in self._all if w.proc.pid is not None]

    def run(self, route: str, chunks: list[list[dict[str, Any]]]) -> list[tuple[bool, str]]:
        """Grades chunks with the function of route on free workers; answers in order.

        Raises _WorkerDied when a worker died on one of them (it is
        replaced), _Refused 503 when the pool is closing.
        """
        results: list[list[tuple[bool, str]]] = [[] for _ in chunks]
        held: collections.deque[tuple[_Worker, int]] = collections.deque()
        died: BaseException | None = None
        try:
            for i, chunk in enumerate(chunks):
                w = self._take(block=not held)
                while w is None:
                    hw, j = held.popleft()
                    results[j] = self._answer(hw)
                    w = self._take(block=not held)
                data = pickle.dumps((route, chunk), pickle.HIGHEST_PROTOCOL)
                held.append((w, i))
                try:
                    w.conn.send_bytes(data)
                except OSError:  # it died between two chunks
                    pass  # _answer finds it dead
            while held:
                hw, j = held.popleft()
                results[j] = self._answer(hw)
        except _WorkerDied as e:
            died = e
            for hw, _ in held:  # their answers are read, so that their pipes stay in step
                try:
                    self._answer(hw)
                except _WorkerDied:
                    pass
            raise
        finally:
            if died is None and held:  # an unexpected error: forget the workers not read back
                for hw, _ in held:
                    self._replace(hw)
        out: list[tuple[bool, str]] = []
        for r in results:
            out += r
        return out

    def _take(self, block: bool) -> _Worker | None:
        """A free worker; None when none is free and not block."""
        try:
            w = self._free.get(block=block)
        except queue.Empty:
            return None
        if w is None:  # closing: the sentinel goes on to the next waiter
            self._free.put(None)
            raise _Refused(503, "the service is stopping", "retry against a running service", {"Retry-After": "1"})
        return w

    def _answer(self, w: _Worker) -> list[tuple[bool, str]]:
        """Reads w's answers to its chunk and frees it."""
        try:
            got: list[tuple[bool, str]] = pickle.loads(w.conn.recv_bytes())
        except (EOFError, OSError):
            code = w.proc.exitcode
            self._replace(w)
            raise _WorkerDied(f"worker process {w.proc.pid} ended" + (f" with status {code}" if code is not None else "")) from None
        self._free.put(w)
        return got

    def _replace(self, w: _Worker) -> None:
        """Stops w and starts a worker in its place, unless the pool is closing."""
        with self._lock:
            if w in self._all:
                self._all.remove(w)
            closing = self._closed
        w.stop()
        w.proc.join(1)
        if w.proc.is_alive():
            w.proc.kill()
            w.proc.join()
        if not closing:
            self._free.put(self._start())

    def close(self, grace: float, kill: bool = False) -> None:
        """Stops the workers: at once with kill; else those still busy after grace seconds are terminated."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            workers = list(self._all)
        self._free.put(None)
        procs = [w.proc for w in workers]
        if kill:
            for p in procs:
                if p.is_alive():
                    p.terminate()
        for w in workers:
            w.stop()  # an idle worker sees its pipe close and exits
        deadline = time.monotonic() + grace
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(5)
            if p.is_alive():  # pragma: no cover - a worker ignoring SIGTERM
                p.kill()
                p.join()


class _Refused(Exception):
    """A request the service answers with an error status."""

    def __init__(self, status: int, error: str, hint: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(error)
        self.status = status
        self.error = error
        self.hint = hint
        self.headers = dict(headers or {})


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    remote: RemoteServer

    def __init__(self, addr: tuple[str, int], remote: RemoteServer) -> None:
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        self.remote = remote
        super().__init__(addr, _Handler)


class RemoteServer:
    """A running (or stopped) service made by :func:`serve`.

    Use it as a context manager, or call :meth:`shutdown`, to stop it:
    the listening socket is closed, requests in flight finish (up to 30
    seconds, after which workers still running the function are
    terminated) and the worker processes exit.
    """

    def __init__(
        self,
        fn: RewardFn | None,
        *,
        host: str,
        port: int,
        pure: bool,
        processes: int | None,
        max_body: int,
        token: str | None,
        _routes: Routes | None = None,
        _inherit: bool = False,
        _max_inflight: int | None = None,
        _quiet: bool = False,
    ) -> None:
        # The underscored arguments are gavel._functions': several
        # functions by path, handed to workers forked from this process
        # (no pickling: lambdas and closures too), as many requests in
        # flight as the binary sends, and no log lines.
        routes: Routes = _routes if _routes is not None else {"": fn}  # type: ignore[dict-item]
        for f in routes.values():
            if not callable(f):
                raise TypeError(f"gavel.remote.serve: fn is a {type(f).__name__}, not a function")
        if not isinstance(pure, bool):
            raise TypeError(
                f"gavel.remote.serve: pure={pure!r}; want True or False (whether fn always gives a rollout the same answer)"
            )
        if processes is not None and processes < 0:
            raise ValueError(
                f"gavel.remote.serve: processes={processes}; want 0 (threads), a positive count, or None (one per CPU)"
            )
        if max_body <= 0:
            raise ValueError(f"gavel.remote.serve: max_body={max_body}; want a positive number of bytes")
        if not 0 <= port <= 65535:
            raise ValueError(f"gavel.remote.serve: port={port}; want 0 (any free port) to 65535")
        self.pure: Final = pure
        """What the caller declared: the same rollout always gets the same answer."""
        self.max_body: Final = max_body
        self.processes: Final = _cpus() if processes is None else processes
        """Worker processes running fn (0: fn runs in threads of this process)."""
        self.workers: Final = self.processes or min(32, _cpus() + 4)
        """Rollouts graded at once: the processes, or the threads when ``processes=0``."""
        self.max_inflight: Final = _max_inflight or max(4, 2 * self.workers)
        """Requests read and graded at once; one more waits a second, then is 503."""
        self._token = token.encode() if token else None
        self._routes = dict(routes)
        self._quiet = _quiet
        self._name = ", ".join(getattr(f, "__qualname__", repr(f)) for f in routes.values())
        self._fn_pickle: bytes | None = None
        self._mp_context = multiprocessing.get_context("fork" if _inherit else None)
        if self.processes and not _inherit:
            try:
                self._fn_pickle = pickle.dumps(self._routes)
            except Exception as e:
                raise TypeError(
                    f"gavel.remote.serve: the function {self._name} cannot be sent to worker processes"
                    f" ({type(e).__name__}: {e}); define it with def at the top level of a module (a"
                    " lambda, a nested function or a closure cannot be pickled), or pass processes=0"
                    " to run it in threads"
                ) from None
        self._slots = threading.BoundedSemaphore(self.max_inflight)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._inflight = 0
        self._conns: set[socket.socket] = set()
        self._closing = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._log_lock = threading.Lock()
        # The workers start before the socket is opened: forked after, each
        # would hold the listening socket open past shutdown.
        self._pool = self._new_pool()
        try:
            self._httpd = _HTTPServer((host, port), self)
        except BaseException:
            _stop_pool(self._pool, 0, kill=True)
            raise
        self.host: Final = host
        self.port: Final[int] = self._httpd.server_address[1]
        """The port listened on (the one picked when ``port=0``)."""
        shown = f"[{host}]" if ":" in host else host
        self.url: Final = f"http://{shown}:{self.port}/"
        """The URL to put in a spec's ``remote.url``."""

    # --- the pool

    def _new_pool(self) -> _Pool | cf.ThreadPoolExecutor:
        """Starts the workers; for processes, starts every one and checks it loaded the functions."""
        if not self.processes:
            return cf.ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="gavel-remote")
        return _Pool(self.processes, self._fn_pickle, self._mp_context, self._name)

    @property
    def worker_pids(self) -> list[int]:
        """The pids of the worker processes now (none with ``processes=0``)."""
        return self._pool.pids if isinstance(self._pool, _Pool) else []

    def _grade(self, route: str, rollouts: list[dict[str, Any]]) -> list[tuple[bool, str]]:
        """Grades rollouts with the function of route, in parallel on the
        workers; results in their order.

        The rollouts go in chunks, one per worker (as even as they
        divide): a worker process receives its chunk, and sends its
        answers back, in one message each way, rather than one per
        rollout, which cost more than a quick function itself.
        """
        n = len(rollouts)
        if n == 0:
            return []
        size = -(-n // min(n, self.workers))
        chunks = [rollouts[i : i + size] for i in range(0, n, size)]
        pool = self._pool
        if isinstance(pool, _Pool):
            try:
                return pool.run(route, chunks)
            except _WorkerDied as e:
                raise _Refused(
                    503,
                    f"a worker process died while grading ({e}); another was started in its place",
                    "the function crashed its process (a segfault, os._exit, the memory killer?); the request may be retried",
                    {"Retry-After": "1"},
                ) from None
        fn = self._routes[route]
        try:
            futures = [pool.submit(_run_chunk, fn, c) for c in chunks]
        except RuntimeError as e:  # submit after shutdown
            raise _Refused(
                503, f"the service is stopping ({e})", "retry against a running service", {"Retry-After": "1"}
            ) from None
        results: list[tuple[bool, str]] = []
        for f in futures:
            results += f.result()
        return results

    # --- requests in flight

    def _enter(self) -> bool:
        """Counts a request in; False when the service is stopping."""
        with self._lock:
            if self._closing:
                return False
            self._inflight += 1
            return True

    def _leave(self) -> None:
        with self._lock:
            self._inflight -= 1
            if self._inflight == 0:
                self._idle.notify_all()

    def _log(self, record: dict[str, Any]) -> None:
        """Writes one access log line (JSON, never a body) to standard error."""
        if self._quiet:
            return
        line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **record})
        with self._log_lock:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    # --- running and stopping

    def _start(self) -> None:
        # shutdown() waits for the loop to look again: every 50 ms, not
        # socketserver's 500 (a call of gavel.grade stops a service).
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="gavel-remote-server", daemon=True
        )
        self._thread.start()

    def _serve_blocking(self) -> None:
        """Serves in this thread until Ctrl-C or SIGTERM, then stops."""
        old: Any = None
        main = threading.current_thread() is threading.main_thread()
        if main:

            def on_term(signum: int, frame: FrameType | None) -> None:
                threading.Thread(target=self._httpd.shutdown, daemon=True).start()

            old = signal.signal(signal.SIGTERM, on_term)
        try:
            self._httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            if main:
                signal.signal(signal.SIGTERM, old)
            self._stop(serving=False)

    def shutdown(self) -> None:
        """Stops the service: no new requests, those in flight finish, the workers exit.

        Safe to call more than once. Requests arriving on kept-alive
        connections meanwhile are ``503`` with ``Retry-After``.
        """
        self._stop(serving=self._thread is not None)

    def _stop(self, serving: bool, grace: float = SHUTDOWN_GRACE) -> None:
        """Stops the service, letting requests in flight finish for up to
        grace seconds; with a grace of 0, the workers are terminated at
        once, whatever they run (gavel._functions', whose client is gone)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._closing = True
        if serving:
            self._httpd.shutdown()
            assert self._thread is not None
            self._thread.join()
        if not grace:
            self._httpd.server_close()
            with self._lock:
                conns = list(self._conns)
            for c in conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            _stop_pool(self._pool, 0, kill=True)
            return
        deadline = time.monotonic() + grace
        with self._lock:
            while self._inflight and time.monotonic() < deadline:
                self._idle.wait(max(0.0, deadline - time.monotonic()))
            drained = self._inflight == 0
            conns = list(self._conns)
        for c in conns:  # idle kept-alive connections: their threads see EOF and end
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()
        # Drained, the workers are idle and exit as their pipes close.
        _stop_pool(self._pool, 5 if drained else 1)
        self._log({"msg": "stopped", "url": self.url, "drained": drained})

    def __enter__(self) -> RemoteServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        state = "stopped" if self._closed else "serving"
        return f"<gavel.remote.RemoteServer {self._name} at {self.url} {state}>"


def _stop_pool(pool: _Pool | cf.ThreadPoolExecutor, grace: float, kill: bool = False) -> None:
    """Stops the workers; worker processes still busy after grace seconds
    are terminated (with kill, every worker process at once)."""
    if isinstance(pool, _Pool):
        pool.close(grace, kill=kill)
    else:
        pool.shutdown(wait=True, cancel_futures=True)


class _Handler(BaseHTTPRequestHandler):
    """One connection: routes its requests, answers JSON, logs one line per request."""

    server: _HTTPServer
    _consumed = False
    _note = ""
    """What the log line of a request answered 200 says went wrong (rollouts of a batch in error)."""
    protocol_version = "HTTP/1.1"
    # An answer is written as its headers, then its body: with Nagle's
    # algorithm, the body waited for the client's delayed acknowledgement
    # of the headers (40 ms on Linux), longer than most batches take.
    disable_nagle_algorithm = True
    timeout = IDLE_TIMEOUT
    server_version = "gavel-remote/1"

    def setup(self) -> None:
        super().setup()
        with self.server.remote._lock:
            self.server.remote._conns.add(self.connection)

    def finish(self) -> None:
        with self.server.remote._lock:
            self.server.remote._conns.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silences http.server's own lines: :meth:`RemoteServer._log` writes one JSON line per request."""

    def handle_expect_100(self) -> bool:
        # Refuse an oversized body before the client sends it.
        length = self.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > self.server.remote.max_body:
            self._request(lambda: self._too_large(int(length), drain=False))
            return False
        return super().handle_expect_100()

    def do_GET(self) -> None:
        self._request(self._get)

    def do_POST(self) -> None:
        self._request(self._post)

    def _other(self) -> None:
        self._request(lambda: self._method_not_allowed())

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _other

    @property
    def _path(self) -> str:
        return self.path.split("?", 1)[0]

    def _method_not_allowed(self) -> tuple[int, Any, int]:
        allow = "GET" if self._path in ("/reverify_mode", "/healthz") else "POST"
        raise _Refused(405, f"{self.command} {self._path}: method not allowed", f"use {allow}", {"Allow": allow})

    def _request(self, route: Callable[[], tuple[int, Any, int]]) -> None:
        remote = self.server.remote
        self._consumed = False
        self._note = ""
        start = time.monotonic()
        rollouts = 0
        error = ""
        if not remote._enter():
            self.close_connection = True
            status = self._send(
                503, {"error": "the service is stopping", "hint": "retry against a running service"}, {"Retry-After": "1"}
            )
            self._log_request(start, status, 0, "stopping")
            return
        try:
            self._authorize()
            status, body, rollouts = route()
            error = self._note
            status = self._send(status, body)
        except _Refused as e:
            error = e.error
            status = self._send(e.status, {"error": e.error, "hint": e.hint}, e.headers)
        except Exception as e:  # a bug of this module: answered, not a dropped connection
            error = f"{type(e).__name__}: {e}"
            status = self._send(500, {"error": f"internal error: {error}", "hint": "report it with the request's log line"})
        finally:
            remote._leave()
        self._log_request(start, status, rollouts, error)

    def _log_request(self, start: float, status: int, rollouts: int, error: str) -> None:
        length = self.headers.get("Content-Length", "").strip() if self.headers else ""
        record: dict[str, Any] = {
            "method": self.command,
            "path": self._path,
            "status": status,
            "rollouts": rollouts,
            "bytes": int(length) if length.isdigit() else 0,
            "ms": round((time.monotonic() - start) * 1000, 3),
        }
        if error:
            record["error"] = error[:300]
        self.server.remote._log(record)

    def _authorize(self) -> None:
        want = self.server.remote._token
        if want is None or self._path == "/healthz":
            return
        got = self.headers.get("Authorization", "")
        scheme, _, token = got.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), want):
            raise _Refused(
                401,
                "missing or wrong bearer token",
                "send Authorization: Bearer <token> (the spec's remote.token_env names the variable holding it)",
                {"WWW-Authenticate": "Bearer"},
            )

    def _get(self) -> tuple[int, Any, int]:
        if self._path == "/reverify_mode":
            return 200, "stateless" if self.server.remote.pure else "unknown", 0
        if self._path == "/healthz":
            return 200, {"status": "ok"}, 0
        return self._method_not_allowed()

    def _too_large(self, length: int, drain: bool) -> tuple[int, Any, int]:
        max_body = self.server.remote.max_body
        self.close_connection = True
        if drain and length <= DRAIN_LIMIT:
            self.rfile.read(length)
            self._consumed = True
        raise _Refused(
            413,
            f"request body of {length} bytes is over max_body ({max_body} bytes)",
            "send smaller batches (the spec's remote.batch), or start the service with a larger max_body",
        )

    def _post(self) -> tuple[int, Any, int]:
        remote = self.server.remote
        if self._path in ("/reverify_mode", "/healthz"):
            return self._method_not_allowed()
        route = "" if "" in remote._routes else self._path
        if route not in remote._routes:
            raise _Refused(404, f"POST {self._path}: no function here", "POST to one of " + ", ".join(sorted(remote._routes)))
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            raise _Refused(411, "chunked request bodies are not read", "send the body with a Content-Length")
        raw = self.headers.get("Content-Length")
        if raw is None:
            self.close_connection = True
            raise _Refused(411, "request without Content-Length", "send the body with a Content-Length")
        if not raw.strip().isdigit():
            self.close_connection = True
            raise _Refused(400, f"Content-Length {raw!r} is not a number of bytes", "send a valid Content-Length")
        length = int(raw)
        if length > remote.max_body:
            return self._too_large(length, drain=True)
        if not remote._slots.acquire(timeout=SLOT_WAIT):
            self.close_connection = True
            raise _Refused(
                503,
                f"the service is busy ({remote.max_inflight} requests in flight)",
                "retry later, or lower the spec's remote.concurrency",
                {"Retry-After": "1"},
            )
        try:
            body = self.rfile.read(length)
            self._consumed = True
            if len(body) < length:
                self.close_connection = True
                raise _Refused(400, f"request body: ended after {len(body)} of {length} bytes", "send the whole body")
            rollouts, batch = _parse(body)
            results = remote._grade(route, rollouts)
        finally:
            remote._slots.release()
        if not batch:
            ok, text = results[0]
            if not ok:
                raise _Refused(422, text, _hint_422(text))
            return 200, _Raw(text), 1
        # In a batch, a rollout the function cannot grade is the element
        # {"error": ...} of the answer, the others graded: its message is
        # the function's alone, the same whatever the batch.
        answers = [text if ok else json.dumps({"error": text}) for ok, text in results]
        failed = [text for ok, text in results if not ok]
        if failed:
            self._note = f"{len(failed)} of {len(results)} rollouts could not be graded, the first: {failed[0]}"
        return 200, _Raw("[" + ",".join(answers) + "]"), len(rollouts)

    def _send(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> int:
        if not self._consumed and self.headers.get("Content-Length", "0").strip() not in ("", "0"):
            # The body was not read: the next bytes on the connection are
            # not a request, so it ends with this answer.
            self.close_connection = True
        data = (body.text if isinstance(body, _Raw) else json.dumps(body)).encode() + b"\n"
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        except OSError:  # the client left
            self.close_connection = True
        return status


class _Raw:
    """A body already encoded as JSON text."""

    def __init__(self, text: str) -> None:
        self.text = text


def _hint_422(error: str) -> str:
    if "BadAnswer:" in error:
        return "fix the function: it returns a reward in [0, 1] or checks; this rollout is an error row, never a score"
    return "the function raised on this rollout: gavel records it as an error row, never a score"


def _parse(body: bytes) -> tuple[list[dict[str, Any]], bool]:
    """Decodes a request body: (the rollouts, whether it was a batch), or _Refused 400 naming the byte offset."""
    if not body.strip():
        raise _Refused(400, "request body: empty", ONE_OR_ARRAY)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _Refused(400, f"request body: invalid UTF-8 at byte {e.start}", "send JSON in UTF-8") from None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        offset = len(text[: e.pos].encode("utf-8"))
        raise _Refused(400, f"request body: invalid JSON at byte {offset}: {e.msg}", ONE_OR_ARRAY) from None
    except ValueError as e:
        raise _Refused(400, f"request body: {e}", "send JSON without NaN or Infinity") from None
    if isinstance(value, dict):
        return [value], False
    if isinstance(value, list):
        for i, v in enumerate(value):
            if not isinstance(v, dict):
                raise _Refused(
                    400,
                    f"request body: element {i} of the array: not a JSON object but {_kind(v)}",
                    "each element of a batch is one rollout, a JSON object",
                )
        return value, True
    raise _Refused(400, f"request body: not a JSON object or array but {_kind(value)}", ONE_OR_ARRAY)


ONE_OR_ARRAY: Final = "send one rollout as a JSON object, or a batch as a JSON array of them"

OPEN_WARNING: Final = "not loopback and no token: anyone who reaches this port can call the function"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    return "an array" if isinstance(v, list) else "an object"


def serve(
    fn: RewardFn,
    *,
    port: int = 8000,
    host: str = "127.0.0.1",
    pure: bool,
    processes: int | None = None,
    max_body: int = 64 * MiB,
    block: bool = True,
    token: str | None = None,
) -> RemoteServer:
    """Serves ``fn`` as a gavel remote verifier (protocol ``gavel``, version 1).

    ``fn(rollout)`` gets one rollout, the dict gavel sent (``task_id``,
    ``rollout_id``, ``initial_state``, ``final_state``, ``output``,
    ``log``, metadata), and returns one of:

    - a number in [0, 1] (an int or float, NumPy's too; never a bool): the
      reward;
    - a dict with ``"reward"``: that reward (its other keys are ignored
      and not sent, so a function may return notes for its own callers);
    - a list of checks, or a dict with ``"checks"`` holding one: each check
      a dict with ``status`` (``"pass"``, ``"fail"`` or ``"error"``) and
      optionally ``id``, ``label``, ``detail`` (strings), ``required``
      (bool), ``actual``, ``expected`` (any JSON value) and ``score`` (a
      number in [0, 1] or None). gavel computes the verdict and reward from
      them as from its own checks.

    Anything else, a reward outside [0, 1] or NaN, and any exception ``fn``
    raises make the request ``422`` with ``{"error": "<type>: <message>"}``
    (a wrong return value is reported as ``BadAnswer: ...``); nothing is
    clamped. In a batch, such a rollout's element of the answer is
    ``{"error": "<type>: <message>"}`` and the other rollouts are graded.

    Args:
        fn: the reward function. With worker processes it must be
            picklable: a function defined with ``def`` at the top level of
            a module (or of a script whose serving code is under ``if
            __name__ == "__main__":``); a lambda or a closure is refused
            here, with a ``TypeError``, not at the first request.
        port: the port to listen on; 0 picks a free one (see
            :attr:`RemoteServer.port`).
        host: the address to listen on; loopback by default. On any other
            address, pass ``token``.
        pure: required: whether ``fn`` gives the same answer to the same
            rollout every time (no clock, randomness or outside state).
            ``GET /reverify_mode`` answers ``"stateless"`` when true, else
            ``"unknown"``; gavel itself reads ``pure`` from the spec.
        processes: worker processes for ``fn`` (one per CPU when None);
            ``0`` runs ``fn`` in a pool of threads of this process instead,
            for functions that wait on I/O, hold unpicklable state, or are
            too quick to be worth a process hop (CPU-bound Python code in
            threads runs one at a time, under the GIL).
        max_body: the largest request body in bytes (a batch counts whole);
            a longer one is ``413``.
        block: serve in this thread until Ctrl-C or SIGTERM, then stop and
            return the stopped server; with False, serve in a background
            thread and return at once a running server, to stop with
            :meth:`RemoteServer.shutdown` or a ``with`` block.
        token: when set, every request but ``GET /healthz`` must carry
            ``Authorization: Bearer <token>`` (else ``401``).

    The worker processes are started, and each checked to have loaded
    ``fn``, before this returns (or, with ``block=True``, before serving).
    One JSON line per request goes to standard error (method, path,
    status, rollouts, bytes, milliseconds, and the error if any; never a
    body).
    """
    server = RemoteServer(fn, host=host, port=port, pure=pure, processes=processes, max_body=max_body, token=token)
    loopback = host in ("127.0.0.1", "::1", "localhost") or host.startswith("127.")
    server._log(
        {
            "msg": "serving",
            "url": server.url,
            "function": server._name,
            "processes": server.processes,
            "threads": 0 if server.processes else server.workers,
            "pure": pure,
            **({"warning": OPEN_WARNING} if not loopback and token is None else {}),
        }
    )
    if block:
        server._serve_blocking()
    else:
        server._start()
    return server
