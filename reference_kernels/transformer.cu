// A small static decoder-only transformer (GPT-2 layout: pre-LayerNorm, GELU MLP, learned
// positions, tied embedding) built from the reference ops, in an unfused and a fused form.
// Prefill runs the prompt; decode generates greedily with a KV cache. Every op runs inside the
// NVTX ranges of docs/nvtx-convention.md, inside "op=layer layer=<i>", inside "op=prefill" or
// "op=decode".
#include <algorithm>
#include <cmath>

#include "cpu_reference.hpp"
#include "ops.cuh"

namespace fprof::refk {

namespace {

constexpr float kEps = 1e-5f;

struct Layer {
  Tensor ln1_g, ln1_b, w_qkv, b_qkv, w_o, b_o, ln2_g, ln2_b, w_fc1, b_fc1, w_fc2, b_fc2, k_cache, v_cache;
};

std::string layerName(std::size_t l, const char* buf) { return "l" + std::to_string(l) + "." + buf; }

}  // namespace

struct Transformer::Impl {
  Context& ctx;
  DType dtype;
  ModelConfig cfg;
  std::size_t head_dim, max_seq;
  Tensor wte, wpe, lnf_g, lnf_b;
  std::vector<Layer> layers;
  // Activations, sized for the prompt (batch * seq rows); decode uses the first batch rows.
  Tensor x, x_mid, y, qkv, q, attn_o, attn, proj, fc1, tmp, scores, probs, logits, prefill_logits;
  Tensor top_p, probs_vocab;
  DeviceBuffer topk_scratch;
  DeviceBuffer prompt, generated;  // int32 tokens: prompt [batch*seq], generated [(steps+1) * batch]
  std::vector<int> prompt_host;
  cudaEvent_t start{}, mid{}, decode_start{}, stop{};

