#!/usr/bin/env bash
# The op-level fusion pairs of unannotated eager PyTorch, on a GPU machine: the small models run
# under torch.autograd.profiler.emit_nvtx(record_shapes=True) (emit_nvtx_run.py) in trace mode,
# then fprof's fusion candidates are printed as a short table. One call, a few minutes; writes
# torch_{mlp,transformer}_emit_nvtx.fprof and their `fprof export` JSON to $OUT (4 files).
#
#   FPROF_BUILD=build-gpu examples/pytorch/emit_nvtx_check.sh [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${FPROF_BUILD:-build}
fprof=$build/bin/fprof
out=${1:-${OUT:-/tmp/emit-nvtx-check}}
mkdir -p "$out"
export PYTHONPATH=$PWD/examples/pytorch${PYTHONPATH:+:$PYTHONPATH}
if ! nvidia-smi -L >/dev/null 2>&1; then echo "emit-nvtx-check: no GPU"; exit 77; fi
for model in mlp transformer; do
  f=$out/torch_${model}_emit_nvtx.fprof
  timeout 240 "$fprof" run --force -o "$f" python3 examples/pytorch/emit_nvtx_run.py $model --record-shapes \
    >"$out/$model.log" 2>&1 || { echo "FAIL $model: fprof run (see $model.log)"; tail -5 "$out/$model.log"; }
  "$fprof" export "$f" --format json >"$out/torch_${model}_emit_nvtx.json" 2>/dev/null
  python3 - "$f" "$out/torch_${model}_emit_nvtx.json" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
ranges = db.execute("select count(*) from nvtx_range where message like '%op_id = %'").fetchone()[0]
graph = db.execute("select count(*) from nvtx_range where message like '%input_op_ids = %'").fetchone()[0]
sample = db.execute("select message from nvtx_range where message like 'aten::linear%' limit 1").fetchone()
print(f"{sys.argv[1]}: {ranges} emit_nvtx ranges, {graph} with input_op_ids; e.g. {sample[0][:160] if sample else None!r}")
j = json.load(open(sys.argv[2]))
for note in j["fusion"]["notes"]:
    print("  note:", note)
print(f"  {'source':9} {'runs':>4} {'saving us':>9} {'bytes':>9}  pair")
for c in j["fusion"]["candidates"][:10]:
    saving = c["total_saving_ns"] / 1e3 if c["total_saving_ns"] is not None else float("nan")
    size = c["intermediate_bytes"] or 0
    flag = "" if c["fuse"] else "  (not to fuse: " + c["reason"][:60] + ")"
    print(f"  {c['source']:9} {c['instances']:4d} {saving:9.1f} {size:9.0f}  {c['id']}{flag}")
PY
done
