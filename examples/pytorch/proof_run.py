"""Run one model of the fusion proof for a few steps, as `fprof run` profiles it (proof.py drives it).

  python proof_run.py gpt|mlp|hf-forward|hf-generate [--dtype bf16] [--fusions sdpa,bias_gelu,res_ln]
                      [--compile] [--layers 4] [--warmup 2] [--steps 5] [--emit-nvtx]

Prints one JSON line: the model and variant, the wall-clock time (ns since 1970) taken between
the warm-up and the timed steps (kernels that start after it belong to the timed steps), each timed
step's GPU time from CUDA events, and how many times each fusable region runs per step. Each timed
step runs inside an NVTX range "step".
With PROOF_GPU_LOCK set, all GPU work waits for that lock file, so parallel runs never share the GPU.
"""
import argparse
import contextlib
import fcntl
import json
import os
import time

try:
    import torch
except ImportError as e:
    raise SystemExit(f"proof_run.py needs PyTorch ({e}); run it on the GPU machine") from e

import proof_models as pm

SHAPES = {  # small enough for few-MB databases, large enough for kernels of tens of microseconds
    "gpt": dict(batch=4, seq=512, width=768, heads=12, vocab=8192),
    "mlp": dict(batch=8, seq=512, width=1024, hidden=4096),
    "hf-forward": dict(batch=4, seq=256, width=768, heads=12),
    "hf-generate": dict(batch=4, prompt=128, new_tokens=8, width=768, heads=12),
}


@contextlib.contextmanager
def gpu_lock():
    path = os.environ.get("PROOF_GPU_LOCK")
    if not path:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def build(args, dtype):
    """The model on the CPU (weights drawn there, outside the GPU lock) and its regions' runs per step."""
    s = SHAPES[args.model]
    fusions = [f for f in args.fusions.split(",") if f]
    facts = {}
    if args.model == "gpt":
        model = pm.Gpt(layers=args.layers, width=s["width"], heads=s["heads"], seq=s["seq"], vocab=s["vocab"],
                       fusions=fusions)
        per_step = {"sdpa": args.layers, "bias_gelu": args.layers, "res_ln": 2 * args.layers + 1}
    elif args.model == "mlp":
        model = pm.MlpStack(blocks=args.layers, width=s["width"], hidden=s["hidden"], fusions=fusions)
        per_step = {"bias_gelu": args.layers, "res_ln": args.layers}
    else:
        model, facts = pm.hf_gpt2(layers=args.layers, width=s["width"], heads=s["heads"], fusions=fusions, dtype=dtype)
        # generate runs the model once per new token, the prefill included
        forwards = 1 if args.model == "hf-forward" else s["new_tokens"]
        per_step = {"sdpa": args.layers * forwards, "gelu": args.layers * forwards}
    return model, per_step, fusions, facts


def step_function(args, model, dev, dtype):
    s = SHAPES[args.model]
    if args.model == "gpt":
        x = torch.randint(0, s["vocab"], (s["batch"], s["seq"]), device=dev)
        return lambda: model(x)
    if args.model == "mlp":
        x = torch.randn(s["batch"], s["seq"], s["width"], device=dev, dtype=dtype)
        return lambda: model(x)
    if args.model == "hf-forward":
        x = torch.randint(0, 50257, (s["batch"], s["seq"]), device=dev)
        return lambda: model(x, use_cache=False).logits
    x = torch.randint(0, 50257, (s["batch"], s["prompt"]), device=dev)
    mask = torch.ones_like(x)
    return lambda: model.generate(x, attention_mask=mask, max_new_tokens=s["new_tokens"], do_sample=False,
                                  eos_token_id=None, pad_token_id=0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=sorted(SHAPES))
    ap.add_argument("--dtype", choices=sorted(pm.DTYPES), default="bf16")
    ap.add_argument("--fusions", default="", help="comma-separated: " + ", ".join(pm.FUSIONS))
    ap.add_argument("--compile", action="store_true", help="torch.compile the whole model")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--emit-nvtx", action="store_true",
                    help="run under torch.autograd.profiler.emit_nvtx(record_shapes=True)")
    args = ap.parse_args()

    torch.manual_seed(0)
    dev = torch.device("cuda")
    dtype = pm.DTYPES[args.dtype]
    model, per_step, fusions, facts = build(args, dtype)
    torch.cuda.init()
    with gpu_lock():
        t_lock = time.time()
        model = model.to(dev, dtype).eval()
        if args.compile:
            model = torch.compile(model)
        step = step_function(args, model, dev, dtype)
        # record_shapes adds each op's input sizes and the ops that produced its inputs: PyTorch's
        # op graph, which fprof reads (docs/analysis.md, "Ops as frameworks mark them").
        nvtx = torch.autograd.profiler.emit_nvtx(record_shapes=True) if args.emit_nvtx else contextlib.nullcontext()
        with torch.inference_mode(), nvtx:
            for _ in range(args.warmup):
                y = step()
            torch.cuda.synchronize()
            # A quiet gap on both sides of the mark, so no kernel straddles it.
            time.sleep(0.05)
            mark_unix_ns = time.time_ns()
            time.sleep(0.05)
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(args.steps)]
            for start, end in events:
                # Each timed step in an NVTX range "step" (outside any compiled graph): `fprof diff`
                # compares two runs step by step, leaving out warm-up and compilation.
                torch.cuda.nvtx.range_push("step")
                start.record()
                y = step()
                end.record()
                torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()
        step_ms = [round(s.elapsed_time(e), 5) for s, e in events]
        gpu_s = time.time() - t_lock
    out = y if torch.is_tensor(y) else y[0]
    result = {
        "proof_run": args.model, "dtype": args.dtype, "fusions": fusions, "compile": args.compile,
        "emit_nvtx": args.emit_nvtx, "layers": args.layers, "warmup": args.warmup, "steps": args.steps,
        "shape": SHAPES[args.model], "regions_per_step": per_step, "mark_unix_ns": mark_unix_ns,
        "step_ms": step_ms, "gpu_phase_s": round(gpu_s, 3), "checksum": float(out.float().abs().sum()),
        "torch": torch.__version__, "device": torch.cuda.get_device_name(), **facts,
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
