#!/usr/bin/env bash
# Metrics-mode cost per profiled kernel against Nsight Compute, in one call: the 300-launch
# workload (bench/metrics_bench.cu) natively, under `fprof run --metrics roofline` and under
# `ncu --metrics <the same 24 metrics> --cache-control none` (fprof has no cache control yet, so
# both leave caches as the program left them). Then the values:
# fprof's and ncu's counters for the same kernels side by side. Prints a short table last.
#
#   FPROF_BUILD=build-gpu bench/metrics_overhead.sh
set -uo pipefail
cd "$(dirname "$0")/.."
build=${FPROF_BUILD:-build}
prog=$build/bin/metrics_bench
fprof=$build/bin/fprof
work=${METRICS_OVERHEAD_DIR:-/tmp/metrics_overhead}
mkdir -p "$work"
[ -x "$prog" ] && [ -x "$fprof" ] || { echo "metrics_overhead: build metrics_bench and fprof first"; exit 2; }
if ! nvidia-smi -L >/dev/null 2>&1; then echo "metrics_overhead: no GPU; nothing measured"; exit 77; fi
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)

metrics=$("$build/bin/fprof-metrics-host" --list 2>/dev/null | sed -n '/^roofline:/,/passes/p' | awk '$1=="ok"{print $2}' | paste -sd, -)
now() { date +%s.%N; }
t0=$(now); "$prog" >"$work/native.log" 2>&1; t1=$(now)
rm -f "$work/run.fprof"
t2=$(now); "$fprof" run --metrics roofline -o "$work/run.fprof" "$prog" >"$work/fprof.log" 2>&1; rc_fprof=$?; t3=$(now)
t4=$(now); "$ncu" --metrics "$metrics" --cache-control none --csv "$prog" >"$work/ncu.csv" 2>"$work/ncu.err"; rc_ncu=$?; t5=$(now)

python3 - "$work" "$t0" "$t1" "$t2" "$t3" "$t4" "$t5" "$rc_fprof" "$rc_ncu" <<'PY'
import csv, io, sqlite3, statistics, sys
work = sys.argv[1]
t0, t1, t2, t3, t4, t5 = map(float, sys.argv[2:8])
rc_fprof, rc_ncu = int(sys.argv[8]), int(sys.argv[9])
native, fprof, ncu = t1 - t0, t3 - t2, t5 - t4
launches = 300
db = sqlite3.connect(f"{work}/run.fprof")
rows = db.execute("""select k.id, s.value, c.dram_read_bytes, c.dram_write_bytes, c.flops_fp32, c.achieved_occupancy
                     from kernel k join string s on s.id = k.demangled_id
                     left join kernel_counter c on c.kernel_id = k.id order by k.id""").fetchall()
profiled = sum(1 for r in rows if r[2] is not None)
# ncu CSV: one row per (kernel, metric); "ID" is the launch index.
text = open(f"{work}/ncu.csv").read()
start = text.find('"ID"')
ncu_vals = {}
if start >= 0:
    for r in csv.DictReader(io.StringIO(text[start:])):
        try:
            v = float(r["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        unit = r.get("Metric Unit", "")
        scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "%": 1, "inst": 1, "": 1}.get(unit, 1)
        ncu_vals[(int(r["ID"]), r["Metric Name"])] = v * scale
def ratio(a, b):
    return a / b if b else float("nan")
diffs = {"dram__bytes_read.sum": [], "dram__bytes_write.sum": [], "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": [],
         "sm__warps_active.avg.pct_of_peak_sustained_active": []}
raw = {}
for kid, metric, value in db.execute("select m.kernel_id, s.value, m.value from kernel_metric m join string s on s.id = m.metric_id"):
    raw[(kid, metric)] = value
ids = [r[0] for r in rows]
for i, kid in enumerate(ids):
    for m in diffs:
        if (i, m) in ncu_vals and (kid, m) in raw:
            diffs[m].append((raw[(kid, m)], ncu_vals[(i, m)]))
print(f"fprof exit {rc_fprof}, ncu exit {rc_ncu}; {profiled} of {len(rows)} kernels carry counters")
print("metric                                              kernels  median |fprof/ncu - 1|  max |..|")
for m, pairs in diffs.items():
    errs = [abs(ratio(a, b) - 1) for a, b in pairs if b > 0]
    if m.startswith("sm__warps_active"):
        errs = [abs(a - b) / 100 for a, b in pairs]  # points of occupancy, as a fraction
    if errs:
        print(f"{m:50s} {len(pairs):8d}  {statistics.median(errs):20.4f}  {max(errs):8.4f}")
per_fprof = (fprof - native) / launches
per_ncu = (ncu - native) / launches
print()
print(f"{'run':28s} {'wall s':>8s} {'cost/kernel ms':>15s}")
print(f"{'native':28s} {native:8.2f} {'':>15s}")
print(f"{'fprof --metrics roofline':28s} {fprof:8.2f} {per_fprof * 1e3:15.2f}")
print(f"{'ncu --metrics (same 24)':28s} {ncu:8.2f} {per_ncu * 1e3:15.2f}")
print(f"ncu cost / fprof cost per kernel: {per_ncu / per_fprof:.1f}x" if per_fprof > 0 else "fprof cost not measurable")
PY
