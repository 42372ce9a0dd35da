#!/usr/bin/env bash
# Issue 15: wall time of `fprof run --metrics roofline` and of `ncu --metrics <the same names>` on
# bench/probes/replay_footprint.cu with 1 and N distinct launches, while the program holds
# 0, 4, 16 and 48 GiB of device memory (both with --cache-control none). The marginal cost of a
# profiled kernel is (t(N) - t(1)) / (N - 1). GPU machine, after bench/probes/build.sh here:
#
#   FPROF_BUILD=build-gpu bash bench/probes/replay_footprint.sh     carry ["build-gpu", "build-probes"]
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${FPROF_BUILD:-build}
P=${PROBE:-build-probes/replay_footprint}
N=${N:-8}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
metrics=$("$B/bin/fprof-metrics-host" --list 2>/dev/null | sed -n '/^roofline:/,/passes/p' | awk '$1=="ok"{print $2}' | paste -sd, -)
t() {  # t COMMAND...: wall milliseconds and exit code
  local t0 t1 rc
  t0=$(date +%s%N)
  "$@" >/tmp/replay_footprint.log 2>&1
  rc=$?
  t1=$(date +%s%N)
  echo "$(((t1 - t0) / 1000000)) ms, exit $rc"
}
for gb in ${GIB:-0 4 16 48}; do
  echo "GiB $gb  native        $(t "$P" "$gb" "$N")"
  for n in 1 "$N"; do
    echo "GiB $gb  fprof, $n      $(t "$B/bin/fprof" run --force --metrics roofline --cache-control none -o /tmp/replay_footprint.fprof "$P" "$gb" "$n")"
    echo "GiB $gb  ncu, $n        $(t timeout 120 "$ncu" --metrics "$metrics" --cache-control none "$P" "$gb" "$n")"
  done
done
