#!/usr/bin/env bash
# fprof on real PyTorch/Triton programs, on a GPU machine (scripts/gpu-check pytorch calls it):
# eager and torch.compile models, a Triton kernel, torch.profiler inside a profiled script, and
# metrics mode restricted to steady-state steps. Recorded databases go to $OUT; every check
# prints "ok" or "FAIL" and the script exits 1 on any FAIL.
#
#   FPROF_BUILD=build-gpu examples/pytorch/check.sh [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${FPROF_BUILD:-build}
fprof=$build/bin/fprof
out=${1:-${OUT:-/tmp/pytorch-check}}
work=/tmp/pytorch-check-work
mkdir -p "$out" "$work"
export PYTHONPATH=$PWD/examples/pytorch${PYTHONPATH:+:$PYTHONPATH}
py=examples/pytorch
fails=0
check() {  # check NAME CONDITION-COMMAND...
  local name=$1
  shift
  if "$@"; then echo "ok    $name"; else echo "FAIL  $name"; fails=$((fails + 1)); fi
}
sql() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$@"; }
kernels_like() { sql "$1" "select count(*) from kernel k join string s on s.id=k.demangled_id where s.value like '$2'"; }
if ! nvidia-smi -L >/dev/null 2>&1; then echo "pytorch-check: no GPU"; exit 77; fi

small=(--steps 5 --warmup 2 --batch 4 --seq 128 --width 256)
for model in mlp transformer; do
  for mode in eager compile; do
    f=$out/torch_${model}_${mode}.fprof
    flag=(); [ "$mode" = compile ] && flag=(--compile --check)
    timeout 300 "$fprof" run --force -o "$f" python3 $py/run.py $model "${small[@]}" "${flag[@]}" >"$work/$model-$mode.log" 2>&1
    check "$model $mode: runs under fprof (exit $?)" grep -q '"model"' "$work/$model-$mode.log"
    check "$model $mode: one CUPTI in use" test "$(sql "$f" "select value from metadata where key='cupti_global_binding'")" = "$(sql "$f" "select value from metadata where key='cupti_library'")"
    check "$model $mode: cuBLAS GEMMs recorded" test "$(kernels_like "$f" 'nvjet%')" -gt 0
    check "$model $mode: steps marked by NVTX" test "$(sql "$f" "select count(*) from nvtx_range where message='op=step'")" = 5
  done
done
check "compile: Triton kernels recorded" test "$(kernels_like "$out/torch_transformer_compile.fprof" 'triton_%')" -gt 0
check "eager: ATen kernels recorded" test "$(kernels_like "$out/torch_transformer_eager.fprof" '%at::native::%')" -gt 0
check "eager: op ranges in the fprof convention" test "$(sql "$out/torch_transformer_eager.fprof" "select count(*) from nvtx_range where message like 'op=matmul_bias_gelu %'")" -gt 0

f=$out/torch_triton.fprof
timeout 120 "$fprof" run --force -o "$f" python3 $py/triton_add.py 10 >"$work/triton.log" 2>&1
check "triton: kernel correct under fprof" grep -q '"correct": true' "$work/triton.log"
check "triton: add_relu_kernel launched 10 times" test "$(kernels_like "$f" 'add_relu_kernel')" = 10

# torch.profiler inside a profiled script: fprof hands CUPTI over and says so.
f=$work/handover.fprof
timeout 180 "$fprof" run --force -o "$f" python3 $py/run.py mlp "${small[@]}" --torch-profiler "$work/kineto.json" >"$work/handover.log" 2>&1
check "torch.profiler under fprof: Kineto saw GPU kernels" python3 -c '
import json,sys
r=[json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
sys.exit(0 if r and r[-1].get("torch_profiler_gpu_events",0) > 0 else 1)' "$work/handover.log"
check "torch.profiler under fprof: fprof said so" grep -q "torch.profiler (Kineto" "$work/handover.log"
check "torch.profiler under fprof: warm-up kernels kept" test "$(sql "$f" "select count(*) from kernel")" -gt 0
check "torch.profiler under fprof: hand-over in the database" test "$(sql "$f" "select count(*) from collector_event where message like 'torch.profiler (Kineto%'")" = 1

# Metrics mode on steady-state steps only.
f=$out/torch_transformer_metrics.fprof
timeout 300 "$fprof" run --force --metrics roofline --nvtx-include 'op=step' -o "$f" python3 $py/run.py transformer \
  --steps 2 --warmup 2 --batch 4 --seq 128 --width 256 >"$work/metrics.log" 2>&1
check "metrics: transformer steps profiled" test "$(sql "$f" "select count(*) from kernel_counter")" -gt 0
check "metrics: warm-up kernels not profiled" test "$(sql "$f" "select count(*) from kernel k left join kernel_counter c on c.kernel_id=k.id where c.kernel_id is null")" -gt 0

for f in "$out"/torch_*.fprof; do "$fprof" info "$f" >"$work/info-$(basename "$f").txt" 2>&1; done
tail -n 3 "$work"/*.log | cut -c1-300
echo "pytorch-check: $fails failed"
[ "$fails" = 0 ]
