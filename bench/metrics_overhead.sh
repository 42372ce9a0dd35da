#!/usr/bin/env bash
# Metrics mode against Nsight Compute on the same programs, in one call. Three
# programs, each natively, under `fprof run --metrics roofline` (each launch signature profiled
# once, identical launches copied) and under `ncu --metrics <the same names>`, all with
# --cache-control none:
#   bench      the 300-launch workload (bench/metrics_bench.cu: 100 x {axpy, relu, sgemm 1024^3}),
#              also under `fprof ... --every-launch`, and, when a CUPTI 13.4 library is given
#              (FPROF_CUPTI134=DIR holding libcupti.so.13 and libnvperf_*), fprof --cupti ...
#              --cache-control all against `ncu --cache-control all` (with APP_REPLAY, for every
#              program: below);
#   transformer  the reference model's small transformer (`model --ops transformer`, both variants,
#              2 layers, prefill + 4 decode steps);
#   torch      a PyTorch training step of a transformer block (bench/torch_step.py: forward,
#              backward, AdamW), skipped where PyTorch is missing.
# Prints per program the cost per launch of each run and the ratio to ncu (and, for fprof, the
# launches it profiled and the replay time of each, from the database), and the values of every
# kernel against ncu's (median and max relative difference, kernels matched by launch order).
#
# APP_REPLAY=1 adds, per program, `fprof run --metrics roofline --replay application` (one run of
# the program, cache control all; the SASS counters from a duplicate of each profiled launch, the
# default) and the same with a second run under kernel replay (--second-run kernel), against
# `ncu --cache-control all`, and compares their SASS counters kernel by kernel. TWO_RUNS=1 adds the
# second run by SASS patching (--second-run patching), compared the
# same way. SKIP_NONE=1 leaves out the cache-control-none runs (fprof sampled, ncu none);
# NO_KERNEL_SECOND_RUN=1 the run with the second run under kernel replay. NCU_TWICE=1 runs
# `ncu --cache-control all` twice and compares ncu with itself: where ncu does not repeat its own
# figure within 2%, no tool can be held to 2% of it. ROUNDS=N (with APP_REPLAY) alternates N native
# and one-run fprof runs and prints the median overhead and the ratio to ncu. NCU_CLOCK_CONTROL=none
# runs ncu with --clock-control none. Byte counts outside 2% are listed (the three
# largest, how many differ by less than 4 KB and 64 KB, and every other one of 64 KB or more).
#
#   FPROF_BUILD=build-gpu [FPROF_CUPTI134=DIR] [APP_REPLAY=1] [PROGRAMS="bench transformer torch"] bench/metrics_overhead.sh
set -uo pipefail
cd "$(dirname "$0")/.."
build=${FPROF_BUILD:-build}
prog=$build/bin/metrics_bench
model=$build/bin/model
fprof=$build/bin/fprof
work=${METRICS_OVERHEAD_DIR:-/tmp/metrics_overhead}
mkdir -p "$work"
[ -x "$prog" ] && [ -x "$fprof" ] || { echo "metrics_overhead: build metrics_bench and fprof first"; exit 2; }
if ! nvidia-smi -L >/dev/null 2>&1; then echo "metrics_overhead: no GPU; nothing measured"; exit 77; fi
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)

# ncu gets what a user asks it for to see the same numbers: fprof's roofline set with the six ops_path
# tensor counters in place of the tensor pipe's cycles and DMMA instructions, which fprof turns into
# tensor FLOPs with the functions' SASS (core/sass_tensor.h), and the L1 local-memory byte counters
# in place of the SASS-counted local sectors.
metrics=$("$build/bin/fprof-metrics-host" --list 2>/dev/null | sed -n '/^roofline:/,/passes/p' | awk '$1=="ok"{print $2}' |
  grep -v -e '^sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active' -e '^sm__inst_executed_pipe_tensor_op_dmma' \
    -e '^sm__sass_l1tex_t_sectors_pipe_lsu_mem_local' | paste -sd, -)
