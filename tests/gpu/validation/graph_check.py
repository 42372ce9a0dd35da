#!/usr/bin/env python3
"""The check of CUDA-graph kernels in metrics mode, on a PyTorch program fprof did not write
(bench/torch_graphs.py graph: torch.cuda.graph of an fp16 MLP after eager warm-up).

Every kernel replayed from a graph must carry counters copied from an eager launch of the same
kernel and shape, equal to that launch's, or the stored reason; the kernels whose warm-up launches
are identical to the captured ones (cuBLASLt's GEMMs and split-K reduce, the layer norm, GELU) must
have counters. Under application replay the graph launches are also counted whole (table
graph_launch_counter, schema 5): at least one, and where every kernel of a counted launch has copied
counters, the launch's L1 bytes equal the sum of theirs (within 2%). Prints one line per check and
"N passed, M failed".

    graph_check.py DATABASE
"""
import sqlite3
import sys

VALUES = ("flops_tensor_fp16", "flops_fp32", "flops_fp16", "dram_read_bytes", "dram_write_bytes", "l2_bytes",
          "instructions")
MUST_COPY = ("nvjet", "layer_norm", "splitKreduce", "Gelu")

passed = failed = 0


def record(ok, what, want, got):
    global passed, failed
    passed += ok
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'}  graph  {what}: want {want}, got {got}")


def check_whole_launches(con):
    replay = con.execute("select value from metadata where key = 'replay_mode'").fetchone()
    if not replay or replay[0] != "application":
        print("info  graph: not application replay: graph launches are not counted whole")
        return
    launches = con.execute("select process_id, correlation_id, l1_bytes, l2_bytes, dram_read_bytes, gpu_time_ns "
                           "from graph_launch_counter").fetchall()
    record(len(launches) > 0, "graph launches counted whole", "> 0", len(launches))
    for pid, corr, l1, l2, dram, ns in launches:
        kernels = con.execute("select k.id, c.l1_bytes from kernel k left join kernel_counter c on c.kernel_id = k.id "
                              "where k.process_id = ? and k.correlation_id = ? and k.graph_id != 0",
                              (pid, corr)).fetchall()
        record(len(kernels) > 0 and (l1 or 0) > 0 and (ns or 0) > 0, f"graph launch #{corr}: kernels, L1 bytes, time",
               "> 0 each", (len(kernels), l1, ns))
        if kernels and all(k[1] is not None for k in kernels):
            total = sum(k[1] for k in kernels)
            record(abs(l1 - total) <= 0.02 * total, f"graph launch #{corr}: L1 bytes = its kernels' copied ones",
                   f"{total:.0f} +- 2%", f"{l1:.0f}")
        print(f"info  graph: launch #{corr}: {len(kernels)} kernels, L1 {l1}, L2 {l2}, DRAM read {dram}, {ns} ns")


def main(path):
    con = sqlite3.connect(path)
    rows = con.execute(
        "select k.id, s.value, k.grid_x, k.block_x, c.source, c.source_kernel_id, "
        "(select reason from kernel_counter_missing m where m.kernel_id = k.id) "
        "from kernel k join string s on s.id = k.demangled_id left join kernel_counter c on c.kernel_id = k.id "
        "where k.graph_id != 0").fetchall()
    record(len(rows) > 0, "kernels replayed from CUDA graphs", "> 0", len(rows))
    cols = ", ".join(VALUES)
    counters = {r[0]: r[1:] for r in con.execute(f"select kernel_id, {cols} from kernel_counter")}
    eager = {r[0]: r[1:] for r in con.execute(
        "select k.id, s.value, k.grid_x, k.block_x, k.graph_id from kernel k join string s on s.id = k.demangled_id")}
    copied = 0
    for kid, name, grid, block, source, source_id, reason in rows:
        short = name[:60]
        if source is None:
            record(reason is not None and "CUDA graph kernel" in reason, f"{short} #{kid}: counters or the reason",
                   "the graph reason", reason)
            record(not any(m in name for m in MUST_COPY), f"{short} #{kid}: copied (its warm-up twin is identical)",
                   "counters", "none")
            continue
        copied += 1
        src = eager.get(source_id)
        record(source == "same_signature" and src is not None and src[3] == 0,
               f"{short} #{kid}: copied from an eager launch", "same_signature from a non-graph kernel",
               f"{source} from #{source_id}")
        record(src is not None and src[:3] == (name, grid, block), f"{short} #{kid}: same kernel and shape as its source",
               (name[:40], grid, block), src[:3] if src else None)
        record(counters.get(kid) == counters.get(source_id), f"{short} #{kid}: values equal to its source's",
               counters.get(source_id), counters.get(kid))
    print(f"info  graph: {copied} of {len(rows)} graph kernels with copied counters")
    check_whole_launches(con)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
