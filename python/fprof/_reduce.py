"""The job's reduction: rank summaries joined into job-level tables, one rank at a time.

Memory grows with ranks x kernel groups only: each rank's summary is folded into running sums
(arrays indexed by kernel group) and its own rows are appended to the job folder's per-rank
Parquet files, then dropped. Nothing here recomputes an analysis: per rank figures come from the
C++ summary, and the job's kernel groups are placed on the roofline by the C++ analysis
(_core.place_groups) from the summed inputs, exactly as a merged file's groups are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from . import _core
from ._tables import column_docs, to_arrow, to_pandas

PRECISIONS = ["fp64", "fp32", "fp16", "bf16", "tensor_fp16", "tensor_bf16", "tensor_tf32", "tensor_fp8",
              "tensor_fp64", "tensor_int8"]
LEVELS = ["dram", "l2", "l1"]
PLAIN_SUMS = ["calls", "total_ns", "achieved_occupancy_weighted", "achieved_occupancy_weight_ns", "occupancy_weighted"]
# Sums that exist only where every launch had the quantity (analysis::Work's rule).
COMPLETE_SUMS = [f"flops_{p}" for p in PRECISIONS] + [f"bytes_{lv}" for lv in LEVELS]
MAXIMA = ["max_ns", "registers_per_thread", "shared_bytes", "local_bytes_per_thread"]
ALL_OF = ["has_counters", "occupancy_complete", "occupancy_achieved"]

# Per-rank tables the job folder keeps as they come from the summaries.
RANK_TABLES = {"groups": "rank_kernel_groups", "ops": "rank_ops", "steps": "steps", "fusion": "rank_fusion",
               "roofs": "rank_roofs", "launch_groups": "rank_launch_groups", "launch_samples": "rank_launch_samples"}


def _plain(table: pa.Table) -> pa.Table:
    """Dictionary-encoded strings as plain strings: rows of many ranks share one Parquet schema."""
    columns, fields = [], []
    for f, column in zip(table.schema, table.columns):
        if pa.types.is_dictionary(f.type):
            column = column.cast(pa.string())
            f = pa.field(f.name, pa.string(), metadata=f.metadata)
        columns.append(column)
        fields.append(f)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=table.schema.metadata))


class RankTableWriter:
    """Appends each rank's rows of one table to a single Parquet file of the job folder."""

    def __init__(self, path: str):
        self.path = path
        self.writer = None
        self.schema = None
        self.rows = 0

    def append(self, table: pa.Table) -> None:
        table = _plain(table)
        if self.writer is None:
            self.schema = table.schema
            self.writer = pq.ParquetWriter(self.path, self.schema)
        if table.num_rows:
            self.writer.write_table(table.cast(self.schema))
            self.rows += table.num_rows

    def close(self, fallback: pa.Schema | None = None) -> None:
        if self.writer is None and fallback is not None:
            pq.write_table(fallback.empty_table(), self.path)
        if self.writer is not None:
            self.writer.close()