metrics="$metrics,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"
metrics="$metrics,sm__ops_path_tensor_src_fp16.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum"
metrics="$metrics,sm__ops_path_tensor_src_fp8.sum,sm__ops_path_tensor_src_fp64.sum,sm__ops_path_tensor_src_int8.sum"
# fprof counts the instructions with the SASS instrumentation (smsp__sass_inst_executed.sum, in the
# FLOP counters' pass); ncu also reads the hardware counter they are compared with.
metrics="$metrics,smsp__inst_executed.sum"
timings=$work/timings.tsv
: >"$timings"
# Both tools once, untimed, on three launches of the bench program: a fresh machine reads each
# tool's own files (fprof's libraries and CUPTI, ncu's) cold the first time, and that first timed
# run was an outlier of its round (the PyTorch step at 8.0x against 10.5-25.6x in the other rounds
# of one call on an H100). Each tool pays it here instead, the same way.
"$fprof" run --force --metrics roofline --launch-count 3 -o "$work/warmup.fprof" "$prog" >"$work/warmup.fprof.log" 2>&1
"$ncu" --metrics "$metrics" -c 3 "$prog" >"$work/warmup.ncu.log" 2>&1
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
fprof_run() {  # fprof_run NAME FPROF-ARGS... -- PROGRAM...
  local name=$1
  shift
  local -a opts=()
  while [ "$1" != "--" ]; do opts+=("$1"); shift; done
  shift
  rm -f "$work/$name.fprof"
  timed "$name" "$fprof" run --force --metrics roofline "${opts[@]}" -o "$work/$name.fprof" "$@"
}
ncu_run() {  # ncu_run NAME POLICY PROGRAM...
  local name=$1 policy=$2
  shift 2
  # NCU_CLOCK_CONTROL=none: ncu leaves the clocks as found, as fprof does (ncu's default locks them at base).
  timed "$name" "$ncu" --metrics "$metrics" --cache-control "$policy" ${NCU_CLOCK_CONTROL:+--clock-control "$NCU_CLOCK_CONTROL"} \
    --csv --log-file "$work/$name.csv" "$@"
}
cupti134_given() { [ -n "${FPROF_CUPTI134:-}" ] && [ -e "$FPROF_CUPTI134/libcupti.so.13" ]; }
cupti_flush_run() {  # cupti_flush_run LABEL PROGRAM...: CUPTI 13.4's kernel replay with its own cache flush
  local label=$1
  shift
  fprof_run "${label}.fprof_cc_all" --cupti "$FPROF_CUPTI134/libcupti.so.13" --replay kernel --cache-control all -- "$@"
}
compare_program() {  # compare_program LABEL PROGRAM...: native, fprof (sampled), ncu; same cache policy
  local label=$1
  shift
  # Once untimed first: the first run of a program on a fresh machine reads its files cold (a
  # PyTorch step took 16.9-18.3 s natively first and 9.5 s warm on an H100).
  "$@" >"$work/${label}.warmup.log" 2>&1
  timed "${label}.native" "$@"
  if [ -z "${SKIP_NONE:-}" ]; then  # SKIP_NONE=1: only the application-replay comparison
    fprof_run "${label}.fprof_sampled" --cache-control none -- "$@"
    ncu_run "${label}.ncu_none" none "$@"
  fi
  if [ -n "${APP_REPLAY:-}" ]; then
    # Application replay: hardware counters in the program's own run with the L2 emptied before each
    # profiled launch (cache control all), SASS counters from duplicates in the same run, and the
    # same with a second run under kernel replay or by SASS patching.
    fprof_run "${label}.fprof_app_all" --replay application -- "$@"
    [ -z "${NO_KERNEL_SECOND_RUN:-}" ] && fprof_run "${label}.fprof_app_kernel" --replay application --second-run kernel -- "$@"
    [ -n "${TWO_RUNS:-}" ] && fprof_run "${label}.fprof_app_two" --replay application --second-run patching -- "$@"
    ncu_run "${label}.ncu_all" all "$@"
    # FPROF_CUPTI134=DIR: CUPTI 13.4's own kernel replay with its driver-side cache flush, the
    # closest CUPTI comes to ncu's method (ncu's own counter library is not public). Where it
    # parts from ncu as fprof does, the difference lies between CUPTI's counting and ncu's, not in
    # fprof's application replay; compared with ncu and with fprof's run below.
    cupti134_given && cupti_flush_run "$label" "$@"
    # ROUNDS=N: N-1 more rounds of the native run and the one-run fprof run, alternated, for the
    # medians below (a program whose native run varies by seconds between runs decides the ratio
    # otherwise: the PyTorch step took 9.5-18.3 s natively across calls on an H100).
    for ((round = 2; round <= ${ROUNDS:-1}; ++round)); do
      timed "${label}.native.r$round" "$@"
      fprof_run "${label}.fprof_app_all.r$round" --replay application -- "$@"
    done
    # NCU_TWICE=1: ncu a second time, the same way, for its own repeatability (the floor under any
    # comparison with it).
    [ -n "${NCU_TWICE:-}" ] && ncu_run "${label}.ncu_all2" all "$@"
  fi
}