  Impl(Context& c, DType t, const ModelConfig& config) : ctx(c), dtype(t), cfg(config) {
    if (cfg.heads == 0 || cfg.width % cfg.heads != 0 || cfg.width / cfg.heads != kFlashHeadDim) {
      throw std::invalid_argument("model: width / heads must be 64 (the fused attention's head_dim)");
    }
    if (cfg.batch == 0 || cfg.seq == 0 || cfg.layers == 0 || cfg.vocab == 0) {
      throw std::invalid_argument("model: batch, seq, layers and vocab must be positive");
    }
    head_dim = kFlashHeadDim;
    max_seq = cfg.seq + cfg.decode_steps;
    const std::size_t w = cfg.width, rows = cfg.batch * cfg.seq;
    auto uniformWeight = [&](const std::string& name, std::size_t out, std::size_t in) {
      Tensor tensor(name, t, out * in);
      tensor.random(ctx, float(std::sqrt(3.0 / double(in))));  // unit-variance outputs
      return tensor;
    };
    auto vec = [&](const std::string& name, std::size_t n, float scale, float offset) {
      Tensor tensor(name, t, n);
      tensor.random(ctx, scale, offset);
      return tensor;
    };
    wte = vec("wte", cfg.vocab * w, 1.0f, 0.0f);
    wpe = vec("wpe", max_seq * w, 0.5f, 0.0f);
    lnf_g = vec("final.ln_g", w, 0.2f, 1.0f);
    lnf_b = vec("final.ln_b", w, 0.2f, 0.0f);
    for (std::size_t l = 0; l < cfg.layers; ++l) {
      Layer L;
      L.ln1_g = vec(layerName(l, "ln1_g"), w, 0.2f, 1.0f);
      L.ln1_b = vec(layerName(l, "ln1_b"), w, 0.2f, 0.0f);
      L.w_qkv = uniformWeight(layerName(l, "w_qkv"), 3 * w, w);
      L.b_qkv = vec(layerName(l, "b_qkv"), 3 * w, 0.2f, 0.0f);
      L.w_o = uniformWeight(layerName(l, "w_o"), w, w);
      L.b_o = vec(layerName(l, "b_o"), w, 0.2f, 0.0f);
      L.ln2_g = vec(layerName(l, "ln2_g"), w, 0.2f, 1.0f);
      L.ln2_b = vec(layerName(l, "ln2_b"), w, 0.2f, 0.0f);
      L.w_fc1 = uniformWeight(layerName(l, "w_fc1"), 4 * w, w);
      L.b_fc1 = vec(layerName(l, "b_fc1"), 4 * w, 0.2f, 0.0f);
      L.w_fc2 = uniformWeight(layerName(l, "w_fc2"), w, 4 * w);
      L.b_fc2 = vec(layerName(l, "b_fc2"), w, 0.2f, 0.0f);
      L.k_cache = Tensor(layerName(l, "k_cache"), t, cfg.batch * cfg.heads * max_seq * head_dim);
      L.v_cache = Tensor(layerName(l, "v_cache"), t, cfg.batch * cfg.heads * max_seq * head_dim);
      layers.push_back(std::move(L));
    }
    x = Tensor("x", t, rows * w); x_mid = Tensor("x_mid", t, rows * w); y = Tensor("y", t, rows * w);
    qkv = Tensor("qkv", t, rows * 3 * w); q = Tensor("q", t, rows * w); attn_o = Tensor("attn_o", t, rows * w);
    attn = Tensor("attn", t, rows * w); proj = Tensor("proj", t, rows * w); fc1 = Tensor("fc1", t, rows * 4 * w);
    tmp = Tensor("tmp", t, rows * 4 * w);
    // Unfused scores: prefill needs seq x seq per head, a decode step 1 x (seq + steps).
    const std::size_t score_count = cfg.batch * cfg.heads * std::max(cfg.seq * cfg.seq, max_seq);
    scores = Tensor("s", t, score_count);
    probs = Tensor("p", t, score_count);
    logits = Tensor("logits", t, cfg.batch * cfg.vocab);
    prefill_logits = Tensor("prefill_logits", t, cfg.batch * cfg.vocab);
    top_p = Tensor("top_p", DType::F32, cfg.batch);
    probs_vocab = Tensor("probs", DType::F32, cfg.batch * cfg.vocab);
    topk_scratch = DeviceBuffer(topKScratchBytes(cfg.batch, cfg.vocab));
    initTopKScratch(topk_scratch.get(), cfg.batch, cfg.vocab, ctx.stream);
    prompt = DeviceBuffer(rows * sizeof(int));
    generated = DeviceBuffer((cfg.decode_steps + 1) * cfg.batch * sizeof(int));
    prompt_host.resize(rows);
    for (int& tok : prompt_host) tok = int(ctx.nextSeed() % cfg.vocab);
    CUDA_CHECK(cudaMemcpy(prompt.get(), prompt_host.data(), rows * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&mid));
    CUDA_CHECK(cudaEventCreate(&decode_start));
    CUDA_CHECK(cudaEventCreate(&stop));
  }

  ~Impl() {
    cudaEventDestroy(start);  // teardown: nothing useful to do with an error here
    cudaEventDestroy(mid);
    cudaEventDestroy(decode_start);
    cudaEventDestroy(stop);
  }

  RangeTags op(const std::string& name, bool fused, const std::string& pair, const std::string& reads,
               const std::string& writes, int layer) const {
    RangeTags t;
    t.op = name;
    t.variant = fused ? "fused" : "unfused";
    t.pair = pair;
    t.reads = reads;
    t.writes = writes;
    t.layer = layer;
    return t;
  }

  void matmul(Epilogue e, const void* in, std::size_t lda, const void* w, const void* b, void* out, std::size_t rows,
              std::size_t n, std::size_t k) {
    const bool hand = cfg.matmul == ModelConfig::Matmul::Hand ||
                      (cfg.matmul == ModelConfig::Matmul::Auto && rows >= ModelConfig::kHandMatmulMinRows &&
                       gemmSm90Usable(dtype, in, lda, w, out, n, k));
    if (hand) launchGemm(dtype, e, in, lda, w, b, out, rows, n, k, ctx.stream);
    else ctx.lt->run(dtype, e, in, w, b, out, rows, n, k, ctx.stream, lda);
  }

