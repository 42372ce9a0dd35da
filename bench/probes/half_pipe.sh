#!/usr/bin/env bash
# Which pipe runs each HFMA2 (issue 13): the SASS of the validation program's 16-bit kernels and,
# per kernel, ncu's hadd/hmul/hfma instruction counts beside the FMA pipe's fp16 count and the MMA
# pipe's HFMA2 count. About 30 s on an H100; prints a table, writes the SASS and ncu's CSV to $OUT.
#
#   here:    scripts/gpu-check --stage              (build-gpu/ with validation_program)
#   device:  bash bench/probes/half_pipe.sh         (carry ["build-gpu"])
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${FPROF_BUILD:-build-gpu}
out=${OUT:-/tmp/half-pipe-out}
mkdir -p "$out"
program=$build/bin/validation_program
dso=$build/lib/libfprof_validation_dso.so
[ -x "$program" ] || { echo "half_pipe: no $program; build the validation_program target"; exit 2; }
cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)

"$cuobjdump" -sass "$program" >"$out/sass.txt" 2>&1
echo "== 16-bit SASS of the half kernels (registers as R)"
awk '/Function :/ {fn = $3}
     /(HFMA2|HADD2|HMUL2|HSETP2|HSET2|HMNMX2)/ && fn ~ /(scalar16|packed16|mixed16|half_to_float)_kernel.*Li10E/ {
       s = $0; sub(/^[ \t]*\/\*[0-9a-f]*\*\/[ \t]*/, "", s); sub(/ *;.*/, "", s); gsub(/R[0-9]+/, "R", s); print fn "  " s }' \
  "$out/sass.txt" | sort | uniq -c

metrics=sm__sass_thread_inst_executed_op_hadd_pred_on.sum,sm__sass_thread_inst_executed_op_hmul_pred_on.sum
metrics+=,sm__sass_thread_inst_executed_op_hfma_pred_on.sum,sm__thread_inst_executed_pipe_fma_type_fp16_pred_on.sum
metrics+=,sm__inst_executed_pipe_fma_type_fp16.sum,sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum
timeout 240 "$ncu" --cache-control none --metrics "$metrics" --csv --print-units base --print-kernel-base mangled \
  -k regex:'scalar16|packed16|mixed16|half_to_float' --log-file "$out/ncu.csv" \
  "$program" --expect "$out/program.expect.tsv" --dso "$dso" >"$out/ncu.out" 2>&1
echo "ncu: exit $?"
python3 - "$out/ncu.csv" <<'PY'
import collections, csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
head = rows[0]
iid, ik, im, iv = (head.index(c) for c in ("ID", "Kernel Name", "Metric Name", "Metric Value"))
per = collections.OrderedDict()
for r in rows[1:]:
    per.setdefault((r[iid], r[ik]), {})[r[im]] = float(r[iv].replace(",", ""))
short = [("hadd", "sm__sass_thread_inst_executed_op_hadd_pred_on.sum"),
         ("hmul", "sm__sass_thread_inst_executed_op_hmul_pred_on.sum"),
         ("hfma", "sm__sass_thread_inst_executed_op_hfma_pred_on.sum"),
         ("X fp16 pipe", "sm__thread_inst_executed_pipe_fma_type_fp16_pred_on.sum"),
         ("X warps", "sm__inst_executed_pipe_fma_type_fp16.sum"),
         ("HFMA2.MMA warps", "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum")]
print("%-44s" % "kernel" + "".join("%16s" % s for s, _ in short) + "%16s" % "X-hadd-hmul")
seen = set()
for (i, k), m in per.items():
    if k in seen:
        continue
    seen.add(k)
    v = [m.get(name, float("nan")) for _, name in short]
    print("%-44s" % k.replace("_ZN10validation", "")[:44] + "".join("%16.0f" % x for x in v) + "%16.0f" % (v[3] - v[0] - v[1]))
PY
