#!/usr/bin/env python3
"""Synthetic rank files for `fprof job`, made from one recorded rank (tests/data).

    job_make_ranks.py SOURCE.fprof OUTDIR --ranks 1024 --kernels 100000 [--straggler 5:1.5]

One template is grown to the wanted kernel count by repeating the recorded kernels end to end
(with their launch arguments, NVTX ranges and counters; ids, correlation ids and times shifted
per repetition, so steps and ops look as recorded; copies, sets and memory events stay as recorded
once, as a run's set-up would), then copied once per rank with the rank set (LOCAL_RANK as eight
per host). A straggler's kernels outside NCCL
take FACTOR times as long. Plain SQLite through Python's sqlite3: no fprof code writes these files.
The package's tests use copy_rank and grow_rank to make their small jobs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import time

# What each table's columns refer to, for shifting a repetition: its own id, times, correlation
# ids, kernel ids, NVTX range ids.
TABLES = {
    "kernel": {"id": "id", "time": ["start_ns", "end_ns"], "corr": ["correlation_id"], "range": ["nvtx_range_id"]},
    "kernel_arg": {"corr": ["correlation_id"]},
    "nvtx_range": {"id": "id", "time": ["start_ns", "end_ns"], "range": ["parent_id"]},
    "kernel_counter": {"kernel": ["kernel_id", "source_kernel_id"]},
    "kernel_counter_missing": {"kernel": ["kernel_id"]},
    "kernel_metric": {"kernel": ["kernel_id"]},
}


def _tables(db) -> set:
    return {r[0] for r in db.execute("select name from sqlite_master where type = 'table'")}


def _columns(db, table: str) -> list:
    return [r[1] for r in db.execute(f"pragma table_info({table})")]


def _max(db, sql: str) -> int:
    (v,) = db.execute(sql).fetchone()
    return int(v or 0)


def grow_rank(source: str, dest: str, kernels: int) -> int:
    """Writes `dest`: `source`'s run repeated end to end until it holds `kernels` kernels (the last
    repetition cut); returns the kernel count."""
    shutil.copyfile(source, dest)
    db = sqlite3.connect(dest)
    present = _tables(db)
    n = _max(db, "select count(*) from kernel")
    if n == 0:
        raise SystemExit(f"{source}: holds no kernel")
    reps = -(-kernels // n)
    first = _max(db, "select min(start_ns) from kernel")
    last = max(_max(db, "select max(end_ns) from kernel"), _max(db, "select max(coalesce(end_ns, start_ns)) from nvtx_range"))
    shift = {"time": last - first + 1000, "corr": _max(db, "select max(correlation_id) from kernel") + 1,
             "kernel": _max(db, "select max(id) from kernel"), "range": _max(db, "select max(id) from nvtx_range")}
    offsets = {t: _max(db, f"select max(id) from {t}") for t, spec in TABLES.items() if t in present and "id" in spec}
    db.execute("create temp table rep(r integer primary key)")
    db.executemany("insert into rep values (?)", [(r,) for r in range(1, reps)])
    for table, spec in TABLES.items():
        if table not in present:
            continue
        cols = _columns(db, table)
        exprs = []
        for c in cols:
            if c == spec.get("id"):
                exprs.append(f"{c} + rep.r * {offsets[table]}")
            elif c in spec.get("time", []):
                exprs.append(f"{c} + rep.r * {shift['time']}")
            elif c in spec.get("corr", []):
                exprs.append(f"{c} + rep.r * {shift['corr']}")
            elif c in spec.get("kernel", []):
                exprs.append(f"{c} + rep.r * {shift['kernel']}")
            elif c in spec.get("range", []):
                exprs.append(f"{c} + rep.r * {shift['range']}")
            else:
                exprs.append(c)
        db.execute(f"insert into {table} ({', '.join(cols)}) select {', '.join(exprs)} from {table}, rep")
    # Cut to exactly `kernels`, with what refers to the kernels cut.
    cut = _max(db, f"select id from kernel order by id limit 1 offset {kernels - 1}")
    db.execute("delete from kernel where id > ?", (cut,))
    for table in ("kernel_counter", "kernel_counter_missing", "kernel_metric"):
        if table in present:
            db.execute(f"delete from {table} where kernel_id > ?", (cut,))
    db.commit()
    db.execute("vacuum")
    db.close()
    return kernels


def copy_rank(source: str, dest: str, rank: int, local_rank: int | None = None, scale: float | None = None,
              device_name: str | None = None) -> None:
    """`source` as rank `rank`: its process row's rank (and local rank) set; with `scale`, every
    kernel outside NCCL lasts that many times as long; with `device_name`, another GPU model."""
    shutil.copyfile(source, dest)
    db = sqlite3.connect(dest)
    db.execute("update process set rank = ?, local_rank = ?", (rank, rank % 8 if local_rank is None else local_rank))
    if scale is not None:
        db.execute("update kernel set end_ns = start_ns + cast((end_ns - start_ns) * ? as integer), "
                   "duration_ns = cast(duration_ns * ? as integer) "
                   "where demangled_id not in (select id from string where value like 'ncclDevKernel%' "
                   "or value like 'ncclKernel%')", (scale, scale))
    if device_name is not None:
        db.execute("update device set name = ?", (device_name,))
    db.commit()
    db.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source")
    ap.add_argument("outdir")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--kernels", type=int, required=True, help="kernels per rank")
    ap.add_argument("--straggler", default=None, metavar="RANK:FACTOR")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    started = time.perf_counter()
    template = os.path.join(a.outdir, ".template.fprof")
    grow_rank(a.source, template, a.kernels)
    slow = {}
    if a.straggler:
        r, f = a.straggler.split(":")
        slow[int(r)] = float(f)
    width = len(str(a.ranks - 1))
    for r in range(a.ranks):
        copy_rank(template, os.path.join(a.outdir, f"rank{r:0{width}d}.fprof"), r, scale=slow.get(r))
    os.unlink(template)
    size = sum(os.path.getsize(os.path.join(a.outdir, f)) for f in os.listdir(a.outdir) if f.endswith(".fprof"))
    print(f"job_make_ranks: {a.ranks} ranks of {a.kernels} kernels in {a.outdir} ({size / 1e9:.2f} GB) in "
          f"{time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
