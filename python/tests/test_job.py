"""`fprof job` on synthetic ranks made from recorded ones (bench/job_make_ranks.py): a LocalCluster
job, its figures against `fprof info` on the merged file, bad inputs, the cache and the output
rules."""

import contextlib
import importlib.util
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys

import pandas as pd
import pytest

from fprof import _core

TRACE_RANK = "torchrun_allreduce_h200x2.rank0.fprof"
METRICS_RUN = "model_metrics_h200.fprof"


def load_generator(data_dir):
    path = os.path.join(data_dir, "..", "..", "bench", "job_make_ranks.py")
    spec = importlib.util.spec_from_file_location("job_make_ranks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_ranks(data_dir, folder, source, count, scale=None):
    gen = load_generator(data_dir)
    os.makedirs(folder, exist_ok=True)
    for r in range(count):
        gen.copy_rank(os.path.join(data_dir, source), os.path.join(folder, f"rank{r}.fprof"), r,
                      scale=(scale or {}).get(r))
    return sorted((os.path.join(folder, f) for f in os.listdir(folder)), key=lambda p: int(re.findall(r"\d+", p)[-1]))


def run_job(*args, check=True):
    done = subprocess.run([sys.executable, "-m", "fprof", "job", "--workers", "2", "-q", *map(str, args)],
                          capture_output=True, text=True)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def table_rows(text, title_prefix, end_prefix):
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title_prefix))
    header = re.split(r"\s{2,}", lines[start + 1].strip())
    rows = []
    for line in lines[start + 2:]:
        if not line.strip() or line.startswith(end_prefix):
            break
        rows.append(dict(zip(header, re.split(r"\s{2,}", line.strip()))))
    return rows


def fmt_ns(v):
    return _core.format_duration_ns(float(v))


def pct(v):
    return _core.format_percent(None if pd.isna(v) else float(v))


@pytest.fixture(scope="module")
def sixteen(tmp_path_factory, data_dir):
    """A job of 16 ranks, rank 5 slower outside NCCL, run once for the tests that read it."""
    root = tmp_path_factory.mktemp("sixteen")
    files = make_ranks(data_dir, root / "ranks", TRACE_RANK, 16, scale={5: 1.5})
    done = run_job(root / "ranks", "-o", root / "job")
    return root, files, done


def test_sixteen_ranks_on_a_local_cluster(sixteen):
    root, files, done = sixteen
    job = root / "job"
    assert "16 ranks" in done.stdout and "LocalCluster of 2 workers" in done.stdout
    for name in ["ranks", "kernel_groups", "ops", "fusion", "problems", "rank_kernel_groups", "rank_ops", "steps",
                 "rank_fusion", "rank_roofs", "rank_launch_groups", "rank_launch_samples"]:
        assert (job / f"{name}.parquet").is_file(), name
    ranks = pd.read_parquet(job / "ranks.parquet")
    assert list(ranks["rank"]) == list(range(16))
    assert ranks.loc[ranks["straggler"], "rank"].tolist() == [5]
    assert (ranks["steps"] == 10).all()
    assert pd.read_parquet(job / "problems.parquet").empty
    groups = pd.read_parquet(job / "kernel_groups.parquet")
    one = pd.read_parquet(job / "rank_kernel_groups.parquet")
    assert len(one) == 16 * 8 and groups["calls"].sum() == one["calls"].sum() == 16 * 53
    assert (groups["ranks"] == 16).all()
    slow = groups[groups["rank_of_max"] == "rank 5"]
    assert len(slow) > 0 and (slow["origin"] != "NCCL").all()
    page = (job / "report.html").read_text()
    for section in ["ranks-h", "groups-h", "steps-h", "fusion-h", "roofline-h", "heatmap-h", "Straggler: rank 5"]:
        assert section in page
    facts = json.loads((job / "job.json").read_text())
    assert facts["ranks"] == 16 and facts["kernels"] == 16 * 53 and len(facts["files"]) == 16


def test_parquet_columns_carry_docs(sixteen):
    import pyarrow.parquet as pq
    root, _, _ = sixteen
    for name in ["ranks", "kernel_groups", "rank_kernel_groups", "steps", "rank_launch_groups", "rank_launch_samples"]:
        schema = pq.read_schema(root / "job" / f"{name}.parquet")
        missing = [f.name for f in schema if not (f.metadata or {}).get(b"doc")]
        assert not missing, (name, missing)


