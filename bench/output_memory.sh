#!/usr/bin/env bash
# Peak memory of every writer on a large recording: a recorded file of tests/data multiplied to
# about two million kernels (bench/multiply_recording.py), then each writer run once under
# /usr/bin/time -v, its maximum resident set size printed. Results: bench/RESULTS.md, "Output
# memory". No GPU needed.
#
#   bench/output_memory.sh BUILD_DIR [COPIES] [RECORDING] [WORK_DIR]
#
# COPIES defaults to 1250 (model_trace_h200.fprof's 1,600 kernels -> 2,000,000), WORK_DIR to
# BUILD_DIR/bench-output-memory; the multiplied file is kept there and reused when it exists.
# FPROF_BENCH_WRITERS picks writers by name (default: all): export_csv export_json
# export_chrome_trace report report_md gate merge view.
set -euo pipefail
build=${1:?usage: output_memory.sh BUILD_DIR [COPIES] [RECORDING] [WORK_DIR]}
copies=${2:-1250}
here=$(cd "$(dirname "$0")" && pwd)
recording=${3:-$here/../tests/data/model_trace_h200.fprof}
work=${4:-$build/bench-output-memory}
fprof=$build/bin/fprof
writers=${FPROF_BENCH_WRITERS:-export_csv export_json export_chrome_trace report report_md gate merge view}
mkdir -p "$work"
big=$work/$(basename "$recording" .fprof)-x$copies.fprof
if [ ! -f "$big" ]; then
  python3 "$here/multiply_recording.py" "$recording" "$copies" "$big.part"
  mv "$big.part" "$big"
fi
kernels=$(sqlite3 "$big" "SELECT count(*) FROM kernel")
bytes=$(stat -c %s "$big")
echo "recording: $big ($kernels kernels, $((bytes / 1024 / 1024)) MiB)"
# The commit of the build's own sources (its CMake cache names them), not of this script's checkout.
source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
echo "fprof: $("$fprof" --version) at $(git -C "${source_dir:-$here}" rev-parse --short HEAD 2>/dev/null || echo '?')"

# measure NAME [PREFIX... --] COMMAND...: peak RSS and wall time of COMMAND (run under PREFIX, such
# as xvfb-run, which is not counted); the output is removed afterwards.
measure() {
  local name=$1 log=$work/$1.time status prefix=()
  shift
  if [ "$1" = xvfb-run ]; then
    while [ "$1" != -- ]; do prefix+=("$1"); shift; done
    shift
  fi
  rm -f "$work/out.$name"*
  if "${prefix[@]}" /usr/bin/time -v -o "$log" "$@" >"$work/$name.stdout" 2>"$work/$name.stderr"; then
    status=ok
  else
    status="exit $?: $(tail -1 "$work/$name.stderr")"
  fi
  local rss_kb wall
  rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log")
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$log")
  printf '%-20s %8d MiB %10s  %s\n' "$name" "$((rss_kb / 1024))" "$wall" "$status"
  rm -f "$work/out.$name"* "$work/$name.stdout" "$work/$name.stderr"
}

printf '%-20s %12s %10s  %s\n' writer "peak RSS" wall status
for w in $writers; do
  case $w in
    export_csv) measure "$w" "$fprof" export "$big" --format csv -o "$work/out.$w" ;;
    export_json) measure "$w" "$fprof" export "$big" --format json -o "$work/out.$w" ;;
    export_chrome_trace) measure "$w" "$fprof" export "$big" --format chrome-trace -o "$work/out.$w" ;;
    report) measure "$w" "$fprof" report "$big" -o "$work/out.$w" -q ;;
    report_md) measure "$w" "$fprof" report "$big" --format md -o "$work/out.$w" -q ;;
    gate) measure "$w" "$fprof" gate "$big" "$big" --json "$work/out.$w" -q ;;
    merge) measure "$w" "$fprof" merge "$big" -o "$work/out.$w" -q ;;
    view)
      if command -v xvfb-run >/dev/null && [ -x "$build/bin/fprof-view" ]; then
        LIBGL_ALWAYS_SOFTWARE=1 measure "$w" xvfb-run -a -s "-screen 0 1600x1000x24" -- "$build/bin/fprof-view" \
          "$big" --screenshot "$work/out.$w.png" --frames 3
      else
        echo "view: no xvfb-run or fprof-view here; not measured"
      fi
      ;;
    *) echo "unknown writer $w" >&2; exit 2 ;;
  esac
done
