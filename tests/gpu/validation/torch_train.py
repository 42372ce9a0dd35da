"""A tiny PyTorch training loop for the validation (validation_check torch).

    python torch_train.py --expect FILE [--range pushpop|startend] [--warmup 2] [--steps 2]

Each step runs forward, backward and an SGD update. PyTorch's autograd engine runs the backward of
CUDA tensors on its own device thread, so a step's kernels come from two host threads. Warm-up
steps run inside an NVTX range "warmup_step i=N", measured steps inside "train_step i=N" (select
them with `fprof run --metrics roofline --nvtx-include train_step`): with --range pushpop a push/pop
range on the main thread (what `torch.cuda.nvtx.range` makes), with --range startend a process-wide
start/end range. Before and after each step, with the GPU idle, the main thread launches one marker
kernel inside a range "fprof_validation_marker begin=N" / "... end=N": the checker takes the kernels
launched between the two markers (by correlation id) as the step's, whatever thread launched them.

Writes one TSV line: torch, main_tid, autograd_tid (the thread a backward hook ran on), steps,
selected (measured step indices), steady_from (first step whose kernels repeat), and the exact
tensor-core FLOPs of one step's GEMMs (forward, and backward for input and weight gradients).
"""
import argparse
import os
import threading

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--expect", required=True)
    # A non-empty --expect file is kept: a profiler that runs the program twice (fprof's application
    # replay) is checked against its first run (thread ids differ between runs).
    ap.add_argument("--expect-first-run", action="store_true")
    ap.add_argument("--range", choices=["pushpop", "startend"], default="pushpop")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--width", type=int, default=1024)
    args = ap.parse_args()

    torch.manual_seed(0)
    dev = torch.device("cuda")
    dtype = torch.float16
    w, b = args.width, args.batch
    model = torch.nn.Sequential(torch.nn.Linear(w, w), torch.nn.ReLU(), torch.nn.Linear(w, w)).to(dev, dtype)
    # No momentum: the optimizer has no state to create on its first step, so steps repeat exactly.
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(b, w, device=dev, dtype=dtype)
    target = torch.randn(b, w, device=dev, dtype=dtype)
    marker = torch.zeros(1, device=dev)

    backward_tids = set()

    def on_grad(grad):
        backward_tids.add(threading.get_native_id())
        return grad

    def mark(kind, i):
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(f"fprof_validation_marker {kind}={i}")
        marker.fill_(float(i))
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()

    total = args.warmup + args.steps
    for i in range(total):
        name = ("train_step" if i >= args.warmup else "warmup_step") + f" i={i}"
        mark("begin", i)
        if args.range == "pushpop":
            torch.cuda.nvtx.range_push(name)
        else:
            range_id = torch.cuda.nvtx.range_start(name)
        out = model(x)
        out.register_hook(on_grad)
        loss = torch.nn.functional.mse_loss(out.float(), target.float())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        if args.range == "pushpop":
            torch.cuda.nvtx.range_pop()
        else:
            torch.cuda.nvtx.range_end(range_id)
        mark("end", i)

    # GEMMs of one step, 2*M*N*K each: forward of both layers, weight gradients of both, the input
    # gradient of the second layer only (x needs no gradient).
    gemm = 2.0 * b * w * w
    tensor_flops = 5 * gemm
    autograd_tid = sorted(backward_tids)[0] if backward_tids else ""
    selected = ",".join(str(i) for i in range(args.warmup, total))
    if args.expect_first_run and os.path.exists(args.expect) and os.path.getsize(args.expect) > 0:
        return  # a profiler's second run of the program (fprof's application replay): the first run's facts stay
    with open(args.expect, "w") as f:
        f.write(f"torch\tmain_tid={threading.get_native_id()}\tautograd_tid={autograd_tid}\tsteps={total}"
                f"\tselected={selected}\tsteady_from=1\ttensor_flops_per_step={tensor_flops:.0f}"
                f"\trange={args.range}\ttorch={torch.__version__}\n")
    print(f"torch_train: {total} steps ({args.range}), backward on thread {autograd_tid}, "
          f"main thread {threading.get_native_id()}, loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