@dataclass
class GroupSums:
    """Running sums of the kernel groups of the ranks of one class (mode and GPU model)."""

    index: dict = field(default_factory=dict)  # (name, grid, block) -> row
    names: list = field(default_factory=list)
    columns: dict = field(default_factory=dict)
    present: dict = field(default_factory=dict)  # COMPLETE_SUMS: every rank so far had it
    size: int = 0
    op_ns: dict = field(default_factory=dict)  # (row, op) -> ns
    per_rank: list = field(default_factory=list)  # (rank index, rows, total_ns) per rank
    roofs: list | None = None
    ranks: int = 0

    def _grow(self, n: int) -> None:
        capacity = len(self.names)
        if n <= capacity and self.columns:
            return
        new = max(16, n, 2 * capacity)
        def grown(a, fill, dtype):
            out = np.full(new, fill, dtype=dtype)
            if a is not None:
                out[: len(a)] = a
            return out
        for c in PLAIN_SUMS + COMPLETE_SUMS + ["spill_bytes"]:
            self.columns[c] = grown(self.columns.get(c), 0.0, np.float64)
        for c in COMPLETE_SUMS:
            self.present[c] = grown(self.present.get(c), True, bool)
        self.present["spill_bytes"] = grown(self.present.get("spill_bytes"), False, bool)
        for c in MAXIMA:
            self.columns[c] = grown(self.columns.get(c), -np.inf, np.float64)
        self.columns["min_ns"] = grown(self.columns.get("min_ns"), np.inf, np.float64)
        self.columns["theoretical_occupancy"] = grown(self.columns.get("theoretical_occupancy"), np.inf, np.float64)
        for c in ALL_OF:
            self.columns[c] = grown(self.columns.get(c), True, bool)
        self.columns["sm_count"] = grown(self.columns.get("sm_count"), -1, np.int64)
        self.columns["origin"] = grown(self.columns.get("origin"), None, object)
        self.names.extend([None] * (new - capacity))

    def add(self, rank_index: int, groups: pd.DataFrame, roofs: pa.Table) -> None:
        if self.roofs is None:
            self.roofs = [(r["name"], r["value"], r["source"], r["method"]) for r in roofs.to_pylist()]
        self.ranks += 1
        keys = list(zip(groups["name"], groups["grid"], groups["block"]))
        rows = np.empty(len(keys), dtype=np.int64)
        for i, key in enumerate(keys):
            row = self.index.get(key)
            if row is None:
                row = self.size
                self.index[key] = row
                self.size += 1
                self._grow(self.size)
                self.names[row] = key
            rows[i] = row
        c, present = self.columns, self.present
        for name in PLAIN_SUMS:
            c[name][rows] += groups[name].to_numpy(dtype=np.float64, na_value=0.0)
        for name in COMPLETE_SUMS:
            values = groups[name]
            present[name][rows] &= values.notna().to_numpy()
            c[name][rows] += values.to_numpy(dtype=np.float64, na_value=0.0)
        spill = groups["spill_bytes"]
        present["spill_bytes"][rows] |= spill.notna().to_numpy()
        c["spill_bytes"][rows] += spill.to_numpy(dtype=np.float64, na_value=0.0)
        for name in MAXIMA:
            c[name][rows] = np.maximum(c[name][rows], groups[name].to_numpy(dtype=np.float64))
        c["min_ns"][rows] = np.minimum(c["min_ns"][rows], groups["min_ns"].to_numpy(dtype=np.float64))
        occ = groups["theoretical_occupancy"].to_numpy(dtype=np.float64, na_value=np.inf)
        c["theoretical_occupancy"][rows] = np.minimum(c["theoretical_occupancy"][rows], occ)
        for name in ALL_OF:
            c[name][rows] &= groups[name].to_numpy(dtype=bool)
        sm = groups["sm_count"].to_numpy(dtype=np.int64, na_value=-1)
        unset = c["sm_count"][rows] < 0
        c["sm_count"][rows[unset]] = sm[unset]
        origin = groups["origin"].to_numpy(dtype=object)
        for r, o in zip(rows, origin):
            if c["origin"][r] is None:
                c["origin"][r] = o
        for r, op, ns in zip(rows, groups["op"], groups["total_ns"]):
            self.op_ns[(r, op)] = self.op_ns.get((r, op), 0) + int(ns)
        self.per_rank.append((rank_index, rows, groups["total_ns"].to_numpy(dtype=np.int64)))

    def frame(self, rank_labels: list) -> pd.DataFrame:
        """The job's kernel groups: summed, placed on the roofline, with their spread over ranks."""
        n = self.size
        c, present = self.columns, self.present
        def na(values, mask):
            return pd.arrays.FloatingArray(np.where(mask, values, 0.0).astype(np.float64), ~mask)
        out = pd.DataFrame({
            "name": [k[0] for k in self.names[:n]],
            "grid": [k[1] for k in self.names[:n]],
            "block": [k[2] for k in self.names[:n]],
        })
        out["origin"] = c["origin"][:n]
        best_op: dict = {}
        for (r, op), ns in self.op_ns.items():
            if r not in best_op or ns > best_op[r][1]:
                best_op[r] = (op, ns)
        out["op"] = [best_op.get(r, ("", 0))[0] for r in range(n)]
        out["calls"] = c["calls"][:n].astype(np.int64)
        out["total_ns"] = c["total_ns"][:n].astype(np.int64)
        total = int(out["total_ns"].sum())
        out["mean_ns"] = out["total_ns"] / out["calls"].where(out["calls"] > 0, 1)
        out["share"] = out["total_ns"] / total if total else 0.0
        out["min_ns"] = c["min_ns"][:n].astype(np.int64)
        out["max_ns"] = c["max_ns"][:n].astype(np.int64)
        for name in ["registers_per_thread", "shared_bytes", "local_bytes_per_thread"]:
            out[name] = c[name][:n].astype(np.int64)
        occ = c["theoretical_occupancy"][:n]
        out["theoretical_occupancy"] = na(occ, np.isfinite(occ))
        weight = c["achieved_occupancy_weight_ns"][:n]
        out["achieved_occupancy"] = na(c["achieved_occupancy_weighted"][:n] / np.where(weight > 0, weight, 1), weight > 0)
        out["spill_bytes"] = na(c["spill_bytes"][:n], present["spill_bytes"][:n])
        placement = self._placement(n)
        for name in placement.columns:
            out[name] = placement[name].array
        self._spread(out, rank_labels)
        out = out.sort_values(["total_ns", "name", "grid", "block"], ascending=[False, True, True, True], kind="stable")
        return out.reset_index(drop=True)

    def _placement(self, n: int) -> pd.DataFrame:
        c, present = self.columns, self.present
        columns = {
            "duration_ns": [int(v) for v in c["total_ns"][:n]],
            "launches": [int(v) for v in c["calls"][:n]],
            "sm_count": [int(v) if v >= 0 else None for v in c["sm_count"][:n]],
            "has_counters": [bool(v) for v in c["has_counters"][:n]],
            "occupancy_weighted": [float(v) for v in c["occupancy_weighted"][:n]],
            "occupancy_complete": [bool(v) for v in c["occupancy_complete"][:n]],
            "occupancy_achieved": [bool(v) for v in c["occupancy_achieved"][:n]],
        }
        for name in COMPLETE_SUMS:
            columns[name] = [float(v) if ok else None for v, ok in zip(c[name][:n], present[name][:n])]
        return to_pandas(to_arrow(_core.place_groups(self.roofs or [], columns)))

    def _spread(self, out: pd.DataFrame, rank_labels: list) -> None:
        """Each group's time per rank: min, median, max over the ranks that ran it, and who had the max."""
        n = len(out)
        per_group: list[list] = [[] for _ in range(n)]
        for rank_index, rows, totals in self.per_rank:
            for r, t in zip(rows, totals):
                per_group[r].append((int(t), rank_index))
        out["ranks"] = [len(v) for v in per_group]
        out["rank_min_ns"] = [min(t for t, _ in v) if v else 0 for v in per_group]
        out["rank_median_ns"] = [float(np.median([t for t, _ in v])) if v else 0.0 for v in per_group]
        out["rank_max_ns"] = [max(t for t, _ in v) if v else 0 for v in per_group]
        out["rank_of_max"] = [rank_labels[max(v)[1]] if v else "" for v in per_group]
        median = out["rank_median_ns"].where(out["rank_median_ns"] > 0)
        out["max_over_median"] = out["rank_max_ns"] / median

    def heat_map(self, order: list, rank_count: int) -> np.ndarray:
        """rank x group matrix of kernel time (ns) for the groups in `order` (job rows)."""
        where = {row: i for i, row in enumerate(order)}
        matrix = np.zeros((rank_count, len(order)), dtype=np.int64)
        for rank_index, rows, totals in self.per_rank:
            for r, t in zip(rows, totals):
                col = where.get(int(r))
                if col is not None:
                    matrix[rank_index, col] += int(t)
        return matrix


