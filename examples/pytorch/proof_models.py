"""Models for fprof's fusion proof, written as people write eager PyTorch: no profiler
annotation anywhere. Each model takes a set of fusions to apply, so the same model runs unfused
and with one fusion at a time:

  sdpa       the attention chain QK^T -> scale -> mask -> softmax -> PV  ->  F.scaled_dot_product_attention
  bias_gelu  matmul -> + bias -> GELU (tanh)  ->  one cuBLASLt GEMM with a bias+GELU epilogue
             (torch._addmm_activation)
  res_ln     residual add -> LayerNorm  ->  one Triton kernel (torch.compile of that function only)
  gelu       (Hugging Face GPT-2) the gelu_new formula, eight pointwise kernels -> F.gelu(tanh)

Whole-model torch.compile is applied by the caller (proof_run.py --compile).
"""
import math

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError as e:  # the dev machine has no torch: say so instead of a traceback
    raise SystemExit(f"proof_models.py needs PyTorch ({e}); run it on the GPU machine") from e

FUSIONS = ("sdpa", "bias_gelu", "res_ln", "gelu")
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


# ---- The regions, unfused and fused (the benchmark times exactly these functions) -------------

def attention_naive(q, k, v, masked):
    """q, k, v: (B, heads, T, head_dim) views; masked: (T, T) bool, True above the diagonal."""
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
    att = att.masked_fill(masked, float("-inf"))
    att = F.softmax(att, dim=-1)
    return att @ v


def attention_sdpa(q, k, v, masked=None):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def bias_gelu_naive(x, weight, bias):
    h = x @ weight.t()
    h = h + bias
    return F.gelu(h, approximate="tanh")


def bias_gelu_fused(x, weight, bias):
    # cuBLASLt's GELU_BIAS epilogue (tanh GELU), one kernel.
    y = torch._addmm_activation(bias, x.reshape(-1, x.shape[-1]), weight.t(), use_gelu=True)
    return y.view(*x.shape[:-1], weight.shape[0])


def residual_layernorm_naive(x, delta, norm):
    """Returns the new residual stream and its normalization."""
    x = x + delta
    return x, norm(x)


def _add_layer_norm(x, delta, weight, bias, eps: float):
    s = x + delta
    return s, F.layer_norm(s, (s.shape[-1],), weight, bias, eps)


_add_layer_norm_compiled = None


def residual_layernorm_fused(x, delta, norm):
    global _add_layer_norm_compiled
    if _add_layer_norm_compiled is None:
        _add_layer_norm_compiled = torch.compile(_add_layer_norm, dynamic=False, fullgraph=True)
    return _add_layer_norm_compiled(x, delta, norm.weight, norm.bias, norm.eps)


def gelu_new_naive(x):
    """GPT-2's gelu_new as Hugging Face writes it: eight pointwise kernels in eager mode."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def gelu_new_fused(x):
    return F.gelu(x, approximate="tanh")


def regions(fusions):
    """The functions a model calls for each region, given the fusions to apply."""
    unknown = set(fusions) - set(FUSIONS)
    if unknown:
        raise ValueError(f"unknown fusions {sorted(unknown)}; known: {', '.join(FUSIONS)}")
    return {
        "attention": attention_sdpa if "sdpa" in fusions else attention_naive,
        "bias_gelu": bias_gelu_fused if "bias_gelu" in fusions else bias_gelu_naive,
        "add_norm": residual_layernorm_fused if "res_ln" in fusions else residual_layernorm_naive,
        "gelu_new": gelu_new_fused if "gelu" in fusions else gelu_new_naive,
    }


# ---- A GPT-2-style decoder with naive attention ---------------------------------------------

class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads, seq, attention):
        super().__init__()
        self.heads = heads
        self.attention = attention
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.register_buffer("masked", torch.ones(seq, seq, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = self.attention(q, k, v, self.masked[:t, :t])
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Mlp(nn.Module):
    """fc1 -> + bias -> GELU -> fc2."""

    def __init__(self, width, hidden, bias_gelu):
        super().__init__()
        self.bias_gelu = bias_gelu
        self.fc1 = nn.Linear(width, hidden)
        self.fc2 = nn.Linear(hidden, width)

    def forward(self, x):
        return self.fc2(self.bias_gelu(x, self.fc1.weight, self.fc1.bias))


class Block(nn.Module):
    def __init__(self, width, heads, seq, r):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, seq, r["attention"])
        self.ln2 = nn.LayerNorm(width)
        self.mlp = Mlp(width, 4 * width, r["bias_gelu"])


class Gpt(nn.Module):
    """Pre-norm decoder. Every residual add feeds the next LayerNorm, as in GPT-2:
    x += attn(ln1(x)); x += mlp(ln2(x)); ...; logits = ln_f(x) @ wte^T."""

    def __init__(self, layers=4, width=768, heads=12, seq=512, vocab=8192, fusions=()):
        super().__init__()
        r = regions(fusions)
        self.add_norm = r["add_norm"]
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(seq, width)
        self.blocks = nn.ModuleList(Block(width, heads, seq, r) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x, h = self.add_norm(self.wte(tokens), self.wpe(pos), self.blocks[0].ln1)
        for i, block in enumerate(self.blocks):
            x, h = self.add_norm(x, block.attn(h), block.ln2)
            following = self.blocks[i + 1].ln1 if i + 1 < len(self.blocks) else self.ln_f
            x, h = self.add_norm(x, block.mlp(h), following)
        return h @ self.wte.weight.t()


# ---- An MLP block: Linear -> bias -> GELU -> Linear, residual, LayerNorm ---------------------

class MlpStack(nn.Module):
    """x = LayerNorm(x + fc2(gelu(fc1(x) + b1))), `blocks` times."""

    def __init__(self, blocks=2, width=1024, hidden=4096, fusions=()):
        super().__init__()
        r = regions(fusions)
        self.add_norm = r["add_norm"]
        self.mlps = nn.ModuleList(Mlp(width, hidden, r["bias_gelu"]) for _ in range(blocks))
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(blocks))

    def forward(self, x):
        for mlp, norm in zip(self.mlps, self.norms):
            _, x = self.add_norm(x, mlp(x), norm)
        return x


# ---- Hugging Face GPT-2 from its config, random weights (no download) --------------------------

class GeluNew(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def hf_gpt2(layers=4, width=768, heads=12, fusions=(), dtype=torch.float16):
    """GPT2LMHeadModel built from GPT2Config. sdpa selects Hugging Face's SDPA attention (else its
    eager attention); gelu swaps the MLP's gelu_new for F.gelu(tanh). Returns (model, facts)."""
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError as e:
        raise SystemExit(f"the Hugging Face model needs transformers ({e})") from e
    r = regions(fusions)
    attn = "sdpa" if "sdpa" in fusions else "eager"
    cfg = GPT2Config(n_layer=layers, n_embd=width, n_head=heads, n_positions=1024, activation_function="gelu_new",
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    try:
        model = GPT2LMHeadModel._from_config(cfg, attn_implementation=attn)
    except (TypeError, ValueError):
        cfg._attn_implementation = attn
        model = GPT2LMHeadModel(cfg)
    hf_act = type(model.transformer.h[0].mlp.act).__name__
    # The eager variant keeps the formula GPT-2 made famous (Hugging Face's NewGELUActivation); if
    # this transformers version computes it some other way, the formula is put back so the chain
    # the proof is about exists.
    for block in model.transformer.h:
        block.mlp.act = GeluNew(r["gelu_new"])
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    facts = {"attn_implementation": getattr(model.config, "_attn_implementation", attn), "hf_activation": hf_act}
    return model.to(dtype), facts
