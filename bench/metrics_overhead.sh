#!/usr/bin/env bash
# Metrics mode against Nsight Compute on the same program, in one call (issue 15): the 300-launch
# workload (bench/metrics_bench.cu: 100 x {axpy, relu, sgemm 1024^3}) natively, under
# `fprof run --metrics roofline` (each launch signature profiled once, identical launches copied),
# under `fprof run --metrics roofline --every-launch`, and under `ncu --metrics <the same names>`,
# all with --cache-control none; then, when a CUPTI 13.4 library is given (FPROF_CUPTI134=DIR
# holding libcupti.so.13 and libnvperf_*), fprof --cupti ... --cache-control all against
# `ncu --cache-control all`. Prints the cost per launch of each run, the ratio to ncu, and the
# values of every kernel against ncu's (median and max relative difference) last.
#
#   FPROF_BUILD=build-gpu [FPROF_CUPTI134=DIR] bench/metrics_overhead.sh
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
timings=$work/timings.tsv
: >"$timings"
timed() {  # timed NAME COMMAND...: wall seconds and exit code into timings.tsv
  local name=$1
  shift
  local t0 t1 rc
  t0=$(date +%s.%N)
  "$@" >"$work/$name.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  echo -e "$name\t$(python3 -c "print($t1 - $t0)")\t$rc" >>"$timings"
}
fprof_run() {  # fprof_run NAME ARGS...
  local name=$1
  shift
  rm -f "$work/$name.fprof"
  timed "$name" "$fprof" run --force --metrics roofline "$@" -o "$work/$name.fprof" "$prog"
}
ncu_run() {  # ncu_run NAME POLICY
  timed "$1" "$ncu" --metrics "$metrics" --cache-control "$2" --csv --log-file "$work/$1.csv" "$prog"
}

timed native "$prog"
fprof_run fprof_sampled --cache-control none
fprof_run fprof_every --cache-control none --every-launch
ncu_run ncu_none none
if [ -n "${FPROF_CUPTI134:-}" ] && [ -e "$FPROF_CUPTI134/libcupti.so.13" ]; then
  fprof_run fprof_cc_all --cupti "$FPROF_CUPTI134/libcupti.so.13" --cache-control all
  ncu_run ncu_all all
fi

python3 - "$work" <<'PY'
import csv, io, os, sqlite3, statistics, sys
work = sys.argv[1]
launches = 300
runs = {}
for line in open(f"{work}/timings.tsv"):
    name, wall, rc = line.split("\t")
    runs[name] = (float(wall), int(rc))
native = runs["native"][0]

def ncu_values(name):
    path = f"{work}/{name}.csv"
    if not os.path.exists(path):
        return {}
    text = open(path).read()
    start = text.find('"ID"')
    out = {}
    if start < 0:
        return out
    for r in csv.DictReader(io.StringIO(text[start:])):
        try:
            v = float(r["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}.get(r.get("Metric Unit", ""), 1)
        out[(int(r["ID"]), r["Metric Name"])] = v * scale
    return out

def fprof_values(name):
    db = sqlite3.connect(f"{work}/{name}.fprof")
    ids = [k for (k,) in db.execute("select id from kernel order by correlation_id, id")]
    index = {k: i for i, k in enumerate(ids)}
    out = {}
    for kid, metric, value in db.execute(
            "select m.kernel_id, s.value, m.value from kernel_metric m join string s on s.id = m.metric_id"):
        out[(index[kid], metric)] = value
    sources = dict(db.execute("select source, count(*) from kernel_counter group by source").fetchall())
    missing = db.execute("select count(*) from kernel_counter_missing").fetchone()[0]
    return out, len(ids), sources, missing

checked = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
           "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "sm__warps_active.avg.pct_of_peak_sustained_active"]

def compare(fname, nname):
    f, kernels, sources, missing = fprof_values(fname)
    n = ncu_values(nname)
    print(f"\n{fname} against {nname}: {kernels} kernels, counters {sources}, without counters {missing}")
    print(f"  {'metric':52s} {'kernels':>7s} {'median diff':>12s} {'max diff':>9s}")
    for m in checked:
        pairs = [(f[k], n[k]) for k in f if k[1] == m and k in n]
        if not pairs:
            continue
        if m.startswith("sm__warps_active"):
            errs = [abs(a - b) for a, b in pairs]  # points
            unit = " pts"
        else:
            errs = [abs(a / b - 1) * 100 if b else (0 if a == 0 else float("inf")) for a, b in pairs]
            unit = "%"
        print(f"  {m:52s} {len(pairs):7d} {statistics.median(errs):11.2f}{unit} {max(errs):8.2f}{unit}")

for fname, nname in (("fprof_sampled", "ncu_none"), ("fprof_every", "ncu_none"), ("fprof_cc_all", "ncu_all")):
    if fname in runs and nname in runs:
        try:
            compare(fname, nname)
        except Exception as e:  # a run that failed leaves no database
            print(f"\n{fname}: not compared ({e})")

print(f"\n== cost, same program (300 launches, native {native:.2f} s), device: {os.popen('nvidia-smi --query-gpu=name --format=csv,noheader').read().strip()}")
print(f"{'run':24s} {'exit':>4s} {'wall s':>8s} {'ms/launch':>10s} {'ncu / this':>11s}")
for name in ("fprof_sampled", "fprof_every", "ncu_none", "fprof_cc_all", "ncu_all"):
    if name not in runs:
        continue
    wall, rc = runs[name]
    per = (wall - native) / launches
    ref = runs.get("ncu_all" if name.endswith("all") else "ncu_none")
    ratio = (ref[0] - native) / (wall - native) if ref and wall > native else float("nan")
    print(f"{name:24s} {rc:4d} {wall:8.2f} {per * 1e3:10.2f} {ratio:10.1f}x")
PY
