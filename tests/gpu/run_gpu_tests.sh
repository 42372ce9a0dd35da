#!/usr/bin/env bash
# Runs the collector's GPU test (tests/gpu/trace_check.cpp) against a build; prints its table
# last. Exit 77 when there is no GPU (skipped). The same test runs under `ctest -L gpu`.
#
#   FPROF_BUILD=build tests/gpu/run_gpu_tests.sh
#   FPROF_GPU_TEST_KEEP=path.fprof   also keep the main run's database (tests/data/trace_test_h100.fprof)
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${FPROF_BUILD:-build}
for f in bin/trace_check bin/trace_test_program lib/libfprof_collector.so tests/gpu/trace_test_program.ptxas.txt; do
  [ -e "$build/$f" ] || { echo "run_gpu_tests: $build/$f missing; build the trace_check target first"; exit 2; }
done
exec "$build/bin/trace_check" "$build/bin/trace_test_program" "$build/lib/libfprof_collector.so" \
  "$build/tests/gpu/trace_test_program.ptxas.txt" "$build/bin/fprof"
