"""`fprof job`: the analysis of a whole training job on Dask.

Each rank file is one task: a worker summarises it with the C++ analysis into small tables
(fprof/_summary.py, cached beside the file), and the client folds the summaries into the job
(fprof/_reduce.py), one rank at a time, never holding a rank's kernels. The output is a job folder
of Parquet tables any engine reads, and one HTML job report (fprof/_job_report.py).
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import re
import resource
import sys
import time
from dataclasses import asdict, dataclass, field

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from . import _core
from ._core import FprofError
from ._job_report import render
from ._output import OutputFolder
from ._reduce import GROUP_DOCS, FprofErrorNoRanks, JobReducer, Problem, placement_docs
from ._summary import summarise_rank


@dataclass
class JobOptions:
    inputs: list
    output: str
    force: bool = False
    scheduler: str | None = None
    scheduler_file: str | None = None
    workers: int | None = None
    memory_limit: str | None = None
    dashboard: str | None = None
    ranks: int | None = None
    step_regex: str = _core.default_step_regex
    cache: bool = True
    top: int = 30
    quiet: bool = False


@dataclass
class JobResult:
    output: str
    ranks: int
    kernels: int
    problems: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    seconds: float = 0.0
    summarised: int = 0
    cached: int = 0
    worker_peak_rss_bytes: int = 0
    client_peak_rss_bytes: int = 0
    cluster: str = ""


def _natural_key(path: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]


def resolve_inputs(inputs: list) -> tuple[list, list]:
    """The rank files named by FILES, DIRs (their *.fprof files) and GLOBs, each once, in natural
    order (rank10 after rank9); inputs that name nothing are problems, one line each."""
    files, problems, seen = [], [], set()
    for given in inputs:
        if os.path.isdir(given):
            found = sorted(glob.glob(os.path.join(glob.escape(given), "*.fprof")), key=_natural_key)
            if not found:
                problems.append(Problem(given, None, "unreadable", f"{given}: the folder holds no .fprof file"))
        elif os.path.exists(given):
            found = [given]
        elif glob.has_magic(given):
            found = sorted(glob.glob(given, recursive=True), key=_natural_key)
            found = [f for f in found if os.path.isfile(f)]
            if not found:
                problems.append(Problem(given, None, "unreadable", f"{given}: the pattern matches no file"))
        else:
            found = []
            problems.append(Problem(given, None, "unreadable", f"{given}: no such file"))
        for f in found:
            real = os.path.realpath(f)
            if real not in seen:
                seen.add(real)
                files.append(f)
    return files, problems


@contextlib.contextmanager
def dask_client(options: JobOptions):
    """A Dask client: of the scheduler given, else of a LocalCluster on this machine (one worker
    per core, one thread each, a memory limit per worker)."""
    from dask.distributed import Client, LocalCluster

    if options.scheduler_file:
        client = Client(scheduler_file=options.scheduler_file)
        with contextlib.closing(client):
            yield client, f"the cluster of {options.scheduler_file}"
        return
    if options.scheduler:
        client = Client(options.scheduler)
        with contextlib.closing(client):
            yield client, f"the cluster at {options.scheduler}"
        return
    workers = options.workers or os.cpu_count() or 1
    # The scheduler serves HTTP even without a dashboard, on 8787 unless told otherwise, and warns on
    # stderr when another cluster holds that port: a free port on the loopback interface instead.
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           memory_limit=options.memory_limit or "auto",
                           dashboard_address=options.dashboard or "127.0.0.1:0", silence_logs=logging.ERROR)
    with contextlib.closing(cluster), Client(cluster) as client:
        limit = options.memory_limit or "an equal share of this machine's memory"
        described = f"a Dask LocalCluster of {workers} worker{'s' if workers > 1 else ''} ({limit} each)"
        if options.dashboard:
            described += f", its dashboard at {client.dashboard_link}"
        yield client, described


class Progress:
    def __init__(self, total: int, quiet: bool):
        self.total, self.done, self.quiet = total, 0, quiet
        self.last = time.monotonic()

    def step(self) -> None:
        self.done += 1
        now = time.monotonic()
        if not self.quiet and (now - self.last > 10 or self.done == self.total) and self.total > 1:
            print(f"fprof job: {self.done} of {self.total} rank files summarised", file=sys.stderr, flush=True)
            self.last = now


def summarise_all(client, files: list, options: JobOptions, reducer: JobReducer, result: JobResult) -> None:
    """One task per rank file; results are folded in file order as they come."""
    futures = client.map(summarise_rank, files, step_regex=options.step_regex, use_cache=options.cache,
                         pure=False, key=[f"fprof-summary-{i}" for i in range(len(files))])
    progress = Progress(len(files), options.quiet)
    for path, future in zip(files, futures):
        fold(path, future, reducer, result)
        future.release()
        progress.step()


def fold(path: str, future, reducer: JobReducer, result: JobResult) -> None:
    try:
        summary = future.result()
    except Exception as err:  # a worker that died on this file (memory limit, crash): the job goes on
        reducer.bad_file(path, f"{path}: its summary failed: {type(err).__name__}: {err}")
        return
    if "error" in summary:
        reducer.bad_file(path, summary["error"])
        return
    reducer.add(summary)
    result.cached += summary["cached"]
    result.summarised += not summary["cached"]
    result.worker_peak_rss_bytes = max(result.worker_peak_rss_bytes, summary["worker_peak_rss_bytes"])


def run_job(options: JobOptions) -> JobResult:
    started = time.perf_counter()
    files, problems = resolve_inputs(options.inputs)
    if not files:
        raise FprofError("no rank file to analyse: " + "; ".join(p.message for p in problems))
    if options.ranks is not None and options.ranks <= 0:
        raise FprofError(f"--ranks {options.ranks}: a job has at least one rank")
    _check_step_regex(options.step_regex)
    with OutputFolder(options.output, options.force, inputs=files) as folder:
        reducer = JobReducer(folder.path, expected_ranks=options.ranks)
        reducer.problems.extend(problems)
        result = JobResult(output=options.output, ranks=0, kernels=0)
        with dask_client(options) as (client, described):
            result.cluster = described
            summarise_all(client, files, options, reducer, result)
        try:
            job = reducer.finish()
        except FprofErrorNoRanks as none:
            raise FprofError("no rank file could be read: " + "; ".join(p.message for p in none.problems))
        result.ranks = len(job.ranks)
        result.kernels = int(job.ranks["kernel_count"].sum())
        result.problems = job.problems
        result.notes = job.notes
        result.seconds = time.perf_counter() - started
        # This process's peak memory: the client, and a LocalCluster's scheduler, which runs in it.
        result.client_peak_rss_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        info = {"output": options.output, "files": len(files), "inputs": " ".join(options.inputs)[:300],
                "cluster": described, "seconds": result.seconds, "summarised": result.summarised,
                "cached": result.cached}
        write_job_tables(folder, job, reducer)
        with open(folder.file("report.html"), "w", encoding="utf-8") as f:
            f.write(render(job, info, options.top))
        write_job_json(folder, options, result, files)
        folder.commit()
    return result


def _check_step_regex(pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as err:
        raise FprofError(f"--step-regex '{pattern}' is not a regular expression: {err}") from None


RANK_COLUMNS = {
    "order": None, "rank_index": None, "job_class": None,
}
RANK_DOCS = {
    "share": "Of all ranks' kernel time, 0..1.",
    "nccl_share": "nccl_ns / total_kernel_ns.",
    "apart": "Why the rank is left out of the job's sums (another mode or GPU model than most ranks); empty if not.",
    "straggler": "The rank with the most kernel time outside NCCL: the one the others wait for.",
    "sha256": "SHA-256 of the rank file: the key of its cached summary.",
    "size_bytes": "Size of the rank file.",
    "cached": "The summary came from the cache beside the file.",
    "summary_seconds": "Time the worker spent on this file (hashing, and reading and summarising it unless cached).",
    "worker_peak_rss_bytes": "Peak resident memory of the worker process up to this file.",
    "step_count": "NVTX step ranges on this rank (steps.parquet).",
    "step_median_ns": "Median host time of its steps.",
    "step_max_ns": "Its slowest step.",
    "step_kernel_median_ns": "Median kernel time inside its steps.",
    "top_kernel_short": "Short name of top_kernel.",
}


def write_frame(df: pd.DataFrame, path: str, doc: str, docs: dict) -> None:
    """A DataFrame as Parquet, each column's doc string in its field metadata (key ``doc``)."""
    table = pa.Table.from_pandas(df, preserve_index=False)
    fields = [pa.field(f.name, f.type, metadata={"doc": docs.get(f.name, "")}) for f in table.schema]
    table = pa.Table.from_arrays(table.columns, schema=pa.schema(fields, metadata={"doc": doc}))
    pq.write_table(table, path)


