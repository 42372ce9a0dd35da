#!/usr/bin/env bash
# The viewer's real window under Xvfb (Mesa software GL): screenshots of a synthetic run with
# counters (the roof must be where the viewer says it drew it), of recordings under tests/data,
# and of a missing file (the reason in the window and on stderr, exit 2, no crash).
set -euo pipefail
view=$1 fixture=$2 check=$3 out=$4 data=$5
rm -rf "$out"  # fprof-view keeps a file that exists (docs/outputs.md): every run starts afresh
mkdir -p "$out"
export LIBGL_ALWAYS_SOFTWARE=1
# One X server for the whole test, on a display of this run's own: xvfb-run per window raced with
# other jobs on the machine for its display and, cleaning up, replaced a program's exit status by
# its own (5) now and then. Every window below runs on it.
display=$((100 + RANDOM % 800))
while [ -e "/tmp/.X$display-lock" ]; do display=$((display + 1)); done
Xvfb ":$display" -screen 0 1600x1000x24 -nolisten tcp >"$out/xvfb.log" 2>&1 &
xvfb_pid=$!
for _ in $(seq 100); do [ -S "/tmp/.X11-unix/X$display" ] && break; sleep 0.1; done
[ -S "/tmp/.X11-unix/X$display" ] || { cat "$out/xvfb.log"; echo "Xvfb :$display did not start"; exit 1; }
xvfb() { DISPLAY=":$display" "$@"; }
trap 'kill "$xvfb_pid"' EXIT

"$fixture" "$out/synthetic.fprof" 2000
xvfb "$view" "$out/synthetic.fprof" --screenshot "$out/synthetic.png" --frames 8 --size 1600x1000 \
  --geometry "$out/synthetic.geom"
cat "$out/synthetic.geom"
"$check" "$out/synthetic.png" "$out/synthetic.geom" dram measured
"$check" "$out/synthetic.png" "$out/synthetic.geom" tensor_fp16 measured
grep -q '^points_drawn [1-9]' "$out/synthetic.geom"

# Diff mode: saxpy 30% slower than the baseline: an arrow per kernel group, the regression in red.
"$fixture" "$out/current.fprof" 2000 1.3
xvfb "$view" "$out/current.fprof" "$out/synthetic.fprof" --screenshot "$out/diff.png" --frames 8 --size 1600x1000 \
  --geometry "$out/diff.geom"
grep -q '^arrows [1-9]' "$out/diff.geom"
"$check" "$out/diff.png" --colour 255 40 40 30

# A before/after pair recorded on a GPU (naive attention -> SDPA), on the diff tab: the fusion
# applied, predicted next to measured, and the findings beside the plot naming it.
xvfb "$view" "$data/torch_proof_gpt_bf16_sdpa_h100.fprof" "$data/torch_proof_gpt_bf16_eager_h100.fprof" --tab diff \
  --screenshot "$out/applied_fusions.png" --frames 8 --size 1600x1000 --geometry "$out/applied_fusions.geom"
grep -q '^applied_fusions 1$' "$out/applied_fusions.geom" || { cat "$out/applied_fusions.geom"; exit 1; }
"$check" "$out/applied_fusions.png" --not-blank

# The recorded traces (trace-only: the table, datasheet roofs, and the note that points need counters).
for trace in "$data"/trace_test_*.fprof; do
  [ -f "$trace" ] || continue
  name=$(basename "$trace" .fprof)
  xvfb "$view" "$trace" --screenshot "$out/$name.png" --frames 8 --size 1600x1000 --geometry "$out/$name.geom"
  if grep -q '^roof dram' "$out/$name.geom"; then
    "$check" "$out/$name.png" "$out/$name.geom" dram any
  else
    "$check" "$out/$name.png" --not-blank
  fi
done

# Recordings of real programs: counters (the findings beside the plot name what to gain) and an
# emit_nvtx trace (its op legend lists aten ops, not one entry per range). Kept for a person to look at.
for recorded in model_metrics_h200 torch_proof_gpt_bf16_emitnvtx_h100; do
  xvfb "$view" "$data/$recorded.fprof" --screenshot "$out/$recorded.png" --frames 8 --size 1600x1000
  "$check" "$out/$recorded.png" --not-blank