def check_against_info(job, merged, run_fprof, counters):
    code, out, err = run_fprof("info", "--top", "100", merged)
    assert code == 0, err
    ranks = pd.read_parquet(job / "ranks.parquet")
    rows = table_rows(out, "Ranks (", "balance")
    assert len(rows) == len(ranks)
    for row, r in zip(rows, ranks.itertuples()):
        assert row["rank"] == str(r.rank)
        assert row["kernels"] == str(r.kernel_count)
        assert row["kernel time"] == fmt_ns(r.total_kernel_ns)
        assert row["share"] == pct(r.share) and row["NCCL"] == pct(r.nccl_share)
        assert row["top"] == pct(r.top_kernel_ns / r.total_kernel_ns)
    groups = pd.read_parquet(job / "kernel_groups.parquet")
    top = table_rows(out, "Top ", "occupancy =")
    assert len(top) == min(100, len(groups))
    by_key = {(g.short_name, g.grid, g.block): g for g in groups.itertuples()}
    for row in top:
        g = by_key[(row["kernel"], row["grid"], row["block"])]
        assert row["time"] == fmt_ns(g.total_ns) and row["share"] == pct(g.share)
        assert row["calls"] == str(g.calls) and row["mean"] == fmt_ns(g.mean_ns)
        assert row["regs"] == str(g.registers_per_thread) and row["occupancy"] == pct(g.theoretical_occupancy)
        assert row["smem"] == _core.format_bytes(float(g.shared_bytes))
        if counters:
            assert row["achieved"] == pct(g.achieved_occupancy)
            roof = f"{pct(g.roof_fraction)} ({g.binding_roof})" if not pd.isna(g.roof_fraction) else "n/a"
            assert row["% of roof"] == roof and row["bound"] == (g.bound or "n/a")
            flops = "n/a" if pd.isna(g.flops_per_s) else _core.format_flop_rate(float(g.flops_per_s))
            assert row["FLOP/s"] == flops


@pytest.mark.parametrize("source,counters", [(TRACE_RANK, False), (METRICS_RUN, True)])
def test_eight_ranks_equal_info_on_the_merged_file(tmp_path, data_dir, run_fprof, source, counters):
    files = make_ranks(data_dir, tmp_path / "ranks", source, 8, scale={3: 1.25, 6: 0.8})
    merged = tmp_path / "merged.fprof"
    code, _, err = run_fprof("merge", "-o", merged, *files)
    assert code == 0, err
    run_job(*files, "-o", tmp_path / "job", "--no-cache")
    check_against_info(tmp_path / "job", merged, run_fprof, counters)


def damage(path):
    with open(path, "r+b") as f:
        f.seek(100)
        f.write(b"\xff" * 4000)


def test_bad_inputs_are_named_and_the_job_finishes(tmp_path, data_dir):
    gen = load_generator(data_dir)
    src = os.path.join(data_dir, TRACE_RANK)
    d = tmp_path / "ranks"
    d.mkdir()
    for r in (0, 1, 2, 4, 6):
        gen.copy_rank(src, d / f"rank{r}.fprof", r)
    gen.copy_rank(src, d / "rank2-again.fprof", 2)                            # two files of one rank
    gen.copy_rank(os.path.join(data_dir, METRICS_RUN), d / "rank7.fprof", 7)  # another mode
    gen.copy_rank(src, d / "rank8.fprof", 8, device_name="NVIDIA H100 80GB HBM3")  # another GPU model
    shutil.copyfile(src, d / "rank9.fprof")
    damage(d / "rank9.fprof")                                               # damaged
    gen.copy_rank(src, d / "rank10.fprof", 10)
    db = sqlite3.connect(d / "rank10.fprof")
    db.execute("update metadata set value = '99' where key = 'schema_version'")  # newer schema
    db.commit()
    db.close()
    done = run_job(d, tmp_path / "nothing*.fprof", "-o", tmp_path / "job", "--ranks", "12")
    problems = pd.read_parquet(tmp_path / "job" / "problems.parquet")
    kinds = sorted(problems["kind"])
    assert kinds == ["apart", "apart", "duplicate", "missing", "unreadable", "unreadable", "unreadable"], problems
    lines = [line for line in done.stderr.splitlines() if line.startswith("fprof: warning:")]
    assert len(lines) == len(problems)
    text = "\n".join(lines)
    assert "rank 2 is also in" in text and "rank2-again.fprof" in text
    assert "ranks 3, 5, 9-11 missing" in text
    assert "schema version 99" in text and "rank9.fprof" in text
    assert "nothing*.fprof: the pattern matches no file" in text
    assert "rank 7 is set apart" in text and "metrics mode" in text
    assert "rank 8 is set apart" in text and "H100" in text
    ranks = pd.read_parquet(tmp_path / "job" / "ranks.parquet")
    assert list(ranks["rank"]) == [0, 1, 2, 4, 6, 7, 8]
    assert list(ranks.loc[ranks["apart"] != "", "rank"]) == [7, 8]
    groups = pd.read_parquet(tmp_path / "job" / "kernel_groups.parquet")
    assert (groups["ranks"] <= 5).all() and groups["calls"].sum() == 5 * 53
    page = (tmp_path / "job" / "report.html").read_text()
    assert "ranks 3, 5, 9-11 missing" in page and "set apart" in page


