"""python -m fprof job ... | gate ...: the package's commands (the fprof command runs them as
`fprof job` and, for job folders, `fprof gate`). Exit status: 0 done, 1 a gate regression,
2 bad input (the message names it in one sentence)."""

from __future__ import annotations

import argparse
import os
import sys

from ._core import FprofError
from ._output import check_standard_output_is_no_input, write_standard_output


def job_parser(sub) -> None:
    from . import _core
    p = sub.add_parser(
        "job", help="analyse a whole job's rank files on Dask",
        description="Analyse the rank files of a whole training job on Dask: each rank is summarised by fprof's C++ "
                    "analysis on a worker (the summary is cached beside the file), and the summaries are joined into "
                    "a job folder of Parquet tables and one HTML job report (docs/python-package.md).")
    p.add_argument("inputs", nargs="+", metavar="FILES|DIR|GLOB",
                   help="rank files (.fprof), folders holding them, or glob patterns")
    p.add_argument("-o", "--output", required=True, metavar="JOBDIR", help="the job folder to write")
    p.add_argument("--force", action="store_true", help="replace JOBDIR if it exists (once the new one is complete)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="use the Dask scheduler at ADDRESS (tcp://host:8786)")
    where.add_argument("--scheduler-file", metavar="FILE", help="use the Dask scheduler of this scheduler file "
                                                                   "(dask-jobqueue, dask-scheduler --scheduler-file)")
    p.add_argument("--workers", type=int, metavar="N", help="workers of the local cluster (default: one per core)")
    p.add_argument("--memory-limit", metavar="SIZE", help="memory limit of each local worker, e.g. 2GB "
                                                          "(default: an equal share of the machine's memory)")
    p.add_argument("--dashboard", metavar="ADDRESS", help="serve the local cluster's Dask dashboard at ADDRESS, e.g. "
                                                          ":8787 (needs bokeh; default: none)")
    p.add_argument("--ranks", type=int, metavar="N", help="the job's world size, to name missing ranks "
                                                          "(default: every rank up to the highest found)")
    p.add_argument("--step-regex", default=_core.default_step_regex, metavar="REGEX",
                   help="NVTX range messages that mark a step (default: %(default)s)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the summaries beside the rank files")
    p.add_argument("--top", type=int, default=30, metavar="N", help="kernel groups and fusion candidates the report lists")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")


def run_job_command(args) -> int:
    from .job import JobOptions, resolve_inputs, run_job
    # The command's summary line goes to standard output, which must not be one of the rank files.
    check_standard_output_is_no_input(resolve_inputs(args.inputs)[0], "the summary")
    options = JobOptions(inputs=args.inputs, output=args.output, force=args.force, scheduler=args.scheduler,
                         scheduler_file=args.scheduler_file, workers=args.workers, memory_limit=args.memory_limit,
                         dashboard=args.dashboard,
                         ranks=args.ranks, step_regex=args.step_regex, cache=not args.no_cache, top=args.top,
                         quiet=args.quiet)
    result = run_job(options)
    for p in result.problems:
        print(f"fprof: warning: {p.message}", file=sys.stderr)
    for note in result.notes:
        print(f"fprof: note: {note}", file=sys.stderr)
    write_standard_output(
        f"fprof job: {result.ranks} ranks, {result.kernels} kernels: wrote {result.output} (report.html and the "
        f"Parquet tables) in {result.seconds:.1f} s on {result.cluster}; {result.summarised} summarised, "
        f"{result.cached} from the cache\n")
    return 0


def gate_parser(sub) -> None:
    p = sub.add_parser(
        "gate", help="fprof gate over two job folders",
        description="fprof gate over two job folders written by fprof job: the jobs are compared rank by rank and "
                    "as a whole (the ranks both hold, together) by the gate's checks (docs/gate.md): exit 0 when "
                    "CURRENT_JOBDIR is no worse than BASE_JOBDIR, 1 on a regression, 2 on bad input. A rank only one "
                    "job holds, and ranks recorded on other GPUs, in other modes or with other counters, are "
                    "warned about (docs/jobs.md).")
    p.add_argument("base", metavar="BASE_JOBDIR", help="the baseline job folder")
    p.add_argument("current", metavar="CURRENT_JOBDIR", help="the current job folder")
    p.add_argument("--time-threshold", default="", metavar="PERCENT",
                   help="median slowdown that fails the gate when significant (default 5%%)")
    p.add_argument("--counter-threshold", default="", metavar="PERCENT",
                   help="change of a counter that fails the gate (default 1%%)")
    p.add_argument("--alpha", type=float, default=0.0, help="significance level of the time test (default 0.01)")
    p.add_argument("--config", default="", metavar="FILE", help="JSON or TOML file with the options above and ignore "
                                                                "lists (docs/gate.md)")
    p.add_argument("--markdown", default="", metavar="FILE", help="write the Markdown summary here")
    p.add_argument("--json", default="", metavar="FILE", help="write the findings as JSON here")
    p.add_argument("--junit", default="", metavar="FILE", help="write a JUnit XML report here")
    p.add_argument("--force", action="store_true", help="replace an output file that exists (never an input)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing; only the exit code and the files asked for")


def run_gate_command(args) -> int:
    from .gate import GateArgs, run_gate
    if args.alpha and not 0 < args.alpha < 0.5:
        raise FprofError(f"--alpha {args.alpha}: the significance level lies between 0 and 0.5")
    return run_gate(GateArgs(base=args.base, current=args.current, time_threshold=args.time_threshold,
                             counter_threshold=args.counter_threshold, alpha=args.alpha, config=args.config,
                             markdown=args.markdown, json=args.json, junit=args.junit, force=args.force,
                             quiet=args.quiet))


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its --help written as every output is: argparse itself drops a failed
    write of its help, which ended `fprof job --help > /dev/full` with 0."""

    def print_help(self, file=None):
        if file is not None and file is not sys.stdout:
            super().print_help(file)
            return
        try:
            write_standard_output(self.format_help())
        except FprofError as err:
            print(f"fprof: {err}", file=sys.stderr)
            self.exit(2)


def main(argv=None) -> int:
    parser = _Parser(prog="fprof", description="fprof's Python commands.")
    sub = parser.add_subparsers(dest="command", required=True)
    job_parser(sub)
    gate_parser(sub)
    args = parser.parse_args(argv)
    try:
        if args.command == "job":
            return run_job_command(args)
        if args.command == "gate":
            return run_gate_command(args)
    except FprofError as err:
        print(f"fprof: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 2


if __name__ == "__main__":
    status = main()
    # pyarrow's thread pools can abort the interpreter's teardown (std::terminate on a thread still
    # joinable, apache/arrow#34314), which would turn a finished command's exit status into 134.
    # Every output is complete and the cluster closed by now: leave without that teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
