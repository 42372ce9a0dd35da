"""A small PyTorch training workload for bench/metrics_overhead.sh: a transformer-style
block (LayerNorm, attention projections, GELU MLP) in fp16, forward, backward and an AdamW update,
for --steps steps after --warmup steps. No NVTX, no fprof annotation: what a user would profile.

    python3 bench/torch_step.py [--steps 3] [--warmup 1]
"""
import argparse

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--width", type=int, default=512)
    args = ap.parse_args()
    torch.manual_seed(0)
    dev, dtype = torch.device("cuda"), torch.float16
    w = args.width
    block = torch.nn.TransformerEncoderLayer(w, nhead=8, dim_feedforward=4 * w, activation="gelu",
                                             batch_first=True, norm_first=True).to(dev, dtype)
    opt = torch.optim.AdamW(block.parameters(), lr=1e-4, foreach=True)
    x = torch.randn(args.batch, args.seq, w, device=dev, dtype=dtype)
    for _ in range(args.warmup + args.steps):
        opt.zero_grad(set_to_none=True)
        loss = block(x).float().square().mean()
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    print(f"torch_step: {args.warmup + args.steps} steps, loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
