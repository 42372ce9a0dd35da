"""Two-process (or more) all-reduce with NCCL plus a matmul per rank; run under torchrun:

  torchrun --nproc-per-node 2 allreduce.py [--iters 10]
"""
import argparse
import json
import os

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--numel", type=int, default=1 << 24)
    args = ap.parse_args()
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    for i in range(args.iters):
        t = torch.full((args.numel,), float(rank + 1 + i), device="cuda")
        torch.cuda.nvtx.range_push(f"op=allreduce_step layer={i}")
        b = a @ a  # some compute per rank
        dist.all_reduce(t)
        torch.cuda.nvtx.range_pop()
        want = sum(r + 1 + i for r in range(world))
        if not torch.all(t == want):
            raise SystemExit(f"rank {rank}: all-reduce gave {t[0].item()}, want {want}")
    torch.cuda.synchronize()
    print(json.dumps({"rank": rank, "world": world, "iters": args.iters, "ok": True, "b": float(b.float().sum())}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
