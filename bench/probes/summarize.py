#!/usr/bin/env python3
"""Answer tables of bench/probes/run_probes.sh from its logs directory (all.log, sass_probe.sass).

    summarize.py LOGS_DIR [--compact]     (--compact: what run_probes.sh prints last, under 12,000 characters)
"""
import collections
import csv
import io
import json
import os
import re
import statistics
import sys

MB = 1e6
THREADS_PER_LAUNCH = 1024 * 256  # sass_kernels.h: kGrid x kBlock
ANALYTIC_LANES = {  # kernel -> (opcode, instructions per thread per launch)
    "k_ffma64": ("FFMA", 64),
    "k_hfma2x64": ("HFMA2", 64),
    "k_dfma32": ("DFMA", 32),
    "k_hfma64": ("HFMA2", 64),
}


def read_steps(path):
    steps = []
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"@@step (\S+) rc=(-?\d+) s=([\d.]+)", line)
            if m:
                cur = {"name": m.group(1), "rc": int(m.group(2)), "s": float(m.group(3)), "lines": [], "rows": []}
                steps.append(cur)
                continue
            if cur is None:
                continue
            cur["lines"].append(line)
            if line.startswith("@json "):
                try:
                    row = json.loads(line[6:])
                    row["_step"] = cur["name"]
                    cur["rows"].append(row)
                except json.JSONDecodeError:
                    pass
    return steps


def cupti_errors(step):
    errs = []
    for line in step["lines"]:
        m = re.match(r"\s+cupti (\S+) -> (.*)", line)
        if m and m.group(0).strip() not in errs:
            errs.append(m.group(0).strip()[6:])
    return errs


def squeeze(names, width=48):
    out, prev, n = [], None, 0
    for name in names + [None]:
        if name == prev:
            n += 1
            continue
        if prev is not None:
            short = prev if len(prev) <= width else prev[: width - 3] + "..."
            out.append(f"{n}x {short}" if n > 1 else short)
        prev, n = name, 1
    return "; ".join(out)


def q1_notes(r):
    notes = []
    bad = [x for x in r["launch_results"].split(",") if x and not x.endswith(":OK")]
    if bad:
        notes.append("launch " + ", ".join(sorted(set(bad)))[:100])
    if r["sync"] != "cudaSuccess":
        notes.append("sync " + r["sync"])
    if r["dropped"]:
        notes.append(f"{r['dropped']} dropped")
    if r["scenario"].startswith("two_threads"):
        notes.append("order as launch ENTER: " + ("yes" if r["thread_order_matches"] else "NO"))
    apis = sorted({l.split()[1] for l in r["launches"] if len(l.split()) > 1})
    if apis:
        notes.append("APIs " + ",".join(apis))
    notes.append(f"{r['ms']:.0f} ms")
    return "; ".join(notes)


