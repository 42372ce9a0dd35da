# A PyTorch fp16 MLP replayed from CUDA graphs, for fprof --metrics (graph kernels take the
# counters of identical eager launches). `graph`: torch.cuda.graph after 3 eager warm-up iterations on
# a side stream, 5 replays; `compile`: torch.compile(mode="reduce-overhead"), 8 calls without grad.
import sys
import torch

mode = sys.argv[1] if len(sys.argv) > 1 else "graph"
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024),
                        torch.nn.LayerNorm(1024)).cuda().half()
x = torch.randn(64, 1024, device="cuda", dtype=torch.half)
if mode == "graph":
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            y = m(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = m(x)
    for _ in range(5):
        g.replay()
else:
    f = torch.compile(m, mode="reduce-overhead")
    with torch.no_grad():
        for _ in range(8):
            y = f(x)
torch.cuda.synchronize()
print("done", mode)
