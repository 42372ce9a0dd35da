"""A hand-written Triton kernel (fused add + ReLU) launched directly, checked against torch."""
import json
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0), mask=mask)


def main():
    n = 1 << 24
    launches = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    for _ in range(launches):
        add_relu_kernel[grid](x, y, out, n, BLOCK=1024)
    torch.cuda.synchronize()
    ok = torch.equal(out, torch.relu(x + y))
    print(json.dumps({"kernel": "add_relu_kernel", "launches": launches, "n": n, "correct": ok}))
    if not ok:
        raise SystemExit("triton kernel result differs from torch")


if __name__ == "__main__":
    main()
