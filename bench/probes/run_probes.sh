#!/usr/bin/env bash
# One device call that answers the questions of bench/probes/README.md (issues 13 and 15): range
# identity per launch kind, start/stop and decode cost, extra DRAM bytes under kernel replay against
# ncu, the SASS Metrics API variants, and the same under a newer CUPTI where build.sh packed one.
#
#   here:    bench/probes/build.sh                  (build-probes/: the probes and the newer CUPTI)
#   device:  bash bench/probes/run_probes.sh        (carry ["build-probes"]; about 4-5 minutes on an H100)
#
# Every step runs under `timeout` and the whole run stops starting steps after PROBES_BUDGET_S
# (default 300) seconds. $OUT gets summary.txt (the answer tables, also printed last), results.jsonl
# (every measured row) and probes-logs.tar.gz (each step's log, ncu's CSV, cuobjdump's SASS).
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=$(pwd)/build-probes
out=${OUT:-/tmp/probes-out}
mkdir -p "$out"
logs=$(mktemp -d "${TMPDIR:-/tmp}/probes-logs.XXXXXX")
budget=${PROBES_BUDGET_S:-300}
started=$(date +%s)
[ -x "$bin/rp_identity" ] || { echo "run_probes: no build-probes/ here; run bench/probes/build.sh and carry build-probes"; exit 2; }

old_lib=""  # the toolkit's CUPTI 13.0
for d in ${CUPTI_LIB_DIR:-} /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64 \
  $(ldconfig -p 2>/dev/null | awk '/libcupti\.so\.13 /{print $NF}' | xargs -r -n1 dirname); do
  if [ -n "$d" ] && [ -e "$d/libcupti.so.13" ]; then old_lib=$d; break; fi
done
[ -n "$old_lib" ] || echo "run_probes: no libcupti.so.13 found (set CUPTI_LIB_DIR); the probes will not load"
new_lib=""
tarball=$(ls "$bin"/cupti-*.tar.xz 2>/dev/null | head -n 1)
if [ -n "$tarball" ]; then
  new_lib=$logs/cupti-new
  mkdir -p "$new_lib" && tar -C "$new_lib" -xJf "$tarball" || new_lib=""
fi
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)

step() {  # step NAME LIMIT_S LIBDIR COMMAND...: one probe run, logged, time-bounded
  local name=$1 limit=$2 lib=$3
  shift 3
  local left=$((budget - ($(date +%s) - started)))
  if ((left < 8)); then
    echo "== $name: skipped (budget spent)"
    echo "$name|skipped (budget)" >>"$logs/steps.txt"
    return
  fi
  ((limit > left)) && limit=$left
  echo "== $name"
  local t0=$(date +%s.%N)
  LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout -k 5 "$limit" "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  local secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  { echo "@@step $name rc=$rc s=$secs"; cat "$logs/$name.log"; } >>"$logs/all.log"
  echo "$name|exit $rc ($secs s)" >>"$logs/steps.txt"
  echo "   exit $rc, $secs s"
}

step env 30 "$old_lib" bash -c "nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader;
  echo cupti-13.0: $old_lib; ls $old_lib/libcupti* $old_lib/libnvperf* 2>&1; echo newer: ${tarball:-none};
  echo ncu: $ncu; $ncu --version 2>&1 | tail -n 1; echo cuobjdump: $cuobjdump"

# Q1 + Q4: range identity per launch kind, one-pass metrics, the toolkit's CUPTI.
for g in basic coop cluster graph threads; do step "q1-$g-one" 40 "$old_lib" "$bin/rp_identity" "$g" one; done
step q1-cost-one 90 "$old_lib" "$bin/rp_identity" cost one 64

# Q2: DRAM bytes under kernel replay, then ncu on the same program.
for cfg in "one none" "roofline none" "one memset" "one sweep" "roofline sweep"; do
  set -- $cfg
  step "q2-$1-$2" 60 "$old_lib" env METRICS="$1" FLUSH="$2" "$bin/rp_dram" profile
done
step q2-one-alternate 60 "$old_lib" env METRICS=one ALTERNATE=1 ROUNDS=4 "$bin/rp_dram" profile
m_one=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum
m_roof=$m_one,l1tex__t_bytes.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum
m_roof=$m_roof,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for op in dadd dmul dfma fadd fmul ffma hadd hmul hfma; do m_roof=$m_roof,sm__sass_thread_inst_executed_op_${op}_pred_on.sum; done
for t in fp16 bf16_dst_fp32 tf32_dst_fp32 fp8 fp64 int8; do m_roof=$m_roof,sm__ops_path_tensor_src_$t.sum; done
ncu_run() {  # ncu_run NAME CACHE METRICS
  step "$1" 90 "" "$ncu" --csv --print-units base --cache-control "$2" -k regex:'axpy|relu|sgemm' \
    --launch-skip 3 --launch-count 9 \
    --metrics "$3" "$bin/rp_dram_native"
}
ncu_run ncu-one-none none "$m_one"
ncu_run ncu-one-all all "$m_one"
ncu_run ncu-roofline-none none "$m_roof"

