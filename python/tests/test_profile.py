"""fprof.open on the recorded profiles of tests/data: the DataFrames hold what `fprof info`,
`fprof export` and the database itself say, column by column."""

import json
import os
import re
import sqlite3
import subprocess
import sys

import pandas as pd
import pytest

import fprof
from fprof import _core

METRICS = "model_metrics_h200.fprof"
TRACE = "model_trace_h200.fprof"
RANKS = ["torchrun_allreduce_h200x2.rank0.fprof", "torchrun_allreduce_h200x2.rank1.fprof"]


def table_rows(text, title_prefix, end_prefix):
    """The rows of one of fprof info's tables, cells split where two or more spaces separate them."""
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
def metrics(data_dir):
    return fprof.open(os.path.join(data_dir, METRICS))


@pytest.fixture(scope="module")
def trace(data_dir):
    return fprof.open(os.path.join(data_dir, TRACE))


def test_version_matches_the_build():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "pyproject.toml")) as f:
        declared = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    assert fprof.__version__ == declared == _core.version


def test_kernel_count_and_time_equal_info(metrics, run_fprof, data_dir):
    code, out, _ = run_fprof("info", os.path.join(data_dir, METRICS))
    assert code == 0
    s = metrics.summary
    line = f"kernels : {s['kernel_count']} launches of {s['kernel_groups']} distinct kernel shapes; kernel time {fmt_ns(s['total_kernel_ns'])}"
    assert line in out
    assert len(metrics.kernels) == s["kernel_count"]
    assert int(metrics.kernels["own_duration_ns"].sum()) == s["total_kernel_ns"]
    assert len(metrics.kernel_groups) == s["kernel_groups"]


def test_kernel_groups_equal_info_top_table(metrics, run_fprof, data_dir):
    code, out, _ = run_fprof("info", "--top", "20", os.path.join(data_dir, METRICS))
    assert code == 0
    rows = table_rows(out, "Top 20 kernels", "occupancy =")
    assert len(rows) == 20
    groups = metrics.kernel_groups
    for i, row in enumerate(rows):
        g = groups.iloc[i]
        assert row["time"] == fmt_ns(g["total_ns"])
        assert row["share"] == pct(g["share"])
        assert row["calls"] == str(g["calls"])
        assert row["mean"] == fmt_ns(g["mean_ns"])
        assert row["block"] == g["block"] and row["grid"] == g["grid"]
        assert row["regs"] == str(g["registers_per_thread"])
        assert row["achieved"] == pct(g["achieved_occupancy"])
        assert row["occupancy"] == pct(g["theoretical_occupancy"])
        roof = f"{pct(g['roof_fraction'])} ({g['binding_roof']})" if not pd.isna(g["roof_fraction"]) else "n/a"
        assert row["% of roof"] == roof
        assert row["bound"] == (g["bound"] or "n/a")
        assert row["kernel"] == g["short_name"]


def test_groups_and_fusion_equal_export_json(metrics, run_fprof, data_dir):
    code, out, _ = run_fprof("export", "--format", "json", os.path.join(data_dir, METRICS))
    assert code == 0
    exported = json.loads(out)
    groups = metrics.kernel_groups
    assert len(exported["kernel_groups"]) == len(groups)
    for g, e in zip(groups.itertuples(), exported["kernel_groups"]):
        assert g.name == e["name"] and g.calls == e["calls"]
        roof = e["roofline"]
        assert g.total_ns == roof["duration_ns"]
        for ours, theirs in [(g.flops_per_s, roof.get("achieved_flops_per_s")), (g.roof_fraction, roof.get("roof_fraction")),
                             (g.intensity_dram, roof["intensity_flop_per_byte"].get("dram"))]:
            assert (pd.isna(ours) and theirs is None) or ours == theirs
    candidates = exported["fusion"]["candidates"]
    fusion = metrics.fusion
    assert len(fusion) == len(candidates) > 0
    for f, c in zip(fusion.itertuples(), candidates):
        assert f.id == c["id"] and f.instances == c["instances"] and f.unfused_ns == c["unfused_ns"]
        assert f.stages == " -> ".join(c["stages"])
        for ours, theirs in [(f.predicted_saving_ns, c["predicted_saving_ns"]), (f.payoff_ns, c["total_saving_ns"]),
                             (f.measured_fused_ns, c["measured_fused_ns"])]:
            assert (pd.isna(ours) and theirs is None) or ours == theirs
        assert bool(f.fuse) == c["fuse"]


