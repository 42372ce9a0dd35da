#!/usr/bin/env bash
# The reference kernels against their roofs, on a GPU machine in one call.
#  - model --check (defaults), and the direct GEMM epilogue checked too;
#  - every op pair in fp16, bf16, fp32 (unfused vs fused vs vendor, copy bandwidth, CSV);
#  - the GEMM sweep: hand GEMM vs cuBLASLt with the same epilogue on 4096^3, 8192^3 and the
#    transformer's prefill shapes, fp16 and bf16;
#  - softmax + top-k: one launch a sample and 20 queued launches a sample, and the kernels' own
#    durations from Nsight Compute;
#  - the transformer with its default matmuls (hand GEMM at >= 1024 rows) vs cuBLASLt only;
# and a short table last.
# usage: reference_kernels/roof_bench.sh MODEL_BINARY [LOG_DIR]
#   LOG_DIR defaults to $OUT if set, else ./roof-bench-out. Writes device.txt sass.txt check.md
#   bench.md bench.csv sweep.md topk.md transformer.md (8 files). Exit status: 0 all checks
#   passed, 1 a check failed or a step timed out, 2 no binary, 77 no GPU.
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
# Instructions of interest (HGMMA = wgmma; UTMALDG/UTMASTG = TMA; UBLKCP = bulk copy; LDL/STL = local memory).
if command -v cuobjdump >/dev/null; then
  cuobjdump -sass "$model" 2>/dev/null | awk '/Function : /{f=$3} /HGMMA|UTMALDG|UTMASTG|UBLKCP|LDL|STL/{op=$2; if (op ~ /^@/) op=$3; n[f" "op]++} END{for (k in n) print n[k], k}' \
    | sort -k2 > "$logs/sass.txt"
fi
m="$model"
step check.md 90 "$m" --check
step check.md 40 env FPROF_REF_GEMM_STORE=direct "$m" --check --ops matmul_relu,matmul_bias_gelu,matmul_bias_silu
for dtype in fp16 bf16 fp32; do
  extra=()
  [[ "$dtype" == fp32 ]] && extra=(--ops elementwise_chain,residual_layernorm,residual_rmsnorm,matmul_relu,matmul_bias,matmul_bias_relu,matmul_bias_gelu,matmul_bias_silu,attention,attention_causal,softmax_topk,conv_bn_relu)
  step bench.md 60 "$m" --dtype "$dtype" --csv "$logs/bench_$dtype.csv" "${extra[@]}"
done
{ head -n 1 "$logs/bench_fp16.csv"; for d in fp16 bf16 fp32; do tail -n +2 "$logs/bench_$d.csv"; done; } > "$logs/bench.csv" 2>/dev/null
rm -f "$logs"/bench_fp16.csv "$logs"/bench_bf16.csv "$logs"/bench_fp32.csv
step sweep.md 60 "$m" --gemm-sweep --dtype all --no-copy-bandwidth
step topk.md 20 "$m" --ops softmax_topk --dtype all
step topk.md 20 "$m" --ops softmax_topk --dtype all --back-to-back 20 --no-copy-bandwidth
if command -v ncu >/dev/null; then
  for dtype in fp16 bf16 fp32; do
    step topk.md 60 ncu --clock-control none --cache-control none \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct -k regex:SliceKernel \
      "$m" --ops softmax_topk --variant fused --dtype "$dtype" --repeat 2 --warmup 0 --no-copy-bandwidth
  done
fi
step transformer.md 30 "$m" --ops transformer --dtype fp16 --no-copy-bandwidth --lt-matmul
step transformer.md 30 "$m" --ops transformer --dtype fp16 --no-copy-bandwidth
step transformer.md 30 "$m" --ops transformer --dtype bf16 --no-copy-bandwidth --lt-matmul
step transformer.md 30 "$m" --ops transformer --dtype bf16 --no-copy-bandwidth
step transformer.md 30 "$m" --ops transformer --dtype fp16 --no-copy-bandwidth --lt-matmul

echo "== device =="; cat "$logs/device.txt"
echo "== SASS (count, opcode) of the Hopper GEMM and top-k kernels =="
grep -E "gemmSm90|SliceKernel" "$logs/sass.txt" 2>/dev/null | awk '{print $3}' | sort | uniq -c
echo "== checks =="; grep -E "FAIL|^check:|exited" "$logs/check.md" | head -n 20
echo "== pairs (pair dtype | unfused ms | fused ms | speedup | seed | bytes ratio | vendor ms | fused vs vendor) =="
grep -E "^\| [a-z_]+ \| (fp16|bf16|fp32) \| [0-9]" "$logs/bench.md" | cut -d"|" -f2-6,8-10
grep -E "^\| (softmax_topk|matmul_relu|matmul_bias_gelu) \| fused \|" "$logs/bench.md" | cut -d"|" -f2-4,7,10-12
echo "== softmax_topk fused/unfused (median ms | GB/s | % copy), per kernel and timing =="
grep -E "^### |^\| softmax_topk \| (fused|unfused) \||gpu__time_duration|dram__bytes_read|lts__t_sector_hit_rate" "$logs/topk.md" \
  | sed -E 's/^### ncu .*--dtype ([a-z0-9]+) .*/-- ncu (fused \1)/; s/^### [^ ]+ (.*)/-- \1/' | cut -d"|" -f2-4,7,10,11
echo "== transformer: fp16 lt, fp16 default, bf16 lt, bf16 default, fp16 lt again =="; grep -E "^\| (unfused|fused) \|" "$logs/transformer.md"
echo "== GEMM sweep: hand vs cuBLASLt (shape | epi | dtype | hand ms | lt ms | hand TFLOP/s | lt TFLOP/s | hand/lt speed | rel diff) =="
grep -E "^\| m[0-9]" "$logs/sweep.md" | cut -d"|" -f2,4-11
exit $status
