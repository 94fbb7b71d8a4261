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
a bool, a check without a status...), the request is ``422`` with
``{"error": "<exception type>: <message>"}`` and gavel records the
rollout as an error. The service is the standard library only
(:class:`http.server.ThreadingHTTPServer`), and runs ``fn`` in a
:class:`concurrent.futures.ProcessPoolExecutor` (or in threads, with
``processes=0``). See docs/remote-verifiers.md.
"""

from __future__ import annotations

import concurrent.futures as cf
import hmac
import json
import math
import numbers
import os
import pickle
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures.process import BrokenProcessPool
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

_loaded: Callable[[dict[str, Any]], Any] | None = None
_load_error: str = ""


def _load(fn_pickle: bytes) -> None:
    """Initializer of each worker process: loads fn once, keeps the error if it cannot."""
    global _loaded, _load_error
    # Ctrl-C reaches the whole process group: the parent shuts the pool
    # down; workers killed mid-task by it would only add tracebacks.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), name="gavel-remote-orphan", daemon=True).start()
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


def _run_loaded(rollout: dict[str, Any]) -> tuple[bool, str]:
    """Grades one rollout with the worker's fn (see :func:`_run`)."""
    if _loaded is None:
        return False, f"RuntimeError: the worker could not load the function: {_load_error}"
    return _run(_loaded, rollout)


def _run(fn: Callable[[dict[str, Any]], Any], rollout: dict[str, Any]) -> tuple[bool, str]:
    """Calls fn on one rollout: (True, the answer as JSON text) or (False, the error)."""
    try:
        value = fn(rollout)
    except Exception as e:
        text = str(e)
        return False, f"{type(e).__name__}: {text}" if text else type(e).__name__
    try:
        return True, json.dumps(_answer(value), allow_nan=False, separators=(",", ":"), default=_jsonable)
    except _BadAnswer as e:
        return False, f"BadAnswer: the function {e}"


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
        fn: RewardFn,
        *,
        host: str,
        port: int,
        pure: bool,
        processes: int | None,
        max_body: int,
        token: str | None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"gavel.remote.serve: fn is a {type(fn).__name__}, not a function")
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
        self.max_inflight: Final = max(4, 2 * self.workers)
        """Requests read and graded at once; one more waits a second, then is 503."""
        self._token = token.encode() if token else None
        self._fn = fn
        self._name = getattr(fn, "__qualname__", repr(fn))
        self._fn_pickle = b""
        if self.processes:
            try:
                self._fn_pickle = pickle.dumps(fn)
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
        self._pool: cf.Executor = self._new_pool()
        try:
            self._httpd = _HTTPServer((host, port), self)
        except BaseException:
            _stop_pool(self._pool, 0)
            raise
        self.host: Final = host
        self.port: Final[int] = self._httpd.server_address[1]
        """The port listened on (the one picked when ``port=0``)."""
        shown = f"[{host}]" if ":" in host else host
        self.url: Final = f"http://{shown}:{self.port}/"
        """The URL to put in a spec's ``remote.url``."""

    # --- the pool

    def _new_pool(self) -> cf.Executor:
        """Starts the executor; for processes, starts every worker and checks it loaded fn."""
        if not self.processes:
            return cf.ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="gavel-remote")
        pool = cf.ProcessPoolExecutor(max_workers=self.processes, initializer=_load, initargs=(self._fn_pickle,))
        try:
            probes = [pool.submit(_probe) for _ in range(self.processes)]
            for p in probes:
                pid, err = p.result(timeout=120)
                if err:
                    raise TypeError(
                        f"gavel.remote.serve: worker process {pid} could not load the function {self._name}"
                        f" ({err}); define it in a module the workers can import (a script's top level,"
                        ' guarded by if __name__ == "__main__":), or pass processes=0 to run it in threads'
                    )
        except BaseException:
            _stop_pool(pool, 0)
            raise
        return pool

    def _restart_pool(self, broken: cf.Executor) -> None:
        """Replaces a broken process pool (a worker died), once, unless shutting down."""
        with self._lock:
            if self._pool is not broken or self._closing:
                return
            self._pool = self._new_pool()
        _stop_pool(broken, 0)

    def _grade(self, rollouts: list[dict[str, Any]]) -> list[tuple[bool, str]]:
        """Grades rollouts in parallel on the pool; results in their order."""
        with self._lock:
            pool = self._pool
        try:
            if self.processes:
                futures = [pool.submit(_run_loaded, r) for r in rollouts]
            else:
                futures = [pool.submit(_run, self._fn, r) for r in rollouts]
            return [f.result() for f in futures]
        except BrokenProcessPool as e:
            self._restart_pool(pool)
            raise _Refused(
                503,
                f"a worker process died while grading ({e}); the pool was restarted",
                "the function crashed its process (a segfault, os._exit, the memory killer?); the request may be retried",
                {"Retry-After": "1"},
            ) from None
        except RuntimeError as e:  # submit after shutdown
            raise _Refused(
                503, f"the service is stopping ({e})", "retry against a running service", {"Retry-After": "1"}
            ) from None

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
        line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **record})
        with self._log_lock:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    # --- running and stopping

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="gavel-remote-server", daemon=True)
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

    def _stop(self, serving: bool) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._closing = True
        if serving:
            self._httpd.shutdown()
            assert self._thread is not None
            self._thread.join()
        deadline = time.monotonic() + SHUTDOWN_GRACE
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
        _stop_pool(self._pool, 0 if drained else 1)
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


def _stop_pool(pool: cf.Executor, grace: float) -> None:
    """Shuts an executor down; worker processes still busy after grace seconds are terminated."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    if grace and procs:
        deadline = time.monotonic() + grace
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive() and grace:
            p.terminate()
    pool.shutdown(wait=True, cancel_futures=True)
    for p in procs:
        p.join(5)
        if p.is_alive():  # pragma: no cover - a worker ignoring SIGTERM
            p.kill()
            p.join()


class _Handler(BaseHTTPRequestHandler):
    """One connection: routes its requests, answers JSON, logs one line per request."""

    server: _HTTPServer
    _consumed = False
    protocol_version = "HTTP/1.1"
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
            results = remote._grade(rollouts)
        finally:
            remote._slots.release()
        for i, (ok, text) in enumerate(results):
            if not ok:
                if batch:
                    rid = rollouts[i].get("rollout_id")
                    named = f" (rollout_id {json.dumps(rid)})" if isinstance(rid, str) else ""
                    text = f"rollout {i} of the batch{named}: {text}"
                raise _Refused(422, text, _hint_422(text))
        answers = [text for _, text in results]
        return 200, _Raw("[" + ",".join(answers) + "]" if batch else answers[0]), len(rollouts)

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
    clamped. In a batch the first failing rollout fails the whole request,
    named by its index (``rollout 3 of the batch: ...``).

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
