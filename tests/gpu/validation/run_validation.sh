#!/usr/bin/env bash
# The validation on a GPU machine, in one go (scripts/gpu-check validation calls it; about
# 3 minutes on an H100):
#   1. validation_check run: validation_program under `fprof run` in trace mode, metrics mode
#      (--metrics roofline: its fp16 pipe counter makes mixed packed/scalar HFMA2 exact) and crashing (abort after 5 kernels and after 1, SIGSEGV, an illegal
#      address, abort in metrics mode); every kernel against the program's own expectations.
#   2. Nsight Compute on the same program with the roofline set's metric names
#      (--cache-control none, as fprof), compared per kernel with fprof's raw values
#      (kernel_metric): FLOP and instruction counters exact, bytes within 2%.
#   3. A PyTorch training step (autograd launches the backward from its own thread) under
#      `fprof run --metrics roofline --nvtx-include train_step`, the step range as push/pop and as
#      start/end: counters for every kernel of the selected steps.
#   4. PyTorch CUDA graphs (bench/torch_graphs.py graph) in metrics mode: every graph kernel has
#      counters copied from an identical eager launch, equal to its, or the stored reason
#      (tests/gpu/validation/graph_check.py); again under application replay, where each graph
#      launch is also counted whole (part graph-app).
#   5. A PyTorch training loop's parameters and optimizer state, bit for bit, natively and under a
#      one-run metrics run, where each profiled launch's duplicate runs between a checkpoint and
#      its restore (part torch-state).
# Writes under OUTDIR (default $OUT): validation_report.txt (every check of every part) and
# validation_work.tar.gz (expectations, logs, databases, the ncu CSV). Prints a short table
# last. Exit 0 when every check passed, 1 otherwise, 77 without a GPU.
#
#   The metrics-mode database under --replay application is also compared with
#   `ncu --cache-control all` (part ncu-all).
#   FPROF_BUILD=build-gpu tests/gpu/validation/run_validation.sh [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 2
build=${FPROF_BUILD:-build}
out=${1:-${OUT:-/tmp/validation-out}}
work=/tmp/fprof-validation-work
rm -rf "$work"
mkdir -p "$out" "$work"
check=$build/bin/validation_check
fprof=$build/bin/fprof
for f in "$check" "$fprof" "$build/bin/validation_program" "$build/lib/libfprof_validation_dso.so" \
  "$build/tests/gpu/validation/validation_program.ptxas.txt"; do
  [ -e "$f" ] || { echo "run_validation: $f missing; build the validation_check target first"; exit 2; }
done
if ! nvidia-smi -L >/dev/null 2>&1; then echo "run_validation: no GPU"; exit 77; fi
report=$out/validation_report.txt
: >"$report"
declare -a rows
part() {  # part NAME LIMIT_S COMMAND...: runs, appends its output to the report, remembers the summary
  local name=$1 limit=$2
  shift 2
  local t0
  t0=$(date +%s)
  echo "== $name" | tee -a "$report"
  timeout "$limit" "$@" >"$work/$name.out" 2>&1
  local rc=$?
  cat "$work/$name.out" >>"$report"
  local summary
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$work/$name.out" | tail -n 1)
  rows+=("$name|exit $rc, $(( $(date +%s) - t0 )) s|${summary:-no summary (see the report)}")
  grep -E '^(FAIL|info) ' "$work/$name.out" | head -n 25
  sed -n '/^feature /,$p' "$work/$name.out"
}

# 1. fprof against the program's expectations, every mode.
part fprof 420 "$check" run --program "$build/bin/validation_program" --fprof "$fprof" \
  --dso "$build/lib/libfprof_validation_dso.so" --ptxas-dir "$build/tests/gpu/validation" --dir "$work/fprof"

