#!/usr/bin/env bash
# The viewer's real window under Xvfb (Mesa software GL): screenshots of a synthetic run with
# counters (the roof must be where the viewer says it drew it), of the recorded traces under
# tests/data, and of a missing file (the reason in the window and on stderr, exit 2, no crash).
set -euo pipefail
view=$1 fixture=$2 check=$3 out=$4 data=$5
mkdir -p "$out"
export LIBGL_ALWAYS_SOFTWARE=1
xvfb() { xvfb-run -a -s "-screen 0 1600x1000x24" "$@"; }

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

set +e
xvfb "$view" "$out/does_not_exist.fprof" --screenshot "$out/missing.png" --frames 4 --size 1000x600 \
  2>"$out/missing.stderr"
rc=$?
set -e
cat "$out/missing.stderr"
[ "$rc" -eq 2 ] || { echo "expected exit 2 for a missing file, got $rc"; exit 1; }
grep -q 'does_not_exist.fprof' "$out/missing.stderr"
"$check" "$out/missing.png" --error-text
echo "screenshot test passed; images in $out"
