"""A launch-bound PyTorch loop for bench/decode_overhead.sh: ITERS iterations of one small in-place
add on the GPU (one kernel each), optionally inside one NVTX range each, optionally under
torch.profiler (Kineto, CPU + CUDA activities, no trace export).

  python3 bench/torch_loop.py [--iters 30000] [--warmup 1000] [--nvtx] [--kineto]

Prints one JSON line: us_per_kernel (timed loop, synchronized), loop_s, add_kernels (every add
the program launched, warm-up included) and nvtx_ranges (ranges the loop pushed), so a profile
can be checked against the program's own counts.
"""
import argparse
import json
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=30000)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--nvtx", action="store_true", help="one NVTX range (op=add) around each kernel")
    ap.add_argument("--kineto", action="store_true", help="run the timed loop under torch.profiler")
    args = ap.parse_args()

    x = torch.zeros(256, device="cuda")
    for _ in range(args.warmup):
        x.add_(1.0)
    torch.cuda.synchronize()

    prof = None
    if args.kineto:
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                  torch.profiler.ProfilerActivity.CUDA])
        prof.__enter__()
    push, pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    t0 = time.perf_counter()
    if args.nvtx:
        for _ in range(args.iters):
            push("op=add")
            x.add_(1.0)
            pop()
    else:
        for _ in range(args.iters):
            x.add_(1.0)
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t0
    if prof is not None:
        prof.__exit__(None, None, None)
    expected = float(args.warmup + args.iters)
    if x[0].item() != expected:
        raise SystemExit(f"torch_loop: x = {x[0].item()}, expected {expected}")
    print(json.dumps({"us_per_kernel": round(1e6 * loop_s / args.iters, 4), "loop_s": round(loop_s, 6),
                      "add_kernels": args.warmup + args.iters, "nvtx_ranges": args.iters if args.nvtx else 0,
                      "nvtx": args.nvtx, "kineto": args.kineto}), flush=True)


if __name__ == "__main__":
    main()
