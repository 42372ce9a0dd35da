"""One training step of a Hugging Face GPT-2 (random weights, one layer) under
torch.autograd.profiler.emit_nvtx(record_shapes=True), with NVTX ranges a reader must take as they
come: a message with non-ASCII letters, a tab, a newline and a control character; one of 1,000
characters; a start/end range ended on another thread; a push/pop range still open at exit.

  fprof run -o F python hf_train_nvtx.py

The step runs in bf16 autocast inside a record_function range, then backward (autograd's thread)
and AdamW. Needs torch and transformers; nothing is downloaded.
"""
import threading

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    torch.manual_seed(0)
    config = GPT2Config(n_layer=1, n_embd=256, n_head=4, n_positions=128, vocab_size=2048)
    model = GPT2LMHeadModel(config).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, config.vocab_size, (4, 128), device="cuda")
    torch.cuda.nvtx.range_push("ünïcödé ✓ step\twith\ncontrol \x01 chars")  # left open at exit
    torch.cuda.nvtx.range_push("L" * 1000)
    with torch.autograd.profiler.emit_nvtx(record_shapes=True):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            with torch.profiler.record_function("my_forward"):
                loss = model(tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    torch.cuda.nvtx.range_pop()
    handle = torch.cuda.nvtx.range_start("across threads")

    def end_elsewhere():
        torch.ones(1000, device="cuda").sum().item()
        torch.cuda.nvtx.range_end(handle)

    worker = threading.Thread(target=end_elsewhere)
    worker.start()
    worker.join()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
