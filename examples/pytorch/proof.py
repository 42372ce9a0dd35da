"""fprof's fusion proof on PyTorch models, in one call on a GPU machine:

  FPROF_BUILD=build-gpu python3 examples/pytorch/proof.py --out $OUT      # profile, measure, compare
  python3 examples/pytorch/proof.py --from DIR [--fprof build/bin/fprof]   # the table again, no GPU
  FPROF_BUILD=build-gpu python3 examples/pytorch/proof.py --pairs --out $OUT  # the before/after pairs only

1. Profiles each model of proof_models.py in trace mode (`fprof run`), eager and with one fusion
   applied at a time (SDPA, bias+GELU epilogue, residual+LayerNorm kernel, Hugging Face's gelu_new
   as one kernel) and whole-model torch.compile. No annotation: what a new user would run.
2. Times each fusable region alone, unfused against fused, with CUDA events (proof_bench.py).
3. Reads fprof's fusion candidates of each eager profile (`fprof export --format json`), finds the
   one that is the region's chain (by its stages' kernel kinds), and puts its predicted saving per
   instance next to the measured ones: from the profiles' kernel times (eager minus fused, per
   region instance, timed steps only) and from the region benchmark.

Writes under --out: proof_table.txt (the table, also printed last), proof_results.json (every
run's output, the measurements and the rows), proof_fprof.tar.gz (the .fprof files, for
tests/data) and proof_logs.tar.gz. --from DIR recomputes the rows from those files with any fprof
build (the measurements are kept, the predictions are the build's).

--pairs records only the before/after pairs of PAIRS (no region benchmark) and closes the loop
with fprof itself: for each pair, `fprof diff BEFORE AFTER` (diff_AFTER.txt) and `fprof report AFTER
--baseline BEFORE --format md` (report_AFTER.md), whose "Fusions applied" sections put the saving
fprof predicted from BEFORE next to the one measured in AFTER; pairs_table.txt collects them.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# ---- What runs --------------------------------------------------------------------------------

def run_specs():
    """(name, proof_run.py arguments, the eager run it is compared with or None)."""
    specs = []

    def family(prefix, base_args, fusions, compile_too):
        eager = prefix + "_eager"
        specs.append((eager, base_args, None))
        for fusion in fusions:
            specs.append((f"{prefix}_{fusion}", base_args + ["--fusions", fusion], eager))
        if compile_too:
            specs.append((prefix + "_compile", base_args + ["--compile"], eager))

    family("gpt_bf16", ["gpt", "--dtype", "bf16"], ("sdpa", "bias_gelu", "res_ln"), True)
    family("gpt_fp16", ["gpt", "--dtype", "fp16"], ("sdpa", "bias_gelu", "res_ln"), False)
    # The same eager model under emit_nvtx, for the analysis of framework op ranges (no row).
    specs.append(("gpt_bf16_emitnvtx", ["gpt", "--dtype", "bf16", "--emit-nvtx"], None))
    family("mlp_bf16", ["mlp", "--dtype", "bf16", "--layers", "2"], ("bias_gelu", "res_ln"), True)
    family("hfgpt2_forward_fp16", ["hf-forward", "--dtype", "fp16"], ("sdpa", "gelu"), True)
    family("hfgpt2_generate_fp16", ["hf-generate", "--dtype", "fp16", "--warmup", "1", "--steps", "2"],
           ("sdpa", "gelu"), False)
    return specs


# The before/after pairs `fprof diff` closes the loop on (docs/analysis.md, "Applied fusions"): an
# eager run, and the same model with one fusion applied or compiled whole.
PAIRS = [
    ("gpt_bf16_eager", "gpt_bf16_sdpa"),                            # naive attention -> SDPA
    ("gpt_bf16_eager", "gpt_bf16_compile"),
    ("mlp_bf16_eager", "mlp_bf16_bias_gelu"),                       # bias + GELU -> cuBLASLt's epilogue
    ("mlp_bf16_eager", "mlp_bf16_compile"),                         # MLP with bias + GELU -> torch.compile
    ("hfgpt2_forward_fp16_eager", "hfgpt2_forward_fp16_compile"),   # Hugging Face GPT-2 -> torch.compile
    ("hfgpt2_forward_fp16_eager", "hfgpt2_forward_fp16_gelu"),      # gelu_new -> F.gelu(approximate="tanh")
    ("hfgpt2_forward_fp16_eager", "hfgpt2_forward_fp16_sdpa"),      # its eager attention -> SDPA
]


def pair_diffs(fprof, dbdir, out):
    """fprof diff and fprof report --baseline for every pair both of whose databases exist."""
    table = []
    for before, after in PAIRS:
        b, a = os.path.join(dbdir, before + ".fprof"), os.path.join(dbdir, after + ".fprof")
        if not (os.path.exists(b) and os.path.exists(a)):
            table.append(f"== {before} -> {after}: not recorded")
            continue
        diff = subprocess.run([fprof, "diff", b, a], capture_output=True, text=True)
        with open(os.path.join(out, f"diff_{after}.txt"), "w") as f:
            f.write(diff.stdout + diff.stderr)
        subprocess.run([fprof, "report", a, "--baseline", b, "--format", "md", "-q", "--force", "-o",
                        os.path.join(out, f"report_{after}.md")], capture_output=True, text=True)
        applied = diff.stdout[diff.stdout.find("\nFusions applied"):] if "\nFusions applied" in diff.stdout else \
            f"fprof diff failed (rc {diff.returncode}): {diff.stderr.strip()[:300]}"
        table.append(f"== {before} -> {after}{applied}")
    text = "\n".join(table)
    with open(os.path.join(out, "pairs_table.txt"), "w") as f:
        f.write(text + "\n")
    return text


# ---- Matching fprof's candidates to the applied fusions ----------------------------------------

# Each stage (a kernel name, or an op name where the analysis knows ops) becomes one letter.
TOKEN_RULES = [
    ("F", r"flash|fmha|sdpa|scaled_dot_product|attention"),
    ("S", r"softmax"),
    ("L", r"layer_?norm"),
    ("G", r"nvjet|gemm|cutlass|xmma|cublas|\bsm\d\d_|aten::(mm|bmm|addmm|matmul|linear|baddbmm|_addmm_activation)\b"),
    ("K", r"masked_fill|where"),
    ("U", r"gelu|tanh|pow"),
    ("A", r"functor\w*_add|addfunctor|aten::add_?\b|\badd_kernel"),
    ("M", r"mulfunctor|divfunctor|div_true|aten::(mul|div)_?\b|\bmul_kernel|\bdiv_kernel"),
    ("C", r"copy|contiguous|clone|\bcat"),
    ("E", r"elementwise|vectorized|unrolled|functor"),
]
TOKEN_RES = [(t, re.compile(r, re.I)) for t, r in TOKEN_RULES]


def token(stage):
    for t, r in TOKEN_RES:
        if r.search(stage):
            return t
    return "X"


def stage_texts(c):
    """Each stage's name (an op, or a short kernel name) with its kernels' full names, which keep
    the functor (CUDAFunctor_add) a short name may leave out."""
    names = c.get("stages", [])
    kernels = c.get("stage_kernels") or [[] for _ in names]
    return [" ".join([n] + list(k)) for n, k in zip(names, kernels)]


# The chain each fusion replaces, in stage letters: `full` is the region itself (exact match),
# `core` what a longer chain must contain.
CHAINS = {
    # SDPA also removes the layout copies around attention: q, k, v made contiguous before, and the
    # output's transpose(1, 2).contiguous() after (the fused kernel writes that layout itself).
    "sdpa": {"full": r"C*G[MKAC]*S[C]*C?GC?", "core": r"G[MKAC]*S[C]*G"},
    "bias_gelu": {"full": r"GAU", "core": r"GAU"},
    "res_ln": {"full": r"AL", "core": r"AL"},
    "gelu": {"full": r"M?U[MA]+U[MA]*", "core": r"U[MA]+U"},
}


def match_candidate(candidates, fusion):
    """The candidates that are this fusion's chain. The applied fusion replaces every instance of
    the chain, and fprof lists instances of different shapes apart (Hugging Face's generate: the
    prefill's gelu_new and the decode steps' are two candidates), so all exact matches count
    together: their instances and savings add. Without an exact match, the shortest candidate
    containing the chain (its prediction covers more than the fusion did)."""
    spec = CHAINS[fusion]
    exact, longer = [], None
    for c in candidates:
        tokens = "".join(token(s) for s in stage_texts(c))
        if re.fullmatch(spec["full"], tokens):
            exact.append((c, tokens))
        elif re.search(spec["core"], tokens) and (longer is None or len(tokens) < len(longer[1])):
            longer = (c, tokens)
    if exact:
        exact.sort(key=lambda ct: -(ct[0].get("total_saving_ns") or 0))
        return {"candidates": [c for c, _ in exact], "tokens": exact[0][1], "coverage": "exact"}
    if longer:
        return {"candidates": [longer[0]], "tokens": longer[1], "coverage": "longer chain"}
    return None


# ---- Measurements from the databases -------------------------------------------------------------

def timed_kernels(db, run):
    """Kernel time and count per timed step: kernels that started after the run's mark."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        md = dict(con.execute("select key, value from metadata"))
        offset = int(md["start_cupti_ns"]) - int(md["start_unix_ns"])
        mark = run["mark_unix_ns"] + offset
        n, total = con.execute("select count(*), coalesce(sum(end_ns - start_ns), 0) from kernel where start_ns >= ?",
                               (mark,)).fetchone()
        all_n = con.execute("select count(*) from kernel").fetchone()[0]
    finally:
        con.close()
    steps = run["steps"]
    return {"kernel_us_per_step": total / 1e3 / steps, "kernels_per_step": n / steps, "kernels_in_file": all_n}


