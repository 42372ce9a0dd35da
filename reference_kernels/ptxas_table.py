#!/usr/bin/env python3
"""Turns the -Xptxas -v lines of a clean `model` build log into the Markdown table of
registers, spills, stack and shared memory per kernel that bench/RESULTS.md records.
usage: python3 reference_kernels/ptxas_table.py BUILD_LOG"""
import re, subprocess, sys
log = open(sys.argv[1]).read().splitlines()
rows = []
cur = None
for line in log:
    m = re.search(r"Compiling entry function '(\S+)' for 'sm_90'", line)
    if m:
        cur = {"name": m.group(1)}
        continue
    if cur is None:
        continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m:
        cur["stack"], cur["spill_st"], cur["spill_ld"] = m.groups()
        continue
    m = re.search(r"Used (\d+) registers(?:, used \d+ barriers)?(?:, (\d+) bytes smem)?", line)
    if m:
        cur["regs"] = m.group(1)
        cur["smem"] = m.group(2) or "0"
        rows.append(cur)
        cur = None
names = subprocess.run(["c++filt"], input="\n".join(r["name"] for r in rows), capture_output=True, text=True).stdout.splitlines()
def short(n):
    n = re.sub(r"fprof::refk::\(anonymous namespace\)::", "", n)
    n = n.replace("__nv_bfloat16", "bf16").replace("__half", "fp16").replace("fprof::refk::", "")
    n = n.replace("(Epilogue)0", "None").replace("(Epilogue)1", "Bias").replace("(Epilogue)2", "Relu").replace("(Epilogue)3", "BiasRelu").replace("(Epilogue)4", "BiasGelu").replace("(Epilogue)5", "BiasSilu")
    n = n.replace("(Binary)0", "Add").replace("(Binary)1", "Mul").replace("(Unary)0", "Gelu").replace("(Unary)1", "Relu")
    n = n.replace("(Stage)0", "Stats").replace("(Stage)1", "TopKOfProbs").replace("(Stage)2", "Fused")
    n = re.sub(r"\([^()]*\)$", "", n)
    return n
seen = set()
print("| kernel | registers | spill stores / loads (bytes) | stack (bytes) | static smem (bytes) |")
print("|---|---|---|---|---|")
for r, n in sorted(zip(rows, names), key=lambda x: short(x[1])):
    s = short(n)
    if s in seen: continue
    seen.add(s)
    print(f"| `{s}` | {r['regs']} | {r['spill_st']} / {r['spill_ld']} | {r['stack']} | {r['smem']} |")
