"""gavel grades agent rollouts in bulk, from Python.

:func:`grade` runs the gavel binary this package carries on files, URLs or
rows in memory (pyarrow, pandas, Polars, dicts) and returns the rewards
and checks as pyarrow tables (with ``verifiers=``, Python functions grade
beside the binary's verifiers); :func:`read` reads a result directory;
:class:`Client` grades through a running ``gavel serve``.
:func:`gavel.ray.grade`, in a module of its own (``import gavel.ray``, which
needs Ray Data), grades a Ray Dataset in Ray's tasks.
:func:`gavel.remote.serve` (``import gavel.remote``) serves a Python reward
function over HTTP as a remote verifier that gavel's specs can call.
:func:`turn_rewards_to_steps` and :func:`turn_rewards_to_tokens` put a
run's ``turn_rewards`` in the shapes trainers take.
"""

import importlib.metadata

from ._binary import binary
from ._client import Client, ServedResults
from ._errors import GavelError
from ._grade import Data, grade
from ._options import GradeOptions
from ._results import Results, read
from ._turns import turn_rewards_to_steps, turn_rewards_to_tokens

__all__ = [
    "grade",
    "read",
    "Client",
    "Results",
    "ServedResults",
    "GavelError",
    "GradeOptions",
    "Data",
    "binary",
    "turn_rewards_to_steps",
    "turn_rewards_to_tokens",
]

try:
    # The installed package's version: its binary's (gavel --version).
    __version__ = importlib.metadata.version("gavel")
except importlib.metadata.PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = "unknown (not installed)"
