#!/usr/bin/env bash
# Build-checked reference kernels on a GPU machine: correctness (model --check), benchmarks of
# every op pair in fp16/bf16/fp32 and the transformer, PyTorch SDPA as the attention baseline,
# and a short summary table printed last.
# usage: reference_kernels/bench.sh [BUILD_DIR] [LOG_DIR]
#   BUILD_DIR  where `model` was built (searched recursively; default: build)
#   LOG_DIR    where logs and CSVs go (default: $OUT if set, else ./bench-ref-out)
# Exit status: 0 when every check passed, 1 when a check failed, 77 when there is no GPU.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
logs="${2:-${OUT:-./bench-ref-out}}"
mkdir -p "$logs"
model="$(find "$build" -type f -name model -perm -u+x | head -n 1)"
if [[ -z "$model" ]]; then
  echo "bench.sh: no 'model' binary under $build; build the target 'model' first" >&2
  exit 2
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "bench.sh: no GPU here; skipping" >&2
  exit 77
fi
{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv,noheader
} | tee "$logs/device.txt"

"$model" --check | tee "$logs/check.md"
check_status=${PIPESTATUS[0]}

for dtype in fp16 bf16 fp32; do
  extra=()
  # The fp32 transformer is slow with SIMT matmuls and adds nothing the fp16 one does not show.
  [[ "$dtype" == fp32 ]] && extra=(--ops elementwise_chain,residual_layernorm,residual_rmsnorm,matmul_relu,matmul_bias,matmul_bias_relu,matmul_bias_gelu,matmul_bias_silu,attention,attention_causal,softmax_topk,conv_bn_relu)
  "$model" --dtype "$dtype" --csv "$logs/bench_$dtype.csv" "${extra[@]}" | tee "$logs/bench_$dtype.md"
done
# One CSV for all dtypes (the device tool brings back few files).
{ head -n 1 "$logs/bench_fp16.csv"; for d in fp16 bf16 fp32; do tail -n +2 "$logs/bench_$d.csv"; done; } > "$logs/bench.csv"
rm -f "$logs"/bench_fp16.csv "$logs"/bench_bf16.csv "$logs"/bench_fp32.csv

if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  python3 "$here/sdpa_bench.py" | tee "$logs/sdpa.csv"
else
  echo "bench.sh: no PyTorch with CUDA here; SDPA baseline skipped" | tee "$logs/sdpa.csv"
fi

echo
echo "== reference kernels: unfused vs fused (median ms), from $logs =="
for dtype in fp16 bf16 fp32; do
  awk -v d="$dtype" '/^\| pair \|/{p=1} p && /^\| [a-z_]+ \| '"$dtype"' \|/' "$logs/bench_$dtype.md"
done
grep -E '^\| (unfused|fused) \| ' "$logs"/bench_fp16.md "$logs"/bench_bf16.md 2>/dev/null | sed 's/^[^|]*|/|/'
grep -E '^[a-z0-9]+,' "$logs/sdpa.csv" | sed 's/^/sdpa: /'
grep -E '^check:' "$logs/check.md"
exit $(( check_status == 0 ? 0 : 1 ))