def export_json(fprof, db):
    p = subprocess.run([fprof, "export", "--format", "json", db], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return None, (p.stderr or p.stdout).strip()[-500:]
    try:
        return json.loads(p.stdout), None
    except json.JSONDecodeError as e:
        return None, f"export JSON did not parse: {e}"


# ---- The rows -----------------------------------------------------------------------------------

def fused_fusion(run):
    if run.get("compile"):
        return "compile"
    fusions = run.get("fusions") or []
    return fusions[0] if len(fusions) == 1 else None


def bench_for(bench, run, fusion):
    model = run["proof_run"]
    for b in bench:
        if b["proof_bench"] == model and b["dtype"] == run["dtype"] and b["fusion"] == fusion:
            return b
    return None


def rel_error(pred, meas):
    if pred is None or meas is None or meas <= 0:
        return None
    return (pred - meas) / meas


def compute_rows(results, exports, kernels):
    """One row per applied fusion (and one per whole-model compile)."""
    rows = []
    runs = results["runs"]
    for name, r in runs.items():
        run = r.get("result")
        base = r.get("baseline")
        if not run or not base:
            continue
        fusion = fused_fusion(run)
        if fusion is None or base not in runs or not runs[base].get("result"):
            continue
        base_run = runs[base]["result"]
        row = {"run": name, "baseline": base, "fusion": fusion, "model": run["proof_run"], "dtype": run["dtype"]}
        k_base, k_fused = kernels.get(base), kernels.get(name)
        steps_in_file = base_run["warmup"] + base_run["steps"]
        ex = exports.get(base)
        candidates = (ex or {}).get("fusion", {}).get("candidates", []) if ex else []
        if fusion == "compile":
            row["per"] = "step"
            if k_base and k_fused:
                row["measured_kernels_us"] = k_base["kernel_us_per_step"] - k_fused["kernel_us_per_step"]
            row["measured_events_us"] = (statistics.median(base_run["step_ms"]) - statistics.median(run["step_ms"])) * 1e3
            fusable = [c for c in candidates if c.get("fuse") and c.get("total_saving_ns")]
            if ex is not None:
                row["predicted_us"] = sum(c["total_saving_ns"] for c in fusable) / 1e3 / steps_in_file
                row["candidate"] = f"all {len(fusable)} fusable candidates (overlaps not removed)"
            rows.append(row)
            continue
        per_step = base_run["regions_per_step"].get(fusion)
        row["per"] = "instance"
        row["instances_expected"] = per_step * steps_in_file if per_step else None
        if k_base and k_fused and per_step:
            row["measured_kernels_us"] = (k_base["kernel_us_per_step"] - k_fused["kernel_us_per_step"]) / per_step
        b = bench_for(results.get("bench", []), base_run, fusion)
        if b:
            row["measured_events_us"] = b["saving_us"]
            row["bench_unfused_us"] = b["unfused_us"]
            row["bench_fused_us"] = b["fused_us"]
        m = match_candidate(candidates, fusion) if ex is not None else None
        if m:
            cs = m["candidates"]
            inst = sum(c.get("instances") or 0 for c in cs)
            row["candidate"] = cs[0].get("id", "") + (f" (+{len(cs) - 1} more shapes)" if len(cs) > 1 else "")
            row["candidate_ids"] = [c.get("id", "") for c in cs]
            row["tokens"] = m["tokens"]
            row["coverage"] = m["coverage"]
            row["instances_fprof"] = inst
            # Instance-weighted over the matched candidates.
            if inst:
                row["unfused_us"] = sum((c.get("unfused_ns") or 0) * (c.get("instances") or 0) for c in cs) / inst / 1e3
            if inst and all(c.get("total_saving_ns") is not None for c in cs):
                row["predicted_us"] = sum(c["total_saving_ns"] for c in cs) / inst / 1e3
            elif cs[0].get("predicted_saving_ns") is not None:
                row["predicted_us"] = cs[0]["predicted_saving_ns"] / 1e3
            row["fuse"] = all(c.get("fuse") for c in cs)
        elif ex is not None:
            row["candidate"] = "(no candidate of fprof's is this chain)"
        rows.append(row)
    for row in rows:
        row["error_vs_kernels"] = rel_error(row.get("predicted_us"), row.get("measured_kernels_us"))
        row["error_vs_events"] = rel_error(row.get("predicted_us"), row.get("measured_events_us"))
        # The project's usual measure: the fused time's error, with fprof's unfused time of the chain.
        u, p, m = row.get("unfused_us"), row.get("predicted_us"), row.get("measured_kernels_us")
        if u and p is not None and m is not None and u - m > 0:
            row["fused_time_error"] = ((u - p) - (u - m)) / (u - m)
    return rows


def fmt(v, pct=False):
    if v is None:
        return "n/a"
    return f"{100 * v:+.0f}%" if pct else f"{v:.1f}"


def table_text(rows, results):
    out = []
    out.append("fprof fusion proof: predicted vs measured saving, us per region instance (per step for compile)")
    out.append(f"device: {results.get('device', '?')}; torch {results.get('torch', '?')}; fprof {results.get('fprof', '?')}")
    head = ["run", "candidate (stages)", "match", "inst fprof/exp", "predicted", "meas kernels", "meas events",
            "err kernels", "err events", "err fused t"]
    lines = [head]
    for r in sorted(rows, key=lambda r: (r["per"] != "instance", r["run"])):
        cand = r.get("tokens") or ""
        cand = f"{cand} {r.get('candidate', '')}"
        if len(cand) > 60:
            cand = cand[:57] + "..."
        inst = f"{r.get('instances_fprof', 'n/a')}/{r.get('instances_expected') or 'n/a'}" if r["per"] == "instance" else "-"
        lines.append([r["run"], cand, r.get("coverage", "-" if r["per"] == "step" else "none"), inst,
                      fmt(r.get("predicted_us")), fmt(r.get("measured_kernels_us")), fmt(r.get("measured_events_us")),
                      fmt(r.get("error_vs_kernels"), True), fmt(r.get("error_vs_events"), True),
                      fmt(r.get("fused_time_error"), True)])
    widths = [max(len(str(l[i])) for l in lines) for i in range(len(head))]
    for l in lines:
        out.append("  ".join(str(x).ljust(w) for x, w in zip(l, widths)).rstrip())
    exact = [r for r in rows if r["per"] == "instance" and r.get("coverage") == "exact"]
    for key, label in (("error_vs_kernels", "vs profile kernel times"), ("error_vs_events", "vs region benchmark"),
                       ("fused_time_error", "fused time, vs profile")):
        errs = [abs(r[key]) for r in exact if r.get(key) is not None]
        med = f"{100 * statistics.median(errs):.1f}%" if errs else "n/a"
        out.append(f"median |error| {label}, exact matches only: {med} over {len(errs)} fusions")
    missing = [r["run"] for r in rows if r["per"] == "instance" and r.get("coverage") is None]
    out.append(f"fusions without a matching fprof candidate: {len(missing)}" + (f" ({', '.join(missing)})" if missing else ""))
    return "\n".join(out)


# ---- Driving the GPU runs -----------------------------------------------------------------------

def last_json(text, key):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and key in line:
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                pass
    return None


def run_one(fprof, work, name, args, baseline, env, deadline):
    if time.time() > deadline:
        return name, {"args": args, "baseline": baseline, "skipped": "out of time"}
    db = os.path.join(work, name + ".fprof")
    cmd = [fprof, "run", "--force", "-o", db, sys.executable, os.path.join(HERE, "proof_run.py")] + args
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=max(30, min(300, deadline - t0 + 60)))
        text, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        as_text = [x.decode(errors="replace") if isinstance(x, bytes) else (x or "") for x in (e.stdout, e.stderr)]
        text, rc = "".join(as_text), "timeout"
    except OSError as e:
        text, rc = str(e), "failed"
    with open(os.path.join(work, name + ".log"), "w") as f:
        f.write(" ".join(cmd) + "\n" + text)
    return name, {"args": args, "baseline": baseline, "rc": rc, "seconds": round(time.time() - t0, 1), "db": name + ".fprof",
                  "result": last_json(text, '"proof_run"')}


