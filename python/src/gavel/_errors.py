"""The one exception gavel raises for what the binary or a server refused."""

from __future__ import annotations

__all__ = ["GavelError"]


class GavelError(Exception):
    """A run or request that gavel refused or could not complete.

    ``gavel grade`` exits 2 on a usage or configuration error (a bad
    option, an invalid spec) and 1 on a fatal error (I/O, a corrupt input
    that stops the run); both raise this, with the binary's message and
    :attr:`exit_status`. Rows with status ``error`` never raise: they are
    rows of :attr:`gavel.Results.rewards`. A request to ``gavel serve``
    that fails raises this with :attr:`http_status` and the server's
    :attr:`hint`.
    """

    def __init__(
        self,
        message: str,
        *,
        exit_status: int | None = None,
        http_status: int | None = None,
        hint: str | None = None,
        stderr: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        """What went wrong, as the binary or the server words it."""
        self.exit_status = exit_status
        """The exit status of ``gavel`` (2 usage, 1 fatal), or ``None`` for a request."""
        self.http_status = http_status
        """The HTTP status of a failed request to ``gavel serve``, or ``None``."""
        self.hint = hint
        """What to do next, when the binary or server said it."""
        self.stderr = stderr
        """Everything the binary wrote to its standard error."""

    def __reduce__(self) -> tuple[type[GavelError], tuple[str], dict[str, object]]:
        # Pickled with its fields, not only its message, so that it crosses
        # to another process whole.
        return (type(self), (self.message,), dict(self.__dict__))

    def __str__(self) -> str:
        text = self.message
        if self.hint:
            text += f" (hint: {self.hint})"
        if self.exit_status is not None:
            text += f" [exit {self.exit_status}]"
        elif self.http_status is not None:
            text += f" [HTTP {self.http_status}]"
        return text