  // out = in * w^T + b (+ GELU), rows x n, k = in's width.
  void linear(bool fused, bool gelu, const std::string& pair, const std::string& in_name, const std::string& w_name,
              const std::string& b_name, const std::string& out_name, int layer, const Tensor& in, const Tensor& w,
              const Tensor& b, const Tensor& out, std::size_t rows, std::size_t n, std::size_t k, std::uint64_t rep) {
    const Epilogue e = gelu ? Epilogue::BiasGelu : Epilogue::Bias;
    const std::string opname = gelu ? "matmul_bias_gelu" : "matmul_bias";
    NvtxRange outer(op(opname, fused, pair, in_name + "," + w_name + "," + b_name, out_name, layer), rep);
    if (fused) {
      matmul(e, in.ptr(), k, w.ptr(), b.ptr(), out.ptr(), rows, n, k);
      return;
    }
    const std::string t0 = out_name + "_t0";
    { NvtxRange r(op("matmul", fused, pair, in_name + "," + w_name, t0, layer), rep);
      matmul(Epilogue::None, in.ptr(), k, w.ptr(), nullptr, tmp.ptr(), rows, n, k); }
    NvtxRange r(op(epilogueName(e), fused, pair, t0 + "," + b_name, out_name, layer), rep);
    launchBiasAct(dtype, e, tmp.ptr(), b.ptr(), out.ptr(), rows, n, ctx.stream);
  }

  // sum = a + b; out = layernorm(sum).
  void residualNorm(bool fused, const std::string& pair, const std::string& a_name, const std::string& b_name,
                    const std::string& g_name, const std::string& beta_name, const std::string& sum_name,
                    const std::string& out_name, int layer, const Tensor& a, const Tensor& b, const Tensor& g,
                    const Tensor& beta, const Tensor& sum, const Tensor& out, std::size_t rows, std::uint64_t rep) {
    const std::string params = g_name + "," + beta_name;
    NvtxRange outer(op("residual_layernorm", fused, pair, a_name + "," + b_name + "," + params, sum_name + "," + out_name, layer), rep);
    if (fused) {
      launchNorm(dtype, false, a.ptr(), b.ptr(), g.ptr(), beta.ptr(), kEps, sum.ptr(), out.ptr(), rows, cfg.width, ctx.stream);
      return;
    }
    { NvtxRange r(op("add", fused, pair, a_name + "," + b_name, sum_name, layer), rep);
      launchAdd(dtype, a.ptr(), b.ptr(), sum.ptr(), rows * cfg.width, ctx.stream); }
    NvtxRange r(op("layernorm", fused, pair, sum_name + "," + params, out_name, layer), rep);
    launchNorm(dtype, false, sum.ptr(), nullptr, g.ptr(), beta.ptr(), kEps, nullptr, out.ptr(), rows, cfg.width, ctx.stream);
  }

