"""`fprof gate BASE_JOBDIR CURRENT_JOBDIR`: fprof gate over two job folders of `fprof job`.

The jobs are compared rank by rank, and as a whole (the ranks both hold, taken together), by the
gate's own checks in C++ (_core.JobGate: analysis::evaluateGate, the gate's Markdown, JSON and
JUnit): launch groups keyed by kernel, launch shape and op; time by the one-sided Mann-Whitney test
with rare groups pooled; the whole-run checks of kernel time, busy time, launches and time in new
kernels; counters as exact signals; differing devices, modes and counter sets warned about. Each
rank's launch groups come from the job folders' Parquet tables, read one rank at a time: neither the
rank files nor more than one rank's rows at once are needed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import _core
from ._core import FprofError
from ._output import check_standard_output_is_no_input, write_standard_output
from ._reduce import describe_ranks

GROUP_TABLE = "rank_launch_groups.parquet"
SAMPLE_TABLE = "rank_launch_samples.parquet"
METRICS = ["dram_bytes", "l2_bytes", "l1_bytes", "flops", "local_memory_bytes", "registers_per_thread",
           "local_bytes_per_thread", "theoretical_occupancy", "achieved_occupancy"]


@dataclass
class GateArgs:
    base: str
    current: str
    time_threshold: str = ""
    counter_threshold: str = ""
    alpha: float = 0.0
    config: str = ""
    markdown: str = ""
    json: str = ""
    junit: str = ""
    force: bool = False
    quiet: bool = False


def is_job_folder(path: str) -> bool:
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, "job.json"))


class RankRows:
    """One table of per-rank rows (written a rank at a time, so one rank's rows per row group),
    read a rank at a time through the row groups' statistics."""

    def __init__(self, path: str):
        self.file = pq.ParquetFile(path)
        self.of_rank: dict = {}
        self.other: list = []  # row groups of several ranks, or of rows without a rank
        meta = self.file.metadata
        column = self.file.schema_arrow.get_field_index("rank")
        for i in range(meta.num_row_groups):
            stats = meta.row_group(i).column(column).statistics
            if stats is not None and stats.has_min_max and stats.min == stats.max and stats.null_count == 0:
                self.of_rank.setdefault(int(stats.min), []).append(i)
            else:
                self.other.append(i)

    def rows(self, rank) -> pa.Table:
        ids = sorted(self.of_rank.get(rank, []) + self.other) if rank is not None else self.other
        table = self.file.read_row_groups(ids, use_threads=False) if ids else self.file.schema_arrow.empty_table()
        if self.other:
            mask = pc.is_null(table["rank"]) if rank is None else pc.fill_null(pc.equal(table["rank"], rank), False)
            table = table.filter(mask)
        return table


@dataclass
class Job:
    path: str
    ranks: object  # pandas DataFrame of ranks.parquet
    groups: RankRows
    samples: RankRows
    inputs: list


def read_job(path: str) -> Job:
    if not os.path.isdir(path):
        raise FprofError(f"{path}: not a job folder (fprof job -o writes one)")
    if not os.path.isfile(os.path.join(path, "job.json")):
        raise FprofError(f"{path}: not a job folder: it holds no job.json (fprof job -o writes one)")
    files = [os.path.join(path, name) for name in ("job.json", "ranks.parquet", GROUP_TABLE, SAMPLE_TABLE)]
    for f in files[1:]:
        if not os.path.isfile(f):
            raise FprofError(f"{path}: holds no {os.path.basename(f)}: it was written by an fprof job older than the "
                             "gate over jobs; run fprof job again on its rank files")
    try:
        with open(files[0], encoding="utf-8") as f:
            json.load(f)
        ranks = pq.read_table(files[1], use_threads=False).to_pandas()
        groups, samples = RankRows(files[2]), RankRows(files[3])
    except (OSError, ValueError, pa.ArrowException) as err:
        raise FprofError(f"{path}: cannot be read as a job folder: {err}") from None
    missing = {"rank", "gpu_busy_ns", "recorded_devices", "recorded_mode"} - set(ranks.columns)
    if missing:
        raise FprofError(f"{path}: ranks.parquet lacks {', '.join(sorted(missing))}: it was written by an older fprof "
                         "job; run fprof job again on its rank files")
    return Job(path, ranks, groups, samples, files)


def _rank_key(row) -> object:
    return None if row["rank"] is None or row["rank"] != row["rank"] else int(row["rank"])


@dataclass
class RankPlan:
    pairs: list  # (label, rank, base row, current row)
    warnings: list  # (what, base, current, message) of the whole job
    note: str


def plan_ranks(base: Job, cur: Job) -> RankPlan:
    """Ranks paired by number; a rank only one job holds is said, and so are processes without a
    rank number (paired only when each job is one such process)."""
    def by_rank(job):
        rows = job.ranks.to_dict("records")
        numbered = {_rank_key(r): r for r in rows if _rank_key(r) is not None}
        return numbered, [r for r in rows if _rank_key(r) is None]

    b, b_loose = by_rank(base)
    c, c_loose = by_rank(cur)
    warnings = []
    pairs = [(f"rank {r}", r, b[r], c[r]) for r in sorted(set(b) & set(c))]
    for only, side, other in ((sorted(set(b) - set(c)), "base", "current"), (sorted(set(c) - set(b)), "current", "base")):
        if only:
            text = describe_ranks(only)
            warnings.append(("ranks", text if side == "base" else "", text if side == "current" else "",
                             f"{text} of the {side} job {'is' if len(only) == 1 else 'are'} not in the {other} job: "
                             "not compared"))
    if not b and not c and len(b_loose) == 1 and len(c_loose) == 1:
        pairs.append((b_loose[0]["label"], None, b_loose[0], c_loose[0]))
    elif b_loose or c_loose:
        n = len(b_loose) + len(c_loose)
        warnings.append(("ranks", str(len(b_loose)), str(len(c_loose)),
                         f"{n} process{'es' if n > 1 else ''} without a rank number cannot be paired between the jobs: "
                         "not compared"))
    if not pairs:
        raise FprofError(f"{base.path} and {cur.path} hold no rank in common: nothing to compare")
    numbered = [r for _, r, _, _ in pairs if r is not None]
    held = describe_ranks(numbered) if numbered else pairs[0][0]
    note = f"Compared rank by rank and as a whole: both jobs hold {held}."
    return RankPlan(pairs, warnings, note)


def _floats(column: pa.ChunkedArray) -> np.ndarray:
    return pc.fill_null(column.cast(pa.float64()), np.nan).to_numpy()


def launch_groups(job: Job, rank) -> object:
    rows = job.groups.rows(rank)
    columns = {name: rows[name].cast(pa.string()).to_pylist() for name in ("name", "shape", "op", "nvtx_path")}
    for name in ("key", "calls"):
        columns[name] = rows[name].to_numpy()
    for name in ["total_ns", "median_ns", "squared_deviation_ns2", *METRICS]:
        columns[name] = _floats(rows[name])
    samples = job.samples.rows(rank)
    return _core.launch_groups(columns, samples["key"].to_numpy().astype(np.int64),
                               _floats(samples["duration_ns"]))


def _setup(row: dict) -> dict:
    return {"devices": row["recorded_devices"], "mode": row["recorded_mode"],
            "metric_set": row["recorded_metric_set"], "metrics": row["recorded_metrics"]}


def _busy(row: dict):
    v = row["gpu_busy_ns"]
    return None if v is None or v != v else float(v)


def _joined(values) -> str:
    return ", ".join(sorted({part for v in values for part in v.split(", ") if part}))


def _whole_setup(rows: list) -> dict:
    """The job's setup as one run's: every rank's devices, modes and counter sets, each once."""
    return {"devices": _joined(r["recorded_devices"] for r in rows) or "none recorded",
            "mode": _joined(r["recorded_mode"] for r in rows),
            "metric_set": " | ".join(sorted({r["recorded_metric_set"] for r in rows})),
            "metrics": " | ".join(sorted({r["recorded_metrics"] for r in rows}))}


def _whole_busy(rows: list):
    values = [_busy(r) for r in rows]
    return None if any(v is None for v in values) else float(sum(values))


def run_gate(args: GateArgs) -> int:
    options = _core.gate_options(args.config, args.time_threshold, args.counter_threshold, args.alpha)
    base, cur = read_job(args.base), read_job(args.current)
    inputs = base.inputs + cur.inputs + ([args.config] if args.config else [])
    if not args.quiet:
        check_standard_output_is_no_input(inputs, "the summary")
    outputs = _core.open_gate_outputs(args.markdown, args.json, args.junit, args.force, inputs)
    plan = plan_ranks(base, cur)
    gate = _core.JobGate(options, len(plan.pairs))
    for label, rank, b, c in plan.pairs:
        gate.add_rank(label, rank, launch_groups(base, rank), launch_groups(cur, rank), _setup(b), _setup(c),
                      _busy(b), _busy(c))
    b_rows, c_rows = [p[2] for p in plan.pairs], [p[3] for p in plan.pairs]
    numbered = [r for _, r, _, _ in plan.pairs if r is not None]
    whole = f"job ({describe_ranks(numbered)} together)" if numbered else "job"
    gate.add_whole(whole, _whole_setup(b_rows), _whole_setup(c_rows), _whole_busy(b_rows), _whole_busy(c_rows),
                   [list(w) for w in plan.warnings])
    markdown = gate.markdown(args.base, args.current, plan.note)
    gate.write(outputs, args.base, args.current, plan.note, markdown)
    if not args.quiet and not outputs.to_standard_output:
        write_standard_output(markdown)
    return 0 if gate.passed else 1
