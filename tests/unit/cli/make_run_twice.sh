#!/usr/bin/env bash
# `make run` on a machine without a GPU, twice into one folder, as a user runs it again: both runs
# end with 0 and leave the report and the summary in OUT, and a file of the user's beside them is
# kept. On a machine with a GPU `make run` profiles the reference model (minutes): skipped there.
#   make_run_twice.sh BUILD OUT      (from the repository's root)
set -uo pipefail
build=$1
out=$2
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "make_run_twice: a GPU is here; make run would profile the reference model: skipped"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out"
echo "the user's" > "$out/notes.txt"
fail() { echo "make_run_twice: $*" >&2; exit 1; }
for run in first second; do
  scripts/demo "$build" "$out" > "$out/$run.log" 2>&1 || { cat "$out/$run.log" >&2; fail "the $run run failed"; }
  head -c 15 "$out/report.html" | grep -q '<!DOCTYPE html>' || fail "no HTML report after the $run run"
  grep -q '^fusion  : ' "$out/info.txt" || fail "no summary after the $run run"
  grep -q "^report : $out/report.html" "$out/$run.log" || fail "the $run run did not say where its report is"
done
[ "$(cat "$out/notes.txt")" = "the user's" ] || fail "a file of the user's in OUT was changed"
echo "make_run_twice: both runs wrote the report"