  // One forward pass over `seq_new` new positions per sequence starting at pos0; leaves the
  // final-LayerNorm output of the last new position's logits in `logits`.
  void forward(bool fused, const int* tokens, std::size_t seq_new, std::size_t pos0, std::uint64_t rep) {
    const std::size_t w = cfg.width, rows = cfg.batch * seq_new, nl = cfg.layers;
    {
      NvtxRange r(op("embedding", fused, "", "tokens,wte,wpe", "x0", -1), rep);
      launchEmbedding(dtype, tokens, wte.ptr(), wpe.ptr(), x.ptr(), rows, seq_new, pos0, w, ctx.stream);
    }
    for (std::size_t l = 0; l < nl; ++l) {
      const int li = int(l);
      RangeTags layer_tags;
      layer_tags.op = "layer";
      layer_tags.layer = li;
      NvtxRange layer_range(layer_tags, rep);
      const Layer& L = layers[l];
      const std::string x_in = "x" + std::to_string(l), x_out = "x" + std::to_string(l + 1);
      if (l == 0) {
        NvtxRange r(op("layernorm", fused, "", x_in + ",l0.ln1_g,l0.ln1_b", "l0.ln1", li), rep);
        launchNorm(dtype, false, x.ptr(), nullptr, L.ln1_g.ptr(), L.ln1_b.ptr(), kEps, nullptr, y.ptr(), rows, w, ctx.stream);
      }
      linear(fused, false, layerName(l, "qkv"), layerName(l, "ln1"), L.w_qkv.name, L.b_qkv.name, layerName(l, "qkv"), li,
             y, L.w_qkv, L.b_qkv, qkv, rows, 3 * w, w, rep);
      {
        NvtxRange r(op("split_heads", fused, "", layerName(l, "qkv"),
                       layerName(l, "q") + "," + L.k_cache.name + "," + L.v_cache.name, li), rep);
        launchSplitHeads(dtype, qkv.ptr(), q.ptr(), L.k_cache.ptr(), L.v_cache.ptr(), cfg.batch, seq_new, cfg.heads,
                         head_dim, pos0, max_seq, ctx.stream);
      }
      const AttentionShape a{cfg.batch * cfg.heads, seq_new, pos0 + seq_new, head_dim, seq_new * head_dim,
                             max_seq * head_dim, seq_new * head_dim, float(1.0 / std::sqrt(double(head_dim))), true};
      {
        const std::string pair = layerName(l, "attn"), qn = layerName(l, "q"), on = layerName(l, "attn_o");
        NvtxRange outer(op("attention_causal", fused, pair, qn + "," + L.k_cache.name + "," + L.v_cache.name, on, li), rep);
        if (fused) {
          launchFlashAttention(dtype, a, q.ptr(), L.k_cache.ptr(), L.v_cache.ptr(), attn_o.ptr(), ctx.stream);
        } else {
          const std::string sn = layerName(l, "s"), pn = layerName(l, "p");
          { NvtxRange r(op("qk", fused, pair, qn + "," + L.k_cache.name, sn, li), rep);
            launchScores(ctx.cublas, dtype, a, q.ptr(), L.k_cache.ptr(), scores.ptr()); }
          { NvtxRange r(op("softmax", fused, pair, sn, pn, li), rep);
            launchAttentionSoftmax(dtype, a, scores.ptr(), probs.ptr(), ctx.stream); }
          { NvtxRange r(op("pv", fused, pair, pn + "," + L.v_cache.name, on, li), rep);
            launchProbsTimesV(ctx.cublas, dtype, a, probs.ptr(), L.v_cache.ptr(), attn_o.ptr()); }
        }
      }
      {
        NvtxRange r(op("merge_heads", fused, "", layerName(l, "attn_o"), layerName(l, "attn"), li), rep);
        launchMergeHeads(dtype, attn_o.ptr(), attn.ptr(), cfg.batch, seq_new, cfg.heads, head_dim, ctx.stream);
      }
      linear(fused, false, layerName(l, "out_proj"), layerName(l, "attn"), L.w_o.name, L.b_o.name, layerName(l, "proj"),
             li, attn, L.w_o, L.b_o, proj, rows, w, w, rep);
      residualNorm(fused, layerName(l, "res1"), x_in, layerName(l, "proj"), L.ln2_g.name, L.ln2_b.name,
                   layerName(l, "x_mid"), layerName(l, "ln2"), li, x, proj, L.ln2_g, L.ln2_b, x_mid, y, rows, rep);
      linear(fused, true, layerName(l, "fc1"), layerName(l, "ln2"), L.w_fc1.name, L.b_fc1.name, layerName(l, "fc1"), li,
             y, L.w_fc1, L.b_fc1, fc1, rows, 4 * w, w, rep);
      linear(fused, false, layerName(l, "fc2"), layerName(l, "fc1"), L.w_fc2.name, L.b_fc2.name, layerName(l, "fc2"), li,
             fc1, L.w_fc2, L.b_fc2, proj, rows, w, 4 * w, rep);
      // The second residual add is fused with the next LayerNorm (the next layer's ln1, or the final one).
      const bool last = l + 1 == nl;
      const Tensor& g = last ? lnf_g : layers[l + 1].ln1_g;
      const Tensor& b = last ? lnf_b : layers[l + 1].ln1_b;
      const std::string out_name = last ? "final.ln" : layerName(l + 1, "ln1");
      residualNorm(fused, layerName(l, "res2"), layerName(l, "x_mid"), layerName(l, "fc2"), g.name, b.name, x_out,
                   out_name, li, x_mid, proj, g, b, x, y, rows, rep);
    }
    // Logits of each sequence's last new position only: rows seq_new-1, 2*seq_new-1, ...
    NvtxRange r(op("logits", fused, "", "final.ln,wte", "logits", -1), rep);
    matmul(Epilogue::None, static_cast<const char*>(y.ptr()) + (seq_new - 1) * w * dtypeBytes(dtype), seq_new * w,
           wte.ptr(), nullptr, logits.ptr(), cfg.batch, cfg.vocab, w);
  }