GROUP_DOCS = {
    "name": "Demangled kernel name.",
    "short_name": "The name a person reads, told apart over the job (docs/analysis.md, Kernel names).",
    "grid": "Grid in blocks.",
    "block": "Block in threads.",
    "origin": "Library the kernel came from, from its name.",
    "op": "The op holding most of the group's time, over the ranks.",
    "calls": "Launches, summed over the ranks.",
    "total_ns": "Kernel time summed over the ranks.",
    "mean_ns": "total_ns / calls.",
    "share": "Of the job's kernel time (the ranks in the job's sums), 0..1.",
    "min_ns": "Shortest launch on any rank.",
    "max_ns": "Longest launch on any rank.",
    "registers_per_thread": "Registers per thread, max.",
    "shared_bytes": "Static + dynamic shared memory per block, max.",
    "local_bytes_per_thread": "Stack frame and spills per thread, max.",
    "theoretical_occupancy": "Theoretical occupancy, min over the launches.",
    "achieved_occupancy": "Achieved occupancy from the counters, time-weighted over all ranks.",
    "spill_bytes": "Local-memory (spill) traffic, summed.",
    "ranks": "Ranks that ran the group.",
    "rank_min_ns": "The group's kernel time on the rank with the least of it (among those that ran it).",
    "rank_median_ns": "Median over those ranks.",
    "rank_max_ns": "On the rank with the most.",
    "rank_of_max": "That rank.",
    "max_over_median": "rank_max_ns / rank_median_ns: how far the slowest rank is from the typical one.",
}