def write_job_tables(folder: OutputFolder, job, reducer: JobReducer) -> None:
    from ._tables import column_docs
    rank_docs = column_docs(pa.schema(reducer.schemas["ranks"]).empty_table()) | RANK_DOCS
    ranks = job.ranks.drop(columns=[c for c in RANK_COLUMNS if c in job.ranks.columns])
    write_frame(ranks, folder.file("ranks.parquet"), "One row per rank of the job, in rank order.", rank_docs)
    write_frame(job.groups, folder.file("kernel_groups.parquet"),
                "The job's kernel groups (name and launch shape) summed over the ranks in the job's sums, placed on "
                "the roofline, with their spread across ranks.", GROUP_DOCS | placement_docs())
    write_frame(job.ops, folder.file("ops.parquet"), "Kernel time by op, summed over the ranks in the job's sums.",
                {"op": "The op.", "total_ns": "Kernel time.", "launches": "Kernel launches.",
                 "share": "Of the job's kernel time."})
    write_frame(job.fusion, folder.file("fusion.parquet"),
                "Fusion candidates summed over the ranks in the job's sums, by predicted payoff.", FUSION_DOCS)
    problems = pd.DataFrame([asdict(p) for p in job.problems], columns=["file", "rank", "kind", "message"])
    problems["rank"] = problems["rank"].astype("Int64")
    write_frame(problems, folder.file("problems.parquet"), "Inputs that need a look, one line each.",
                {"file": "The input ('' for a rank no file holds).", "rank": "The rank, where known.",
                 "kind": "unreadable, duplicate, apart or missing.", "message": "What is wrong, in one sentence."})


