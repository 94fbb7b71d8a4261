"""Finding the gavel binary: the one in the package, else on PATH."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["binary", "BINARY_ENV"]

BINARY_ENV = "GAVEL_BINARY"
"""An environment variable naming a gavel binary to run instead of the
one in the package (to try a build of your own)."""

_PACKAGED = Path(__file__).resolve().parent / "bin" / "gavel"


def binary() -> str:
    """Returns the path of the gavel binary this package runs.

    In order: the file named by ``$GAVEL_BINARY``, the binary inside the
    package (platform wheels carry one), ``gavel`` on ``PATH``. Raises
    :class:`FileNotFoundError` saying how to get one when there is none.
    """
    override = os.environ.get(BINARY_ENV)
    if override:
        if not os.access(override, os.X_OK):
            raise FileNotFoundError(f"${BINARY_ENV} names {override}, which is not an executable file")
        return override
    if os.access(_PACKAGED, os.X_OK):
        return str(_PACKAGED)
    found = shutil.which("gavel")
    if found:
        return found
    raise FileNotFoundError(
        "no gavel binary: this installation of the gavel package carries none "
        "(the platform wheels for Linux do) and there is no gavel on PATH; "
        "install a platform wheel (pip install gavel), or build the binary with "
        "`make build` in a clone of the gavel repository and put bin/gavel on PATH "
        f"or name it in ${BINARY_ENV}"
    )