programs=" ${PROGRAMS:-bench transformer torch} "
if [[ "$programs" == *" bench "* ]]; then
  compare_program bench "$prog"
  fprof_run bench.fprof_every --cache-control none --every-launch -- "$prog"
  if [ -z "${APP_REPLAY:-}" ] && cupti134_given; then
    cupti_flush_run bench "$prog"
    ncu_run bench.ncu_all all "$prog"
  fi
fi
if [[ "$programs" == *" transformer "* ]] && [ -x "$model" ]; then
  compare_program transformer "$model" --ops transformer --variant both --dtype fp16 --warmup 0 --repeat 1 --batch 1 \
    --seq 128 --width 256 --layers 2 --vocab 4096 --decode-steps 4 --no-copy-bandwidth
fi
if [[ "$programs" == *" torch "* ]] && python3 -c "import torch" 2>/dev/null; then
  compare_program torch python3 bench/torch_step.py --steps 2 --warmup 1
fi

python3 - "$work" <<'PY'
import csv, io, os, sqlite3, statistics, sys
work = sys.argv[1]
runs = {}
for line in open(f"{work}/timings.tsv"):
    name, wall, rc = line.split("\t")
    runs[name] = (float(wall), int(rc.strip()))

def ncu_rows(name):
    """The rows of ncu's CSV (one a kernel and metric), or none."""
    path = f"{work}/{name}.csv"
    text = open(path).read() if os.path.exists(path) else ""
    start = text.find('"ID"')
    return [] if start < 0 else list(csv.DictReader(io.StringIO(text[start:])))

def ncu_values(name):
    out = {}
    for r in ncu_rows(name):
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
    # Tensor FLOPs fprof derived from the tensor pipe's cycles and the SASS, under ncu's ops_path names.
    columns = {"sm__ops_path_tensor_src_fp16.sum": "flops_tensor_fp16",
               "sm__ops_path_tensor_src_bf16_dst_fp32.sum": "flops_tensor_bf16",
               "smsp__inst_executed.sum": "instructions"}
    for metric, column in columns.items():
        for kid, value in db.execute(f"select kernel_id, {column} from kernel_counter where {column} is not null"):
            out.setdefault((index[kid], metric), value)
    sources = dict(db.execute("select source, count(*) from kernel_counter group by source").fetchall())
    missing = db.execute("select count(*) from kernel_counter_missing").fetchone()[0]
    return out, len(ids), sources, missing

def launches_of(label):
    """Kernels of the program, from its fprof database (every launch is a kernel row)."""
    path = f"{work}/{label}.fprof_sampled.fprof"
    if not os.path.exists(path):
        path = f"{work}/{label}.fprof_app_all.fprof"
    if not os.path.exists(path):
        return 0
    try:
        return sqlite3.connect(path).execute("select count(*) from kernel").fetchone()[0]
    except sqlite3.Error:
        return 0

def replay_cost(name):
    """Profiled launches and ms of replay each (the collector's metrics_replay_seconds), or ""."""
    try:
        meta = dict(sqlite3.connect(f"{work}/{name}.fprof").execute("select key, value from metadata").fetchall())
        profiled = int(meta["metrics_kernels_profiled"])
        return f"{profiled:5d} x {float(meta['metrics_replay_seconds']) / max(profiled, 1) * 1e3:6.1f} ms"
    except (sqlite3.Error, KeyError, ValueError):
        return ""

checked = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "lts__t_sectors_srcunit_tex.sum",
           "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "sm__sass_thread_inst_executed_op_hfma_pred_on.sum",
           "sm__ops_path_tensor_src_fp16.sum", "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
           "smsp__inst_executed.sum", "sm__thread_inst_executed_pipe_fma_type_fp16_pred_on.sum",
           "sm__warps_active.avg.pct_of_peak_sustained_active"]

