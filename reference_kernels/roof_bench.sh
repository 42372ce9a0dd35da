#!/usr/bin/env bash
# Issue 16 on a GPU machine, in one call: the Hopper GEMM and softmax + top-k against their
# roofs. Checks (model --check, also with the alternative kernels), the GEMM sweep against
# cuBLASLt with the same epilogue (4096^3, 8192^3, the transformer's prefill shapes) for both
# epilogue forms, the softmax_topk pair for each slice form (one launch a sample, and 20 queued
# launches a sample), the kernel's own duration from Nsight Compute, and the transformer with
# cuBLASLt vs the hand GEMM in its fused form; a short table last.
# usage: reference_kernels/roof_bench.sh MODEL_BINARY [LOG_DIR]
#   LOG_DIR defaults to $OUT if set, else ./roof-bench-out. Writes device.txt sass.txt check.md
#   sweep.md topk.md ncu.txt transformer.md (7 files). Exit status: 0 all checks passed, 1 a
#   check failed or a step timed out, 2 no binary, 77 no GPU.
set -uo pipefail
model="${1:-}"
logs="${2:-${OUT:-./roof-bench-out}}"
[[ -x "$model" ]] || { echo "roof_bench.sh: no model binary at '$model'" >&2; exit 2; }
nvidia-smi -L >/dev/null 2>&1 || { echo "roof_bench.sh: no GPU here; skipping" >&2; exit 77; }
mkdir -p "$logs"
status=0
step() {  # step LOG LIMIT_S CMD...: append to LOG under a time limit (a hung kernel must not eat the call)
  local log="$1" limit="$2"; shift 2
  echo "### $*" >> "$logs/$log"
  timeout "$limit" "$@" >> "$logs/$log" 2>&1
  local rc=$?
  [[ $rc -ne 0 ]] && { echo "roof_bench.sh: '$*' exited $rc" | tee -a "$logs/$log"; status=1; }
  return 0
}
{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv,noheader
} > "$logs/device.txt"
# Which instructions the Hopper GEMM uses (HGMMA = wgmma; UTMALDG/UTMASTG = TMA; LDL/STL = local memory).
if command -v cuobjdump >/dev/null; then
  cuobjdump -sass "$model" 2>/dev/null | awk '/Function : /{f=$3} /HGMMA|UTMALDG|UTMASTG|UBLKCP|LDL|STL/{split($0,a,";"); n[f" "$2]++} END{for (k in n) print n[k], k}' \
    | sort -k2 > "$logs/sass.txt"
fi
m="$model"
step check.md 90 "$m" --check
step check.md 30 env FPROF_REF_TOPK_SLICE=regs32 "$m" --check --ops softmax_topk
step check.md 30 env FPROF_REF_TOPK_SLICE=regs64 "$m" --check --ops softmax_topk
step check.md 40 env FPROF_REF_GEMM_STORE=direct "$m" --check --ops matmul_relu,matmul_bias_gelu,matmul_bias_silu,transformer
step sweep.md 60 "$m" --gemm-sweep --dtype all --no-copy-bandwidth
step sweep.md 60 env FPROF_REF_GEMM_STORE=direct "$m" --gemm-sweep --dtype all --no-copy-bandwidth
for slice in bulk regs64 regs32; do
  step topk.md 30 env FPROF_REF_TOPK_SLICE=$slice "$m" --ops softmax_topk --dtype all
  step topk.md 30 env FPROF_REF_TOPK_SLICE=$slice "$m" --ops softmax_topk --dtype all --back-to-back 20 --no-copy-bandwidth
done
if command -v ncu >/dev/null; then
  for slice in bulk regs32; do
    step ncu.txt 60 env FPROF_REF_TOPK_SLICE=$slice ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum \
      -k regex:rowSliceKernel "$m" --ops softmax_topk --variant fused --dtype fp16 --repeat 3 --warmup 0 --no-copy-bandwidth
  done
else
  echo "no ncu on PATH" > "$logs/ncu.txt"
fi
step transformer.md 30 "$m" --ops transformer --dtype fp16 --no-copy-bandwidth
step transformer.md 30 "$m" --ops transformer --dtype fp16 --no-copy-bandwidth --hand-matmul
step transformer.md 30 "$m" --ops transformer --dtype bf16 --no-copy-bandwidth --hand-matmul

echo "== device =="; cat "$logs/device.txt"
echo "== SASS (count, kernel, opcode), Hopper GEMM and top-k =="; grep -E "gemmSm90|rowSlice" "$logs/sass.txt" 2>/dev/null | awk '{print $1, substr($2, 1, 20) "..." substr($2, length($2)-60), $3}' | head -n 12
echo "== checks =="; grep -E "FAIL|^check:|exited" "$logs/check.md" | head -n 20
echo "== softmax_topk (op variant dtype | median ms | GB/s | % copy), per slice form =="
grep -E "^### |^device-to-device|^\| softmax_topk \| (fused|unfused) \|" "$logs/topk.md" | sed -E 's/^### env FPROF_REF_TOPK_SLICE=([a-z0-9]+) [^ ]+ (.*)/-- \1 \2/' | cut -d"|" -f2-4,7,10,11
echo "== ncu gpu__time_duration of the fused fp16 kernel =="; grep -E "^### |rowSliceKernel|gpu__time_duration" "$logs/ncu.txt" | sed -E 's/^### env (FPROF_REF_TOPK_SLICE=[a-z0-9]+).*/-- \1/; s/\(.*//' | head -n 20
echo "== transformer (cuBLASLt; hand fp16; hand bf16) =="; grep -E "^\| (unfused|fused) \|" "$logs/transformer.md"
echo "== GEMM sweep: hand vs cuBLASLt (tma-store epilogue, then direct) =="; grep -E "^\| m[0-9]" "$logs/sweep.md" | cut -d"|" -f2,4-6,8,10-11
exit $status
