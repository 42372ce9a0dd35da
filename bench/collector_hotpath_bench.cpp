// CPU benchmark of the collector's hot path: the real TraceRecorder (what the launch and NVTX
// callbacks do on the application's threads) driven by synthetic callbacks, and the real writer
// side (TraceRecorder::collect, Translator, core::Writer into SQLite) on a writer thread, as in
// the injected collector. Only CUPTI is missing: callbacks come from a plan, kernel records are
// built by the writer thread for the launches made so far, and no GPU runs.
//
//   collector_hotpath_bench [--workload model|distinct|launches|nvtx|mixed] [--launches N]
//                           [--window N] [--flush-ms MS] [--db FILE] [--reproducible]
//                           [--no-writer] [--recorder on|off] [--self-timing] [--no-prefill]
//
// Workloads: `model` replays the reference transformer (reference_kernels/transformer.cu): a
// prefill, then 32 decode steps of 142 launches each (unfused, 8 layers), in domain "fprof" with
// its nested op=... ranges and long messages, repeated until --launches; `distinct` gives every
// range a message of its own (like PyTorch's emit_nvtx "seq = N"), so paths never repeat;
// `launches` is launches without NVTX; `nvtx` is the model's ranges without launches; `mixed`
// adds start/end ranges, a second domain popped from under the top, registered strings, graph
// launches and a launch through a parameter buffer (for comparing databases, --reproducible).
//
// Prints ns per launch (with its share of NVTX events) per window of --window launches, wall
// and thread CPU time, so growth over the run shows; then the writer thread's cost and the final
// write. --reproducible fixes thread ids and timestamps so two builds' databases can be compared
// (sqlite3 FILE .dump). --self-timing turns on the collector's own timers (FPROF_SELF_TIMING's)
// and prints their breakdown; each timed part then also pays two clock reads. --no-prefill: the
// writer gives the threads no prefilled event chunks (TraceRecorder::Options::prefill_chunks off).
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fprof/core/store.h"
#include "trace/trace_recorder.h"
#include "trace/translate.h"

namespace {

using fprof::collector::FunctionInfo;
using fprof::collector::LaunchCall;
using fprof::collector::NvtxText;
using fprof::collector::OpenLaunch;
using fprof::collector::TraceRecorder;
using fprof::collector::Translator;

int64_t wallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t threadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// ---- The plan: what the application does, built before timing starts ----

enum class Op : uint8_t { kPush, kPop, kLaunch, kStart, kEnd };

struct Step {
  Op op = Op::kLaunch;
  uint8_t domain = 0;    // index into Plan::domains (0 = default domain)
  bool registered = false;  // message is a registered string handle
  uint32_t index = 0;    // text index (push/start), function index (launch), range slot (start/end)
  uint64_t payload = 0;  // push: payload + 1 (0 = none); start: the slot its end names
};

struct Function {
  std::string name;
  FunctionInfo info;
  std::vector<uint64_t> values;   // the 8-byte arguments' values
  std::vector<void*> params;      // kernelParams: one pointer per parameter
  std::vector<uint8_t> buffer;    // the CU_LAUNCH_PARAM_BUFFER_POINTER form
  std::unique_ptr<size_t> buffer_bytes;  // on the heap: `extra` points at it and Functions move
  std::vector<void*> extra;
  enum Kind : uint8_t { kRuntime, kDriverOnly, kGraph, kParamBuffer } kind = kRuntime;
  uint32_t graph_nodes = 0;
};

struct LaunchPlan {
  uint32_t function = 0;
  uint32_t record_correlation = 0;  // the id CUPTI's kernel record carries
};

struct Plan {
  std::vector<std::string> domains{""};
  std::vector<std::string> texts;
  std::vector<Step> steps;
  std::vector<Function> functions;
  std::vector<LaunchPlan> launches;
  size_t nvtx_events = 0;
  uint32_t next_correlation = 1;
};

// "op=<op> variant=<v> pair=<p> reads=a,b writes=c layer=<i>", as reference_kernels/range_tags.hpp.
std::string tags(const std::string& op, const std::string& pair, const std::string& reads, const std::string& writes,
                 int layer, bool variant = true) {
  std::string m = "op=" + op;
  if (variant) m += " variant=unfused";
  if (!pair.empty()) m += " pair=" + pair;
  if (!reads.empty()) m += " reads=" + reads;
  if (!writes.empty()) m += " writes=" + writes;
  if (layer >= 0) m += " layer=" + std::to_string(layer);
  return m;
}

std::string layerName(int l, const char* buf) { return "l" + std::to_string(l) + "." + buf; }

class PlanBuilder {
 public:
  explicit PlanBuilder(Plan& plan) : p_(plan) {}

