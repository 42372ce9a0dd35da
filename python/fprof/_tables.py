"""Tables from the C++ analysis as Arrow tables and pandas DataFrames, each column with its doc.

The C++ side (python/src/columns.h) hands over typed buffers and validity masks; nothing here
computes a value. A column's doc string travels in its Arrow field metadata (key ``doc``), in the
DataFrame's ``attrs["column_docs"]``, and through :func:`docs`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

_NUMPY_TYPES = {"int64": np.int64, "float64": np.float64, "bool": np.int64}


def _mask(column) -> np.ndarray | None:
    """True where the value is absent (Arrow's mask convention), or None when none is."""
    valid = column.valid
    if valid is None:
        return None
    return np.frombuffer(valid, dtype=np.uint8) == 0


def _array(column) -> pa.Array:
    mask = _mask(column)
    if column.kind == "string":
        codes = np.frombuffer(column.data, dtype=np.int32)
        indices = pa.array(codes, type=pa.int32(), mask=mask)
        return pa.DictionaryArray.from_arrays(indices, pa.array(column.dictionary, type=pa.string()))
    values = np.frombuffer(column.data, dtype=_NUMPY_TYPES[column.kind])
    if column.kind == "bool":
        return pa.array(values.astype(bool), type=pa.bool_(), mask=mask)
    return pa.array(values, mask=mask)


def to_arrow(table) -> pa.Table:
    """A _core.Table as a pyarrow.Table; field metadata ``doc`` holds each column's doc string."""
    arrays, fields = [], []
    for column in table.columns:
        array = _array(column)
        arrays.append(array)
        fields.append(pa.field(column.name, array.type, metadata={"doc": column.doc}))
    schema = pa.schema(fields, metadata={"table": table.name, "doc": table.doc})
    return pa.Table.from_arrays(arrays, schema=schema)


def column_docs(table: pa.Table) -> dict[str, str]:
    """{column: doc} from an Arrow table's field metadata."""
    out = {}
    for field in table.schema:
        meta = field.metadata or {}
        out[field.name] = meta.get(b"doc", b"").decode()
    return out


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """Arrow-backed DataFrame (pandas.ArrowDtype columns); absent values are <NA>, never 0."""
    df = table.to_pandas(types_mapper=pd.ArrowDtype)
    meta = table.schema.metadata or {}
    df.attrs["table"] = meta.get(b"table", b"").decode()
    df.attrs["doc"] = meta.get(b"doc", b"").decode()
    df.attrs["column_docs"] = column_docs(table)
    return df


def docs(frame) -> pd.DataFrame:
    """The columns of a table fprof made (DataFrame or Arrow table) with their doc strings."""
    if isinstance(frame, pa.Table):
        items = column_docs(frame)
    else:
        items = frame.attrs.get("column_docs")
        if items is None:
            raise ValueError("this DataFrame carries no column docs (it was not made by fprof, or an operation dropped "
                             "its attrs); fprof.docs() of the table as fprof returned it lists them")
    return pd.DataFrame({"column": list(items), "doc": list(items.values())})