def ncu_names(name):
    """Kernel names by launch index, from ncu's CSV."""
    return {int(r["ID"]): r.get("Kernel Name", "") for r in ncu_rows(name)}

def relative_errors(pairs):
    return [abs(a / b - 1) * 100 if b else (0 if a == 0 else float("inf")) for a, b in pairs]

def identical_launches(name):
    """Launch index -> the indices of every launch fprof gave the same profiled sample (its own
    launch and those copied from it: same function, shape and argument bytes), from the database."""
    try:
        db = sqlite3.connect(f"{work}/{name}.fprof")
        ids = [k for (k,) in db.execute("select id from kernel order by correlation_id, id")]
        index = {k: i for i, k in enumerate(ids)}
        groups = {}
        for kid, source, sample in db.execute("select kernel_id, source, source_kernel_id from kernel_counter"):
            root = sample if source == "same_signature" and sample in index else kid
            groups.setdefault(index[root], []).append(index[kid])
    except sqlite3.Error:
        return {}
    return {i: members for members in groups.values() for i in members}

def ncu_varies(k, n, same):
    """Whether ncu's own figures for the launches identical to launch k[0] spread over more than 2%."""
    values = [n[(i, k[1])] for i in same.get(k[0], []) if (i, k[1]) in n]
    return len(values) > 1 and max(values) > 1.02 * min(values)

def print_outliers(keys, errs, a, b, names, repeat, same):
    """The byte counts outside 2% (errs: relative_errors of a against b, by key): how many of them
    differ by less than 4 KB and 64 KB, on how many ncu's second run was outside 2% of its first too,
    on how many ncu's own figures for the identical launches (fprof's same-signature group) spread
    over more than 2%, and the largest three."""
    out = [(e, k) for e, k in zip(errs, keys) if e > 2]
    if not out:
        return
    unit = lambda k: 32 if "sectors" in k[1] else 1  # bytes a unit of the metric
    tiny = sum(abs(a[k] - b[k]) * unit(k) < 4096 for _, k in out)
    small = sum(abs(a[k] - b[k]) * unit(k) < 65536 for _, k in out)
    unsteady = sum(k in repeat and abs(repeat[k] - b[k]) > 0.02 * abs(b[k]) for _, k in out)
    again = f", {unsteady} where ncu's own second run is outside 2% too" if repeat else ""
    spread = sum(ncu_varies(k, b, same) for _, k in out)
    alike = f", {spread} where ncu's figures for the identical launches spread over 2%" if same else ""
    print(f"    outside 2%: {len(out)}, of which {tiny} by less than 4 KB and {small} by less than 64 KB{again}{alike}; largest:")
    largest = sorted(out, reverse=True)[:3]
    for e, k in largest:
        print(f"      #{k[0]} {names.get(k[0], '')[:60]}: {a[k]:,.0f} against {b[k]:,.0f} ({e:+.1f}%)")
    # Every other difference of 64 KB or more, named, with ncu's own second figure where it ran twice.
    for e, k in sorted((x for x in out if x not in largest and abs(a[x[1]] - b[x[1]]) * unit(x[1]) >= 65536),
                       key=lambda x: x[1][0]):
        own = f"; ncu's second run {repeat[k]:,.0f}" if k in repeat else ""
        print(f"      #{k[0]} {names.get(k[0], '')[:60]}: {a[k]:,.0f} against {b[k]:,.0f} ({e:+.1f}%{own})")

def print_comparison(f, n, names, repeat=None, same=None):
    print(f"  {'metric':52s} {'kernels':>7s} {'within 2%':>9s} {'median diff':>12s} {'max diff':>9s}")
    for m in checked:
        keys = [k for k in f if k[1] == m and k in n]
        if not keys:
            continue
        pairs = [(f[k], n[k]) for k in keys]
        if m.startswith("sm__warps_active"):
            errs = [abs(a - b) for a, b in pairs]  # points
            unit, ok = " pts", sum(e <= 2 for e in errs)
        else:
            errs = relative_errors(pairs)
            unit, ok = "%", sum(e <= 2 for e in errs)
        print(f"  {m:52s} {len(pairs):7d} {ok:9d} {statistics.median(errs):11.2f}{unit} {max(errs):8.2f}{unit}")
        if "bytes" in m or "sectors" in m:
            print_outliers(keys, errs, f, n, names, repeat or {}, same or {})