def q1(steps, compact):
    print("Q1/Q4  range profiler (auto range, kernel replay): ranges per launch kind, range names, call results")
    print(f"{'scenario':36s} {'cupti':>6s} {'p':>2s} {'ranges':>7s}  names in order | notes")
    baseline = {}  # scenario -> (ranges, names) of the toolkit CUPTI's one-pass run
    example = None
    for st in steps:
        if not st["name"].startswith("q1-") or st["name"].startswith("q1-cost"):
            continue
        setup = next((r for r in st["rows"] if r.get("table") == "q1setup"), None)
        if setup is None or not setup.get("ok"):
            print(f"{st['name']:36s} setup FAILED or no output: exit {st['rc']}; {'; '.join(cupti_errors(st))[:110]}")
            continue
        is_base = st["name"].endswith("-one") and "-new-" not in st["name"]
        same = 0
        for r in [x for x in st["rows"] if x.get("table") == "q1"]:
            key = (r["ranges"], squeeze(r["names"]))
            if is_base:
                baseline[r["scenario"]] = key
            elif compact and baseline.get(r["scenario"]) == key:
                same += 1
                continue
            mark = "" if r["ranges"] == r["expected"] else " <-- differs"
            line = (f"{r['scenario'][:36]:36s} {str(setup['cupti'])[-6:]:>6s} {r['passes']:2d} "
                    f"{r['ranges']:3d}/{r['expected']:<3d}  {squeeze(r['names'], 30)[:(44 if compact else 160)]}{mark}")
            if compact:
                notes = q1_notes(r)
                keep = [n for n in notes.split("; ") if n.startswith(("launch", "sync", "order", "dropped"))]
                print(f"{line}{' | ' + '; '.join(keep)[:60] if keep else ''}")
            else:
                print(line)
                print(f"{'':36s} {'':>6s} {'':>2s} {'':7s}  {q1_notes(r)}")
            if example is None and r["names"]:
                example = r["names"][0]
        if same:
            print(f"{st['name']:36s} {str(setup['cupti'])[-6:]:>6s} {setup['passes']:2d}  {same} scenarios as in the one-pass run")
        errs = cupti_errors(st)
        if errs:
            print(f"{'':10s} CUPTI errors in {st['name']}: {'; '.join(errs)[:(90 if compact else 300)]}")
    if example:
        print(f"example range name, verbatim: {example!r}")
    print()
    print("Q1  cost per kernel")
    print(f"{'mode':40s} {'step':18s} {'p':>2s} {'ms/kernel':>9s} {'native':>7s} {'ranges':>7s}")
    for st in steps:
        for r in st["rows"]:
            if r.get("table") == "q1cost":
                print(f"{r['mode'][:40]:40s} {st['name'][:18]:18s} {r['passes']:2d} {r['ms_per_kernel']:9.2f} "
                      f"{r['native_ms_per_kernel']:7.3f} {r['ranges']:3d}/{r['kernels']}")
    print()


def ncu_rows(step):
    text = "\n".join(step["lines"])
    start = text.find('"ID"')
    rows = collections.defaultdict(dict)  # (kernel, round) -> metric -> value
    if start < 0:
        return rows
    seen = collections.Counter()
    ids = {}
    for r in csv.DictReader(io.StringIO(text[start:])):
        try:
            v = float(r["Metric Value"].replace(",", ""))
        except (KeyError, ValueError, AttributeError):
            continue
        name = r.get("Kernel Name", "")
        kernel = next((k for k in ("axpy", "relu", "sgemm") if k in name), name)
        if r["ID"] not in ids:
            ids[r["ID"]] = (kernel, seen[kernel])
            seen[kernel] += 1
        rows[ids[r["ID"]]][r["Metric Name"]] = v
    return rows


