"""The state a PyTorch training loop leaves, bit for bit, natively and under a one-run metrics run.

    python torch_state.py                      # trains, prints "state <sha256>"
    python torch_state.py --compare FPROF DIR  # the digest natively and under
                                               # `FPROF run --metrics roofline`: must be equal

Under a one-run metrics run every profiled launch runs twice: its duplicate, counted by SASS
patching, between a checkpoint of the program's memory and its restore (fprof's own checkpoint or
CUPTI's, collector/src/cupti/own_checkpoint.h). A write the restore missed changes the parameters or the
optimizer's state: in-place updates (AdamW's foreach kernels take their tensors' pointers in a
struct argument), embedding gradients accumulated by index, dropout's random streams, gradient
clipping, a bf16 autocast region. Deterministic algorithms make the native digest repeatable.
"""
import argparse
import hashlib
import os
import subprocess
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def train():
    import torch

    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    dev = torch.device("cuda")
    vocab, width, seq, batch = 512, 128, 64, 8
    model = torch.nn.ModuleDict({
        "embed": torch.nn.Embedding(vocab, width),
        "block": torch.nn.TransformerEncoderLayer(width, 4, 4 * width, dropout=0.1, batch_first=True,
                                                  activation="gelu"),
        "head": torch.nn.Linear(width, vocab),
    }).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    for step in range(3):
        tokens = torch.randint(0, vocab, (batch, seq), device=dev)
        x = model["block"](model["embed"](tokens))
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model["head"](x)
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, vocab), tokens.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
    torch.cuda.synchronize()
    digest = hashlib.sha256()
    for name, p in sorted(model.named_parameters()):
        digest.update(p.detach().cpu().numpy().tobytes())
        for key, value in sorted(opt.state[p].items()):
            if torch.is_tensor(value):
                digest.update(value.detach().cpu().numpy().tobytes())
    print(f"state {digest.hexdigest()} loss {loss.item():.6f}")


def state_line(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    lines = [l for l in out.stdout.splitlines() if l.startswith("state ")]
    return (lines[-1] if lines else None), out


def compare(fprof, work):
    me = [sys.executable, os.path.abspath(__file__)]
    first, _ = state_line(me)
    second, _ = state_line(me)
    db = os.path.join(work, "torch_state.fprof")
    profiled, run = state_line([fprof, "run", "--force", "--metrics", "roofline", "-o", db] + me)
    checks = [
        ("the native digest repeats (deterministic algorithms)", first is not None and first == second),
        ("under a one-run metrics run the same digest", profiled is not None and profiled == first),
    ]
    print(f"info native: {first}\ninfo fprof:  {profiled}")
    if profiled is None:
        print("info fprof run: exit %d\n%s" % (run.returncode, run.stderr[-2000:]))
    if os.path.exists(db):
        import sqlite3
        meta = dict(sqlite3.connect(db).execute("select key, value from metadata"))
        print(f"info checkpoints: {meta.get('sass_duplicate_checkpoints')}")
        print(f"info sass_in_first_run: {meta.get('sass_in_first_run')}")
    failed = 0
    for text, ok in checks:
        print(("ok   " if ok else "FAIL ") + text)
        failed += not ok
    print(f"{len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", nargs=2, metavar=("FPROF", "DIR"))
    args = ap.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    train()


if __name__ == "__main__":
    main()