  uint32_t function(const std::string& name, Function::Kind kind, int eight_byte_params, int other_params) {
    Function f;
    f.name = name;
    f.kind = kind;
    f.info.local_bytes_per_thread = kind == Function::kRuntime ? 0 : 16;
    const int total = eight_byte_params + other_params;
    f.values.resize(static_cast<size_t>(total));
    int32_t offset = 0;
    for (int i = 0; i < total; ++i) {
      const bool pointer = i < eight_byte_params;
      if (pointer) {
        f.info.eight_byte_params.push_back({i, offset});
        f.values[static_cast<size_t>(i)] = 0x7f0000000000ULL + (uint64_t{p_.functions.size()} << 24) + uint64_t(i) * 4096;
      }
      offset += pointer ? 8 : 4;
      if (pointer && offset % 8 != 0) offset += 4;
    }
    for (uint64_t& v : f.values) f.params.push_back(&v);
    if (kind == Function::kParamBuffer) {
      f.buffer.resize(static_cast<size_t>(offset), 0);
      for (const FunctionInfo::Param& prm : f.info.eight_byte_params) {
        std::memcpy(f.buffer.data() + prm.offset_bytes, &f.values[static_cast<size_t>(prm.index)], 8);
      }
      f.buffer_bytes = std::make_unique<size_t>(f.buffer.size());
      f.extra = {CU_LAUNCH_PARAM_BUFFER_POINTER, f.buffer.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, f.buffer_bytes.get(),
                 CU_LAUNCH_PARAM_END};
    }
    if (kind == Function::kGraph) f.graph_nodes = 3;
    p_.functions.push_back(std::move(f));
    return static_cast<uint32_t>(p_.functions.size() - 1);
  }

  uint8_t domain(const std::string& name) {
    p_.domains.push_back(name);
    return static_cast<uint8_t>(p_.domains.size() - 1);
  }

  void push(uint8_t domain, const std::string& message, uint64_t payload) {
    p_.steps.push_back(Step{Op::kPush, domain, false, text(message), payload + 1});
    ++p_.nvtx_events;
  }
  void pushRegistered(uint8_t domain, uint32_t handle_index, uint64_t payload) {
    p_.steps.push_back(Step{Op::kPush, domain, true, handle_index, payload + 1});
    ++p_.nvtx_events;
  }
  void pop(uint8_t domain) {
    p_.steps.push_back(Step{Op::kPop, domain, false, 0, 0});
    ++p_.nvtx_events;
  }
  void start(uint8_t domain, const std::string& message, uint32_t slot) {
    p_.steps.push_back(Step{Op::kStart, domain, false, text(message), slot});  // payload: the slot
    ++p_.nvtx_events;
  }
  void end(uint32_t slot) {
    p_.steps.push_back(Step{Op::kEnd, 0, false, slot, 0});
    ++p_.nvtx_events;
  }
  void launch(uint32_t f) {
    const Function& fn = p_.functions[f];
    p_.steps.push_back(Step{Op::kLaunch, 0, false, f, 0});
    const uint32_t outer = p_.next_correlation;
    const bool runtime = fn.kind != Function::kDriverOnly;
    p_.next_correlation += runtime ? 2 : 1;
    // The kernel record carries the driver call's id (inside <<<>>>: the nested one).
    p_.launches.push_back(LaunchPlan{f, runtime ? outer + 1 : outer});
  }

  uint32_t text(const std::string& s) {
    auto [it, inserted] = ids_.try_emplace(s, static_cast<uint32_t>(p_.texts.size()));
    if (inserted) p_.texts.push_back(s);
    return it->second;
  }

