"""Writing an Arrow IPC stream into a pipe without copying the column data.

An IPC stream is mostly the bodies of the record batches, which pyarrow's
writer hands to its sink as :class:`pyarrow.Buffer` objects over the table's
own memory. On Linux, :class:`PipeSink` gives those to the pipe with
``vmsplice(2)``: the pipe refers to the pages where the data already is and
the reader copies it out from there, so the data is copied once, by the
reader, rather than twice. Everything else (the messages' metadata, padding
and buffers under :data:`SPLICE_MIN` bytes) is written with ``write(2)``.

Pages given this way must not change until the reader has read them. The
table's buffers never change, but the writer also hands over buffers it
made for the occasion (the offsets of a sliced string column, rebased to
start at 0), which Python may free once the write returns. So the sink
keeps every buffer it spliced until the reader has read past its end,
which it learns by asking the pipe how many bytes it holds unread
(``FIONREAD``); the buffers held are at most the pipe's capacity. The
bytes the reader gets are the same either way: where ``vmsplice`` is not
available (another system, a kernel or sandbox that refuses it), the sink
writes everything with ``write(2)``.
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import errno
import fcntl
import os
import sys
import termios
from typing import Any

import pyarrow as pa

__all__ = ["PipeSink", "SPLICE_MIN"]

SPLICE_MIN = 64 << 10
"""Buffers of at least this many bytes are spliced; smaller ones, and every
other write, are gathered and written with write(2)."""


class _IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _load_vmsplice() -> Any:
    """Returns libc's vmsplice function, or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.vmsplice
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(_IOVec), ctypes.c_size_t, ctypes.c_uint]
    fn.restype = ctypes.c_ssize_t
    return fn


_vmsplice = _load_vmsplice()


class PipeSink:
    """A file-like sink for :class:`pyarrow.PythonFile` over a pipe's write end.

    It writes to the file descriptor fd, which it does not close. Call
    :meth:`flush` after the last write; keep the sink (and so the buffers it
    holds) until the reader is done or gone, since the pipe may still refer
    to them.
    """

    closed = False

    def __init__(self, fd: int, *, splice: bool = True) -> None:
        self._fd = fd
        self._splice = splice and _vmsplice is not None
        self._small = bytearray()
        self._written = 0  # bytes given to the pipe
        self._held: collections.deque[tuple[int, pa.Buffer]] = collections.deque()
        self._iov = _IOVec()
        self._unread = bytearray(4)
        self.spliced = 0
        """Bytes given to the pipe by vmsplice (for tests)."""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self._splice and isinstance(data, pa.Buffer) and data.is_cpu and data.size >= SPLICE_MIN:
            self.flush()
            if self._give(data):
                return int(data.size)
        view = memoryview(data).cast("B")
        self._small += view
        if len(self._small) >= SPLICE_MIN:
            self.flush()
        return len(view)

    def flush(self) -> None:
        """Writes the bytes gathered so far."""
        if not self._small:
            return
        view = memoryview(self._small)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
            self._written += n
        view.release()
        self._small = bytearray()

    def close(self) -> None:
        self.flush()
        self.closed = True

    def _give(self, buf: pa.Buffer) -> bool:
        """Splices buf into the pipe; False, with nothing given, where
        vmsplice is refused (the sink then writes from here on)."""
        addr, size, off = buf.address, buf.size, 0
        while off < size:
            self._iov.base = addr + off
            self._iov.len = size - off
            n = _vmsplice(self._fd, ctypes.byref(self._iov), 1, 0)
            if n < 0:
                e = ctypes.get_errno()
                if e == errno.EINTR:
                    continue
                if off == 0 and e in (errno.ENOSYS, errno.EINVAL, errno.EPERM, errno.EOPNOTSUPP):
                    self._splice = False
                    return False
                raise OSError(e, os.strerror(e))
            off += n
            self._written += n
            self.spliced += n
            self._held.append((self._written, buf))
            self._release()
        return True

    def _release(self) -> None:
        """Drops the buffers the reader has read past."""
        fcntl.ioctl(self._fd, termios.FIONREAD, self._unread)
        read = self._written - int.from_bytes(self._unread, sys.byteorder, signed=True)
        while self._held and self._held[0][0] <= read:
            self._held.popleft()