def compare(fname, nname):
    f, kernels, sources, missing = fprof_values(fname)
    n = ncu_values(nname)
    ncu_kernels = len({k[0] for k in n})
    print(f"\n{fname} against {nname}: {kernels} kernels (ncu {ncu_kernels}), counters {sources}, without counters {missing}")
    repeat = ncu_values(f"{nname}2") if f"{nname}2" in runs else {}
    print_comparison(f, n, ncu_names(nname), repeat, identical_launches(fname))

labels = [l for l in ("bench", "transformer", "torch") if f"{l}.native" in runs]
for label in labels:
    for fname, nname in ((f"{label}.fprof_sampled", f"{label}.ncu_none"), (f"{label}.fprof_every", f"{label}.ncu_none"),
                         (f"{label}.fprof_cc_all", f"{label}.ncu_all"), (f"{label}.fprof_app_all", f"{label}.ncu_all"),
                         (f"{label}.fprof_app_kernel", f"{label}.ncu_all"), (f"{label}.fprof_app_two", f"{label}.ncu_all")):
        if fname in runs and nname in runs:
            try:
                compare(fname, nname)
            except Exception as e:  # a run that failed leaves no database
                print(f"\n{fname}: not compared ({e})")
    if f"{label}.fprof_app_all" in runs and f"{label}.fprof_cc_all" in runs:
        try:
            mine, _, _, _ = fprof_values(f"{label}.fprof_app_all")
            theirs, kernels, _, _ = fprof_values(f"{label}.fprof_cc_all")
            print(f"\n{label}.fprof_app_all against {label}.fprof_cc_all (CUPTI's kernel replay with its own flush): "
                  f"{kernels} kernels")
            print_comparison(mine, theirs, {})
        except Exception as e:
            print(f"\n{label}.fprof_app_all against {label}.fprof_cc_all: not compared ({e})")
    if f"{label}.ncu_all2" in runs and f"{label}.ncu_all" in runs:
        first, second = ncu_values(f"{label}.ncu_all"), ncu_values(f"{label}.ncu_all2")
        print(f"\n{label}.ncu_all2 against {label}.ncu_all (ncu twice, the same command)")
        print_comparison(second, first, ncu_names(f"{label}.ncu_all"))

# The SASS counters of the duplicates (one run) against a second run under kernel replay and one by
# SASS patching, kernel by kernel (launch order).
sass_names = ["sm__sass_thread_inst_executed_op_%s_pred_on.sum" % o for o in
              ("dadd", "dmul", "dfma", "fadd", "fmul", "ffma", "hadd", "hmul", "hfma")]
sass_names += ["sm__sass_l1tex_t_sectors_pipe_lsu_mem_local_op_ld.sum",
               "sm__sass_l1tex_t_sectors_pipe_lsu_mem_local_op_st.sum", "smsp__sass_inst_executed.sum"]
for label, other in ((l, o) for l in labels for o in ("fprof_app_kernel", "fprof_app_two")):
    a, b = f"{label}.fprof_app_all", f"{label}.{other}"
    if a not in runs or b not in runs:
        continue
    try:
        fa, na, _, _ = fprof_values(a)
        fb, nb, _, _ = fprof_values(b)
    except Exception as e:
        print(f"\n{a} against {b}: not compared ({e})")
        continue
    print(f"\n{a} (duplicates) against {b} ({'kernel replay' if other == 'fprof_app_kernel' else 'SASS patching'}): "
          f"{na} and {nb} kernels")
    print(f"  {'metric':56s} {'kernels':>7s} {'equal':>6s} {'within 1%':>9s} {'only one':>8s}  first difference")
    for m in sass_names:
        keys = {k for k in fa if k[1] == m} | {k for k in fb if k[1] == m}
        both = [k for k in keys if k in fa and k in fb]
        equal = sum(fa[k] == fb[k] for k in both)
        close = sum(abs(fa[k] - fb[k]) <= 0.01 * max(abs(fb[k]), 1) for k in both)
        diff = next((f"#{k[0]}: {fa[k]:.0f} vs {fb[k]:.0f}" for k in sorted(both) if fa[k] != fb[k]), "")
        print(f"  {m:56s} {len(both):7d} {equal:6d} {close:9d} {len(keys) - len(both):8d}  {diff}")