FUSION_DOCS = {
    "id": "NVTX pair id, or the kernels joined by \" -> \".",
    "label": "The id with short kernel names.",
    "stages": "Stages, producer first (full names).",
    "stage_labels": "Stages with short names.",
    "evidence": "How the pair was found.",
    "ranks": "Ranks on which fprof report lists the candidate as worth fusing.",
    "instances": "Runs of the unfused chain, summed over those ranks.",
    "unfused_ns": "Kernel time of the chain per run: the ranks' medians, weighted by their runs.",
    "predicted_saving_ns": "Predicted saving per run: the ranks' figures weighted by their runs.",
    "payoff_ns": "Predicted saving summed over the ranks.",
    "payoff_share": "payoff_ns as a share of the job's kernel time.",
    "measured_saving_ns": "Measured saving per run, where ranks ran the fused variant too.",
    "stage_placement": "Each stage's kernels on the job's roofline: bound and % of roof (binding roof).",
}

TABLE_DOCS = {
    "report.html": "The job report.",
    "ranks.parquet": "One row per rank: where it ran, kernel time, NCCL share, steps, whether it is apart.",
    "kernel_groups.parquet": "The job's kernel groups, summed and placed on the roofline, with their spread across ranks.",
    "ops.parquet": "Kernel time by op over the job.",
    "fusion.parquet": "Fusion candidates summed over the ranks.",
    "problems.parquet": "Inputs that need a look, one line each.",
    "rank_kernel_groups.parquet": "Each rank's kernel groups (the summaries' rows), with the placement inputs.",
    "rank_ops.parquet": "Each rank's time by op.",
    "steps.parquet": "Each rank's NVTX step ranges.",
    "rank_fusion.parquet": "Each rank's fusion candidates.",
    "rank_roofs.parquet": "Each rank's roofs.",
    "rank_launch_groups.parquet": "Each rank's launch groups as fprof gate groups them (kernel, launch shape, op).",
    "rank_launch_samples.parquet": "Each rank's launch times per launch group (at most 64 order statistics each).",
}


def write_job_json(folder: OutputFolder, options: JobOptions, result: JobResult, files: list) -> None:
    facts = {
        "fprof_version": _core.version,
        "rank_summary_version": _core.rank_summary_version,
        "inputs": options.inputs,
        "files": files,
        "options": {"step_regex": options.step_regex, "ranks": options.ranks, "cache": options.cache},
        "cluster": result.cluster,
        "ranks": result.ranks,
        "kernels": result.kernels,
        "summarised": result.summarised,
        "from_cache": result.cached,
        "seconds": round(result.seconds, 3),
        "worker_peak_rss_bytes": result.worker_peak_rss_bytes,
        "client_peak_rss_bytes": result.client_peak_rss_bytes,
        "problems": [asdict(p) for p in result.problems],
        "tables": TABLE_DOCS,
    }
    with open(folder.file("job.json"), "w", encoding="utf-8") as f:
        json.dump(facts, f, indent=1)
        f.write("\n")
