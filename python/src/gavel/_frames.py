"""How rows in memory are handed to the binary: the struct nulls of Arrow
data, and the Python objects of pandas frames sent as JSON text.

A struct column has one set of fields for all its rows. Built from JSON
objects (``pyarrow.json.read_json``, Polars' ``read_ndjson``,
``pa.Table.from_pylist``, pandas' object columns converted by pyarrow), its
fields are the union of every row's members, and a row gets a null field
for each member it never had: ``"opportunities": {"OPP-0001": {...}}`` in
one row and ``{"OPP-0002": {...}}`` in the next become two fields each row
has. Rows in memory are therefore graded with ``--struct-nulls absent`` unless
the caller says otherwise: a null field is no member, and each row's
objects hold its own members again.

A pandas frame keeps what a struct cannot: its object columns hold each
row's own dicts and lists, with their members in their order and explicit
``None`` members. The columns that hold the states and the log are sent as
JSON text (as the binary reads a state given as text), never inferred into
structs, so that a frame read from JSON Lines with ``pandas.read_json(...,
lines=True, dtype=False)`` is graded as the file is.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ._client import json_default
from ._options import option_args

if TYPE_CHECKING:
    import pandas

__all__ = ["memory_args", "json_columns", "pandas_table"]

JSON_FIELDS = ("final_state", "initial_state", "log")
"""The rollout fields whose values are JSON: a column holding one of them
may hold JSON text (``gavel grade``'s input schema)."""


def memory_args(options: Mapping[str, object]) -> list[str]:
    """Returns the arguments of ``gavel grade`` for rows in memory: options,
    with ``struct_nulls="absent"`` unless they set it."""
    if options.get("struct_nulls") is None:
        return option_args({**options, "struct_nulls": "absent"})
    return option_args(options)


def json_columns(options: Mapping[str, object]) -> list[str]:
    """Returns the columns that hold the states and the log: the fields'
    own names, or the columns ``options["map"]`` reads them from. A mapped
    ``COL.PATH`` (a field inside a struct column) is not one: ``COL`` must
    stay a struct."""
    cols = {f: f for f in JSON_FIELDS}
    mapping = options.get("map")
    pairs: Iterable[tuple[object, object]] = ()
    if isinstance(mapping, Mapping):
        pairs = mapping.items()
    elif isinstance(mapping, str):
        pairs = (tuple(p.split("=", 1)) for p in mapping.split(",") if "=" in p)  # type: ignore[misc]
    for field, col in pairs:
        if isinstance(field, str) and field.strip() in cols and isinstance(col, str):
            cols[field.strip()] = col.strip()
    return list(dict.fromkeys(cols.values()))


def pandas_table(df: pandas.DataFrame, columns: Iterable[str]) -> pa.Table:
    """Returns df as a pyarrow table, without its index. Each of columns
    that df has as an object column is sent as JSON text: a dict, a list
    or any other value as ``json.dumps`` writes it (NumPy scalars and
    arrays as their values), a string as it is (text of JSON, as in a JSON
    Lines file), a missing value (``None``, NaN) as null. A value JSON
    cannot hold raises :class:`TypeError` naming its row and column."""
    texts: dict[str, pa.Array[Any]] = {}
    names = list(df.columns)
    for col in columns:
        if names.count(col) != 1 or df[col].dtype != object:
            continue  # absent, or of a type pyarrow converts as it is
        texts[col] = _json_texts(df[col].tolist(), col)
    if not texts:
        return pa.Table.from_pandas(df, preserve_index=False)
    table = pa.Table.from_pandas(df.drop(columns=list(texts)), preserve_index=False)
    for i, name in enumerate(names):
        if name in texts:
            table = table.add_column(i, pa.field(name, pa.large_string()), texts[name])
    return table


def _json_texts(values: list[Any], col: str) -> pa.Array[Any]:
    """Returns values as a large string array of JSON texts (see pandas_table)."""
    out: list[str | None] = []
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and math.isnan(v)) or _is_na(v):
            out.append(None)
        elif isinstance(v, str):
            out.append(v)
        else:
            try:
                out.append(json.dumps(v, ensure_ascii=False, separators=(",", ":"), default=json_default))
            except (TypeError, ValueError) as e:
                raise TypeError(f"grade: row {i}, field {col}: {e}") from e
    return pa.array(out, type=pa.large_string())


def _is_na(v: object) -> bool:
    """Reports whether v is pandas' missing value (``pd.NA``, ``pd.NaT``)."""
    name = type(v).__name__
    return name in ("NAType", "NaTType") and type(v).__module__.startswith("pandas")