def placement_docs() -> dict:
    """The doc strings of the placement columns, as the C++ analysis declares them."""
    empty = {name: [] for name in ["duration_ns", "launches", "sm_count", "has_counters", "occupancy_weighted",
                                   "occupancy_complete", "occupancy_achieved", *COMPLETE_SUMS]}
    return column_docs(to_arrow(_core.place_groups([], empty)))


def describe_ranks(ranks: list[int]) -> str:
    """"ranks 0-3, 7" / "rank 5", as fprof info names a set of ranks."""
    ranks = sorted(set(ranks))
    parts, start = [], None
    for i, r in enumerate(ranks):
        if start is None:
            start = r
        if i + 1 == len(ranks) or ranks[i + 1] != r + 1:
            parts.append(str(start) if start == r else f"{start}-{r}")
            start = None
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(parts)


@dataclass
class Problem:
    """One bad input, said in one line: a file that could not be used, a rank missing or apart."""
    file: str
    rank: object
    kind: str  # unreadable, duplicate, apart, missing
    message: str  # the whole sentence, naming the file


@dataclass
class JobTables:
    ranks: pd.DataFrame
    groups: pd.DataFrame
    ops: pd.DataFrame
    fusion: pd.DataFrame
    problems: list
    heat_map: np.ndarray
    heat_groups: list  # job group rows of the heat map's columns
    job_class: tuple
    roofs: list
    has_counters: bool
    rank_labels: list
    notes: list


