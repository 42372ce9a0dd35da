#!/usr/bin/env bash
# `fprof job` on a synthetic job made from a recorded rank (bench/job_make_ranks.py), against
# `fprof merge` + `fprof info`: wall time, the client's and the workers' peak memory, time against
# total kernels, the rate per core; and the job's per-rank and per-group figures checked against
# `fprof info`'s on each merged file (bench/job_check_info.py). Results: bench/RESULTS.md, "Jobs on
# Dask". No GPU needed. Everything it generates is removed at the end.
#
#   bench/job_bench.sh BUILD_DIR [WORK_DIR]
#
# FPROF_BENCH_RANKS ranks (default 1024) of FPROF_BENCH_KERNELS kernels (default 100000), fewer
# where the disk cannot hold them and 20 GB besides (said); jobs over the first
# FPROF_BENCH_JOB_SIZES ranks (default "64 256 all"), each summarised afresh (--no-cache), and the
# gate over the largest job against itself; merge + info on the first FPROF_BENCH_MERGE_SIZES ranks
# (default "8 32 64"; "" for none). Run it niced on a shared machine: it keeps every core busy.
set -euo pipefail
build=$(realpath "${1:?usage: job_bench.sh BUILD_DIR [WORK_DIR]}")
work=$(realpath -m "${2:-$build/bench-job}")
ranks=${FPROF_BENCH_RANKS:-1024}
kernels=${FPROF_BENCH_KERNELS:-100000}
job_sizes=${FPROF_BENCH_JOB_SIZES-64 256 all}
merge_sizes=${FPROF_BENCH_MERGE_SIZES-8 32 64}
here=$(cd "$(dirname "$0")" && pwd)
source_rank=$here/../tests/data/torchrun_allreduce_h200x2.rank0.fprof
fprof=$build/bin/fprof
python=$build/python/venv/bin/python
[ -x "$python" ] || { echo "job_bench: no $python (make test installs the package there)" >&2; exit 2; }
[ ! -e "$work" ] || { echo "job_bench: $work exists; remove it or name another WORK_DIR" >&2; exit 2; }
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
cores=$(nproc)
echo "fprof: $("$fprof" --version) at $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'); $cores cores," \
     "$(free -g | awk '/Mem:/ {print $2}') GB; $(date -u +%F)"

# One rank first: its size says how many ranks the disk holds.
"$python" "$here/job_make_ranks.py" "$source_rank" "$work/probe" --ranks 1 --kernels "$kernels" >/dev/null
per_rank=$(stat -c %s "$work/probe/rank0.fprof")
rm -rf "$work/probe"
largest_merge=$(for n in 0 $merge_sizes; do echo "$n"; done | sort -n | tail -1)
avail=$(df --output=avail -B1 "$work" | tail -1)
# Room for the ranks, the largest merged file (about the ranks it joins), the job folders; 20 GB left.
fit=$(( (avail - 20 * 1024 ** 3) / per_rank - largest_merge ))
if [ "$fit" -lt "$ranks" ]; then
  echo "job_bench: the disk holds $fit ranks of $kernels kernels ($((per_rank / 1024 / 1024)) MiB each) besides" \
       "20 GB, not $ranks: using $fit"
  ranks=$fit
fi
started=$(date +%s)
"$python" "$here/job_make_ranks.py" "$source_rank" "$work/ranks" --ranks "$ranks" --kernels "$kernels"
echo "made in $(( $(date +%s) - started )) s"
mapfile -t files < <(ls "$work/ranks"/rank*.fprof | sort)

# first N: a folder of links to the first N rank files
subset() {
  local n=$1 dir=$work/first$1
  mkdir -p "$dir"
  for f in "${files[@]:0:$n}"; do ln -sf "$f" "$dir/"; done
  echo "$dir"
}

# timed LOG COMMAND...: runs COMMAND under /usr/bin/time -v; prints "wall_s peak_MiB cpu_s" (the CPU
# time of COMMAND and every process it waited for: a local cluster's workers)
timed() {
  local log=$1
  shift
  /usr/bin/time -v -o "$log" "$@" >"$log.out" 2>"$log.err" || { echo "job_bench: failed: $*" >&2; tail -5 "$log.err" >&2; exit 1; }
  local wall rss
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$log" |
         awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }')
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log")
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$log")
  echo "$wall $((rss / 1024)) $cpu"
}

echo
echo "fprof job (LocalCluster of $cores workers, --no-cache)"
printf '%6s %12s %9s %8s %12s %12s %16s %15s\n' ranks kernels wall_s cpu_s client_MiB worker_MiB \
  'kernels/wall_s/core' 'kernels/cpu_s'
for size in $job_sizes; do
  [ "$size" = all ] && size=$ranks
  [ "$size" -le "$ranks" ] || continue
  dir=$(subset "$size")
  read -r wall _ cpu < <(timed "$work/job$size.time" "$fprof" job "$dir" -o "$work/job$size" --no-cache -q)
  "$python" - "$work/job$size/job.json" "$wall" "$cores" "$cpu" <<'EOF'
import json, sys
facts = json.load(open(sys.argv[1]))
wall, cores, cpu = float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
print(f"{facts['ranks']:6d} {facts['kernels']:12d} {wall:9.1f} {cpu:8.1f} {facts['client_peak_rss_bytes'] / 2**20:12.0f} "
      f"{facts['worker_peak_rss_bytes'] / 2**20:12.0f} {facts['kernels'] / wall / cores:16.0f} "
      f"{facts['kernels'] / cpu:15.0f}")
EOF
  last_job=$work/job$size
done
# The gate over two jobs of the most ranks (the job against itself: every check runs, none fails).
read -r gwall grss _ < <(timed "$work/gate.time" "$fprof" gate "$last_job" "$last_job" --json "$work/gate.json" -q)
echo "fprof gate on the ${last_job##*job}-rank job against itself: $gwall s, $grss MiB peak"
for size in $job_sizes; do
  [ "$size" = all ] && size=$ranks
  [ "$size" -le "$largest_merge" ] || rm -rf "$work/job$size"
done

echo
echo "fprof merge + fprof info, and the job's figures against info's"
printf '%6s %12s %9s %10s %9s %10s  %s\n' ranks kernels merge_s merge_MiB info_s info_MiB 'job = info'
for size in $merge_sizes; do
  [ "$size" -le "$ranks" ] || continue
  merged=$work/merged$size.fprof
  read -r mwall mrss _ < <(timed "$work/merge$size.time" "$fprof" merge -o "$merged" "${files[@]:0:$size}")
  read -r iwall irss _ < <(timed "$work/info$size.time" "$fprof" info "$merged")
  [ -d "$work/job$size" ] || timed "$work/job$size.time" "$fprof" job "$(subset "$size")" -o "$work/job$size" --no-cache -q >/dev/null
  check=$("$python" "$here/job_check_info.py" "$fprof" "$work/job$size" "$merged" 2>&1) || check="DIFFERS: $check"
  printf '%6d %12d %9.1f %10d %9.1f %10d  %s\n' "$size" "$((size * kernels))" "$mwall" "$mrss" "$iwall" "$irss" "$check"
  rm -f "$merged"
  rm -rf "$work/job$size"
done