done

set +e
xvfb "$view" "$out/does_not_exist.fprof" --screenshot "$out/missing.png" --frames 4 --size 1000x600 \
  2>"$out/missing.stderr"
rc=$?
set -e
cat "$out/missing.stderr"
[ "$rc" -eq 2 ] || { echo "expected exit 2 for a missing file, got $rc"; exit 1; }
grep -q 'does_not_exist.fprof' "$out/missing.stderr"
"$check" "$out/missing.png" --error-text
# The screenshot's output rules once a window has rendered (tests/unit/cli/test_outputs.cpp has the
# cases refused before one opens): a read-only folder and a full file system exit 2 with the cause
# and leave nothing; of two viewers racing for one file exactly one writes it.
trace="$data/trace_test_h200.fprof"
expect_refused() {  # expect_refused CAUSE DIR ARGS...: exit 2, the cause said, DIR as it was
  local cause=$1 dir=$2 before rc
  shift 2
  before=$(ls -A "$dir")
  set +e
  xvfb "$view" "$@" 2>"$out/refused.stderr"
  rc=$?
  set -e
  cat "$out/refused.stderr"
  [ "$rc" -eq 2 ] || { echo "expected exit 2, got $rc"; exit 1; }
  grep -q "$cause" "$out/refused.stderr" || { echo "expected '$cause' in the message"; exit 1; }
  [ "$(ls -A "$dir")" = "$before" ] || { echo "$dir changed: $(ls -A "$dir")"; exit 1; }
}
mnt="$out/mnt"
mkdir -p "$mnt"
# A failed step must not leave the tmpfs mounted in the build tree (the next run removes $out).
trap 'if mountpoint -q "$mnt"; then umount "$mnt"; fi; kill "$xvfb_pid"' EXIT
if [ "$(id -u)" -ne 0 ]; then
  chmod 555 "$mnt"
  expect_refused "permission denied" "$mnt" "$trace" --screenshot "$mnt/shot.png" --frames 2 --size 640x480
  chmod 755 "$mnt"
  echo "not root: the full file system case is not run (it mounts a tmpfs)"
elif mount -t tmpfs -o ro,size=64k tmpfs "$mnt" 2>/dev/null; then
  expect_refused "read-only file system" "$mnt" "$trace" --screenshot "$mnt/shot.png" --frames 2 --size 640x480
  umount "$mnt"
  mount -t tmpfs -o size=64k tmpfs "$mnt"
  printf 'precious\n' >"$mnt/shot.png"
  dd if=/dev/zero of="$mnt/filler" bs=4k 2>/dev/null || true
  expect_refused "no space left on device" "$mnt" "$trace" --screenshot "$mnt/shot.png" --frames 2 --size 640x480 --force
  [ "$(cat "$mnt/shot.png")" = precious ] || { echo "the screenshot replaced the file on a full disk"; exit 1; }
  umount "$mnt"
else
  echo "root, but no tmpfs can be mounted here: the read-only folder and full file system cases are not run"
fi
set +e
xvfb "$view" "$trace" --screenshot "$out/race.png" --frames 4 --size 640x480 2>"$out/race1.stderr" &
first=$!
xvfb "$view" "$trace" --screenshot "$out/race.png" --frames 4 --size 640x480 2>"$out/race2.stderr" &
second=$!
wait $first; rc1=$?
wait $second; rc2=$?
set -e
echo "racing viewers: exit $rc1 and $rc2"
[ $((rc1 + rc2)) -eq 2 ] && [ "$rc1" -ne 1 ] || { cat "$out"/race*.stderr; echo "expected one 0 and one 2"; exit 1; }
grep -q "file exists" "$out"/race*.stderr
"$check" "$out/race.png" --not-blank
if ls -A "$out" | grep -q '\.tmp$'; then echo "a temporary file was left in $out"; exit 1; fi

echo "screenshot test passed; images in $out"