# 2. Nsight Compute on the same program and metrics; compared with the metrics-mode database.
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [ -x "$ncu" ] && [ -e "$work/fprof/metrics.fprof" ]; then
  metrics=$("$check" roofline-metrics)
  t0=$(date +%s)
  timeout 300 "$ncu" --cache-control none --metrics "$metrics" --csv --print-units base \
    --print-kernel-base mangled --log-file "$work/ncu.csv" "$build/bin/validation_program" \
    --expect "$work/ncu.expect.tsv" --dso "$build/lib/libfprof_validation_dso.so" >"$work/ncu.out" 2>&1
  echo "ncu: exit $?, $(( $(date +%s) - t0 )) s" >>"$work/ncu.out"
  part ncu 120 "$check" ncu-compare --db "$work/fprof/metrics.fprof" --csv "$work/ncu.csv"
  # Application replay empties the L2 before each profiled launch: against ncu's default policy.
  if [ -e "$work/fprof/metrics-application.fprof" ]; then
    t0=$(date +%s)
    timeout 300 "$ncu" --cache-control all --metrics "$metrics" --csv --print-units base \
      --print-kernel-base mangled --log-file "$work/ncu_all.csv" "$build/bin/validation_program" \
      --expect "$work/ncu_all.expect.tsv" --dso "$build/lib/libfprof_validation_dso.so" >"$work/ncu_all.out" 2>&1
    echo "ncu --cache-control all: exit $?, $(( $(date +%s) - t0 )) s" >>"$work/ncu_all.out"
    part ncu-all 120 "$check" ncu-compare --db "$work/fprof/metrics-application.fprof" --csv "$work/ncu_all.csv"
  fi
else
  rows+=("ncu|not run|no ncu ($ncu) or no metrics database")
fi

# 3. PyTorch: a training step whose backward runs on autograd's thread.
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  py=tests/gpu/validation/torch_train.py
  timeout 180 "$fprof" run --force -o "$work/torch_trace.fprof" python3 "$py" --expect "$work/torch_trace.expect.tsv" \
    >"$work/torch_trace.log" 2>&1
  for variant in pushpop startend; do
    rm -f "$work/torch_metrics_$variant.expect.tsv"
    timeout 240 "$fprof" run --force --metrics roofline --nvtx-include train_step -o "$work/torch_metrics_$variant.fprof" \
      python3 "$py" --range "$variant" --expect "$work/torch_metrics_$variant.expect.tsv" --expect-first-run \
      >"$work/torch_metrics_$variant.log" 2>&1
  done
  part torch 60 "$check" torch --dir "$work"
  # 4. CUDA graphs in PyTorch: graph kernels take the counters of identical eager launches.
  timeout 180 "$fprof" run --force --metrics roofline --replay kernel -o "$work/torch_graphs.fprof" \
    python3 bench/torch_graphs.py graph >"$work/torch_graphs.log" 2>&1
  part graph 60 python3 tests/gpu/validation/graph_check.py "$work/torch_graphs.fprof"
  # The same under application replay: each graph counted whole too (graph_launch_counter).
  timeout 240 "$fprof" run --force --metrics roofline --replay application -o "$work/torch_graphs_app.fprof" \
    python3 bench/torch_graphs.py graph >"$work/torch_graphs_app.log" 2>&1
  part graph-app 60 python3 tests/gpu/validation/graph_check.py "$work/torch_graphs_app.fprof"
  # 5. The state a training loop leaves, bit for bit, natively and with every profiled launch
  #    duplicated between a checkpoint and its restore (a one-run metrics run).
  part torch-state 300 python3 tests/gpu/validation/torch_state.py --compare "$fprof" "$work"
else
  rows+=("torch|not run|python3 cannot import torch with CUDA here")
fi

tar -C "$work" -czf "$out/validation_work.tar.gz" --exclude='*.fprof-wal' --exclude='*.fprof-shm' . 2>/dev/null
echo
echo "== validation summary (report: $report)"
failed=0
for r in "${rows[@]}"; do
  IFS='|' read -r name status summary <<<"$r"
  printf '  %-7s %-18s %s\n' "$name" "$status" "$summary"
  [[ "$summary" =~ ^[0-9]+\ passed,\ 0\ failed$ ]] || failed=1
done
exit $failed
