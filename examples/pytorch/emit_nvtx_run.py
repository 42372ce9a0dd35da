"""Run the small models under PyTorch's own NVTX ranges, with no fprof annotation, for the op-level
fusion pairs (docs/python.md, "Fusion pairs of an unannotated PyTorch program").

  python emit_nvtx_run.py mlp|transformer [--steps 3] [--record-shapes] [--batch 4 --seq 128 --width 256]

The warm-up runs outside emit_nvtx (cuBLAS heuristics, allocator growth); the timed steps run
inside `torch.autograd.profiler.emit_nvtx(record_shapes=...)`, so each op call is one NVTX range
("aten::linear, seq = 3, op_id = 17, sizes = [...], input_op_ids = [...]"). Prints one JSON line.
"""
import argparse
import json

import torch

import fprof_nvtx
from models import Mlp, Transformer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=["mlp", "transformer"])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--record-shapes", action="store_true", help="emit_nvtx(record_shapes=True): input_op_ids too")
    args = ap.parse_args()

    fprof_nvtx.enabled = False  # no fprof op ranges: only what PyTorch emits
    torch.manual_seed(0)
    dev = torch.device("cuda")
    if args.model == "mlp":
        model = Mlp(args.width, 4 * args.width)
        x = torch.randn(args.batch * args.seq, args.width)
    else:
        model = Transformer(width=args.width, seq=args.seq)
        x = torch.randint(0, 4096, (args.batch, args.seq))
    model = model.to(dev, torch.float16).eval()
    x = x.to(dev, torch.float16) if x.is_floating_point() else x.to(dev)
    with torch.no_grad():
        for _ in range(args.warmup):
            model(x)
        torch.cuda.synchronize()
        with torch.autograd.profiler.emit_nvtx(record_shapes=args.record_shapes):
            for _ in range(args.steps):
                y = model(x)
        torch.cuda.synchronize()
    print(json.dumps({"model": args.model, "steps": args.steps, "record_shapes": args.record_shapes,
                      "checksum": float(y.float().abs().sum())}))


if __name__ == "__main__":
    main()