class JobReducer:
    """Folds rank summaries into the job, one rank file at a time (see the module's doc)."""

    def __init__(self, folder: str, expected_ranks: int | None = None, fusion_per_rank: int = 200):
        self.writers = {name: RankTableWriter(f"{folder}/{file}.parquet") for name, file in RANK_TABLES.items()}
        self.schemas: dict = {}
        self.classes: dict = {}
        self.rank_rows: list[dict] = []
        self.problems: list[Problem] = []
        self.file_of_rank: dict = {}
        self.fusion: list[pd.DataFrame] = []
        self.ops: dict = {}
        self.expected_ranks = expected_ranks
        self.fusion_per_rank = fusion_per_rank
        self.notes: set = set()

    def bad_file(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, None, "unreadable", message))

    def add(self, result: dict) -> None:
        tables = result["tables"]
        for name, table in tables.items():
            self.schemas.setdefault(name, _plain(table).schema)
        if result.get("cache_note"):
            self.notes.add(result["cache_note"])
        ranks = tables["ranks"].to_pandas()
        for i in range(len(ranks)):
            row = ranks.iloc[i].to_dict()
            rank = None if pd.isna(row["rank"]) else int(row["rank"])
            parts = tables if len(ranks) == 1 else {n: _rows_of_rank(t, rank) for n, t in tables.items()}
            self._add_rank(result, row, rank, parts)

    def _add_rank(self, result: dict, row: dict, rank, tables: dict) -> None:
        path = result["path"]
        if rank is not None and rank in self.file_of_rank:
            first = self.file_of_rank[rank]
            self.problems.append(Problem(path, rank, "duplicate",
                                         f"{path}: rank {rank} is also in {first}: this file is left out of the job"))
            return
        if rank is not None:
            self.file_of_rank[rank] = path
        rank_index = len(self.rank_rows)
        job_class = (row["mode"], row["gpu_model"])
        row.update(rank_index=rank_index, file=path, sha256=result["sha256"], size_bytes=result["size_bytes"], cached=result["cached"],
                   summary_seconds=result["seconds"], worker_peak_rss_bytes=result["worker_peak_rss_bytes"],
                   job_class=job_class)
        row.update(_step_figures(tables["steps"]))
        self.rank_rows.append(row)
        for name, writer in self.writers.items():
            writer.append(tables[name])
        sums = self.classes.setdefault(job_class, GroupSums())
        sums.add(rank_index, tables["groups"].to_pandas(), tables["roofs"])
        ops = tables["ops"].to_pandas()
        for op, ns, launches in zip(ops["op"], ops["total_ns"], ops["launches"]):
            key = (job_class, op)
            total = self.ops.setdefault(key, [0, 0])
            total[0] += int(ns)
            total[1] += int(launches)
        fusion = tables["fusion"].to_pandas()
        if len(fusion):
            fusion = fusion[fusion["fuse"]].sort_values("payoff_ns", ascending=False).head(self.fusion_per_rank)
            fusion = fusion.assign(job_class=[job_class] * len(fusion))
            self.fusion.append(fusion)

    def finish(self) -> JobTables:
        for name, writer in self.writers.items():
            writer.close(self.schemas.get(name))
        if not self.rank_rows:
            raise FprofErrorNoRanks(self.problems)
        job_class = max(self.classes, key=lambda k: self.classes[k].ranks)  # first seen wins a tie
        ranks = self._ranks_frame(job_class)
        labels = list(ranks.sort_index()["label"])
        sums = self.classes[job_class]
        groups = sums.frame(labels)
        names = list(groups["name"]) + [n for n in ranks["top_kernel"] if n]
        short = dict(zip(names, _core.short_names(names))) if names else {}
        groups.insert(1, "short_name", [short[n] for n in groups["name"]])
        ranks["top_kernel_short"] = [short.get(n, n) for n in ranks["top_kernel"]]
        heat_rows = [sums.index[(r.name, r.grid, r.block)] for r in groups.head(HEAT_MAP_GROUPS).itertuples()]
        heat = sums.heat_map(heat_rows, len(self.rank_rows))
        self._missing_ranks()
        has_counters = bool(ranks.loc[ranks["job_class"] == job_class, "has_counters"].all())
        return JobTables(ranks=ranks.sort_values("order").reset_index(drop=True), groups=groups,
                         ops=self._ops_frame(job_class), fusion=self._fusion_frame(job_class, groups),
                         problems=self.problems, heat_map=heat, heat_groups=list(range(len(heat_rows))),
                         job_class=job_class, roofs=sums.roofs or [], has_counters=has_counters,
                         rank_labels=labels, notes=sorted(self.notes))

    def _ranks_frame(self, job_class) -> pd.DataFrame:
        ranks = pd.DataFrame(self.rank_rows)
        total = int(ranks["total_kernel_ns"].sum())
        ranks["share"] = ranks["total_kernel_ns"] / total if total else np.nan
        ranks["nccl_share"] = ranks["nccl_ns"] / ranks["total_kernel_ns"].where(ranks["total_kernel_ns"] > 0)
        apart = []
        for r in ranks.itertuples():
            if r.job_class == job_class:
                apart.append("")
                continue
            why = (f"recorded in {r.mode} mode on {r.gpu_model or 'no recorded GPU'}; the job's ranks: "
                   f"{job_class[0]} mode on {job_class[1] or 'no recorded GPU'}")
            apart.append(why)
            self.problems.append(Problem(r.file, None if pd.isna(r.rank) else int(r.rank), "apart",
                                         f"{r.file}: {r.label} is set apart from the job's sums: {why}"))
        ranks["apart"] = apart
        order = sorted(range(len(ranks)), key=lambda i: (pd.isna(ranks["rank"][i]),
                                                         0 if pd.isna(ranks["rank"][i]) else int(ranks["rank"][i]),
                                                         ranks["label"][i]))
        ranks["order"] = np.argsort(order)
        compute = ranks["compute_ns"].where(ranks["compute_ns"] > 0)
        ranks["straggler"] = False
        if compute.notna().sum() >= 2 and compute.idxmax() != compute.idxmin():
            ranks.loc[compute.idxmax(), "straggler"] = True
        return ranks

    def _missing_ranks(self) -> None:
        ranked = sorted(self.file_of_rank)
        if not ranked and not self.expected_ranks:
            return
        world = self.expected_ranks if self.expected_ranks else ranked[-1] + 1
        missing = sorted(set(range(world)) - set(ranked))
        if missing:
            size = f"{world} ranks" + (" (--ranks)" if self.expected_ranks else f" (ranks 0 to {world - 1})")
            self.problems.append(Problem("", None, "missing",
                                         f"{describe_ranks(missing)} missing: no input holds them, of a job of {size}"))
        beyond = [r for r in ranked if r >= world]
        if beyond:
            self.problems.append(Problem("", None, "missing",
                                         f"{describe_ranks(beyond)} beyond --ranks {world}: kept in the job"))

    def _ops_frame(self, job_class) -> pd.DataFrame:
        rows = [(op, ns, n) for (cls, op), (ns, n) in self.ops.items() if cls == job_class]
        ops = pd.DataFrame(rows, columns=["op", "total_ns", "launches"])
        total = ops["total_ns"].sum()
        ops["share"] = ops["total_ns"] / total if total else 0.0
        return ops.sort_values(["total_ns", "op"], ascending=[False, True], kind="stable").reset_index(drop=True)

    def _fusion_frame(self, job_class, groups: pd.DataFrame) -> pd.DataFrame:
        columns = ["id", "label", "stages", "stage_labels", "evidence", "ranks", "instances", "unfused_ns",
                   "predicted_saving_ns", "payoff_ns", "payoff_share", "measured_saving_ns", "stage_placement"]
        frames = [f[f["job_class"].map(lambda c: c == job_class)] for f in self.fusion]
        frames = [f for f in frames if len(f)]
        if not frames:
            return pd.DataFrame({c: [] for c in columns})
        rows = pd.concat(frames, ignore_index=True)
        total_ns = groups["total_ns"].sum()
        out = []
        for (fid, stages), g in rows.groupby(["id", "stages"], sort=False, observed=True):
            instances = int(g["instances"].sum())
            weights = g["instances"].astype(float)
            payoff = g["payoff_ns"].astype(float)
            out.append({
                "id": fid, "label": g["label"].iloc[0], "stages": stages, "stage_labels": g["stage_labels"].iloc[0],
                "evidence": g["evidence"].iloc[0], "ranks": len(g), "instances": instances,
                "unfused_ns": float((g["unfused_ns"] * weights).sum() / weights.sum()) if weights.sum() else np.nan,
                "predicted_saving_ns": _weighted(g["predicted_saving_ns"], weights),
                "payoff_ns": float(payoff.sum()) if payoff.notna().any() else np.nan,
                "measured_saving_ns": _weighted(g["measured_saving_ns"], weights),
                "stage_placement": _stage_placement(stages, groups),
            })
        fusion = pd.DataFrame(out)
        fusion["payoff_share"] = fusion["payoff_ns"] / total_ns if total_ns else np.nan
        fusion = fusion.sort_values(["payoff_ns", "id"], ascending=[False, True], kind="stable").reset_index(drop=True)
        return fusion[columns]


