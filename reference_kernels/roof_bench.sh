#!/usr/bin/env bash
# Issue 16 on a GPU machine, in one call: the Hopper GEMM and softmax + top-k against their
# roofs. Checks (model --check), the GEMM sweep against cuBLASLt with the same epilogue
# (4096^3, 8192^3, the transformer's prefill shapes), the softmax_topk and matmul pairs, and the
# transformer with cuBLASLt vs the hand GEMM; a short table last.
# usage: reference_kernels/roof_bench.sh MODEL_BINARY [LOG_DIR]
#   LOG_DIR defaults to $OUT if set, else ./roof-bench-out. Writes device.txt check.md sweep.md
#   pairs.md transformer.md sass.txt (6 files). Exit status: 0 all checks passed, 1 a check
#   failed or a step timed out, 2 no binary, 77 no GPU.
set -uo pipefail
model="${1:-}"
logs="${2:-${OUT:-./roof-bench-out}}"
[[ -x "$model" ]] || { echo "roof_bench.sh: no model binary at '$model'" >&2; exit 2; }
nvidia-smi -L >/dev/null 2>&1 || { echo "roof_bench.sh: no GPU here; skipping" >&2; exit 77; }
mkdir -p "$logs"
status=0
step() {  # step NAME LIMIT_S CMD...: run with a time limit (a deadlocked kernel must not eat the call)
  local name="$1" limit="$2"; shift 2
  timeout "$limit" "$@" > "$logs/$name" 2>&1
  local rc=$?
  [[ $rc -ne 0 ]] && { echo "roof_bench.sh: $name exited $rc" | tee -a "$logs/$name"; status=1; }
  return 0
}
{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv,noheader
} > "$logs/device.txt"
# Which instructions the Hopper GEMM really uses (HGMMA = wgmma; UTMALDG = TMA loads).
if command -v cuobjdump >/dev/null; then
  cuobjdump -sass "$model" 2>/dev/null | awk '/Function : /{f=$3} /HGMMA|UTMALDG|LDL|STL/{split($0,a,";"); n[f" "$2]++} END{for (k in n) print n[k], k}' \
    | grep -i "sm90\|gemmSm90" | sort | head -n 40 > "$logs/sass.txt"
fi
step check.md 150 "$model" --check
step sweep.md 120 "$model" --gemm-sweep --dtype all --no-copy-bandwidth
step pairs.md 120 "$model" --ops softmax_topk,matmul_relu,matmul_bias,matmul_bias_relu,matmul_bias_gelu,matmul_bias_silu --dtype all
{
  step transformer_lt.md 60 "$model" --ops transformer --dtype fp16 --no-copy-bandwidth
  step transformer_hand.md 60 "$model" --ops transformer --dtype fp16 --no-copy-bandwidth --hand-matmul
  cat "$logs/transformer_lt.md"; echo "--- hand GEMM ---"; cat "$logs/transformer_hand.md"
  rm -f "$logs/transformer_lt.md" "$logs/transformer_hand.md"
} > "$logs/transformer.md"

echo "== device =="; cat "$logs/device.txt"
echo "== SASS of gemmSm90Kernel (count, opcode) =="; head -n 8 "$logs/sass.txt" 2>/dev/null
echo "== checks =="; grep -E "FAIL|^check:" "$logs/check.md" | head -n 20
echo "== pairs (median ms) =="; grep -E "^device-to-device|^\| (softmax_topk|matmul_[a-z_]+) \| (fused|unfused|vendor) \|" "$logs/pairs.md" | cut -d"|" -f2-4,7,10-12 | head -n 40
echo "== transformer =="; grep -E "^\| (unfused|fused) \|" "$logs/transformer.md"
echo "== GEMM sweep: hand vs cuBLASLt =="; grep -E "^\| m[0-9]" "$logs/sweep.md"
exit $status
