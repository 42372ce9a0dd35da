#!/usr/bin/env bash
# Trace-mode overhead: a launch-bound and a compute-bound program, each run natively and under
# the collector in the same call (modes interleaved, median of REPS), as wall-time ratios: of the
# timed loop inside the program (what the target feels) and of the whole process (start-up and
# the final database write included). The `nvtx` case is the launch-bound loop with an NVTX range
# around each launch and one around every 8 (the reference model's pattern), its kernels spread
# over 4 streams so that the GPU keeps up and the loop measures the CPU's cost per launch. Where
# the build has it, a bare-CUPTI reference library is run as well (kernel activity; with the
# runtime and driver launch callbacks; with the driver's alone), to separate CUPTI's own cost from
# fprof's. The minimum over REPS is printed beside the median: on the lent VMs whole processes run
# fast or slow (docs/overhead.md). Checks that every launched kernel and every range reached the
# database. Prints a short table last.
#
#   FPROF_BUILD=build bench/trace_overhead.sh       REPS=5 LAUNCHES=200000 COMPUTES=300
set -uo pipefail
cd "$(dirname "$0")/.."
build=${FPROF_BUILD:-build}
prog=$build/bin/trace_overhead
collector=$build/lib/libfprof_collector.so
baseline=$build/lib/libtrace_overhead_cupti_baseline.so
reps=${REPS:-5}
launches=${LAUNCHES:-200000}
computes=${COMPUTES:-300}
work=${TRACE_OVERHEAD_DIR:-/tmp/trace_overhead}  # databases and logs; not under OUT (few files come back)
mkdir -p "$work"
for f in "$prog" "$collector"; do
  [ -e "$f" ] || { echo "trace_overhead: $f missing; build the fprof_collector and trace_overhead targets"; exit 2; }
done
if ! nvidia-smi -L >/dev/null 2>&1; then echo "trace_overhead: no GPU; nothing measured"; exit 77; fi

modes="native fprof"
[ -e "$baseline" ] && modes="native cupti-activity cupti+callbacks cupti+driver-cb fprof"
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
kernels_in() {
  python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from kernel").fetchone()[0])' "$1"
}

declare -A loop proc
fail=0
ranges_in() {
  python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from nvtx_range").fetchone()[0])' "$1"
}
args_of() {  # the program's arguments for a case
  case $1 in
    launch) echo "launch $launches" ;;
    nvtx) echo "nvtx $launches 4" ;;
    compute) echo "compute $computes" ;;
  esac
}
cases="launch nvtx compute"
for case in $cases; do
  # shellcheck disable=SC2207
  args=($(args_of "$case"))
  for rep in $(seq "$reps"); do
    for mode in $modes; do
      log=$work/$case.$mode.$rep.log
      db=$work/$case.$rep.fprof
      rm -f "$db" "$db-wal" "$db-shm"
      t0=$(now)
      case $mode in
        native) "$prog" "${args[@]}" >"$log" 2>&1 ;;
        cupti-activity) CUDA_INJECTION64_PATH=$baseline TRACE_BASELINE=activity "$prog" "${args[@]}" >"$log" 2>&1 ;;
        cupti+callbacks) CUDA_INJECTION64_PATH=$baseline TRACE_BASELINE=callbacks "$prog" "${args[@]}" >"$log" 2>&1 ;;
        cupti+driver-cb)
          CUDA_INJECTION64_PATH=$baseline TRACE_BASELINE=callbacks-driver "$prog" "${args[@]}" >"$log" 2>&1 ;;
        fprof)
          CUDA_INJECTION64_PATH=$collector NVTX_INJECTION64_PATH=$collector FPROF_OUTPUT=$db FPROF_QUIET=1 \
            "$prog" "${args[@]}" >"$log" 2>&1 ;;
      esac
      rc=$?
      t1=$(now)
      [ $rc -eq 0 ] || { echo "$case/$mode rep $rep failed (exit $rc), see $log"; fail=1; continue; }
      loop[$case.$mode]+="$(sed -n 's/^loop_s=//p' "$log") "
      proc[$case.$mode]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.6f", b - a}') "
      if [ "$mode" = fprof ]; then
        want=$(sed -n 's/^kernels=//p' "$log")
        got=$(kernels_in "$db")
        if [ "$got" != "$want" ]; then echo "$case rep $rep: $got kernel records, $want launched"; fail=1; fi
        if [ "$case" = nvtx ]; then
          want=$(sed -n 's/^ranges=//p' "$log")
          got=$(ranges_in "$db")
          if [ "$got" != "$want" ]; then echo "$case rep $rep: $got NVTX ranges recorded, $want pushed"; fail=1; fi
        fi
        grep -q '^\[fprof\]' "$log" && { echo "$case rep $rep: collector printed:"; grep '^\[fprof\]' "$log"; }
      fi
    done
  done
done

device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)
minimum() { sort -g | head -n 1; }
echo
echo "trace-mode overhead on $device, median and minimum of $reps, $(date -u +%Y-%m-%d)"
echo "targets (fprof vs native, loop): launch-bound <= 1.50x, compute-bound < 1.03x"
printf '%-20s %-16s %9s %7s %9s %7s %10s %7s\n' "case" "mode" "loop s" "ratio" "min s" "ratio" "process s" "ratio"
for case in $cases; do
  label="$(args_of "$case")"
  nl=$(echo ${loop[$case.native]:-} | tr ' ' '\n' | grep . | median)
  nm=$(echo ${loop[$case.native]:-} | tr ' ' '\n' | grep . | minimum)
  np=$(echo ${proc[$case.native]:-} | tr ' ' '\n' | grep . | median)
  for mode in $modes; do
    l=$(echo ${loop[$case.$mode]:-} | tr ' ' '\n' | grep . | median)
    m=$(echo ${loop[$case.$mode]:-} | tr ' ' '\n' | grep . | minimum)
    p=$(echo ${proc[$case.$mode]:-} | tr ' ' '\n' | grep . | median)
    [ -n "$l" ] && [ -n "$nl" ] || continue
    awk -v c="$label" -v md="$mode" -v l="$l" -v nl="$nl" -v m="$m" -v nm="$nm" -v p="$p" -v np="$np" \
      'BEGIN {printf "%-20s %-16s %9.4f %7.3f %9.4f %7.3f %10.4f %7.3f\n", c, md, l, l / nl, m, m / nm, p, p / np}'
  done
done
exit $fail
