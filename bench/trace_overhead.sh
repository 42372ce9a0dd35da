#!/usr/bin/env bash
# Trace-mode overhead: a launch-bound and a compute-bound program, each run natively and under
# the collector in the same call (alternating, median of REPS), as wall-time ratios. Also checks
# that every launched kernel reached the database. Prints a short table last.
#
#   FPROF_BUILD=build bench/trace_overhead.sh          (OUT=folder for logs and databases)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${FPROF_BUILD:-build}
prog=$build/bin/trace_overhead
collector=$build/lib/libfprof_collector.so
reps=${REPS:-3}
launches=${LAUNCHES:-200000}
computes=${COMPUTES:-300}
work=${TRACE_OVERHEAD_DIR:-/tmp/trace_overhead}  # databases and logs; not under OUT (few files come back)
mkdir -p "$work"
for f in "$prog" "$collector"; do
  [ -e "$f" ] || { echo "trace_overhead: $f missing; build the fprof_collector and trace_overhead targets"; exit 2; }
done
if ! nvidia-smi -L >/dev/null 2>&1; then echo "trace_overhead: no GPU; nothing measured"; exit 77; fi

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
kernels_in() {
  python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from kernel").fetchone()[0])' "$1"
}

declare -A loop proc
fail=0
for case in launch compute; do
  n=$([ "$case" = launch ] && echo "$launches" || echo "$computes")
  for rep in $(seq "$reps"); do
    for mode in native traced; do
      log=$work/$case.$mode.$rep.log
      db=$work/$case.$rep.fprof
      rm -f "$db" "$db-wal" "$db-shm"
      t0=$(now)
      if [ "$mode" = native ]; then
        "$prog" "$case" "$n" >"$log" 2>&1
      else
        CUDA_INJECTION64_PATH=$collector NVTX_INJECTION64_PATH=$collector FPROF_OUTPUT=$db FPROF_QUIET=1 \
          "$prog" "$case" "$n" >"$log" 2>&1
      fi
      rc=$?
      t1=$(now)
      [ $rc -eq 0 ] || { echo "$case/$mode rep $rep failed (exit $rc), see $log"; fail=1; continue; }
      loop[$case.$mode]+="$(sed -n 's/^loop_s=//p' "$log") "
      proc[$case.$mode]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.6f", b - a}') "
      if [ "$mode" = traced ]; then
        want=$(sed -n 's/^kernels=//p' "$log")
        got=$(kernels_in "$db")
        if [ "$got" != "$want" ]; then echo "$case rep $rep: $got kernel records, $want launched"; fail=1; fi
        grep -q '^\[fprof\]' "$log" && { echo "$case rep $rep: collector printed:"; grep '^\[fprof\]' "$log"; }
      fi
    done
  done
done

device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)
echo
echo "trace-mode overhead on $device, median of $reps ($(date -u +%Y-%m-%d))"
printf '%-34s %11s %11s %7s %7s\n' "case" "native s" "traced s" "ratio" "target"
for case in launch compute; do
  label=$([ "$case" = launch ] && echo "launch-bound, $launches kernels" || echo "compute-bound, $computes kernels")
  target=$([ "$case" = launch ] && echo "<=1.50" || echo "<1.03")
  for what in loop proc; do
    declare -n arr=$what
    nat=$(echo ${arr[$case.native]:-} | tr ' ' '\n' | grep . | median)
    tra=$(echo ${arr[$case.traced]:-} | tr ' ' '\n' | grep . | median)
    [ -n "$nat" ] && [ -n "$tra" ] || continue
    ratio=$(awk -v a="$tra" -v b="$nat" 'BEGIN {printf "%.6f", a / b}')
    printf '%-34s %11.4f %11.4f %7.3f %7s\n' "$label ($([ $what = loop ] && echo loop || echo process))" "$nat" "$tra" "$ratio" "$target"
  done
done
exit $fail
