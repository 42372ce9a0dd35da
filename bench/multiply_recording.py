#!/usr/bin/env python3
"""A large recording made of a small one: every per-launch table of a recorded .fprof copied N
times, each copy shifted after the previous one in time and given fresh ids, so that the result
reads as one long run of the same program (for bench/output_memory.sh).

    multiply_recording.py IN.fprof COPIES OUT.fprof

Tables of one row per launch, range, copy or event (kernel, kernel_arg, kernel_counter,
kernel_metric, nvtx_range, memcpy, memset, memory_event, ...) are multiplied; the string table,
processes, devices, ceilings and metadata are kept as they are (the copies are the same program).
Columns are found by name, so every schema version fprof reads works."""
import shutil
import sqlite3
import sys

# Columns shifted per copy, by what they hold.
TIME_COLUMNS = {"start_ns", "end_ns", "timestamp_ns"}
KEEP_TABLES = {"string", "process", "device", "ceiling", "metadata", "function", "function_arg", "function_sass_op"}


def columns(db, table):
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def scalar(db, sql):
    value = db.execute(sql).fetchone()[0]
    return value or 0


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    source, copies, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    shutil.copyfile(source, out)
    db = sqlite3.connect(out)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    first = min(scalar(db, "SELECT min(start_ns) FROM kernel"), scalar(db, "SELECT min(start_ns) FROM nvtx_range") or 2**62)
    last = max(scalar(db, "SELECT max(end_ns) FROM kernel"), scalar(db, "SELECT max(end_ns) FROM nvtx_range"))
    span = last - first + 1_000_000  # a millisecond between copies
    # Per copy, every id moves past the largest of the source.
    shift = {
        "kernel": scalar(db, "SELECT max(id) FROM kernel"),
        "nvtx_range": scalar(db, "SELECT max(id) FROM nvtx_range"),
        "correlation": max(scalar(db, f"SELECT max(correlation_id) FROM {t}") for t in tables
                           if "correlation_id" in columns(db, t)) + 1,
    }
    for table in tables:
        if table in KEEP_TABLES or table.startswith("sqlite_"):
            continue
        cols = columns(db, table)
        own_id = scalar(db, f"SELECT max(rowid) FROM {table}")

        def moved(col):
            if col in TIME_COLUMNS:
                return f"CASE WHEN {col} > 0 THEN {col} + c.n * {span} ELSE {col} END"
            if col == "id":
                return f"id + c.n * {shift['kernel'] if table == 'kernel' else shift['nvtx_range'] if table == 'nvtx_range' else own_id}"
            if col in ("kernel_id", "source_kernel_id"):
                return f"{col} + c.n * {shift['kernel']}"
            if col in ("nvtx_range_id", "parent_id"):
                return f"{col} + c.n * {shift['nvtx_range']}"
            if col == "correlation_id":
                return f"{col} + c.n * {shift['correlation']}"
            return col

        select = ", ".join(moved(c) for c in cols)
        db.execute(
            f"WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < {copies - 1}) "
            f"INSERT INTO {table} ({', '.join(cols)}) SELECT {select} FROM {table}, c WHERE {table}.rowid <= {own_id}")
        db.commit()
        print(f"{table}: {scalar(db, f'SELECT count(*) FROM {table}')} rows", file=sys.stderr)
    db.close()


if __name__ == "__main__":
    main()
