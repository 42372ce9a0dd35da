#!/usr/bin/env bash
# Trace-mode overhead where launches are many and small, in one device call:
#   - the reference transformer (`model --ops transformer --variant both --no-copy-bandwidth
#     --repeat 5`, fp16): prefill and decode times as the program prints them (CUDA events),
#     natively and under `fprof run`, alternated ROUNDS times;
#   - a PyTorch loop of one small kernel per iteration (bench/torch_loop.py), with and without one
#     NVTX range per kernel: natively, under `fprof run`, and under torch.profiler (Kineto);
#   - one more `fprof run` of each with FPROF_SELF_TIMING=1: where the collector's time goes, and
#     the final database write at exit on its own;
#   - with DIAGNOSE=1 (default), single runs of the model that switch CUPTI's parts off one at a
#     time (NVTX through CUPTI's layer as before, with and without callbacks; no NVTX injection;
#     the periodic cuptiActivityFlushAll; activity kinds) and a bare-CUPTI library, so what
#     remains can be put on CUPTI or on fprof.
# Every profile's kernels and NVTX ranges are checked against the program's own counts. A short
# ratio table comes last; the summary and a log archive go to $OUT.
#
#   FPROF_BUILD=build-gpu bench/decode_overhead.sh        ROUNDS=3 TORCH_ITERS=30000 DIAGNOSE=1 BUDGET_S=480
#
# Within BUDGET_S seconds the summary is always printed: later rounds, the diagnostics and the
# self-timing runs are skipped (and said so) when time runs short.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
build=${FPROF_BUILD:-build}
case $build in /*) ;; *) build=$PWD/$build ;; esac  # injected libraries need absolute paths
fprof=$build/bin/fprof
model=$build/bin/model
collector=$build/lib/libfprof_collector.so
baseline=$build/lib/libtrace_overhead_cupti_baseline.so
rounds=${ROUNDS:-3}
iters=${TORCH_ITERS:-30000}
diagnose=${DIAGNOSE:-1}
budget=${BUDGET_S:-480}
SECONDS=0
time_left() { [ $((budget - SECONDS)) -gt "$1" ]; }  # time_left S: more than S seconds of budget left
work=${DECODE_OVERHEAD_DIR:-/tmp/decode_overhead}  # databases and logs; only the summary goes to OUT
out=${OUT:-$work/out}
rm -rf "$work"
mkdir -p "$work/logs" "$out"
for f in "$fprof" "$model" "$collector"; do
  [ -e "$f" ] || { echo "decode_overhead: $f missing; build fprof, fprof_collector, fprof_preload and model"; exit 2; }
done
if ! nvidia-smi -L >/dev/null 2>&1; then echo "decode_overhead: no GPU; nothing measured"; exit 77; fi
have_torch=1
python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1 || have_torch=0

model_args=(--ops transformer --variant both --no-copy-bandwidth --repeat 5 --dtype fp16)
runs=$work/runs.tsv  # label, round, exit code, wall seconds, log, database
: >"$runs"
run() {  # run LABEL ROUND DB COMMAND...: one timed run, its log and database remembered
  local label=$1 round=$2 db=$3
  shift 3
  local log=$work/logs/$label.$round.log t0 t1 rc
  t0=$(date +%s.%N)
  timeout 120 "$@" >"$log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$round" "$rc" "$(python3 -c "print(round($t1 - $t0, 3))")" "$log" "$db" >>"$runs"
  [ "$rc" = 0 ] || echo "decode_overhead: $label (round $round) exited with $rc; see $log"
}
fprof_run() {  # fprof_run LABEL ROUND COMMAND...
  local label=$1 round=$2
  shift 2
  run "$label" "$round" "$work/$label.$round.fprof" "$fprof" run --force -o "$work/$label.$round.fprof" "$@"
}
torch_cases=()
[ "$have_torch" = 1 ] && torch_cases=(plain nvtx)
torch_args() { [ "$1" = nvtx ] && echo "--iters $iters --nvtx" || echo "--iters $iters"; }

# What a round may not eat into: the self-timing runs and the summary, and the diagnostics.
reserve=$([ "$diagnose" = 1 ] && echo 240 || echo 70)
for round in $(seq "$rounds"); do
  if [ "$round" -gt 1 ] && ! time_left "$reserve"; then echo "decode_overhead: $((round - 1)) rounds only (budget)"; break; fi
  run model.native "$round" - "$model" "${model_args[@]}"
  fprof_run model.fprof "$round" "$model" "${model_args[@]}"
  for case in "${torch_cases[@]}"; do
    # shellcheck disable=SC2046
    run "torch.$case.native" "$round" - python3 bench/torch_loop.py $(torch_args "$case")
    # shellcheck disable=SC2046
    fprof_run "torch.$case.fprof" "$round" python3 bench/torch_loop.py $(torch_args "$case")
    # shellcheck disable=SC2046
    run "torch.$case.kineto" "$round" - python3 bench/torch_loop.py $(torch_args "$case") --kineto
  done
done

# Where the time goes: the collector's own timers (stderr and metadata self_timing).
if time_left $([ "$diagnose" = 1 ] && echo 150 || echo 25); then
  FPROF_SELF_TIMING=1 fprof_run model.selftiming 1 "$model" "${model_args[@]}"
  # shellcheck disable=SC2046
  [ "$have_torch" = 1 ] && FPROF_SELF_TIMING=1 fprof_run torch.nvtx.selftiming 1 python3 bench/torch_loop.py $(torch_args nvtx)
else
  echo "decode_overhead: no self-timing runs (budget)"
fi

if [ "$diagnose" = 1 ] && ! time_left 120; then echo "decode_overhead: no diagnostic runs (budget)"; diagnose=0; fi
if [ "$diagnose" = 1 ]; then
  # NVTX through CUPTI's NVTX layer and callbacks (FPROF_NVTX_INJECTION=cupti), then through
  # CUPTI's layer with no callbacks asked for.
  FPROF_NVTX_INJECTION=cupti fprof_run model.diag-nvtx-through-cupti 1 "$model" "${model_args[@]}"
  FPROF_NVTX_INJECTION=cupti FPROF_NVTX_CALLBACKS=0 fprof_run model.diag-cupti-nvtx-no-callbacks 1 "$model" "${model_args[@]}"
  # shellcheck disable=SC2046
  [ "$have_torch" = 1 ] && FPROF_NVTX_INJECTION=cupti fprof_run torch.nvtx.diag-nvtx-through-cupti 1 \
    python3 bench/torch_loop.py $(torch_args nvtx)
  FPROF_CUPTI_FLUSH_ALL=0 fprof_run model.diag-no-periodic-flushall 1 "$model" "${model_args[@]}"
  FPROF_ACTIVITY=kernel fprof_run model.diag-kernel-activity-only 1 "$model" "${model_args[@]}"
  FPROF_ACTIVITY=none fprof_run model.diag-no-activity 1 "$model" "${model_args[@]}"
  # The collector without NVTX injection: NVTX calls stay no-ops, as natively.
  run model.diag-no-nvtx-injection 1 "$work/diag-no-nvtx-injection.fprof" env CUDA_INJECTION64_PATH="$collector" \
    FPROF_OUTPUT="$work/diag-no-nvtx-injection.fprof" FPROF_FORCE=1 "$model" "${model_args[@]}"
  if [ -e "$baseline" ]; then
    run model.diag-cupti-activity 1 - env CUDA_INJECTION64_PATH="$baseline" TRACE_BASELINE=activity "$model" "${model_args[@]}"
    run model.diag-cupti-callbacks 1 - env CUDA_INJECTION64_PATH="$baseline" TRACE_BASELINE=callbacks "$model" "${model_args[@]}"
  fi
fi

device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)
PYTHONPATH=bench python3 - "$runs" "$device" "$iters" >"$work/summary.txt" <<'PY'
import re, sqlite3, statistics, sys

from bench_logs import model_times, text, torch_result

runs_path, device, iters = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = [line.rstrip("\n").split("\t") for line in open(runs_path)]
failed = []


def q(db, sql):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


by = {}
for label, rnd, rc, wall, log, db in runs:
    by.setdefault(label, []).append({"round": rnd, "rc": int(rc), "wall": float(wall), "log": log, "db": db})
    if int(rc) != 0:
        failed.append(f"{label} round {rnd}: exit {rc}")

print(f"decode_overhead on {device}")
print()
print("== counts: profile against the program's own")
for label, rs in sorted(by.items()):
    if label.startswith("model.diag-"):
        continue  # parts of CUPTI switched off: nothing complete to count
    for r in rs:
        if r["db"] == "-" or r["rc"] != 0:
            continue
        db = r["db"]
        try:
            dropped = q(db, "select value from metadata where key='dropped_records'")
            dropped = dropped[0][0] if dropped else "?"
            warnings = [m for (m,) in q(db, "select message from collector_event where severity='warning'")]
            note = f", dropped records {dropped}" + (f", warnings: {warnings}" if warnings else "")
            if label.startswith("model"):
                pushed = re.search(r"model: (\d+) NVTX ranges pushed", text(r["log"]))
                want = int(pushed.group(1)) if pushed else None
                ranges = q(db, "select count(*) from nvtx_range where push_pop=1 and domain='fprof'")[0][0]
                kernels = q(db, "select count(*) from kernel")[0][0]
                per_step = {}
                for variant in ("unfused", "fused"):
                    n = q(db, "select count(*) from kernel k join string p on p.id=k.nvtx_path_id "
                              f"where p.value like 'fprof::op=decode/%' and p.value like '%variant={variant} %'")[0][0]
                    per_step[variant] = n / (6 * 32)  # --warmup 1 (the transformer's default) + --repeat 5, 32 steps
                ok = ranges == want and per_step["unfused"] == 150 and per_step["fused"] == 84 and dropped == "0"
                print(f"  {'ok  ' if ok else 'FAIL'} {label} r{r['round']}: {kernels} kernels, {ranges} ranges "
                      f"(the program pushed {want}); kernels per decode step, unfused {per_step['unfused']:g} and "
                      f"fused {per_step['fused']:g} (the program makes 150 and 84: 142 and 76 in the layers, 8 in sampling){note}")
            else:
                res = torch_result(r["log"]) or {}
                adds = q(db, "select count(*) from kernel k join string s on s.id=k.demangled_id "
                             "where s.value like '%add%' and s.value not like '%ill%'")[0][0]
                ranges = q(db, "select count(*) from nvtx_range where message='op=add'")[0][0]
                ok = adds == res.get("add_kernels") and ranges == res.get("nvtx_ranges") and dropped == "0"
                print(f"  {'ok  ' if ok else 'FAIL'} {label} r{r['round']}: {adds} add kernels (the program launched "
                      f"{res.get('add_kernels')}), {ranges} op=add ranges (pushed {res.get('nvtx_ranges')}){note}")
            if not ok:
                failed.append(f"{label} round {r['round']}: counts")
        except sqlite3.Error as e:
            print(f"  FAIL {label} r{r['round']}: {db}: {e}")
            failed.append(f"{label}: unreadable database")

for label in ("model.selftiming", "torch.nvtx.selftiming"):
    if label not in by:
        continue
    print()
    print(f"== self-timing, {label} (FPROF_SELF_TIMING=1; ns/launch = total / launches)")
    for line in text(by[label][0]["log"]).splitlines():
        if "self-timing:" in line:
            print("  " + line.split("self-timing:", 1)[1].rstrip())


def med(label, key):
    """Median over a label's successful runs of the process wall time ("wall"), a model phase
    ((variant, phase) in ms) or a torch_loop field."""
    vals = []
    for r in by.get(label, []):
        if r["rc"] != 0:
            continue
        if key == "wall":
            v = r["wall"]
        elif label.startswith("model"):
            v = model_times(r["log"]).get(key)
        else:
            v = (torch_result(r["log"]) or {}).get(key)
        if v is not None:
            vals.append(v)
    return statistics.median(vals) if vals else None


diag = sorted(l for l in by if l.startswith("model.diag-"))
if diag:
    print()
    print("== diagnostics: one run each, decode ms (unfused / fused) against the native median")
    nu, nf = med("model.native", ("unfused", "decode")), med("model.native", ("fused", "decode"))
    for label in ["model.fprof"] + diag:
        u, f = med(label, ("unfused", "decode")), med(label, ("fused", "decode"))
        if u is None or f is None or not nu or not nf:
            print(f"  {label:36s} n/a")
            continue
        print(f"  {label:36s} {u:8.2f} ms {u / nu:6.2f}x   {f:8.2f} ms {f / nf:6.2f}x")
    n = med("torch.nvtx.native", "us_per_kernel")
    for label in ("torch.nvtx.fprof", "torch.nvtx.diag-nvtx-through-cupti"):
        v = med(label, "us_per_kernel")
        if v is not None and n:
            print(f"  {label:36s} {v:8.3f} us/kernel {v / n:6.2f}x (torch loop + NVTX)")

for label in ("model.selftiming", "torch.nvtx.selftiming"):
    if label not in by:
        continue
    log = text(by[label][0]["log"])
    final = re.search(r"final_write\s+([0-9.]+)", log)
    close = re.search(r"closing the database[^:]*: ([0-9.]+) ms", log)
    if final:
        print(f"== final database write at exit, {label}: {float(final.group(1)):.0f} ms writing what was "
              f"still queued, then {float(close.group(1)) if close else float('nan'):.0f} ms closing the file "
              "(indexes, WAL checkpoint)")

print()
print("== whole process (start-up, run, and for fprof the final database write), median seconds")
for a, b in (("model.native", "model.fprof"), ("torch.plain.native", "torch.plain.fprof"),
             ("torch.nvtx.native", "torch.nvtx.fprof")):
    wa, wb = med(a, "wall"), med(b, "wall")
    if wa and wb:
        print(f"  {b:20s} {wb:7.2f} s vs native {wa:7.2f} s ({wb / wa:.2f}x)")

print()
print(f"== ratio table (median of {max(len(by.get('model.native', [])), 1)} rounds, alternated; fprof run = trace mode)")
print(f"{'case':34s} {'native':>10s} {'fprof':>10s} {'ratio':>7s} {'target':>7s} {'kineto':>10s} {'ratio':>7s}")
rows = []
for variant in ("unfused", "fused"):
    for phase, target in (("decode", 1.10), ("prefill", 1.03)):
        n, f = med("model.native", (variant, phase)), med("model.fprof", (variant, phase))
        rows.append((f"transformer {phase} {variant} (ms)", n, f, target, None))
for case, target, name in (("plain", 1.10, "torch loop (us/kernel)"), ("nvtx", 1.20, "torch loop + NVTX (us/kernel)")):
    n, f, k = (med(f"torch.{case}.{m}", "us_per_kernel") for m in ("native", "fprof", "kineto"))
    rows.append((name, n, f, target, k))
for name, n, f, target, k in rows:
    if n is None or f is None:
        print(f"{name:34s} {'n/a':>10s}")
        continue
    ratio = f / n
    mark = "" if ratio <= target else "  MISSED"
    kin = f"{k:10.3f} {k / n:7.3f}" if k else ""
    print(f"{name:34s} {n:10.3f} {f:10.3f} {ratio:7.3f} {target:7.2f} {kin}{mark}")
if failed:
    print("failures: " + "; ".join(failed))
    sys.exit(1)
PY
status=$?
cp "$work/summary.txt" "$out/decode_overhead.txt"
tar -C "$work" -czf "$out/decode_overhead_logs.tar.gz" logs runs.tsv summary.txt
cat "$work/summary.txt"
exit $status
