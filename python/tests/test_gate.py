"""`fprof gate` over two job folders: identical jobs pass, a rank made 1.5x slower fails (that rank,
by the same findings as `fprof gate` on its two rank files), a rank one job lacks and a rank on
another GPU are warned about, and the outputs follow the gate's rules."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from test_job import TRACE_RANK, load_generator, make_ranks, run_job


def run_gate(*args):
    done = subprocess.run([sys.executable, "-m", "fprof", "gate", *map(str, args)], capture_output=True, text=True)
    return done


@pytest.fixture(scope="module")
def jobs(tmp_path_factory, data_dir):
    """Jobs of four ranks: a base, an identical one, one with rank 2's kernels (outside NCCL) 1.5x
    as long, one without rank 3, one with rank 1 on another GPU model."""
    root = tmp_path_factory.mktemp("gate")
    gen = load_generator(data_dir)
    src = os.path.join(data_dir, TRACE_RANK)
    made = {}
    variants = {"base": {}, "same": {}, "slow": {2: {"scale": 1.5}}, "fewer": {3: None},
                "h100": {1: {"device_name": "NVIDIA H100 80GB HBM3"}}}
    for name, changes in variants.items():
        folder = root / f"{name}-ranks"
        folder.mkdir()
        for r in range(4):
            if r in changes and changes[r] is None:
                continue
            gen.copy_rank(src, folder / f"rank{r}.fprof", r, **(changes.get(r) or {}))
        run_job(folder, "-o", root / name)
        made[name] = root / name
    made["root"] = root
    return made


def gate_json(tmp_path, base, current, *extra):
    out = tmp_path / "gate.json"
    done = run_gate(base, current, "--json", out, "--force", *extra)
    return done, json.loads(out.read_text())


def test_identical_jobs_pass(jobs, tmp_path):
    done, found = gate_json(tmp_path, jobs["base"], jobs["same"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("## fprof gate: passed")
    assert "Compared rank by rank and as a whole: both jobs hold ranks 0-3. 0 of 4 ranks regressed; the job as a " \
           "whole passed." in done.stdout
    assert found["passed"] and found["comparison"] == "per rank and whole job"
    assert [r["rank"] for r in found["ranks"]] == [0, 1, 2, 3]
    assert found["job"]["label"] == "job (ranks 0-3 together)" and found["job"]["passed"]
    assert found["warnings"] == [] and found["regressions"] == 0
    assert all(c["base"] == c["current"] for c in found["job"]["run_checks"] if c["metric"] != "new_kernel_time_ns")


def test_a_rank_made_slower_fails_on_that_rank(jobs, tmp_path):
    done, found = gate_json(tmp_path, jobs["base"], jobs["slow"])
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("## fprof gate: FAILED")
    assert [r["passed"] for r in found["ranks"]] == [True, True, False, True]
    slow = found["ranks"][2]
    # Every launch group outside NCCL that can be tested alone: +50% median, significant.
    timed = [f for f in slow["findings"] if f["kind"] == "time"]
    assert len(timed) == 4 and all(f["regression"] and abs(f["change"] - 0.5) < 0.01 for f in timed)
    assert all("nccl" not in f["kernel"].lower() for f in timed)
    kernel_time = next(c for c in slow["run_checks"] if c["metric"] == "kernel_time_ns")
    assert kernel_time["change"] > 0.05  # the rank's time is mostly NCCL's, which did not change
    assert {f.get("rank") for f in found["findings"] if f["regression"]} == {2}
    assert "### rank 2: FAILED" in done.stdout and "1 of 4 ranks regressed" in done.stdout


def comparable(findings):
    keys = ("kind", "regression", "kernel", "shape", "op", "metric", "base", "current", "change", "p_value")
    return [{k: f[k] for k in keys} for f in findings]


def test_a_rank_reads_as_the_gate_on_its_two_files(jobs, tmp_path, run_fprof):
    """The rank's groups have at most 64 launches: the summaries keep every launch, so the job
    gate's rank 2 says exactly what fprof gate says of the two rank files."""
    _, found = gate_json(tmp_path, jobs["base"], jobs["slow"])
    files = tmp_path / "files.json"
    code, _, err = run_fprof("gate", jobs["root"] / "base-ranks" / "rank2.fprof",
                             jobs["root"] / "slow-ranks" / "rank2.fprof", "--json", files, "-q")
    assert code == 1, err
    direct = json.loads(files.read_text())
    rank = found["ranks"][2]
    assert comparable(rank["findings"]) == comparable(direct["findings"])
    assert rank["run_checks"] == direct["run_checks"]
    assert rank["groups"] == direct["groups"] and rank["time_tested"] == direct["time_tested"]