def run_bench(work, env):
    cmd = [sys.executable, os.path.join(HERE, "proof_bench.py")]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        text, rc = p.stdout + p.stderr, p.returncode
    except (subprocess.TimeoutExpired, OSError) as e:
        text, rc = str(e), "failed"
    with open(os.path.join(work, "bench.log"), "w") as f:
        f.write(text)
    out = [json.loads(l) for l in text.splitlines() if l.startswith('{"proof_bench"')]
    print(f"proof: region benchmark rc={rc}, {len(out)} regions, {time.time() - t0:.0f} s", flush=True)
    return out


def gpu_runs(args):
    fprof = args.fprof
    work = tempfile.mkdtemp(prefix="fprof-proof-")
    env = dict(os.environ)
    env["PYTHONPATH"] = HERE + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PROOF_GPU_LOCK"] = os.path.join(work, "gpu.lock")
    env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"  # no compile workers: no extra processes, no extra files
    env["PYTHONUNBUFFERED"] = "1"
    specs = [s for s in run_specs() if not args.only or any(re.search(o, s[0]) for o in args.only)]
    deadline = time.time() + args.budget_s
    results = {"runs": {}, "bench": []}
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        bench = pool.submit(run_bench, work, env) if not args.no_bench else None
        # Longest first: torch.compile runs hold the GPU the longest.
        order = sorted(specs, key=lambda s: ("--compile" not in s[1], s[0]))
        futures = [pool.submit(run_one, fprof, work, n, a, b, env, deadline) for n, a, b in order]
        for f in concurrent.futures.as_completed(futures):
            name, r = f.result()
            results["runs"][name] = r
            res = r.get("result") or {}
            print(f"proof: {name}: rc={r.get('rc', r.get('skipped'))} {r.get('seconds', 0)} s, "
                  f"gpu phase {res.get('gpu_phase_s', '?')} s", flush=True)
        if bench:
            results["bench"] = bench.result()
    print(f"proof: all runs in {time.time() - t0:.0f} s", flush=True)
    any_run = next((r["result"] for r in results["runs"].values() if r.get("result")), {})
    results["device"] = any_run.get("device", "?")
    results["torch"] = any_run.get("torch", "?")
    return results, work