def test_rows_equal_the_database(metrics, data_dir):
    db = sqlite3.connect(f"file:{os.path.join(data_dir, METRICS)}?mode=ro", uri=True)
    count, total, grid_sum = db.execute("select count(*), sum(duration_ns), sum(grid_x * grid_y * grid_z) from kernel").fetchone()
    assert len(metrics.kernels) == count
    assert int(metrics.kernels["duration_ns"].sum()) == total
    k = metrics.kernels
    assert int((k["grid_x"] * k["grid_y"] * k["grid_z"]).sum()) == grid_sum
    (counters,) = db.execute("select count(*) from kernel_counter").fetchone()
    assert len(metrics.counters) == counters
    first = db.execute("select kernel_id, dram_read_bytes, flops_fp32 from kernel_counter order by kernel_id limit 1").fetchone()
    row = metrics.counters.iloc[0]
    assert (row["kernel_id"], row["dram_read_bytes"], row["flops_fp32"]) == first
    names = dict(db.execute("select k.id, s.value from kernel k join string s on s.id = k.demangled_id"))
    assert all(names[i] == n for i, n in zip(k["id"].head(50), k["demangled_name"].head(50)))


def test_absent_values_are_na_never_zero(trace):
    groups = trace.kernel_groups
    assert len(groups) > 0
    assert groups["intensity_dram"].isna().all() and groups["flops_per_s"].isna().all()
    assert len(trace.counters) == 0
    assert trace.summary["has_counters"] is False


def test_every_column_is_arrow_backed_and_documented(metrics):
    for name in metrics.table_names:
        df = metrics.table(name)
        docs = fprof.docs(df)
        assert list(docs["column"]) == list(df.columns)
        assert all(docs["doc"].str.len() > 0), name
        assert all(isinstance(t, pd.ArrowDtype) for t in df.dtypes), name
        assert df.attrs["doc"]


def test_schema_columns_carry_the_schema_doc(metrics):
    schema = _core.schema_docs()
    kernel_docs = schema["kernel"][1]
    docs = dict(zip(*fprof.docs(metrics.kernels).T.values))
    for column in ["start_ns", "grid_x", "registers_per_thread", "theoretical_occupancy", "programmatic_launch"]:
        assert docs[column] == kernel_docs[column]
    assert docs["demangled_name"] == kernel_docs["demangled_id"]
    counter_docs = dict(zip(*fprof.docs(metrics.counters).T.values))
    for column, doc in schema["kernel_counter"][1].items():
        assert counter_docs[column] == doc


def test_bad_input_gets_the_cli_sentence(tmp_path, run_fprof):
    missing = tmp_path / "missing.fprof"
    garbage = tmp_path / "garbage.fprof"
    garbage.write_bytes(b"not a database\n" * 100)
    for path in (missing, garbage):
        with pytest.raises(fprof.FprofError) as err:
            fprof.open(path)
        code, _, stderr = run_fprof("info", path)
        assert code == 2
        assert stderr.strip() == f"fprof: {err.value}"
        assert isinstance(err.value, ValueError)


def test_ranks_of_a_merged_job_equal_info(tmp_path, run_fprof, data_dir):
    merged = tmp_path / "job.fprof"
    code, _, err = run_fprof("merge", "-o", merged, *[os.path.join(data_dir, r) for r in RANKS])
    assert code == 0, err
    p = fprof.open(merged)
    code, out, _ = run_fprof("info", merged)
    rows = table_rows(out, "Ranks (", "balance")
    ranks = p.ranks
    assert len(rows) == len(ranks) == 2
    for row, r in zip(rows, ranks.itertuples()):
        assert row["rank"] == str(r.rank)
        assert row["kernels"] == str(r.kernel_count)
        assert row["kernel time"] == fmt_ns(r.total_kernel_ns)
        assert row["share"] == pct(r.share) and row["NCCL"] == pct(r.nccl_share)
    assert set(p.kernels["rank"].unique()) == {0, 1}


def test_notebook_shows_summary_and_roofline(metrics, trace):
    page = metrics._repr_html_()
    assert 'class="fprof-nb"' in page and "<svg" in page and 'class="pt"' in page
    assert ".fprof-nb svg .pt{" in page  # the report's own point style, scoped to fprof's output
    assert "body{" not in page  # nothing that would restyle the notebook
    assert "roofline-none" in trace._repr_html_()
    assert "kernels" in repr(metrics)


def test_report_html_equals_fprof_report(metrics, tmp_path, run_fprof, data_dir):
    out = tmp_path / "report.html"
    code, _, err = run_fprof("report", os.path.join(data_dir, METRICS), "-o", out)
    assert code == 0, err
    nonce = re.compile(r"nonce(-|=\")[A-Za-z0-9]{24}")
    ours = nonce.sub("NONCE", metrics.report_html())
    theirs = nonce.sub("NONCE", out.read_text())
    assert ours == theirs


def test_docs_reference_is_current(data_dir):
    here = os.path.dirname(os.path.abspath(__file__))
    tool = os.path.join(here, "..", "tools", "table-reference")
    generated = subprocess.run([sys.executable, tool, os.path.join(data_dir, METRICS)], capture_output=True, text=True,
                               check=True).stdout
    with open(os.path.join(data_dir, "..", "..", "docs", "python-package.md")) as f:
        page = f.read()
    begin, end = "<!-- tables reference: begin -->\n", "<!-- tables reference: end -->\n"
    committed = page[page.index(begin) + len(begin):page.index(end)]
    assert committed == generated, "regenerate with python/tools/table-reference tests/data/model_metrics_h200.fprof"