 private:
  Plan& p_;
  std::unordered_map<std::string, uint32_t> ids_;
};

struct ModelKernels {
  uint32_t gemm, gemm_small, embedding, layernorm, bias, bias_gelu, split_heads, softmax, merge_heads, add, stats,
      vocab_softmax, topk;
};

ModelKernels modelKernels(PlanBuilder& b) {
  ModelKernels k{};
  k.gemm = b.function(
      "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
      "cublas",
      Function::kDriverOnly, 0, 1);
  k.gemm_small = b.function("_Z17gemvNSP_kernel_f16ILi128ELi16ELi4ELi4ELb0ELb0E6__halfS0_fEv14cublasGemvParams",
                            Function::kDriverOnly, 1, 1);
  k.embedding = b.function("_ZN5fprof4refk15embeddingKernelI6__halfEEvPKiPKT_S7_PS5_mmmm", Function::kRuntime, 8, 0);
  k.layernorm = b.function("_ZN5fprof4refk10normKernelI6__halfLb0EEEvPKT_S5_S5_S5_fPS3_S6_mm", Function::kRuntime, 8, 1);
  k.bias = b.function("_ZN5fprof4refk13biasActKernelI6__halfLNS0_8EpilogueE1EEEvPKT_S7_PS5_mm", Function::kRuntime, 5, 0);
  k.bias_gelu = b.function("_ZN5fprof4refk13biasActKernelI6__halfLNS0_8EpilogueE2EEEvPKT_S7_PS5_mm",
                           Function::kRuntime, 5, 0);
  k.split_heads = b.function("_ZN5fprof4refk16splitHeadsKernelI6__halfEEvPKT_PS3_S6_S6_mmmmmm", Function::kRuntime, 10, 0);
  k.softmax = b.function("_ZN5fprof4refk23attentionSoftmaxKernelI6__halfEEvNS0_14AttentionShapeEPKT_PS5_",
                         Function::kRuntime, 2, 1);
  k.merge_heads = b.function("_ZN5fprof4refk16mergeHeadsKernelI6__halfEEvPKT_PS3_mmmm", Function::kRuntime, 6, 0);
  k.add = b.function("_ZN5fprof4refk9addKernelI6__halfEEvPKT_S5_PS3_m", Function::kRuntime, 4, 0);
  k.stats = b.function("_ZN5fprof4refk22vocabSoftmaxStatsKernelI6__halfEEvPKT_Pvmm", Function::kRuntime, 4, 0);
  k.vocab_softmax = b.function("_ZN5fprof4refk22vocabSoftmaxWriteKernelI6__halfEEvPKT_PKvPfmm", Function::kRuntime, 5, 0);
  k.topk = b.function("_ZN5fprof4refk10topKKernelEPKfPfPimmmPv", Function::kRuntime, 7, 0);
  return k;
}

// One forward of reference_kernels/transformer.cu, unfused: 142 launches when seq_new == 1.
void modelForward(PlanBuilder& b, const ModelKernels& k, uint8_t d, uint64_t rep, bool distinct, uint64_t& seq) {
  auto msg = [&](std::string m) {
    if (distinct) m += ", seq = " + std::to_string(seq++);
    return m;
  };
  auto leaf = [&](const std::string& m, uint32_t f) {
    b.push(d, msg(m), rep);
    b.launch(f);
    b.pop(d);
  };
  auto linear = [&](bool gelu, const std::string& pair, const std::string& in, const std::string& w,
                    const std::string& bias, const std::string& out, int layer) {
    b.push(d, msg(tags(gelu ? "matmul_bias_gelu" : "matmul_bias", pair, in + "," + w + "," + bias, out, layer)), rep);
    leaf(tags("matmul", pair, in + "," + w, out + "_t0", layer), k.gemm);
    leaf(tags(gelu ? "bias_gelu" : "bias", pair, out + "_t0," + bias, out, layer), gelu ? k.bias_gelu : k.bias);
    b.pop(d);
  };
  auto residual = [&](const std::string& pair, const std::string& a, const std::string& bb, const std::string& g,
                      const std::string& beta, const std::string& sum, const std::string& out, int layer) {
    const std::string params = g + "," + beta;
    b.push(d, msg(tags("residual_layernorm", pair, a + "," + bb + "," + params, sum + "," + out, layer)), rep);
    leaf(tags("add", pair, a + "," + bb, sum, layer), k.add);
    leaf(tags("layernorm", pair, sum + "," + params, out, layer), k.layernorm);
    b.pop(d);
  };
  leaf(tags("embedding", "", "tokens,wte,wpe", "x0", -1), k.embedding);
  const int layers = 8;
  for (int l = 0; l < layers; ++l) {
    b.push(d, msg(tags("layer", "", "", "", l, false)), rep);
    const std::string x_in = "x" + std::to_string(l), x_out = "x" + std::to_string(l + 1);
    if (l == 0) leaf(tags("layernorm", "", x_in + ",l0.ln1_g,l0.ln1_b", "l0.ln1", l), k.layernorm);
    linear(false, layerName(l, "qkv"), layerName(l, "ln1"), layerName(l, "w_qkv"), layerName(l, "b_qkv"),
           layerName(l, "qkv"), l);
    leaf(tags("split_heads", "", layerName(l, "qkv"),
              layerName(l, "q") + "," + layerName(l, "k_cache") + "," + layerName(l, "v_cache"), l),
         k.split_heads);
    {
      const std::string pair = layerName(l, "attn"), qn = layerName(l, "q"), on = layerName(l, "attn_o");
      b.push(d, msg(tags("attention_causal", pair, qn + "," + layerName(l, "k_cache") + "," + layerName(l, "v_cache"), on, l)),
             rep);
      leaf(tags("qk", pair, qn + "," + layerName(l, "k_cache"), layerName(l, "s"), l), k.gemm_small);
      leaf(tags("softmax", pair, layerName(l, "s"), layerName(l, "p"), l), k.softmax);
      leaf(tags("pv", pair, layerName(l, "p") + "," + layerName(l, "v_cache"), on, l), k.gemm_small);
      b.pop(d);
    }
    leaf(tags("merge_heads", "", layerName(l, "attn_o"), layerName(l, "attn"), l), k.merge_heads);
    linear(false, layerName(l, "out_proj"), layerName(l, "attn"), layerName(l, "w_o"), layerName(l, "b_o"),
           layerName(l, "proj"), l);
    residual(layerName(l, "res1"), x_in, layerName(l, "proj"), layerName(l, "ln2_g"), layerName(l, "ln2_b"),
             layerName(l, "x_mid"), layerName(l, "ln2"), l);
    linear(true, layerName(l, "fc1"), layerName(l, "ln2"), layerName(l, "w_fc1"), layerName(l, "b_fc1"),
           layerName(l, "fc1"), l);
    linear(false, layerName(l, "fc2"), layerName(l, "fc1"), layerName(l, "w_fc2"), layerName(l, "b_fc2"),
           layerName(l, "fc2"), l);
    const bool last = l + 1 == layers;
    residual(layerName(l, "res2"), layerName(l, "x_mid"), layerName(l, "fc2"),
             last ? "final.ln_g" : layerName(l + 1, "ln1_g"), last ? "final.ln_b" : layerName(l + 1, "ln1_b"), x_out,
             last ? "final.ln" : layerName(l + 1, "ln1"), l);
    b.pop(d);
  }
  leaf(tags("logits", "", "final.ln,wte", "logits", -1), k.gemm);
  // sample()
  b.push(d, msg(tags("softmax_topk", "sample", "logits", "top_p,tokens", -1)), rep);
  leaf(tags("softmax_stats", "sample", "logits", "stats", -1), k.stats);
  leaf(tags("softmax", "sample", "logits,stats", "probs", -1), k.vocab_softmax);
  leaf(tags("topk", "sample", "probs", "top_p,tokens", -1), k.topk);
  b.pop(d);
}

Plan buildPlan(const std::string& workload, size_t launches) {
  Plan plan;
  PlanBuilder b(plan);
  const ModelKernels k = modelKernels(b);
  const uint8_t fprof = b.domain("fprof");
  uint64_t seq = 0;
  if (workload == "launches") {
    while (plan.launches.size() < launches) b.launch(plan.launches.size() % 3 == 0 ? k.gemm : k.bias);
    return plan;
  }
  if (workload != "model" && workload != "distinct" && workload != "nvtx" && workload != "mixed") {
    throw std::invalid_argument("unknown workload " + workload);
  }
  const bool distinct = workload == "distinct", mixed = workload == "mixed";
  uint8_t io = 0;
  uint32_t graph = 0, buffered = 0;
  if (mixed) {
    io = b.domain("io");
    graph = b.function("_ZN5graph4stepILi4EEEvPf", Function::kGraph, 1, 0);
    buffered = b.function("_Z10bufferedLaunchPfS_i", Function::kParamBuffer, 2, 1);
  }
  for (uint64_t rep = 0; plan.launches.size() < launches; ++rep) {
    if (mixed) b.start(io, "epoch " + std::to_string(rep), 1);
    b.push(fprof, tags("prefill", "", "", "", -1, false), rep);
    modelForward(b, k, fprof, rep, distinct, seq);
    b.pop(fprof);
    b.push(fprof, tags("decode", "", "", "", -1, false), rep);
    for (int step = 0; step < 32; ++step) {
      if (mixed && step % 8 == 0) {
        b.start(0, "window " + std::to_string(step), 2);
        b.push(io, "prefetch", rep);  // popped below from under the model's ranges
        b.pushRegistered(fprof, static_cast<uint32_t>(step % 3), rep);
        b.launch(buffered);
        b.pop(fprof);
      }
      modelForward(b, k, fprof, rep, distinct, seq);
      if (mixed && step % 8 == 0) {
        b.pop(io);
        b.launch(graph);
        b.end(2);
      }
    }
    b.pop(fprof);
    if (mixed) b.end(1);
  }
  if (workload == "nvtx") {
    std::vector<Step> nvtx_only;
    for (const Step& s : plan.steps) {
      if (s.op != Op::kLaunch) nvtx_only.push_back(s);
    }
    plan.steps.swap(nvtx_only);
    plan.launches.clear();
  }
  return plan;
}

// ---- The application thread ----

struct Window {
  size_t launches = 0;
  size_t nvtx_events = 0;
  int64_t wall_ns = 0;
  int64_t cpu_ns = 0;
};

struct Options {
  std::string workload = "model";
  size_t launches = 120000;
  size_t window = 10000;
  int flush_ms = 500;
  std::string db;
  bool reproducible = false;
  bool writer = true;
  bool recorder = true;
  bool self_timing = false;
  bool prefill = true;
};

std::atomic<int64_t> g_fake_clock{0};
uint32_t fixedThreadId() { return 4242; }

class App {
 public:
  App(const Plan& plan, TraceRecorder& recorder, const Options& o) : plan_(plan), recorder_(recorder), o_(o) {
    for (const std::string& d : plan.domains) domain_handles_.push_back(d.empty() ? nullptr : d.c_str());
    if (o.recorder) {
      for (size_t i = 1; i < plan.domains.size(); ++i) recorder.registerDomain(domain_handles_[i], plan.domains[i]);
      for (int i = 0; i < 3; ++i) {
        registered_.push_back(std::make_unique<int>(i));
        recorder.registerString(registered_.back().get(), "registered op=step_part" + std::to_string(i));
      }
    }
  }

