#!/usr/bin/env python3
"""Whether a job folder's per-rank and per-group figures equal `fprof info`'s on the merged file of
the same ranks: the check of python/tests/test_job.py (check_against_info), on a benchmark's job.

    job_check_info.py FPROF JOBDIR MERGED.fprof

Prints "equal (N ranks, M groups)" and exits 0, or prints the first difference and exits 1.
"""

import importlib.util
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pandas as pd


def load_tests():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests", "test_job.py")
    spec = importlib.util.spec_from_file_location("test_job", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    fprof, job, merged = sys.argv[1:4]

    def run_fprof(*args):
        done = subprocess.run([fprof, *map(str, args)], capture_output=True, text=True)
        return done.returncode, done.stdout, done.stderr

    ranks = pd.read_parquet(os.path.join(job, "ranks.parquet"))
    groups = pd.read_parquet(os.path.join(job, "kernel_groups.parquet"))
    try:
        load_tests().check_against_info(Path(job), merged, run_fprof, bool(ranks["has_counters"].all()))
    except AssertionError:
        print("differs: " + " | ".join(line.strip() for line in traceback.format_exc().splitlines()[-3:]))
        return 1
    print(f"equal ({len(ranks)} ranks, {len(groups)} groups)")
    return 0


if __name__ == "__main__":
    status = main()
    # pyarrow can abort the interpreter's teardown (apache/arrow#34314): the verdict is printed.
    sys.stdout.flush()
    os._exit(status)