device = os.popen("nvidia-smi --query-gpu=name --format=csv,noheader").read().strip()
print(f"\n== cost against ncu, same program, same metrics, same cache control (device: {device})")
print(f"{'run':30s} {'exit':>4s} {'wall s':>8s} {'launches':>8s} {'ms/launch':>10s} {'ncu / this':>11s}"
      f"  {'profiled x replay each':>22s}")
for label in labels:
    native = runs[f"{label}.native"][0]
    launches = launches_of(label)
    for suffix in ("native", "fprof_sampled", "fprof_every", "ncu_none", "fprof_cc_all", "fprof_app_all",
                   "fprof_app_kernel", "fprof_app_two", "ncu_all", "ncu_all2"):
        name = f"{label}.{suffix}"
        if name not in runs:
            continue
        wall, rc = runs[name]
        per = (wall - native) / launches if launches and suffix != "native" else float("nan")
        ref = runs.get(f"{label}.ncu_all" if "all" in suffix or suffix.startswith("fprof_app") else f"{label}.ncu_none")
        ratio = (ref[0] - native) / (wall - native) if ref and wall > native and suffix != "native" else float("nan")
        replay = replay_cost(name) if suffix.startswith("fprof") else ""
        print(f"{name:30s} {rc:4d} {wall:8.2f} {launches:8d} {per * 1e3:10.2f} {ratio:10.1f}x  {replay:>22s}")

# ROUNDS=N: each round's native and one-run fprof walls, the overhead of each round (fprof less the
# native run just before it), and the ratio of ncu's overhead to the median of those, against the
# median native run.
for label in labels:
    rounds = [(runs[f"{label}.native"], runs.get(f"{label}.fprof_app_all"))]
    r = 2
    while f"{label}.native.r{r}" in runs:
        rounds.append((runs[f"{label}.native.r{r}"], runs.get(f"{label}.fprof_app_all.r{r}")))
        r += 1
    ncu = runs.get(f"{label}.ncu_all")
    if len(rounds) < 2 or ncu is None or any(f is None for _, f in rounds):
        continue
    print(f"\n{label}: {len(rounds)} alternated rounds of the native run and fprof (one run, application replay)")
    overheads = []
    for i, ((native, _), (fprof, rc)) in enumerate(rounds, 1):
        overheads.append(fprof - native)
        print(f"  round {i}: native {native:7.2f} s, fprof {fprof:7.2f} s (exit {rc}), overhead {fprof - native:6.2f} s")
    native_median = statistics.median(n for (n, _), _ in rounds)
    overhead_median = statistics.median(overheads)
    ncu_overhead = ncu[0] - native_median
    print(f"  medians: native {native_median:.2f} s, fprof overhead {overhead_median:.2f} s; ncu {ncu[0]:.2f} s, "
          f"overhead {ncu_overhead:.2f} s: ncu / fprof {ncu_overhead / overhead_median:.1f}x "
          f"(range over rounds {ncu_overhead / max(overheads):.1f}-{ncu_overhead / min(overheads):.1f}x)")
    # The same from the medians of the walls alone, not paired by round.
    fprof_median = statistics.median(f for _, (f, _) in rounds)
    if fprof_median > native_median:
        print(f"  medians of the walls: fprof {fprof_median:.2f} s against native {native_median:.2f} s: "
              f"ncu / fprof {ncu_overhead / (fprof_median - native_median):.1f}x")

# Where the (first) run's replay time went, step by step (the collector's metrics_launch_steps_seconds).
for label in labels:
    for suffix in ("fprof_sampled", "fprof_every", "fprof_cc_all", "fprof_app_all", "fprof_app_kernel", "fprof_app_two"):
        path = f"{work}/{label}.{suffix}.fprof"
        try:
            meta = dict(sqlite3.connect(path).execute("select key, value from metadata")) if os.path.exists(path) else {}
        except sqlite3.Error:
            continue
        if "metrics_launch_steps_seconds" in meta:
            print(f"{label}.{suffix} steps, s: {meta['metrics_launch_steps_seconds']}")
        for key in ("sass_duplicate_seconds", "sass_duplicate_checkpoints"):
            if key in meta:
                print(f"{label}.{suffix} {key}: {meta[key]}")
PY