  std::atomic<size_t>& progress() { return progress_; }

  std::vector<Window> run() {
    std::vector<Window> windows;
    Window w;
    int64_t wall0 = wallNs(), cpu0 = threadCpuNs();
    uint32_t correlation = 1;
    size_t launched = 0;
    uint64_t range_ids[4] = {0, 0, 0, 0};
    uint64_t next_range_id = 1000;
    // Windows are cut every --window launches (NVTX-only workload: every 3 x --window events).
    const bool by_event = plan_.launches.empty();
    const size_t window_units = by_event ? 3 * o_.window : o_.window;
    auto tick = [&](bool launch_step) {
      if (by_event == launch_step) return;
      if ((by_event ? w.nvtx_events : w.launches) != window_units) return;
      const int64_t wall1 = wallNs(), cpu1 = threadCpuNs();
      w.wall_ns = wall1 - wall0;
      w.cpu_ns = cpu1 - cpu0;
      windows.push_back(w);
      w = Window{};
      wall0 = wall1;
      cpu0 = cpu1;
    };
    for (const Step& s : plan_.steps) {
      switch (s.op) {
        case Op::kPush:
          if (o_.recorder) {
            const NvtxText text = s.registered ? NvtxText{{}, registered_[s.index].get()}
                                               : NvtxText{plan_.texts[s.index]};
            recorder_.pushRange(domain_handles_[s.domain], text,
                                s.payload != 0 ? std::optional<uint64_t>(s.payload - 1) : std::nullopt, now());
          }
          ++w.nvtx_events;
          break;
        case Op::kPop:
          if (o_.recorder) recorder_.popRange(domain_handles_[s.domain], now());
          ++w.nvtx_events;
          break;
        case Op::kStart: {
          const size_t slot = s.payload;
          range_ids[slot] = next_range_id++;
          if (o_.recorder) {
            recorder_.startRange(range_ids[slot], domain_handles_[s.domain], NvtxText{plan_.texts[s.index]}, std::nullopt,
                                 now());
          }
          ++w.nvtx_events;
          break;
        }
        case Op::kEnd:
          if (o_.recorder) recorder_.endRange(range_ids[s.index], now());
          ++w.nvtx_events;
          break;
        case Op::kLaunch:
          launch(plan_.functions[s.index], correlation);
          progress_.store(++launched, std::memory_order_release);
          ++w.launches;
          break;
      }
      tick(s.op == Op::kLaunch);
    }
    if (w.launches > 0 || w.nvtx_events > 0) {
      w.wall_ns = wallNs() - wall0;
      w.cpu_ns = threadCpuNs() - cpu0;
      windows.push_back(w);
    }
    return windows;
  }

