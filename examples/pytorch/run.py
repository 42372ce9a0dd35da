"""Run a small PyTorch model (eager or torch.compile) for fprof's real-program checks.

  python run.py mlp|transformer [--compile] [--steps 20] [--warmup 5] [--dtype fp16]
                [--torch-profiler TRACE.json] [--check]

Prints one JSON line: model, mode, steps, loop seconds (timed steps only, synchronized), and the
output checksum. Each timed step runs inside an NVTX range `op=step`, so `fprof run --metrics
... --nvtx-include 'op=step'` profiles only the steady state.
"""
import argparse
import json
import time

import torch

import fprof_nvtx
from models import Mlp, Transformer

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=["mlp", "transformer"])
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--dtype", choices=DTYPES, default="fp16")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--torch-profiler", metavar="TRACE", help="also run torch.profiler and export a Chrome trace")
    ap.add_argument("--check", action="store_true", help="compare the compiled output with eager")
    args = ap.parse_args()

    torch.manual_seed(0)
    dev = torch.device("cuda")
    dtype = DTYPES[args.dtype]
    if args.model == "mlp":
        model = Mlp(args.width, 4 * args.width)
        x = torch.randn(args.batch * args.seq, args.width)
    else:
        model = Transformer(width=args.width, seq=args.seq)
        x = torch.randint(0, 4096, (args.batch, args.seq))
    model = model.to(dev, dtype).eval()
    x = x.to(dev, dtype) if x.is_floating_point() else x.to(dev)
    eager = model
    if args.compile:
        fprof_nvtx.enabled = False  # ranges inside the compiled graph would split it
        model = torch.compile(model)

    def step():
        with torch.inference_mode():
            return model(x)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()

    prof = None
    if args.torch_profiler:
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                  torch.profiler.ProfilerActivity.CUDA])
        prof.__enter__()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        torch.cuda.nvtx.range_push("op=step")  # outside any compiled graph, in both modes
        y = step()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t0
    gpu_events = None
    if prof is not None:
        prof.__exit__(None, None, None)
        gpu_events = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        prof.export_chrome_trace(args.torch_profiler)

    result = {"model": args.model, "mode": "compile" if args.compile else "eager", "dtype": args.dtype,
              "steps": args.steps, "loop_s": round(loop_s, 6), "ms_per_step": round(1e3 * loop_s / args.steps, 4),
              "checksum": float(y.float().abs().sum())}
    if gpu_events is not None:
        result["torch_profiler_gpu_events"] = gpu_events
    if args.check and args.compile:
        fprof_nvtx.enabled = False
        with torch.inference_mode():
            ref = eager(x)
        err = (y.float() - ref.float()).abs().max().item()
        result["max_abs_diff_vs_eager"] = err
        if not err < 0.05 * max(1.0, ref.float().abs().max().item()):
            print(json.dumps(result))
            raise SystemExit(f"compiled output differs from eager by {err}")
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
