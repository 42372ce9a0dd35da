#!/usr/bin/env python3
"""PyTorch scaled_dot_product_attention on the shapes of model's attention ops: the baseline
the fused attention kernel is compared with. Prints CSV: dtype,causal,shape,median_ms,tflops."""
import sys

import torch
import torch.nn.functional as F


def median_ms(fn, repeat=20, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    n = len(times)
    return times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])


def main():
    # model's benchmark shape: 64 (batch x heads) slices of 2048 x 64; here batch 4, 16 heads.
    batch, heads, seq, dim = 4, 16, 2048, 64
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}", file=sys.stderr)
    print("dtype,causal,shape,median_ms,tflops")
    for dtype, name in ((torch.float16, "fp16"), (torch.bfloat16, "bf16"), (torch.float32, "fp32")):
        q, k, v = (torch.rand(batch, heads, seq, dim, device="cuda", dtype=dtype) * 4 - 2 for _ in range(3))
        for causal in (False, True):
            ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
            pairs = seq * seq if not causal else seq * (seq + 1) / 2
            tflops = 4 * batch * heads * pairs * dim / (ms * 1e-3) / 1e12
            print(f"{name},{int(causal)},bh{batch * heads}q{seq}kv{seq}d{dim},{ms:.4f},{tflops:.1f}")


if __name__ == "__main__":
    main()