 private:
  int64_t now() const { return o_.reproducible ? g_fake_clock.fetch_add(1000, std::memory_order_relaxed) : wallNs(); }

  void launch(const Function& f, uint32_t& correlation) {
    const bool runtime = f.kind != Function::kDriverOnly;
    if (!o_.recorder) {
      correlation += runtime ? 2 : 1;
      return;
    }
    const bool graph = f.kind == Function::kGraph;
    if (runtime) {
      (void)recorder_.enterLaunch(LaunchCall{correlation++, graph ? "cudaGraphLaunch" : "__cudaLaunchKernel", false, graph});
    }
    const char* driver_api = graph ? "cuGraphLaunch" : runtime ? "cuLaunchKernel" : "cuLaunchKernelEx";
    if (const OpenLaunch* open = recorder_.enterLaunch(LaunchCall{correlation++, driver_api, true, graph})) {
      (void)open;
      if (graph) {
        recorder_.submitLaunch(nullptr, nullptr, nullptr);
      } else if (f.kind == Function::kParamBuffer) {
        recorder_.submitLaunch(&f.info, nullptr, const_cast<void**>(f.extra.data()));
      } else {
        recorder_.submitLaunch(&f.info, const_cast<void**>(f.params.data()), nullptr);
      }
    }
    recorder_.exitLaunch();
    if (runtime) recorder_.exitLaunch();
  }