# Q3: the SASS Metrics API, one variant per process. Variants that call CUPTI from inside a
# callback (which may deadlock) run after the newer CUPTI's steps.
variants=$(LD_LIBRARY_PATH=$old_lib "$bin/sass_probe" list 2>/dev/null | awk '{print $1}')
[ -n "$variants" ] || variants="primary sample_ctx one_metric flush_end eager_patch callback_enable_lazy1"
safe=$(echo "$variants" | grep -v -E 'callback|modload')
risky=$(echo "$variants" | grep -E 'callback|modload')
first=1
for v in $safe; do
  extra=()
  ((first)) && extra=(LIST_METRICS=1) && first=0
  step "q3-$v" 20 "$old_lib" env DUMP_PCS=1 "${extra[@]}" "$bin/sass_probe" "$v"
done

# The newer CUPTI (its range profiler has a cache-control mode): does it load on this driver, and
# what does it change?
if [ -n "$new_lib" ]; then
  step q2-new-one-none 60 "$new_lib" env METRICS=one "$bin/rp_dram" profile
  step q2-new-one-cc-all 60 "$new_lib" env METRICS=one CACHE_CONTROL=1 "$bin/rp_dram" profile
  step q2-new-roofline-cc-all 60 "$new_lib" env METRICS=roofline CACHE_CONTROL=1 "$bin/rp_dram" profile
  step q2-new-one-cc-l2 60 "$new_lib" env METRICS=one CACHE_CONTROL=2 "$bin/rp_dram" profile
  step q2-new-roofline-none 60 "$new_lib" env METRICS=roofline "$bin/rp_dram" profile
  for v in primary sample_ctx touch_first_eager_patch; do
    step "q3-new-$v" 20 "$new_lib" env DUMP_PCS=1 "$bin/sass_probe" "$v"
  done
  step q3-new-primary-EAGER 20 "$new_lib" env CUDA_MODULE_LOADING=EAGER DUMP_PCS=1 "$bin/sass_probe" primary
  for g in basic graph threads; do step "q1-new-$g-one" 40 "$new_lib" "$bin/rp_identity" "$g" one; done
fi

for v in $risky; do step "q3-$v" 20 "$old_lib" env DUMP_PCS=1 "$bin/sass_probe" "$v"; done
[ -n "$new_lib" ] && step q3-new-callback_enable_lazy1 20 "$new_lib" env DUMP_PCS=1 "$bin/sass_probe" callback_enable_lazy1
for v in primary eager_patch callback_enable_lazy1 sample_ctx; do
  step "q3-$v-EAGER" 20 "$old_lib" env CUDA_MODULE_LOADING=EAGER DUMP_PCS=1 "$bin/sass_probe" "$v"
done

# Q1 with the seven-pass roofline set, and its cost per kernel.
for g in coop cluster graph; do step "q1-$g-roofline" 60 "$old_lib" "$bin/rp_identity" "$g" roofline; done
step q1-cost-roofline 90 "$old_lib" "$bin/rp_identity" cost roofline 16
ncu_run ncu-roofline-all all "$m_roof"
[ -x "$cuobjdump" ] && "$cuobjdump" -sass "$bin/sass_probe" >"$logs/sass_probe.sass" 2>&1

grep -h '^@json ' "$logs/all.log" | sed 's/^@json //' >"$out/results.jsonl"
python3 "$(dirname "$0")/summarize.py" "$logs" >"$out/summary.txt" 2>&1
{ echo "== steps ($(($(date +%s) - started)) s of $budget)"; awk -F'|' '{printf "  %-34s %s\n", $1, $2}' "$logs/steps.txt"; } \
  >>"$out/summary.txt"
tar -C "$logs" --exclude=cupti-new -czf "$out/probes-logs.tar.gz" .
echo
echo "== run_probes: $(($(date +%s) - started)) s; full tables in \$OUT/summary.txt, logs in \$OUT/probes-logs.tar.gz"
python3 "$(dirname "$0")/summarize.py" "$logs" --compact 2>&1
