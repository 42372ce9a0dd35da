#!/usr/bin/env bash
# Trace-mode overhead on a PyTorch model against torch.profiler (Kineto), in one call:
# examples/pytorch/run.py transformer (eager, fp16) natively, under `fprof run`, and with
# torch.profiler (CPU + CUDA activities, Chrome trace exported) around the same timed loop.
# Three rounds, interleaved; medians. "loop" is the timed steps (synchronized), "process" the
# whole command (start-up, warm-up, loop, the profiler's write-out).
#
#   FPROF_BUILD=build-gpu bench/torch_overhead.sh [STEPS]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${FPROF_BUILD:-build}
fprof=$build/bin/fprof
steps=${1:-200}
work=/tmp/torch_overhead
mkdir -p "$work"
export PYTHONPATH=$PWD/examples/pytorch
if ! nvidia-smi -L >/dev/null 2>&1; then echo "torch_overhead: no GPU; nothing measured"; exit 77; fi
args=(examples/pytorch/run.py transformer --steps "$steps" --warmup 10)
: >"$work/results.tsv"
run() {  # run LABEL COMMAND...
  local label=$1
  shift
  local t0=$(date +%s.%N)
  "$@" >"$work/$label.log" 2>&1
  local rc=$? t1=$(date +%s.%N)
  local loop=$(grep '^{' "$work/$label.log" | tail -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["loop_s"])' 2>/dev/null)
  printf '%s\t%s\t%s\t%s\n' "$label" "$rc" "${loop:-nan}" "$(python3 -c "print($t1 - $t0)")" >>"$work/results.tsv"
}
for round in 1 2 3; do
  run native python3 "${args[@]}"
  run fprof "$fprof" run --force -o "$work/run.fprof" python3 "${args[@]}"
  run kineto python3 "${args[@]}" --torch-profiler "$work/kineto.json"
done
python3 - "$work/results.tsv" "$steps" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
steps = int(sys.argv[2])
by = {}
for label, rc, loop, wall in rows:
    by.setdefault(label, []).append((int(rc), float(loop), float(wall)))
med = {k: (statistics.median(v[1] for v in vs), statistics.median(v[2] for v in vs), max(v[0] for v in vs)) for k, vs in by.items()}
print(f"{'run':8s} {'exit':>4s} {'loop ms/step':>13s} {'process s':>10s} {'loop x':>7s} {'process x':>9s}")
n_loop, n_wall, _ = med["native"]
for k in ("native", "fprof", "kineto"):
    loop, wall, rc = med[k]
    print(f"{k:8s} {rc:4d} {1e3 * loop / steps:13.3f} {wall:10.2f} {loop / n_loop:7.3f} {wall / n_wall:9.3f}")
f, k = med["fprof"], med["kineto"]
print(f"fprof / torch.profiler: loop {f[0] / k[0]:.3f}x, process {f[1] / k[1]:.3f}x")
PY