  const Plan& plan_;
  TraceRecorder& recorder_;
  const Options& o_;
  std::vector<const void*> domain_handles_;
  std::vector<std::unique_ptr<int>> registered_;
  std::atomic<size_t> progress_{0};
};

// ---- The writer thread: collect, build the kernel records CUPTI would deliver, translate, write ----

fprof::core::DeviceInfo h100() {
  fprof::core::DeviceInfo d;
  d.process_id = 1;
  d.id = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.compute_major = 9;
  d.compute_minor = 0;
  d.sm_count = 132;
  d.max_threads_per_sm = 2048;
  d.max_threads_per_block = 1024;
  d.max_blocks_per_sm = 32;
  d.max_warps_per_sm = 64;
  d.regs_per_sm = 65536;
  d.regs_per_block = 65536;
  d.warp_size = 32;
  d.shared_per_sm_bytes = 233472;
  d.shared_per_block_bytes = 49152;
  d.shared_per_block_optin_bytes = 232448;
  d.reserved_shared_per_block_bytes = 1024;
  return d;
}

struct WriterStats {
  size_t drains = 0;
  int64_t cpu_ns = 0;
  int64_t max_drain_ns = 0;
  int64_t final_drain_ns = 0;
  int64_t close_ns = 0;
  size_t kernels = 0;
  size_t ranges = 0;
  size_t unmatched_kernels = 0;
  uint64_t unmatched_pops = 0;
};

class Writer {
 public:
  Writer(const Plan& plan, TraceRecorder& recorder, std::atomic<size_t>& progress, const Options& o)
      : plan_(plan), recorder_(recorder), progress_(progress), o_(o) {
    translator_.setProcessId(1);
    translator_.addDevice(h100());
    if (!o.db.empty()) {
      auto created = fprof::core::Writer::create(o.db, true);
      if (!created) throw std::runtime_error(created.error());
      store_ = std::move(created.value());
      fprof::core::ProcessInfo p;
      p.pid = 1;
      p.host = "bench";
      p.command_line = "collector_hotpath_bench --workload " + o.workload;
      (void)store_->addProcess(p);
      (void)store_->addDevice(h100());
    }
  }

  void start() {
    thread_ = std::thread([this] {
      for (;;) {
        {
          std::unique_lock lock(mu_);
          cv_.wait_for(lock, std::chrono::milliseconds(o_.flush_ms), [this] { return stop_; });
          if (stop_) break;
        }
        drain();
      }
      const int64_t t0 = wallNs();
      drain();
      stats_.final_drain_ns = wallNs() - t0;
      const int64_t t1 = wallNs();
      if (store_) {
        if (auto s = store_->close(); !s) std::fprintf(stderr, "close: %s\n", s.error().c_str());
      }
      stats_.close_ns = wallNs() - t1;
      timing_.addWriter(fprof::collector::WriterTimer::kFinalWrite, wallNs() - t0);
      stats_.cpu_ns = threadCpuNs();
      stats_.unmatched_kernels = translator_.stats().unmatched_kernels;
      stats_.unmatched_pops = recorder_.unmatchedPops();
    });
  }