def fprof_lines(stderr):
    """fprof's own lines of stderr (a library the job runs may add lines of its own)."""
    return [line for line in stderr.splitlines() if line.startswith("fprof: ")]


def test_no_usable_rank_is_an_error(tmp_path, data_dir):
    bad = tmp_path / "bad.fprof"
    bad.write_bytes(b"x" * 1000)
    done = run_job(bad, "-o", tmp_path / "job", check=False)
    assert done.returncode == 2
    lines = fprof_lines(done.stderr)
    assert len(lines) == 1 and lines[0].startswith("fprof: no rank file could be read: "), done.stderr
    assert "bad.fprof" in lines[0]
    assert not (tmp_path / "job").exists()


@contextlib.contextmanager
def port_taken(port):
    """The port held for the block (by this test, or already by another program)."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError:
            pass  # taken already
        yield


def test_a_taken_dashboard_port_says_nothing(tmp_path, data_dir):
    make_ranks(data_dir, tmp_path / "ranks", TRACE_RANK, 2)
    with port_taken(8787):
        done = run_job(tmp_path / "ranks", "-o", tmp_path / "job")
    assert "8787" not in done.stderr and "already in use" not in done.stderr, done.stderr


def test_cache_redoes_only_what_changed(tmp_path, data_dir):
    files = make_ranks(data_dir, tmp_path / "ranks", TRACE_RANK, 4)
    first = run_job(tmp_path / "ranks", "-o", tmp_path / "a")
    assert "4 summarised, 0 from the cache" in first.stdout
    assert (tmp_path / "ranks" / ".fprof-summary" / "rank0.fprof" / "key.json").is_file()
    db = sqlite3.connect(files[2])
    db.execute("update kernel set end_ns = end_ns + 1000, duration_ns = duration_ns + 1000 where id = 1")
    db.commit()
    db.close()
    load_generator(data_dir).copy_rank(files[0], tmp_path / "ranks" / "rank4.fprof", 4)
    second = run_job(tmp_path / "ranks", "-o", tmp_path / "b")
    assert "2 summarised, 3 from the cache" in second.stdout
    a = pd.read_parquet(tmp_path / "a" / "ranks.parquet")
    b = pd.read_parquet(tmp_path / "b" / "ranks.parquet")
    assert b["total_kernel_ns"][2] == a["total_kernel_ns"][2] + 1000
    assert b["cached"].tolist() == [True, True, False, True, False]


def test_cache_replaces_only_a_summary_fprof_wrote(tmp_path, data_dir):
    make_ranks(data_dir, tmp_path / "ranks", TRACE_RANK, 3)
    cache = tmp_path / "ranks" / ".fprof-summary"
    cache.mkdir()
    (cache / "rank0.fprof").mkdir()
    (cache / "rank0.fprof" / "mine.txt").write_text("mine")
    (cache / "rank1.fprof").write_text("a file")
    (cache / "elsewhere").mkdir()
    (cache / "rank2.fprof").symlink_to("elsewhere")
    done = run_job(tmp_path / "ranks", "-o", tmp_path / "job")
    assert "3 summarised, 0 from the cache" in done.stdout
    for rank in ("rank0.fprof", "rank1.fprof", "rank2.fprof"):
        assert (f"fprof: note: summary of {tmp_path / 'ranks' / rank} not cached: {cache / rank} is not a summary "
                "fprof wrote; it is left as it is") in done.stderr, done.stderr
    assert (cache / "rank0.fprof" / "mine.txt").read_text() == "mine"
    assert sorted(os.listdir(cache / "rank0.fprof")) == ["mine.txt"]
    assert (cache / "rank1.fprof").read_text() == "a file"
    assert os.readlink(cache / "rank2.fprof") == "elsewhere" and os.listdir(cache / "elsewhere") == []
    assert [p for p in os.listdir(cache) if "tmp" in p or p.endswith(".old")] == []
    # A stale summary fprof wrote is replaced: the next job writes over its own cache.
    (cache / "rank0.fprof" / "mine.txt").unlink()
    (cache / "rank0.fprof").rmdir()
    run_job(tmp_path / "ranks", "-o", tmp_path / "job2")
    key = cache / "rank0.fprof" / "key.json"
    stale = json.loads(key.read_text())
    stale["sha256"] = "0" * 64
    key.write_text(json.dumps(stale))
    again = run_job(tmp_path / "ranks", "-o", tmp_path / "job3")
    assert "3 summarised, 0 from the cache" in again.stdout and "rank0.fprof not cached" not in again.stderr
    assert json.loads(key.read_text())["sha256"] != "0" * 64


def test_existing_output_is_kept_without_force(tmp_path, data_dir):
    make_ranks(data_dir, tmp_path / "ranks", TRACE_RANK, 2)
    out = tmp_path / "job"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    done = run_job(tmp_path / "ranks", "-o", out, check=False)
    assert done.returncode == 2 and f"fprof: {out}: exists; --force replaces it" in done.stderr
    assert (out / "keep.txt").read_text() == "mine"
    run_job(tmp_path / "ranks", "-o", out, "--force")
    assert not (out / "keep.txt").exists() and (out / "report.html").is_file()
    inside = run_job(tmp_path / "ranks", "-o", tmp_path, "--force", check=False)
    assert inside.returncode == 2 and "holds the input" in inside.stderr
    assert [p for p in os.listdir(tmp_path) if p.endswith(".fprof-tmp")] == []


def test_fprof_command_runs_the_package(tmp_path, data_dir, fprof_bin):
    make_ranks(data_dir, tmp_path / "ranks", TRACE_RANK, 2)
    done = subprocess.run([fprof_bin, "job", tmp_path / "ranks", "-o", tmp_path / "job", "--workers", "1", "-q"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "2 ranks" in done.stdout and (tmp_path / "job" / "report.html").is_file()
    shown = subprocess.run([fprof_bin, "job", "--help"], capture_output=True, text=True)
    assert shown.returncode == 0 and shown.stdout.startswith("usage: fprof job")
    # Standard output is checked like a file: a failed write is exit 2 with the cause.
    for args in (["job", "--help"], ["job", tmp_path / "ranks", "-o", tmp_path / "job-full", "--workers", "1"]):
        with open("/dev/full", "w") as full:
            failed = subprocess.run([fprof_bin, *args], stdout=full, stderr=subprocess.PIPE, text=True)
        assert failed.returncode == 2 and failed.stderr.endswith("fprof: standard output: no space left on device\n"), \
            failed.stderr
    # Standard output redirected onto a rank file is refused before the job runs; the file is kept.
    rank0 = sorted((tmp_path / "ranks").glob("*.fprof"))[0]
    before = rank0.read_bytes()
    with open(rank0, "a") as onto:
        onto_input = subprocess.run([fprof_bin, "job", tmp_path / "ranks", "-o", tmp_path / "job-onto", "--workers", "1"],
                                    stdout=onto, stderr=subprocess.PIPE, text=True)
    assert onto_input.returncode == 2 and onto_input.stderr == (
        f"fprof: standard output is the input {rank0} (redirected onto it); write the summary to another file\n"), \
        onto_input.stderr
    assert rank0.read_bytes() == before and not (tmp_path / "job-onto").exists()
    closed = subprocess.run([fprof_bin, "job", "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: os.close(1))
    assert closed.returncode == 2 and closed.stderr == "fprof: standard output: bad file descriptor\n", closed.stderr
    # A copy of fprof with no package beside it and none on PATH says how to install it.
    (tmp_path / "bin").mkdir()
    alone = tmp_path / "bin" / "fprof"
    shutil.copy(fprof_bin, alone)
    missing = subprocess.run([alone, "job", tmp_path / "ranks", "-o", tmp_path / "job2"], capture_output=True, text=True,
                             env={"PATH": "/nonexistent"})
    assert missing.returncode == 2
    lines = fprof_lines(missing.stderr)
    assert len(lines) == 1 and lines[0].startswith("fprof: this command runs in fprof's Python package, which is "
                                                   "not installed"), missing.stderr