HEAT_MAP_GROUPS = 24


class FprofErrorNoRanks(Exception):
    """No input could be used: the job has nothing to report."""

    def __init__(self, problems):
        super().__init__("no rank file could be read")
        self.problems = problems


def _weighted(values: pd.Series, weights: pd.Series) -> float:
    values = values.astype(float)
    ok = values.notna()
    if not ok.any() or weights[ok].sum() == 0:
        return np.nan
    return float((values[ok] * weights[ok]).sum() / weights[ok].sum())


def _stage_placement(stages: str, groups: pd.DataFrame) -> str:
    """Where each stage's kernels sit on the roofline, job-wide: "bound, % of roof (binding)" per
    stage that is a kernel (the job group of that name with the most time); "op" for an op stage."""
    parts = []
    for stage in stages.split(" -> "):
        match = groups[groups["name"] == stage]
        if not len(match):
            parts.append("op")
            continue
        g = match.iloc[0]
        bound = g["bound"] if isinstance(g["bound"], str) and g["bound"] else "n/a"
        roof = g["roof_fraction"]
        text = bound if pd.isna(roof) else f"{bound} {_core.format_percent(float(roof))} of {g['binding_roof']}"
        parts.append(text)
    return " -> ".join(parts)


def _step_figures(steps: pa.Table) -> dict:
    """A rank's steps in four numbers: how many, and the median and max wall time, median kernel time."""
    if steps.num_rows == 0:
        return {"step_count": 0, "step_median_ns": np.nan, "step_max_ns": np.nan, "step_kernel_median_ns": np.nan}
    wall = steps.column("wall_ns").drop_null().to_numpy()
    kernel = steps.column("kernel_ns").to_numpy()
    return {"step_count": steps.num_rows,
            "step_median_ns": float(np.median(wall)) if len(wall) else np.nan,
            "step_max_ns": float(np.max(wall)) if len(wall) else np.nan,
            "step_kernel_median_ns": float(np.median(kernel))}


def _rows_of_rank(table: pa.Table, rank) -> pa.Table:
    import pyarrow.compute as pc
    column = table.column("rank")
    mask = pc.is_null(column) if rank is None else pc.fill_null(pc.equal(column, rank), False)
    return table.filter(mask)