  const fprof::collector::SelfTimingTotals& timing() const { return timing_; }

  WriterStats finish() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    return stats_;
  }

 private:
  void drain() {
    const int64_t t0 = wallNs();
    // As in the collector: the kernel records first (only launches made before them can have
    // them), then what the application's threads recorded.
    using fprof::collector::WriterTimer;
    const size_t launched = progress_.load(std::memory_order_acquire);
    std::vector<fprof::core::NvtxRangeRecord> ranges;
    recorder_.collect(translator_, ranges);
    int64_t t1 = wallNs();
    timing_.addWriter(WriterTimer::kCollect, t1 - t0);
    fprof::collector::TranslatedBatch batch;
    CUpti_ActivityKernel10 k{};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    for (; emitted_ < launched; ++emitted_) {
      const LaunchPlan& l = plan_.launches[emitted_];
      const Function& f = plan_.functions[l.function];
      const uint32_t nodes = f.graph_nodes == 0 ? 1 : f.graph_nodes;
      for (uint32_t node = 0; node < nodes; ++node) {
        k.correlationId = l.record_correlation;
        k.name = f.name.c_str();
        k.start = 1000000000ULL + emitted_ * 2000 + node * 500;
        k.end = k.start + 400;
        k.deviceId = 0;
        k.contextId = 1;
        k.streamId = 7;
        k.gridX = 132;
        k.gridY = k.gridZ = 1;
        k.blockX = 256;
        k.blockY = k.blockZ = 1;
        k.registersPerThread = 32;
        k.localMemoryTotal_v2 = 1u << 20;
        k.sharedMemoryExecuted = 233472;
        k.graphId = f.graph_nodes != 0 ? 7 : 0;
        k.graphNodeId = f.graph_nodes != 0 ? node + 1 : 0;
        translator_.translate(reinterpret_cast<const CUpti_Activity&>(k), batch);
      }
    }
    stats_.kernels += batch.kernels.size();
    stats_.ranges += ranges.size();
    timing_.max_pending_launches = std::max<uint64_t>(timing_.max_pending_launches, translator_.pendingLaunches());
    int64_t t2 = wallNs();
    timing_.addWriter(WriterTimer::kTranslate, t2 - t1);
    if (store_) {
      fprof::collector::addToStore(*store_, batch);
      for (fprof::core::NvtxRangeRecord& r : ranges) {
        r.process_id = 1;
        store_->add(r);
      }
      if (auto s = store_->flush(); !s) std::fprintf(stderr, "flush: %s\n", s.error().c_str());
      const int64_t t3 = wallNs();
      timing_.addWriter(WriterTimer::kStore, t3 - t2);
      t2 = t3;
    }
    translator_.endGeneration();
    timing_.addWriter(WriterTimer::kTranslate, wallNs() - t2);
    ++stats_.drains;
    stats_.max_drain_ns = std::max(stats_.max_drain_ns, wallNs() - t0);
  }

  const Plan& plan_;
  TraceRecorder& recorder_;
  std::atomic<size_t>& progress_;
  const Options& o_;
  Translator translator_;
  std::unique_ptr<fprof::core::Writer> store_;
  size_t emitted_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  WriterStats stats_;
  fprof::collector::SelfTimingTotals timing_;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--workload") o.workload = value();
    else if (a == "--launches") o.launches = std::stoul(value());
    else if (a == "--window") o.window = std::max<size_t>(1, std::stoul(value()));
    else if (a == "--flush-ms") o.flush_ms = std::stoi(value());
    else if (a == "--db") o.db = value();
    else if (a == "--reproducible") o.reproducible = true;
    else if (a == "--no-writer") o.writer = false;
    else if (a == "--recorder") o.recorder = value() != "off";
    else if (a == "--self-timing") o.self_timing = true;
    else if (a == "--no-prefill") o.prefill = false;
    else throw std::invalid_argument("unknown argument " + a + " (see the comment at the top of the source)");
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    fprof::collector::setSelfTimingEnabled(o.self_timing);
    const Plan plan = buildPlan(o.workload, o.launches);
    TraceRecorder::Options ro;
    if (o.reproducible) ro.thread_id = &fixedThreadId;
    ro.prefill_chunks = o.prefill;
    TraceRecorder recorder(ro);
    App app(plan, recorder, o);
    std::optional<Writer> writer;
    if (o.writer) {
      writer.emplace(plan, recorder, app.progress(), o);
      writer->start();
    }
    const int64_t t0 = wallNs();
    const std::vector<Window> windows = app.run();
    const int64_t app_ns = wallNs() - t0;
    WriterStats ws;
    const int64_t t1 = wallNs();
    if (writer) ws = writer->finish();
    const int64_t exit_ns = wallNs() - t1;

