"""Time each fusable region of the proof models alone, unfused against fused, at the models' shapes
(proof.py runs it, not under fprof). CUDA events around `--inner` back-to-back calls, median of
`--repeats`; prints one JSON line per region.

  python proof_bench.py [--repeats 15] [--inner 10]
"""
import argparse
import json
import statistics

try:
    import torch
except ImportError as e:
    raise SystemExit(f"proof_bench.py needs PyTorch ({e}); run it on the GPU machine") from e

import proof_models as pm
from proof_run import SHAPES, gpu_lock


def time_us(fn, repeats, inner):
    with torch.inference_mode():
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        samples = []
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            end.synchronize()
            samples.append(1e3 * start.elapsed_time(end) / inner)
    return statistics.median(samples), samples


def cases(dtype_name):
    """(model, fusion, unfused fn, fused fn) at the shapes proof_run.py uses."""
    dev, dtype = torch.device("cuda"), pm.DTYPES[dtype_name]
    g = SHAPES["gpt"]
    b, t, c, heads = g["batch"], g["seq"], g["width"], g["heads"]
    qkv = torch.randn(b, t, 3 * c, device=dev, dtype=dtype)
    q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in qkv.split(c, dim=2))
    masked = torch.ones(t, t, dtype=torch.bool, device=dev).triu(1)
    yield ("gpt", "sdpa", lambda: pm.attention_naive(q, k, v, masked), lambda: pm.attention_sdpa(q, k, v))
    x = torch.randn(b, t, c, device=dev, dtype=dtype)
    w1 = torch.randn(4 * c, c, device=dev, dtype=dtype) / c ** 0.5
    b1 = torch.randn(4 * c, device=dev, dtype=dtype)
    yield ("gpt", "bias_gelu", lambda: pm.bias_gelu_naive(x, w1, b1), lambda: pm.bias_gelu_fused(x, w1, b1))
    delta = torch.randn_like(x)
    ln = torch.nn.LayerNorm(c).to(dev, dtype)
    yield ("gpt", "res_ln", lambda: pm.residual_layernorm_naive(x, delta, ln),
           lambda: pm.residual_layernorm_fused(x, delta, ln))
    m = SHAPES["mlp"]
    xm = torch.randn(m["batch"], m["seq"], m["width"], device=dev, dtype=dtype)
    wm = torch.randn(m["hidden"], m["width"], device=dev, dtype=dtype) / m["width"] ** 0.5
    bm = torch.randn(m["hidden"], device=dev, dtype=dtype)
    yield ("mlp", "bias_gelu", lambda: pm.bias_gelu_naive(xm, wm, bm), lambda: pm.bias_gelu_fused(xm, wm, bm))
    dm = torch.randn_like(xm)
    lnm = torch.nn.LayerNorm(m["width"]).to(dev, dtype)
    yield ("mlp", "res_ln", lambda: pm.residual_layernorm_naive(xm, dm, lnm),
           lambda: pm.residual_layernorm_fused(xm, dm, lnm))
    h = SHAPES["hf-forward"]
    xh = torch.randn(h["batch"], h["seq"], 4 * h["width"], device=dev, dtype=dtype)
    yield ("hf-forward", "gelu", lambda: pm.gelu_new_naive(xh), lambda: pm.gelu_new_fused(xh))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--inner", type=int, default=10)
    ap.add_argument("--dtypes", default="bf16,fp16")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.cuda.init()
    with gpu_lock():
        for dtype_name in args.dtypes.split(","):
            for model, fusion, unfused, fused in cases(dtype_name):
                with torch.inference_mode():
                    a, f = unfused(), fused()
                a, f = (a[1] if isinstance(a, tuple) else a), (f[1] if isinstance(f, tuple) else f)
                err = (a.float() - f.float()).abs().max().item()
                scale = max(1.0, a.float().abs().max().item())
                unfused_us, u_samples = time_us(unfused, args.repeats, args.inner)
                fused_us, f_samples = time_us(fused, args.repeats, args.inner)
                print(json.dumps({
                    "proof_bench": model, "dtype": dtype_name, "fusion": fusion,
                    "unfused_us": round(unfused_us, 3), "fused_us": round(fused_us, 3),
                    "saving_us": round(unfused_us - fused_us, 3),
                    "spread_us": [round(min(u_samples), 3), round(max(u_samples), 3),
                                  round(min(f_samples), 3), round(max(f_samples), 3)],
                    "max_abs_diff": err, "same_result": err <= 0.05 * scale,
                }), flush=True)


if __name__ == "__main__":
    main()
