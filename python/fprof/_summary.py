"""One rank file summarised into small tables, on a Dask worker, and cached beside the file.

The summary is computed by the C++ analysis (_core.summarize_rank_file): the worker's memory is
that of the one rank it reads. It is kept in ``<folder>/.fprof-summary/<file name>/`` (one
Parquet file per table and ``key.json``), keyed by the file's content (SHA-256) and by what the
summary depends on (its format version, fprof's version, the step pattern), so a later job reads
it instead of the rank file whenever the file is unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

from . import _core
from ._tables import to_arrow

TABLES = ("ranks", "groups", "ops", "steps", "fusion", "roofs", "launch_groups", "launch_samples")
CACHE_FOLDER = ".fprof-summary"


def content_hash(path: str) -> str:
    with open(path, "rb") as f:
        if hasattr(hashlib, "file_digest"):
            return hashlib.file_digest(f, "sha256").hexdigest()
        digest = hashlib.sha256()
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
        return digest.hexdigest()


def cache_key(sha256: str, step_regex: str) -> dict:
    return {"sha256": sha256, "summary_version": _core.rank_summary_version, "fprof_version": _core.version,
            "schema_version": _core.schema_version, "step_regex": step_regex}


def cache_folder(path: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(path)), CACHE_FOLDER, os.path.basename(path))


def read_cache(path: str, key: dict) -> dict[str, pa.Table] | None:
    folder = cache_folder(path)
    try:
        with open(os.path.join(folder, "key.json")) as f:
            if json.load(f) != key:
                return None
        return {name: pq.read_table(os.path.join(folder, f"{name}.parquet")) for name in TABLES}
    except (OSError, ValueError, pa.ArrowException):
        return None  # no cache, a stale one or a damaged one: summarise again


def is_summary_cache(folder: str) -> bool:
    """Whether folder is a summary fprof wrote (a folder, not a link, whose key.json is a key):
    the only thing at a cache path fprof replaces."""
    if os.path.islink(folder) or not os.path.isdir(folder):
        return False
    try:
        with open(os.path.join(folder, "key.json")) as f:
            key = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(key, dict) and "sha256" in key and "summary_version" in key


def write_cache(path: str, key: dict, tables: dict[str, pa.Table]) -> str:
    """Writes the summary beside the rank file; returns "" or why it could not be kept.

    A stale summary is replaced; anything else at the cache path (a user's file or folder, a link)
    is left as it is and the summary is not cached.
    """
    folder = cache_folder(path)
    parent = os.path.dirname(folder)
    if os.path.lexists(folder) and not is_summary_cache(folder):
        return f"summary of {path} not cached: {folder} is not a summary fprof wrote; it is left as it is"
    try:
        os.makedirs(parent, exist_ok=True)
        temp = tempfile.mkdtemp(prefix=f".{os.path.basename(folder)}.", suffix=".fprof-tmp", dir=parent)
        os.chmod(temp, 0o755)
    except OSError as err:
        return f"summaries not cached in {parent}: {(err.strerror or str(err)).lower()}"
    try:
        for name, table in tables.items():
            pq.write_table(table, os.path.join(temp, f"{name}.parquet"))
        with open(os.path.join(temp, "key.json"), "w") as f:
            json.dump(key, f, indent=1)
        if os.path.isdir(folder):
            stale = temp + ".old"
            os.rename(folder, stale)
            shutil.rmtree(stale, ignore_errors=True)
        os.rename(temp, folder)
        return ""
    except OSError as err:
        return f"summary of {path} not cached: {(err.strerror or str(err)).lower()}"
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def summarise_rank(path: str, step_regex: str, use_cache: bool = True) -> dict:
    """The summary tables of one rank file, from the cache or computed; runs on a worker.

    A file that cannot be read gives {"path", "error"}: the reader's one sentence, returned rather
    than raised, since a bad rank file is input to report, not a failure of the worker.
    """
    try:
        return _summary(path, step_regex, use_cache)
    except _core.FprofError as err:
        return {"path": path, "error": str(err)}
    except OSError as err:
        return {"path": path, "error": f"{path}: cannot be read: {(err.strerror or str(err)).lower()}"}


def _summary(path: str, step_regex: str, use_cache: bool) -> dict:
    started = time.perf_counter()
    sha256 = content_hash(path)
    key = cache_key(sha256, step_regex)
    tables = read_cache(path, key) if use_cache else None
    cached = tables is not None
    note = ""
    if tables is None:
        tables = {t.name: to_arrow(t) for t in _core.summarize_rank_file(path, step_regex)}
        if use_cache:
            note = write_cache(path, key, tables)
    return {
        "path": path,
        "sha256": sha256,
        "size_bytes": os.path.getsize(path),
        "tables": tables,
        "cached": cached,
        "cache_note": note,
        "seconds": time.perf_counter() - started,
        # The worker process's peak resident memory so far (kB on Linux), for the benchmark.
        "worker_peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