def q2(steps, compact):
    print("Q2  DRAM bytes per kernel, MB (mean of 3 rounds; [min-max] when rounds differ by more than 2%)")
    table = []  # (label, passes, {kernel: (reads, writes)})
    table.append(("analytic minimum", "", {"axpy": ([33.554432], [16.777216]), "relu": ([16.777216], [16.777216]),
                                           "sgemm": ([8.388608], [4.194304])}))
    for st in steps:
        if st["name"].startswith("ncu-"):
            rows = ncu_rows(st)
            per = collections.defaultdict(lambda: ([], []))
            for (kernel, _), m in sorted(rows.items()):
                if "dram__bytes_read.sum" in m:
                    per[kernel][0].append(m["dram__bytes_read.sum"] / MB)
                    per[kernel][1].append(m.get("dram__bytes_write.sum", float("nan")) / MB)
            label = st["name"].replace("ncu-one", "ncu 4 metrics").replace("ncu-roofline", "ncu 24 metrics")
            label = label.replace("-none", " --cache-control none").replace("-all", " --cache-control all")
            if not per:
                label += f" (no values: exit {st['rc']})"
            table.append((label, "", per))
    for st in steps:
        per = collections.defaultdict(lambda: ([], []))
        label, passes = None, ""
        for r in st["rows"]:
            if r.get("table") == "q2setup" and not r.get("ok"):
                table.append((f"{st['name']}: setup FAILED {'; '.join(cupti_errors(st))[:80]}", "", {}))
            if r.get("table") != "q2":
                continue
            label = "probe " + r["config"].replace("cupti ", "").replace(" cache_control=-1", "")
            label = label.replace("cache_control=0", "cc=none").replace("cache_control=1", "cc=ALL")
            label = label.replace("cache_control=2", "cc=L2").replace("roofline", "roof")
            passes = str(r["passes"])
            if r["dram_read"] is not None and r["dram_write"] is not None:
                per[r["kernel"]][0].append(r["dram_read"] / MB)
                per[r["kernel"]][1].append(r["dram_write"] / MB)
        if label:
            table.append((label, passes, per))
    # Which ncu policy each row agrees with: all 6 values within 2%, or 0.2 MB when small.
    refs = {("none" if "none" in label else "all"): per for label, _, per in table if label.startswith("ncu 4 metrics")}

    def agrees(per):
        out = []
        for name, ref in sorted(refs.items(), reverse=True):
            ok = True
            for k in ("axpy", "relu", "sgemm"):
                for i in (0, 1):
                    a, b = per.get(k, ([], []))[i], ref.get(k, ([], []))[i]
                    if not a or not b or abs(statistics.mean(a) - statistics.mean(b)) > max(0.02 * abs(statistics.mean(b)), 0.2):
                        ok = False
            if ok:
                out.append(name)
        return ",".join(out) or "-"

    w, lw = (13, 38) if compact else (17, 46)
    print(f"{'source':{lw}s} {'pass':>4s}  " + " ".join(f"{k + ' rd':>{w}s} {k + ' wr':>{w}s}" for k in ("axpy", "relu", "sgemm"))
          + "  = ncu")

    def cell(vals):
        if not vals:
            return "-".rjust(w)
        m = statistics.mean(vals)
        if max(vals) - min(vals) > 0.02 * max(abs(m), 0.05):
            return (f"{m:.1f}({min(vals):.0f}-{max(vals):.0f})" if compact else
                    f"{m:.2f}({min(vals):.1f}-{max(vals):.1f})").rjust(w)
        return f"{m:{w}.3f}"

    for label, passes, per in table:
        cells = []
        for k in ("axpy", "relu", "sgemm"):
            rd, wr = per.get(k, ([], []))
            cells += [cell(rd), cell(wr)]
        verdict = agrees(per) if label.startswith(("probe", "ncu 24")) else ""
        print(f"{label[:lw]:{lw}s} {passes:>4s}  " + " ".join(cells) + f"  {verdict}")
    print("(= ncu: the ncu --cache-control policy, 4-metric run, whose 6 values the row matches within 2% or 0.2 MB)")
    for st in steps:
        alt = [r for r in st["rows"] if r.get("table") == "q2alt"]
        if alt:
            print(f"alternating configurations ({st['name']}), the FLOP configuration's rounds ({alt[0]['passes']} passes): "
                  + ", ".join(f"{r['range_name'][:24]} ffma={r['ffma']:.0f}" for r in alt)
                  + " (analytic ffma: axpy 4194304, relu 0, sgemm 1073741824)")
    print()


