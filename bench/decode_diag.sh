#!/usr/bin/env bash
# Where the trace-mode overhead on the reference transformer's decode comes from (issue 17), in
# one device call: the model natively and under `fprof run` with the collector's parts switched
# off one at a time (FPROF_* measurement switches, docs/overhead.md), alternated ROUNDS times so
# that run-to-run spread shows; a bare-CUPTI library for reference; a few PyTorch-loop runs; one
# self-timing run of each program (per-call medians); the CPU benchmark of the callback path on
# the same machine; and a check of which launches keep their launch facts when only the driver's
# launch callbacks are enabled. GPU clocks are logged alongside.
#
#   FPROF_BUILD=build-gpu bench/decode_diag.sh        ROUNDS=3 BUDGET_S=220
#
# CONFIGS and TORCH_CONFIGS replace the default lists: "label|VAR=VALUE VAR=VALUE;label|..."
# (labels native, bare-activity[-NAME] and bare-callbacks[-NAME] run without fprof, with the label's
# settings as the environment: TRACE_BASELINE_ATTR tries CUPTI activity attributes); EXTRAS=0 leaves out the
# self-timing runs, the CPU benchmark and the launch check. Prints a table last (decode ms per
# configuration: median, min and max over rounds, against the native median); logs go to $OUT as
# one archive.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
build=${FPROF_BUILD:-build}
case $build in /*) ;; *) build=$PWD/$build ;; esac  # injected libraries need absolute paths
fprof=$build/bin/fprof
model=$build/bin/model
collector=$build/lib/libfprof_collector.so
baseline=$build/lib/libtrace_overhead_cupti_baseline.so
rounds=${ROUNDS:-3}
budget=${BUDGET_S:-220}
SECONDS=0
time_left() { [ $((budget - SECONDS)) -gt "$1" ]; }
work=${DECODE_DIAG_DIR:-/tmp/decode_diag}
out=${OUT:-$work/out}
rm -rf "$work"
mkdir -p "$work/logs" "$out"
for f in "$fprof" "$model" "$collector"; do
  [ -e "$f" ] || { echo "decode_diag: $f missing"; exit 2; }
done
if ! nvidia-smi -L >/dev/null 2>&1; then echo "decode_diag: no GPU; nothing measured"; exit 77; fi
have_torch=1
python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1 || have_torch=0

nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv,noheader,nounits \
  -lms 100 >"$work/logs/clocks.csv" 2>/dev/null &
clock_pid=$!

model_args=(--ops transformer --variant both --no-copy-bandwidth --repeat 5 --dtype fp16)
runs=$work/runs.tsv  # label, round, exit code, start, end, log, database
: >"$runs"
run() {  # run LABEL ROUND DB COMMAND...
  local label=$1 round=$2 db=$3
  shift 3
  local log=$work/logs/$label.$round.log t0 t1 rc
  t0=$(date +%s.%N)
  timeout 60 "$@" >"$log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$round" "$rc" "$t0" "$t1" "$log" "$db" >>"$runs"
  [ "$rc" = 0 ] || echo "decode_diag: $label (round $round) exited with $rc; see $log"
}
fprof_run() {  # fprof_run LABEL ROUND [VAR=VALUE...] -- COMMAND...
  local label=$1 round=$2
  shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  run "$label" "$round" "$work/$label.$round.fprof" env "${envs[@]}" "$fprof" run --force -o "$work/$label.$round.fprof" "$@"
}

# label|FPROF_* settings; native and the bare-CUPTI labels run without fprof.
default_configs="native|;fprof|;act-kernel|FPROF_ACTIVITY=kernel;act-none|FPROF_ACTIVITY=none;\
act-no-memory|FPROF_ACTIVITY=kernel,memcpy,memset;act-no-copies|FPROF_ACTIVITY=kernel,memory;\
no-probe|FPROF_ARG_ROLES=0;writer-idle|FPROF_WRITER_IDLE=1;no-flushall|FPROF_CUPTI_FLUSH_ALL=0;\
flush-2s|FPROF_FLUSH_MS=2000;no-prefill|FPROF_EVENT_PREFILL=0;cb-driver|FPROF_LAUNCH_CALLBACKS=driver;\
cb-none|FPROF_LAUNCH_CALLBACKS=none;\
floor|FPROF_ACTIVITY=kernel FPROF_ARG_ROLES=0 FPROF_WRITER_IDLE=1 FPROF_CUPTI_FLUSH_ALL=0;\
bare-activity|;bare-callbacks|"
IFS=';' read -r -a configs <<<"${CONFIGS:-$default_configs}"
IFS=';' read -r -a torch_configs <<<"${TORCH_CONFIGS:-native|;fprof|;act-kernel|FPROF_ACTIVITY=kernel;writer-idle|FPROF_WRITER_IDLE=1;selftiming|FPROF_SELF_TIMING=1}"
extras=${EXTRAS:-1}

one() {  # one PREFIX LABEL ROUND SETTINGS COMMAND...: a configuration's run
  local prefix=$1 label=$2 round=$3 settings=$4
  shift 4
  # shellcheck disable=SC2206
  local vars=($settings)
  case $label in
    native) run "$prefix$label" "$round" - "$@" ;;
    bare-activity* | bare-callbacks*)  # bare-activity-NAME: the same with the label's settings
      local kind=${label#bare-}
      [ -e "$baseline" ] && run "$prefix$label" "$round" - env CUDA_INJECTION64_PATH="$baseline" \
        TRACE_BASELINE="${kind%%-*}" "${vars[@]}" "$@" ;;
    *) fprof_run "$prefix$label" "$round" FPROF_QUIET=1 "${vars[@]}" -- "$@" ;;
  esac
}

for round in $(seq "$rounds"); do
  if [ "$round" -gt 1 ] && ! time_left $((extras == 1 ? 110 : 40)); then
    echo "decode_diag: $((round - 1)) rounds only (budget)"
    break
  fi
  for c in "${configs[@]}"; do one "" "${c%%|*}" "$round" "${c#*|}" "$model" "${model_args[@]}"; done
done

if [ "$extras" = 1 ]; then
  # Per-call medians of the collector's own timers.
  fprof_run selftiming 1 FPROF_SELF_TIMING=1 -- "$model" "${model_args[@]}"
  fprof_run selftiming-no-prefill 1 FPROF_SELF_TIMING=1 FPROF_EVENT_PREFILL=0 -- "$model" "${model_args[@]}"
fi

if [ "$have_torch" = 1 ] && time_left 45; then
  for c in "${torch_configs[@]}"; do
    one torch. "${c%%|*}" 1 "${c#*|}" python3 bench/torch_loop.py --iters 30000
    time_left 20 || break
  done
fi

if [ "$extras" = 1 ]; then
  # The callback path's CPU benchmark on this machine's CPUs (no GPU involved).
  if [ -x "$build/bin/collector_hotpath_bench" ]; then
    run hotpath 1 - "$build/bin/collector_hotpath_bench" --workload model --launches 240000 --self-timing
    run hotpath-no-prefill 1 - "$build/bin/collector_hotpath_bench" --workload model --launches 240000 --self-timing --no-prefill
  fi
  # Driver launch callbacks only: which kernels keep their launch facts (every launch API).
  if [ -x "$build/bin/trace_test_program" ]; then
    fprof_run launches-all 1 -- "$build/bin/trace_test_program" full "$work/expect-all.txt"
    fprof_run launches-driver 1 FPROF_LAUNCH_CALLBACKS=driver -- "$build/bin/trace_test_program" full "$work/expect-driver.txt"
  fi
fi
kill "$clock_pid" 2>/dev/null

device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)
PYTHONPATH=bench python3 - "$runs" "$device" "$work/logs/clocks.csv" >"$work/summary.txt" <<'PY'
import sqlite3, statistics, sys
from datetime import datetime

from bench_logs import model_times, text, torch_result

runs_path, device, clocks_path = sys.argv[1:4]
runs = [l.rstrip("\n").split("\t") for l in open(runs_path)]


clocks = []
for line in text(clocks_path).splitlines():
    cells = [c.strip() for c in line.split(",")]
    try:
        t = datetime.strptime(cells[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        clocks.append((t, float(cells[1]), float(cells[3]), float(cells[4])))
    except (ValueError, IndexError):
        pass


def clock_during(t0, t1):
    xs = [c for c in clocks if t0 <= c[0] <= t1]
    if not xs:
        return ""
    return f"sm {statistics.median(c[1] for c in xs):.0f} MHz, {statistics.median(c[2] for c in xs):.0f} W, util {statistics.median(c[3] for c in xs):.0f}%"


by = {}
for label, rnd, rc, t0, t1, log, db in runs:
    by.setdefault(label, []).append(dict(round=rnd, rc=int(rc), t0=float(t0), t1=float(t1), log=log, db=db))

print(f"decode_diag on {device}")
print()
print("== every model run: decode unfused / fused ms, process s, GPU during the run")
for label, rs in by.items():
    for r in rs:
        t = model_times(r["log"])
        if not t:
            continue
        print(f"  {label:18s} r{r['round']}: {t.get(('unfused','decode'), float('nan')):7.2f} / "
              f"{t.get(('fused','decode'), float('nan')):6.2f} ms, {r['t1'] - r['t0']:5.2f} s, {clock_during(r['t0'], r['t1'])}")

for label in ("selftiming", "selftiming-no-prefill", "torch.selftiming", "hotpath", "hotpath-no-prefill"):
    if label in by:
        print()
        print(f"== {label}")
        for line in text(by[label][0]["log"]).splitlines():
            if "self-timing" in line or line.startswith(("application thread", "writer thread", "at exit", "first window")):
                print("  " + line.rstrip())

print()
print("== launch facts with the driver's launch callbacks only (trace_test_program full)")
for label in ("launches-all", "launches-driver"):
    if label not in by or by[label][0]["rc"] != 0:
        print(f"  {label}: no run")
        continue
    try:
        con = sqlite3.connect(by[label][0]["db"])
        rows = con.execute("select launch_api, count(*), sum(thread_id != 0), min(correlation_id), max(correlation_id) "
                           "from kernel group by launch_api order by launch_api").fetchall()
        print(f"  {label}: " + "; ".join(f"'{a}' {n} kernels ({m} with a thread), corr {lo}-{hi}" for a, n, m, lo, hi in rows))
        for sev, msg in con.execute("select severity, message from collector_event where severity != 'info'"):
            print(f"    {sev}: {msg}")
        con.close()
    except sqlite3.Error as e:
        print(f"  {label}: {e}")


def med(label, key):
    vals = [model_times(r["log"]).get(key) for r in by.get(label, []) if r["rc"] == 0]
    vals = [v for v in vals if v is not None]
    return (statistics.median(vals), min(vals), max(vals)) if vals else None


print()
n = {v: med("native", (v, "decode")) for v in ("unfused", "fused")}
print("== decode, median (min-max) over rounds, ratio of medians against native")
for label in by:
    a, b = med(label, ("unfused", "decode")), med(label, ("fused", "decode"))
    if a is None or b is None or n["unfused"] is None:
        continue
    print(f"  {label:18s} unfused {a[0]:7.2f} ({a[1]:.2f}-{a[2]:.2f}) {a[0] / n['unfused'][0]:5.2f}x   "
          f"fused {b[0]:6.2f} ({b[1]:.2f}-{b[2]:.2f}) {b[0] / n['fused'][0]:5.2f}x")
for label in by:
    if label.startswith("torch.") and by[label][0]["rc"] == 0:
        res = torch_result(by[label][0]["log"])
        if res:
            print(f"  {label:18s} {res['us_per_kernel']:.3f} us/kernel")
PY
cp "$work/summary.txt" "$out/decode_diag.txt"
tar -C "$work" -czf "$out/decode_diag_logs.tar.gz" logs runs.tsv summary.txt
cat "$work/summary.txt"