def test_a_rank_one_job_lacks_is_said(jobs, tmp_path):
    done, found = gate_json(tmp_path, jobs["base"], jobs["fewer"])
    assert done.returncode == 0, done.stderr
    said = "rank 3 of the base job is not in the current job: not compared"
    assert said in done.stdout
    assert [w["what"] for w in found["warnings"]] == ["ranks"] and found["warnings"][0]["message"] == said
    assert [r["rank"] for r in found["ranks"]] == [0, 1, 2]
    assert found["job"]["label"] == "job (ranks 0-2 together)"


def test_ranks_on_different_gpus_are_warned_about(jobs, tmp_path):
    done, found = gate_json(tmp_path, jobs["base"], jobs["h100"])
    assert done.returncode == 0, done.stderr
    devices = [w for w in found["warnings"] if w["what"] == "devices"]
    assert [w.get("rank") for w in devices] == [None, 1]  # the whole job, then rank 1
    assert "H100" in devices[1]["current"] and "H200" in devices[1]["base"]
    assert done.stdout.count("recorded on different GPUs") == 2


def test_outputs_follow_the_gate_rules(jobs, tmp_path, fprof_bin):
    out = tmp_path / "gate.xml"
    out.write_text("mine")
    refused = run_gate(jobs["base"], jobs["slow"], "--junit", out)
    assert refused.returncode == 2
    assert f"fprof: {out}: file exists; choose another name or overwrite it with --force" in refused.stderr
    assert out.read_text() == "mine"
    # Through the fprof command, which hands two job folders to the package.
    md = tmp_path / "gate.md"
    done = subprocess.run([fprof_bin, "gate", jobs["base"], jobs["slow"], "--junit", out, "--markdown", md, "--force",
                           "-q", "--time-threshold", "5%"], capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    xml = out.read_text()
    assert xml.startswith("<?xml") and 'failures="0"' not in xml and "rank 2: total kernel time" in xml
    assert md.read_text().startswith("## fprof gate: FAILED")
    mixed = subprocess.run([fprof_bin, "gate", jobs["base"], jobs["root"] / "base-ranks" / "rank0.fprof"],
                           capture_output=True, text=True)
    assert mixed.returncode == 2
    assert mixed.stderr.startswith(f"fprof: {jobs['base']} is a job folder and ") and mixed.stderr.count("\n") == 1
    folder = subprocess.run([fprof_bin, "gate", jobs["root"] / "base-ranks", jobs["base"]], capture_output=True,
                            text=True)
    assert folder.returncode == 2 and "a folder that is not a job folder" in folder.stderr


def test_one_output_can_go_to_standard_output_instead_of_the_summary(jobs, tmp_path):
    done, found = gate_json(tmp_path, jobs["base"], jobs["slow"])
    to_stdout = subprocess.run([sys.executable, "-m", "fprof", "gate", jobs["base"], jobs["slow"], "--json", "-"],
                               capture_output=True, text=True, cwd=tmp_path)
    assert to_stdout.returncode == done.returncode == 1, to_stdout.stderr
    assert json.loads(to_stdout.stdout) == found and "## fprof gate" not in to_stdout.stdout
    assert not (tmp_path / "-").exists()
    job_json = jobs["slow"] / "job.json"
    before = job_json.read_bytes()
    with open(job_json, "a") as onto:
        onto_input = subprocess.run([sys.executable, "-m", "fprof", "gate", jobs["base"], jobs["slow"]], stdout=onto,
                                    stderr=subprocess.PIPE, text=True)
    assert onto_input.returncode == 2 and "(redirected onto it); write the summary to another file" in onto_input.stderr
    assert job_json.read_bytes() == before
    with open("/dev/full", "w") as full:
        failed = subprocess.run([sys.executable, "-m", "fprof", "gate", jobs["base"], jobs["slow"]], stdout=full,
                                stderr=subprocess.PIPE, text=True)
    assert failed.returncode == 2 and failed.stderr == "fprof: standard output: no space left on device\n"


def test_a_job_folder_without_the_gate_tables_is_refused(jobs, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(jobs["base"], old)
    (old / "rank_launch_groups.parquet").unlink()
    done = run_gate(old, jobs["base"])
    assert done.returncode == 2
    assert "holds no rank_launch_groups.parquet" in done.stderr and "run fprof job again" in done.stderr