  void sample(bool fused, int* next, std::uint64_t rep) {
    NvtxRange outer(op("softmax_topk", fused, "sample", "logits", "top_p,tokens", -1), rep);
    if (fused) {
      launchSoftmaxTopKFused(dtype, logits.ptr(), top_p.buf.as<float>(), next, cfg.batch, cfg.vocab, 1, topk_scratch.get(),
                             ctx.stream);
      return;
    }
    { NvtxRange r(op("softmax_stats", fused, "sample", "logits", "stats", -1), rep);
      launchVocabSoftmaxStats(dtype, logits.ptr(), topk_scratch.get(), cfg.batch, cfg.vocab, ctx.stream); }
    { NvtxRange r(op("softmax", fused, "sample", "logits,stats", "probs", -1), rep);
      launchVocabSoftmaxWrite(dtype, logits.ptr(), topk_scratch.get(), probs_vocab.buf.as<float>(), cfg.batch, cfg.vocab, ctx.stream); }
    NvtxRange r(op("topk", fused, "sample", "probs", "top_p,tokens", -1), rep);
    launchTopK(probs_vocab.buf.as<float>(), top_p.buf.as<float>(), next, cfg.batch, cfg.vocab, 1, topk_scratch.get(), ctx.stream);
  }
};

Transformer::Transformer(Context& ctx, DType t, const ModelConfig& config)
    : impl_(std::make_unique<Impl>(ctx, t, config)) {}
Transformer::~Transformer() = default;

ModelTiming Transformer::generate(bool fused, std::uint64_t repeat_index) {
  Impl& m = *impl_;
  const std::size_t b = m.cfg.batch;
  int* generated = m.generated.as<int>();
  CUDA_CHECK(cudaEventRecord(m.start, m.ctx.stream));
  {
    RangeTags phase;
    phase.op = "prefill";
    NvtxRange r(phase, repeat_index);
    m.forward(fused, m.prompt.as<int>(), m.cfg.seq, 0, repeat_index);
    m.sample(fused, generated, repeat_index);
  }
  CUDA_CHECK(cudaEventRecord(m.mid, m.ctx.stream));
  // Kept for checking; a device-to-device copy the size of one logits row per sequence.
  CUDA_CHECK(cudaMemcpyAsync(m.prefill_logits.ptr(), m.logits.ptr(), m.logits.bytes(), cudaMemcpyDeviceToDevice, m.ctx.stream));
  CUDA_CHECK(cudaEventRecord(m.decode_start, m.ctx.stream));
  {
    RangeTags phase;
    phase.op = "decode";
    NvtxRange r(phase, repeat_index);
    for (std::size_t step = 0; step < m.cfg.decode_steps; ++step) {
      m.forward(fused, generated + step * b, 1, m.cfg.seq + step, repeat_index);
      m.sample(fused, generated + (step + 1) * b, repeat_index);
    }
  }
  CUDA_CHECK(cudaEventRecord(m.stop, m.ctx.stream));
  CUDA_CHECK(cudaEventSynchronize(m.stop));
  ModelTiming timing;
  float prefill_ms = 0.0f, decode_ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&prefill_ms, m.start, m.mid));
  CUDA_CHECK(cudaEventElapsedTime(&decode_ms, m.decode_start, m.stop));
  timing.prefill_ms = prefill_ms;
  timing.decode_ms = decode_ms;
  return timing;
}

std::vector<float> Transformer::prefillLogits() const { return impl_->prefill_logits.host(); }
std::vector<float> Transformer::decodeLogits() const { return impl_->logits.host(); }

std::vector<int> Transformer::generatedTokens() const {
  std::vector<int> tokens((impl_->cfg.decode_steps + 1) * impl_->cfg.batch);
  CUDA_CHECK(cudaMemcpy(tokens.data(), impl_->generated.get(), tokens.size() * sizeof(int), cudaMemcpyDeviceToHost));
  return tokens;
}

