"""gavel.Client: grading through a running ``gavel serve``."""

from __future__ import annotations

import email.utils
import http.client
import json
import threading
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa

from ._errors import GavelError
from ._results import CHECKS_SCHEMA, JUDGEMENTS_SCHEMA, REWARDS_SCHEMA, flag_fields

__all__ = ["Client", "ServedResults"]

_RETRY_STATUSES = (429, 503)


@dataclass
class ServedResults:
    """The results of :meth:`Client.grade`, one rewards row per rollout sent."""

    rewards: pa.Table
    """One row per rollout, in the order sent; the columns of the rewards table."""
    checks: pa.Table
    """One row per check of each rollout."""
    judgements: pa.Table | None = None
    """One row per single judgement, when the server judged some rubric
    check more than once; else ``None``."""
    exit_status: int = 0
    """3 when some rollout has status ``error``, else 0, as ``gavel grade`` exits."""

    def __repr__(self) -> str:
        judgements = "None" if self.judgements is None else f"<{self.judgements.num_rows} rows>"
        return (
            f"ServedResults(rewards=<{self.rewards.num_rows} rows>, checks=<{self.checks.num_rows} rows>, "
            f"judgements={judgements}, exit_status={self.exit_status})"
        )


class Client:
    """A client of ``gavel serve``'s ``POST /v1/grade``.

    Rollouts are sent in batches of ``batch_size`` as JSON Lines over one
    kept-alive connection, reopened when the server closes it. A ``429`` or
    ``503`` answer is retried up to ``retries`` times, after the server's
    ``Retry-After`` (seconds or an HTTP date) or else an exponential
    backoff from half a second, capped at ``max_backoff`` seconds. Each
    request must be answered within ``timeout`` seconds of socket
    inactivity. One request is in flight at a time per client: use a
    client per thread to send in parallel.
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        retries: int = 5,
        batch_size: int = 256,
        max_backoff: float = 30.0,
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"Client({url!r}): want an http:// or https:// URL of gavel serve")
        if batch_size < 1:
            raise ValueError(f"Client: batch_size={batch_size}: want 1 or more")
        self.url = url
        """The server's root URL."""
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._headers = {"Connection": "keep-alive"}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        self.timeout = timeout
        self.retries = retries
        self.batch_size = batch_size
        self.max_backoff = max_backoff
        self._conn: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()
        self.connections = 0
        """How many connections this client opened (one while the server keeps it alive)."""

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connection, if one is open."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def grade(self, rows: Iterable[Mapping[str, Any]], *, keep: Sequence[str] | None = None) -> ServedResults:
        """Grades rollouts (dicts with the fields of grade's input) on the server.

        The rows are sent in batches; the results come back in the order
        sent. ``source_row`` is the rollout's index among all the rows of
        this call, and a rollout without ``rollout_id`` gets
        ``request#<that index>``, as one request of all the rows would
        give. ``keep`` names the metadata columns copied into the rewards
        (default: those of ``model``, ``run_id`` and ``sample`` that the
        first rollout of each batch has). A failed request raises
        :class:`GavelError` with the server's message and hint.
        """
        query = ""
        if keep is not None:
            query = "?" + urllib.parse.urlencode({"keep": ",".join(keep)})
        rewards: list[dict[str, Any]] = []
        checks: list[dict[str, Any]] = []
        judgements: list[dict[str, Any]] = []
        offset = 0
        for batch in _batches(rows, self.batch_size):
            body = _jsonl(batch, offset)
            lines = self._post(self._prefix + "/v1/grade" + query, body, len(batch))
            for i, (row, line) in enumerate(zip(batch, lines)):
                r = line["rewards"]
                r["source_row"] = offset + i
                if row.get("rollout_id") is None:
                    r["rollout_id"] = f"request#{offset + i}"
                    for c in line.get("checks") or ():
                        c["rollout_id"] = r["rollout_id"]
                    for j in line.get("judgements") or ():
                        j["rollout_id"] = r["rollout_id"]
                rewards.append(r)
                checks.extend(line.get("checks") or ())
                judgements.extend(line.get("judgements") or ())
            offset += len(batch)
        rewards_t = _table(rewards, REWARDS_SCHEMA, metadata=True)
        return ServedResults(
            rewards=rewards_t,
            checks=_table(checks, CHECKS_SCHEMA),
            judgements=_table(judgements, JUDGEMENTS_SCHEMA) if judgements else None,
            exit_status=3 if any(r.get("status") == "error" for r in rewards) else 0,
        )

    def verifiers(self) -> list[dict[str, Any]]:
        """Returns the server's loaded verifiers (``GET /v1/verifiers``)."""
        status, headers, data = self._request("GET", self._prefix + "/v1/verifiers", None, {})
        if status != 200:
            raise _http_error(status, data)
        out: list[dict[str, Any]] = json.loads(data)["verifiers"]
        return out

    def _post(self, path: str, body: bytes, n: int) -> list[dict[str, Any]]:
        headers = {"Content-Type": "application/x-ndjson"}
        attempt = 0
        while True:
            status, resp_headers, data = self._request("POST", path, body, headers)
            if status in _RETRY_STATUSES and attempt < self.retries:
                time.sleep(self._wait(resp_headers.get("Retry-After"), attempt))
                attempt += 1
                continue
            if status != 200:
                raise _http_error(status, data)
            return _answer(data, n)

    def _wait(self, retry_after: str | None, attempt: int) -> float:
        """Returns the seconds to wait before the next attempt."""
        if retry_after:
            retry_after = retry_after.strip()
            if retry_after.isdigit():
                return float(retry_after)
            try:
                when = email.utils.parsedate_to_datetime(retry_after)
            except (TypeError, ValueError):
                pass
            else:
                if when.tzinfo is None:
                    when = when.replace(tzinfo=timezone.utc)
                return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
        return min(self.max_backoff, 0.5 * 2.0**attempt)

    def _request(
        self, method: str, path: str, body: bytes | None, headers: Mapping[str, str]
    ) -> tuple[int, http.client.HTTPMessage, bytes]:
        """Sends one request over the kept-alive connection and reads the whole answer.

        A connection the server closed while idle is reopened once and the
        request sent again; grading is pure, so a repeated request is safe.
        """
        with self._lock:
            for again in (False, True):
                conn = self._connection()
                reused = conn.sock is not None
                try:
                    conn.request(method, path, body=body, headers={**self._headers, **headers})
                    resp = conn.getresponse()
                    data = resp.read()
                except TimeoutError as e:
                    self._drop()
                    raise GavelError(f"{method} {self.url}{path}: no answer within {self.timeout}s") from e
                except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                    self._drop()
                    if reused and not again:
                        continue
                    raise GavelError(f"{method} {self.url}{path}: {e}") from e
                except OSError as e:
                    self._drop()
                    raise GavelError(f"{method} {self.url}{path}: {e}") from e
                if resp.will_close:
                    self._drop()
                return resp.status, resp.headers, data
        raise AssertionError("unreachable")

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            self._conn = cls(self._host, self._port, timeout=self.timeout)
            self.connections += 1
        return self._conn

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _batches(rows: Iterable[Mapping[str, Any]], size: int) -> Iterator[list[Mapping[str, Any]]]:
    batch: list[Mapping[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def json_default(o: Any) -> Any:
    """Returns a JSON value for the NumPy scalars and arrays rows from pandas hold."""
    if hasattr(o, "tolist") and callable(o.tolist):
        return o.tolist()
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


def _jsonl(batch: Sequence[Mapping[str, Any]], offset: int) -> bytes:
    lines = []
    for i, row in enumerate(batch):
        try:
            lines.append(json.dumps(row, ensure_ascii=False, separators=(",", ":"), default=json_default))
        except (TypeError, ValueError) as e:
            raise TypeError(f"Client.grade: row {offset + i}: {e}") from e
    return ("\n".join(lines) + "\n").encode()


def _http_error(status: int, data: bytes) -> GavelError:
    try:
        doc = json.loads(data)
        return GavelError(str(doc["error"]), http_status=status, hint=doc.get("hint"))
    except (ValueError, KeyError, TypeError):
        text = data.decode("utf-8", "replace").strip()[:500]
        return GavelError(text or f"HTTP {status}", http_status=status)


def _answer(data: bytes, n: int) -> list[dict[str, Any]]:
    """Returns the result lines of a /v1/grade answer, or raises its error line."""
    lines = []
    for raw in data.splitlines():
        if not raw.strip():
            continue
        doc = json.loads(raw)
        if "rewards" not in doc:
            # A stream that failed after its first lines ends with its error.
            raise GavelError(str(doc.get("error", raw.decode("utf-8", "replace"))), http_status=200, hint=doc.get("hint"))
        lines.append(doc)
    if len(lines) != n:
        raise GavelError(f"/v1/grade answered {len(lines)} rollouts for the {n} sent", http_status=200)
    return lines


def _table(rows: list[dict[str, Any]], schema: pa.Schema, *, metadata: bool = False) -> pa.Table:
    """Returns rows as a table with the columns of schema and those of a run
    with flags and of a run that scores turns the rows have (``turn_rewards``
    and ``turns``, ``turn``), then (rewards) the kept metadata."""
    fields = flag_fields(schema, rows[0] if rows else ())
    if metadata:
        known = {f.name for f in fields}
        for row in rows:
            for k in row:
                if k not in known:
                    known.add(k)
                    fields.append(pa.field(k, pa.string()))
    return pa.Table.from_pylist(rows, schema=pa.schema(fields))
