"""Small PyTorch models with random weights (no downloads) for fprof's real-program checks."""
import torch
import torch.nn.functional as F

from fprof_nvtx import op_range


class Mlp(torch.nn.Module):
    """x -> LayerNorm(x + fc2(gelu(fc1(x)))): four eager kernels that torch.compile fuses."""

    def __init__(self, width, hidden):
        super().__init__()
        self.fc1 = torch.nn.Linear(width, hidden)
        self.fc2 = torch.nn.Linear(hidden, width)
        self.norm = torch.nn.LayerNorm(width)

    def forward(self, x):
        with op_range("mlp", variant="unfused", pair="mlp", reads="x", writes="y"):
            with op_range("matmul_bias", variant="unfused", pair="mlp", reads="x,fc1.w", writes="h0"):
                h = self.fc1(x)
            with op_range("gelu", variant="unfused", pair="mlp", reads="h0", writes="h1"):
                h = F.gelu(h)
            with op_range("matmul_bias", variant="unfused", pair="mlp", reads="h1,fc2.w", writes="h2"):
                h = self.fc2(h)
            with op_range("residual_layernorm", variant="unfused", pair="mlp", reads="x,h2", writes="y"):
                return self.norm(x + h)


class Block(torch.nn.Module):
    """A pre-norm transformer block (attention through SDPA, GELU MLP)."""

    def __init__(self, width, heads, layer):
        super().__init__()
        self.heads = heads
        self.layer = layer
        self.ln1 = torch.nn.LayerNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj = torch.nn.Linear(width, width)
        self.ln2 = torch.nn.LayerNorm(width)
        self.fc1 = torch.nn.Linear(width, 4 * width)
        self.fc2 = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        l = self.layer
        b, t, c = x.shape
        with op_range("layer", layer=l):
            with op_range("layernorm", variant="fused", reads=f"l{l}.x", writes=f"l{l}.ln1", layer=l):
                h = self.ln1(x)
            with op_range("matmul_bias", variant="fused", pair=f"l{l}.qkv", reads=f"l{l}.ln1", writes=f"l{l}.qkv", layer=l):
                qkv = self.qkv(h)
            q, k, v = qkv.view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            with op_range("attention_causal", variant="fused", pair=f"l{l}.attn", reads=f"l{l}.qkv", writes=f"l{l}.attn", layer=l):
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            a = a.transpose(1, 2).reshape(b, t, c)
            with op_range("matmul_bias", variant="fused", pair=f"l{l}.out_proj", reads=f"l{l}.attn", writes=f"l{l}.proj", layer=l):
                a = self.proj(a)
            # Two unfused chains, with their stages named (docs/nvtx-convention.md): the
            # intermediates x_mid and fc1_pre are what a fusion would keep on chip.
            res, fc1 = f"l{l}.res1", f"l{l}.fc1"
            with op_range("residual_layernorm", variant="unfused", pair=res, reads=f"l{l}.x,l{l}.proj", writes=f"l{l}.ln2", layer=l):
                with op_range("add", variant="unfused", pair=res, reads=f"l{l}.x,l{l}.proj", writes=f"l{l}.x_mid", layer=l):
                    x = x + a
                with op_range("layernorm", variant="unfused", pair=res, reads=f"l{l}.x_mid", writes=f"l{l}.ln2", layer=l):
                    h = self.ln2(x)
            with op_range("matmul_bias_gelu", variant="unfused", pair=fc1, reads=f"l{l}.ln2", writes=f"l{l}.fc1", layer=l):
                with op_range("matmul_bias", variant="unfused", pair=fc1, reads=f"l{l}.ln2", writes=f"l{l}.fc1_pre", layer=l):
                    h = self.fc1(h)
                with op_range("gelu", variant="unfused", pair=fc1, reads=f"l{l}.fc1_pre", writes=f"l{l}.fc1", layer=l):
                    h = F.gelu(h)
            with op_range("matmul_bias", variant="fused", pair=f"l{l}.fc2", reads=f"l{l}.fc1", writes=f"l{l}.fc2", layer=l):
                h = self.fc2(h)
            return x + h


class Transformer(torch.nn.Module):
    def __init__(self, width=512, heads=8, layers=2, vocab=4096, seq=256):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, width)
        self.wpe = torch.nn.Embedding(seq, width)
        self.blocks = torch.nn.ModuleList([Block(width, heads, i) for i in range(layers)])
        self.ln_f = torch.nn.LayerNorm(width)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        with op_range("embedding", variant="fused", reads="tokens,wte,wpe", writes="l0.x"):
            x = self.wte(tokens) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        with op_range("logits", variant="fused", reads="final.ln,wte", writes="logits"):
            return self.ln_f(x) @ self.wte.weight.t()
