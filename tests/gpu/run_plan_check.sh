#!/usr/bin/env bash
# On a GPU: `fprof run` under each replay mode, its plan, the user's files beside its output (kept),
# --force, signals and the file naming of a torch.compile program, with what to check printed
# beside each result.
#
#   FPROF_BUILD=build-gpu tests/gpu/run_plan_check.sh [WORK_DIR]   (scripts/gpu-check run-plan)
#
# Each check prints "ok" or "FAIL <why>"; the exit code is the number of failures. About a minute
# on an H100 (the reference model's attention ops under five modes, two short PyTorch runs).
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${FPROF_BUILD:-build}
fprof=$build/bin/fprof
model=$build/bin/model
work=${1:-$(mktemp -d /tmp/fprof-run-plan.XXXXXX)}
mkdir -p "$work"
failures=0
say() { printf '%-58s %s\n' "$1" "$2"; }
check() {  # NAME CONDITION-COMMAND...
  local name=$1
  shift
  if "$@"; then say "$name" ok; else say "$name" "FAIL ($*)"; failures=$((failures + 1)); fi
}
sql() { python3 -c 'import sqlite3, sys; print(*[r[0] for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])], sep="\n")' "$1" "$2"; }
meta() { sql "$1" "select value from metadata where key = '$2'"; }
has() { grep -q -- "$2" "$1"; }

# The plan of the default metrics run: application replay, duplicates, the second run only where
# they stop, and the patched run's time limit with its fallback.
"$fprof" run --explain --metrics roofline "$model" >"$work/explain-wrapped.txt" 2>&1
# Its lines are wrapped at 100 characters: look for phrases in the text joined back to one line.
tr -s ' \n' ' ' <"$work/explain-wrapped.txt" | sed 's/, /,/g' >"$work/explain.txt"
check "explain: lines of at most 100 characters" sh -c "! awk 'length > 100' '$work/explain-wrapped.txt' | grep -q ."
check "explain: application replay" has "$work/explain.txt" "replay: application"
check "explain: duplicates in the first run" has "$work/explain.txt" "FPROF_SASS_DUPLICATE=1"
check "explain: second run only where they stop" has "$work/explain.txt" "whose duplicates did not count"
check "explain: runs nothing" sh -c "! grep -q 'profile ready' '$work/explain.txt'"

# One run under each mode; each database holds its plan and names the mode it ran.
modes=("default:--metrics roofline" "kernel:--metrics roofline --replay kernel"
       "application-second-run:--metrics roofline --replay application --second-run patching"
       "second-run-kernel:--metrics roofline --replay application --second-run kernel" "memory:--metrics memory")
for entry in "${modes[@]}"; do
  IFS=: read -r name options <<<"$entry"
  db=$work/$name.fprof
  # Files of the user's at the names a run once used for its scratch: the run's own folder holds
  # its cubins, per-PC counts and second run, so these stay as they are.
  rm -rf "$db.pcs" "$db.cubins" "$db.second-run.fprof"
  printf 'counts of mine\n' >"$db.pcs"
  mkdir -p "$db.cubins" && printf 'mine\n' >"$db.cubins/mine.txt"
  printf 'a second run of mine\n' >"$db.second-run.fprof"
  # shellcheck disable=SC2086
  "$fprof" run --force -o "$db" $options "$model" --ops attention >"$work/$name.log" 2>&1
  code=$?
  check "$name: exit 0" test "$code" = 0
  check "$name: the user's files beside the output kept" sh -c "grep -qx 'counts of mine' '$db.pcs' &&
    grep -qx mine '$db.cubins/mine.txt' && grep -qx 'a second run of mine' '$db.second-run.fprof'"
  check "$name: the run's own folder removed" sh -c "! ls -A '$work' | grep -q '^\.$name\.fprof\.'"
  check "$name: profile ready is the last line" sh -c "tail -1 '$work/$name.log' | grep -q 'profile ready: $db'"
  check "$name: run_plan recorded" test "$(meta "$db" run_plan | head -1)" = "fprof run plan"
  check "$name: kernels with counters" test "$(sql "$db" 'select count(*) from kernel_counter')" -gt 0
done
check "default: one run with duplicates" has "$work/default.log" "one run: SASS counts from a duplicate"
check "second-run patching: joined" has "$work/application-second-run.log" "kernels got the second run's counters"
check "second-run kernel: replay recorded" test "$(meta "$work/second-run-kernel.fprof" second_run_replay)" = kernel

# --force with a mistyped program keeps the previous database.
before=$(sha256sum "$work/default.fprof" | cut -d' ' -f1)
"$fprof" run --force -o "$work/default.fprof" /nonexistent/program >"$work/force.log" 2>&1
check "force + /nonexistent/program: exit 127" test $? = 127
check "force + /nonexistent/program: file kept" test "$(sha256sum "$work/default.fprof" | cut -d' ' -f1)" = "$before"

# SIGTERM sent to fprof reaches a CUDA program; the database records the ending.
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  "$fprof" run -o "$work/sigterm.fprof" python3 -c \
    "import torch, time; x = torch.ones(1 << 20, device='cuda'); torch.cuda.synchronize(); time.sleep(60)" \
    >"$work/sigterm.log" 2>&1 &
  runner=$!
  sleep 15
  kill -TERM "$runner"
  wait "$runner"
  code=$?
  check "sigterm: fprof exits as the program (143)" test "$code" = 143
  check "sigterm: exit_signal recorded" test "$(meta "$work/sigterm.fprof" exit_signal)" = SIGTERM
  check "sigterm: forwarded_signals recorded" test "$(meta "$work/sigterm.fprof" forwarded_signals)" = SIGTERM

  # torch.compile: the program's own file is named last; the compile workers' are counted.
  "$fprof" run -o "$work/compiled.fprof" python3 examples/pytorch/run.py mlp --compile --steps 5 \
    >"$work/compiled.log" 2>&1
  check "torch.compile: exit 0" test $? = 0
  check "torch.compile: the program's file last" sh -c "tail -1 '$work/compiled.log' | grep -q 'profile ready: $work/compiled.fprof ('"
  grep -E 'other process|profile ready' "$work/compiled.log"
else
  say "sigterm, torch.compile" "skipped (no PyTorch with CUDA)"
fi
echo "work: $work; failures: $failures"
exit "$failures"