def q3(steps, sass_path, compact):
    print("Q3  SASS Metrics API: per-PC counts for every function? (5 functions in 3 modules; exact = every PC")
    print("    executed once per warp per launch, thread count 32x)")
    if compact:
        print(f"{'variant (-EAGER: CUDA_MODULE_LOADING)':28s} {'cupti':>6s} {'exact':>5s} {'fns':>4s}  {'functions with any records':34s} errors")
    else:
        print(f"{'variant':28s} {'loading':8s} {'cupti':>6s} {'flushes':>8s} {'exact fns':>9s}  first flushes: got (records)   errors")
    for st in steps:
        if not st["name"].startswith("q3-"):
            continue
        run = next((r for r in st["rows"] if r.get("table") == "q3run"), None)
        flushes = [r for r in st["rows"] if r.get("table") == "q3"]
        errs = "; ".join(cupti_errors(st))
        name = st["name"][3:]
        if run is None:
            print(f"{name:28s} no result: exit {st['rc']} after {st['s']:.0f} s; {errs[:100]}; "
                  f"last: {(st['lines'][-1] if st['lines'] else '')[:80]}")
            continue
        loading = "EAGER" if "EAGER" in run["module_loading"] else "lazy"
        got = " | ".join(f"{f['got'] or '-'} ({f['filled']})" for f in flushes[:4])
        if compact:
            union = []
            for f in flushes:
                union += [g.replace("k_", "") for g in f["got"].split() if g.replace("k_", "") not in union]
            print(f"{name[:28]:28s} {str(run['cupti'])[-6:]:>6s} {run['exact_flushes']:2d}/{run['flushes']:<2d} "
                  f"{run['exact_function_count']:2d}/5  {','.join(union)[:34] or '-':34s} {errs[:22]}")
        else:
            print(f"{name:28s} {loading:8s} {str(run['cupti'])[-6:]:>6s} {run['exact_flushes']:3d}/{run['flushes']:<4d} "
                  f"{run['exact_function_count']:5d}/5   {got[:90]}   {errs[:200]}")
    metrics_line = next((l for st in steps for l in st["lines"] if "SASS metrics on" in l), None)
    if metrics_line:
        print("SASS metrics:", metrics_line.strip()[:(100 if compact else 3000)])
    print()
    if not os.path.exists(sass_path):
        print("(no cuobjdump output: FLOPs per lane not joined)")
        return
    # FLOPs per lane: join the first exact per-PC counts of each kernel with the cubin's opcodes.
    functions, cur = {}, None
    with open(sass_path, errors="replace") as f:
        for line in f:
            m = re.match(r"\s+Function : (\S+)", line)
            if m:
                cur = functions.setdefault(m.group(1), {})
                continue
            m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*?);", line)
            if m and cur is not None:
                cur[int(m.group(1), 16)] = (m.group(2), (m.group(2) + m.group(3)).strip())
    pcs = collections.defaultdict(dict)  # (step, function) -> pc -> (inst, thread, launches)
    for st in steps:
        for line in st["lines"]:
            if line.startswith("@pc "):
                _, variant, fn, pc, inst, thread, launches = line.split()
                key = (st["name"], fn)
                if int(pc) not in pcs[key]:
                    pcs[key][int(pc)] = (int(inst), int(thread), int(launches))
    print("Q3  FLOPs per lane from per-PC counts x cuobjdump opcodes (per launch)")
    for kernel, (opcode, per_thread) in ANALYTIC_LANES.items():
        fn = next((f for f in functions if kernel in f), None)
        # Prefer a flush whose executed PCs all have one count (straight-line code: each PC once per warp).
        candidates = [v for (_, f), v in pcs.items() if kernel in f and v]
        data = next((v for v in candidates if len({i for i, _, _ in v.values() if i}) == 1),
                    candidates[0] if candidates else None)
        if not fn or not data:
            print(f"  {kernel:12s} no {'per-PC data' if fn else 'SASS'}")
            continue
        sass = functions[fn]
        offs = sorted(data)
        shift = 0 if all(o in sass for o in offs) else offs[0]
        per_op = collections.Counter()
        texts = set()
        launches = max(1, max(v[2] for v in data.values()))
        for o, (inst, thread, _) in data.items():
            op, text = sass.get(o - shift, ("?", "?"))
            per_op[op.split(".")[0]] += thread / launches
            if op.startswith(opcode):
                texts.add(re.sub(r"R\d+", "R", text))
        got = per_op.get(opcode, 0)
        expect = per_thread * THREADS_PER_LAUNCH
        print(f"  {kernel:12s} {opcode} thread instructions {got:,.0f} (analytic {expect:,}): "
              f"{'EXACT' if got == expect else 'differs'}; forms: {' | '.join(sorted(texts))[:110]}")
    print()


def main():
    compact = "--compact" in sys.argv
    logs = [a for a in sys.argv[1:] if not a.startswith("--")][0]
    steps = read_steps(os.path.join(logs, "all.log"))
    env = next((s for s in steps if s["name"] == "env"), None)
    if env:
        print("device:", " / ".join(l.strip() for l in env["lines"][:1]))
    q1(steps, compact)
    q2(steps, compact)
    q3(steps, os.path.join(logs, "sass_probe.sass"), compact)
    failed = [f"{s['name']} (exit {s['rc']})" for s in steps if s["rc"] != 0]
    text = ", ".join(failed) if failed else "none"
    print("steps that did not exit 0:", text[:400] + (" ..." if compact and len(text) > 400 else "") if compact else text)


if __name__ == "__main__":
    main()