void Transformer::cpuReference(std::vector<double>& prefill_logits, std::vector<double>& decode_logits) const {
  const Impl& m = *impl_;
  const std::size_t w = m.cfg.width, hd = m.head_dim, heads = m.cfg.heads, vocab = m.cfg.vocab;
  const std::size_t n = m.cfg.seq + m.cfg.decode_steps;  // positions the decode steps fed in
  const std::vector<int> generated = generatedTokens();
  const auto wte = m.wte.host(), wpe = m.wpe.host(), lnf_g = m.lnf_g.host(), lnf_b = m.lnf_b.host();
  struct HostLayer {
    std::vector<float> ln1_g, ln1_b, w_qkv, b_qkv, w_o, b_o, ln2_g, ln2_b, w_fc1, b_fc1, w_fc2, b_fc2;
  };
  std::vector<HostLayer> hl;
  for (const Layer& L : m.layers) {
    hl.push_back({L.ln1_g.host(), L.ln1_b.host(), L.w_qkv.host(), L.b_qkv.host(), L.w_o.host(), L.b_o.host(),
                  L.ln2_g.host(), L.ln2_b.host(), L.w_fc1.host(), L.b_fc1.host(), L.w_fc2.host(), L.b_fc2.host()});
  }
  auto toFloatVec = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  prefill_logits.assign(m.cfg.batch * vocab, 0.0);
  decode_logits.assign(m.cfg.batch * vocab, 0.0);
  for (std::size_t b = 0; b < m.cfg.batch; ++b) {
    // Prompt, then the tokens the decode steps consumed (generated[0 .. steps-1]).
    std::vector<float> x(n * w);
    for (std::size_t p = 0; p < n; ++p) {
      const int tok = p < m.cfg.seq ? m.prompt_host[b * m.cfg.seq + p] : generated[(p - m.cfg.seq) * m.cfg.batch + b];
      for (std::size_t c = 0; c < w; ++c) x[p * w + c] = wte[std::size_t(tok) * w + c] + wpe[p * w + c];
    }
    const std::vector<float> zeros(n * w, 0.0f);
    std::vector<float> h = toFloatVec(ref::residualLayerNorm(x, zeros, hl[0].ln1_g, hl[0].ln1_b, n, w, kEps).out);
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
      const HostLayer& L = hl[l];
      const auto qkv = ref::matmulBiasAct(h, L.w_qkv, L.b_qkv, n, 3 * w, w, ref::Activation::None);
      std::vector<float> q(heads * n * hd), k(heads * n * hd), v(heads * n * hd);
      for (std::size_t p = 0; p < n; ++p) {
        for (std::size_t c = 0; c < w; ++c) {
          const std::size_t head = c / hd, d = c % hd, dst = (head * n + p) * hd + d;
          q[dst] = float(qkv[p * 3 * w + c]);
          k[dst] = float(qkv[p * 3 * w + w + c]);
          v[dst] = float(qkv[p * 3 * w + 2 * w + c]);
        }
      }
      const auto o = ref::attention(q, k, v, heads, n, n, hd, 1.0 / std::sqrt(double(hd)), true);
      std::vector<float> merged(n * w);
      for (std::size_t p = 0; p < n; ++p)
        for (std::size_t c = 0; c < w; ++c) merged[p * w + c] = float(o[((c / hd) * n + p) * hd + c % hd]);
      const auto proj = toFloatVec(ref::matmulBiasAct(merged, L.w_o, L.b_o, n, w, w, ref::Activation::None));
      const auto r1 = ref::residualLayerNorm(x, proj, L.ln2_g, L.ln2_b, n, w, kEps);
      const auto fc1 = toFloatVec(ref::matmulBiasAct(toFloatVec(r1.out), L.w_fc1, L.b_fc1, n, 4 * w, w, ref::Activation::GeluTanh));
      const auto fc2 = toFloatVec(ref::matmulBiasAct(fc1, L.w_fc2, L.b_fc2, n, w, 4 * w, ref::Activation::None));
      const bool last = l + 1 == m.layers.size();
      const auto r2 = ref::residualLayerNorm(toFloatVec(r1.sum), fc2, last ? lnf_g : hl[l + 1].ln1_g,
                                             last ? lnf_b : hl[l + 1].ln1_b, n, w, kEps);
      x = toFloatVec(r2.sum);
      h = toFloatVec(r2.out);
    }
    auto logitsAt = [&](std::size_t p, std::vector<double>& out) {
      const std::vector<float> row(h.begin() + std::ptrdiff_t(p * w), h.begin() + std::ptrdiff_t((p + 1) * w));
      const auto lg = ref::matmulBiasAct(row, wte, {}, 1, vocab, w, ref::Activation::None);
      std::copy(lg.begin(), lg.end(), out.begin() + std::ptrdiff_t(b * vocab));
    };
    logitsAt(m.cfg.seq - 1, prefill_logits);
    logitsAt(n - 1, decode_logits);
  }
}

}  // namespace fprof::refk