def analyse(results, dbdir, fprof, jobs):
    """Kernel times from the databases and fprof's candidates from its export, then the rows."""
    kernels, exports, notes = {}, {}, {}
    names = [n for n, r in results["runs"].items() if r.get("result") and os.path.exists(os.path.join(dbdir, r["db"]))]
    for n in names:
        try:
            kernels[n] = timed_kernels(os.path.join(dbdir, results["runs"][n]["db"]), results["runs"][n]["result"])
        except (sqlite3.Error, KeyError, ValueError) as e:
            notes[n] = f"kernel times unreadable: {e}"
    eager = sorted({r["baseline"] for r in results["runs"].values() if r.get("baseline")} & set(names))
    eager += [n for n in names if n.endswith("_emitnvtx")]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for n, (ex, err) in zip(eager, pool.map(lambda n: export_json(fprof, os.path.join(dbdir, n + ".fprof")), eager)):
            if ex is None:
                notes[n] = f"export failed: {err}"
            else:
                exports[n] = ex
    try:
        results["fprof"] = subprocess.run([fprof, "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        results["fprof"] = "?"
    results["kernels"] = kernels
    results["export_errors"] = notes
    results["top_candidates"] = {n: [{"id": c.get("id"), "stages": [token(s) for s in stage_texts(c)],
                                      "instances": c.get("instances"), "total_saving_ns": c.get("total_saving_ns"),
                                      "fuse": c.get("fuse"), "suspect": suspect(c)}
                                     for c in ex.get("fusion", {}).get("candidates", [])[:8]]
                                 for n, ex in exports.items()}
    results["rows"] = compute_rows(results, exports, kernels)
    return results


def suspect(c):
    """Pairs that would be spurious: one kernel feeding itself (the same function on both ends of
    a link: two layers, or a block the allocator handed out again), or fused attention feeding
    LayerNorm or the reverse, which always have a GEMM between them in these models. Stages are in
    launch order and a candidate need not be a chain (two producers may meet in one consumer), so
    the links say which stage fed which; without them, consecutive stages."""
    stages = c.get("stages", [])
    kernels = c.get("stage_kernels") or [[s] for s in stages]
    links = c.get("links")
    if links is None:
        links = [(i, i + 1) for i in range(len(stages) - 1)]
    for a, b in links:
        if kernels[a] == kernels[b]:
            return "same kernel on both ends of a link"
        ta, tb = token(stages[a]), token(stages[b])
        if (ta, tb) in (("F", "L"), ("L", "F")):
            return "attention next to LayerNorm"
    return ""


def top_text(results):
    out = ["", "fprof's top candidates per eager profile (stage letters: G gemm, S softmax, L layernorm, A add, "
           "M mul/div, K mask, U gelu/tanh/pow, C copy, F fused attention, E other pointwise, X other):"]
    for n, cands in sorted(results.get("top_candidates", {}).items()):
        out.append(f"  {n}")
        for c in cands[:5]:
            s = (c["total_saving_ns"] or 0) / 1e3
            flag = f"  <- suspect: {c['suspect']}" if c.get("suspect") else ""
            out.append(f"    {''.join(c['stages']):<10} x{c['instances']:<5} saves {s:8.1f} us  {str(c['id'])[:80]}{flag}")
    for n, err in sorted(results.get("export_errors", {}).items()):
        out.append(f"  {n}: {err}")
    for b in results.get("bench", []):
        if not b.get("same_result"):
            out.append(f"  region benchmark {b['proof_bench']} {b['dtype']} {b['fusion']}: fused result differs "
                       f"(max abs diff {b['max_abs_diff']:.3g})")
    sizes = results.get("db_sizes", {})
    if sizes:
        big = {n: s for n, s in sizes.items() if s > 2 * 1024 * 1024}
        out.append(f"databases: {len(sizes)}, largest {max(sizes.values()) / 1e6:.2f} MB" +
                   (f"; over 2 MiB: {', '.join(sorted(big))}" if big else ""))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/fprof-proof"))
    ap.add_argument("--fprof", default=None, help="fprof binary (default: $FPROF_BUILD/bin/fprof, else build/bin/fprof)")
    ap.add_argument("--from", dest="from_dir", metavar="DIR",
                    help="recompute the table from DIR/proof_results.json and DIR's .fprof files (or its proof_fprof.tar.gz)")
    ap.add_argument("--jobs", type=int, default=4, help="runs at a time (their GPU work never overlaps)")
    ap.add_argument("--budget-s", type=int, default=360, help="start no run after this many seconds")
    ap.add_argument("--only", action="append", help="regex of run names to do (repeatable)")
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--pairs", action="store_true",
                    help="only the before/after pairs (PAIRS), no region benchmark; then fprof diff on each pair")
    args = ap.parse_args()
    if args.pairs:
        runs = sorted({n for pair in PAIRS for n in pair})
        args.only = (args.only or []) + ["^(" + "|".join(runs) + ")$"]
        args.no_bench = True
    if args.fprof is None:
        args.fprof = os.path.join(os.environ.get("FPROF_BUILD", os.path.join(ROOT, "build")), "bin", "fprof")
    if not os.path.exists(args.fprof):
        raise SystemExit(f"proof: no fprof at {args.fprof}; build it or pass --fprof / FPROF_BUILD")

    if args.from_dir:
        with open(os.path.join(args.from_dir, "proof_results.json")) as f:
            results = json.load(f)
        dbdir = args.from_dir
        tar = os.path.join(args.from_dir, "proof_fprof.tar.gz")
        if os.path.exists(tar):
            dbdir = tempfile.mkdtemp(prefix="fprof-proof-")
            with tarfile.open(tar) as t:
                try:
                    t.extractall(dbdir, filter="data")
                except TypeError:  # Python before 3.11.4: no filter argument
                    t.extractall(dbdir)
        results = analyse(results, dbdir, args.fprof, args.jobs)
        print(top_text(results))
        print(table_text(results["rows"], results))
        if args.pairs:
            os.makedirs(args.out, exist_ok=True)
            print(pair_diffs(args.fprof, dbdir, args.out))
        return

    try:
        import torch  # noqa: F401  (checked here so a machine without it fails in one line)
    except ImportError as e:
        raise SystemExit(f"proof: PyTorch is needed for the GPU runs ({e})")
    os.makedirs(args.out, exist_ok=True)
    results, work = gpu_runs(args)
    dbs = [r["db"] for r in results["runs"].values() if r.get("result") and os.path.exists(os.path.join(work, r["db"]))]
    results["db_sizes"] = {d: os.path.getsize(os.path.join(work, d)) for d in dbs}
    results = analyse(results, work, args.fprof, args.jobs)
    with tarfile.open(os.path.join(args.out, "proof_fprof.tar.gz"), "w:gz") as t:
        for d in sorted(dbs):
            t.add(os.path.join(work, d), arcname=d)
    with tarfile.open(os.path.join(args.out, "proof_logs.tar.gz"), "w:gz") as t:
        for f in sorted(os.listdir(work)):
            if f.endswith(".log"):
                t.add(os.path.join(work, f), arcname=f)
    with open(os.path.join(args.out, "proof_results.json"), "w") as f:
        json.dump(results, f, indent=1)
    text = top_text(results) + "\n\n" + table_text(results["rows"], results)
    with open(os.path.join(args.out, "proof_table.txt"), "w") as f:
        f.write(text + "\n")
    failed = [n for n, r in results["runs"].items() if not r.get("result")]
    if failed:
        print("proof: runs without a result (see proof_logs.tar.gz): " + ", ".join(sorted(failed)))
        for n in sorted(failed)[:3]:
            log = os.path.join(work, n + ".log")
            if os.path.exists(log):
                print(f"--- {n}.log (tail)\n" + open(log).read()[-1500:])
    print(text)
    if args.pairs:
        print(pair_diffs(args.fprof, work, args.out))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