    std::printf("collector hot path, workload %s: %zu launches, %zu NVTX events, recorder %s, writer %s, %u CPUs\n",
                o.workload.c_str(), plan.launches.size(), plan.nvtx_events, o.recorder ? "on" : "off",
                o.writer ? "on" : "off", std::thread::hardware_concurrency());
    std::printf("%-17s %9s %9s %14s %14s\n", "window (launches)", "launches", "nvtx", "ns/launch wall", "ns/launch cpu");
    size_t first = 0;
    for (const Window& w : windows) {
      const size_t per = std::max<size_t>(1, o.workload == "nvtx" ? w.nvtx_events : w.launches);
      char label[64];
      std::snprintf(label, sizeof label, "%zu-%zu", first, first + w.launches);
      std::printf("%-17s %9zu %9zu %14.0f %14.0f\n", label, w.launches, w.nvtx_events,
                  double(w.wall_ns) / double(per), double(w.cpu_ns) / double(per));
      first += w.launches;
    }
    auto perUnit = [&](const Window& w, bool cpu) {
      const size_t per = std::max<size_t>(1, o.workload == "nvtx" ? w.nvtx_events : w.launches);
      return double(cpu ? w.cpu_ns : w.wall_ns) / double(per);
    };
    // Full windows only: the last one may be short.
    std::vector<Window> full;
    for (const Window& w : windows) {
      if (o.workload == "nvtx" ? w.nvtx_events == 3 * o.window : w.launches == o.window) full.push_back(w);
    }
    const char* unit = o.workload == "nvtx" ? "ns/NVTX event" : "ns/launch";
    if (full.size() >= 2) {
      std::printf("first window %.0f, last window %.0f %s (cpu %.0f, %.0f): last/first %.2f\n",
                  perUnit(full.front(), false), perUnit(full.back(), false), unit, perUnit(full.front(), true),
                  perUnit(full.back(), true), perUnit(full.back(), true) / perUnit(full.front(), true));
    }
    const double total_units = double(o.workload == "nvtx" ? plan.nvtx_events : plan.launches.size());
    int64_t app_cpu_ns = 0;
    for (const Window& w : windows) app_cpu_ns += w.cpu_ns;
    std::printf("application thread: %.3f s wall, %.3f s CPU; overall %.0f %s wall, %.0f CPU\n",
                double(app_ns) * 1e-9, double(app_cpu_ns) * 1e-9, double(app_ns) / std::max(1.0, total_units), unit,
                double(app_cpu_ns) / std::max(1.0, total_units));
    if (o.writer) {
      std::printf("writer thread: %zu drains, %.3f s CPU (%.0f ns per launch), longest drain %.1f ms; "
                  "%zu kernels, %zu range records; unmatched kernels %zu, unmatched pops %llu\n",
                  ws.drains, double(ws.cpu_ns) * 1e-9, double(ws.cpu_ns) / std::max<double>(1, double(plan.launches.size())),
                  double(ws.max_drain_ns) * 1e-6, ws.kernels, ws.ranges, ws.unmatched_kernels,
                  static_cast<unsigned long long>(ws.unmatched_pops));
      std::printf("at exit: %.1f ms (last drain %.1f ms, close %.1f ms)\n", double(exit_ns) * 1e-6,
                  double(ws.final_drain_ns) * 1e-6, double(ws.close_ns) * 1e-6);
    }
    if (o.self_timing) {
      fprof::collector::SelfTimingTotals totals = writer ? writer->timing() : fprof::collector::SelfTimingTotals{};
      recorder.addTotals(totals);
      std::printf("%s", fprof::collector::selfTimingText(totals).c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collector_hotpath_bench: %s\n", e.what());
    return 2;
  }
}
