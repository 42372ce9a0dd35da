// Fusion candidates named by ops and pattern, with a suggestion (see fusion_patterns.h).
#include "fprof/analysis/fusion_patterns.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <unordered_set>

#include "fprof/analysis/framework_ops.h"
#include "fprof/analysis/fusion.h"
#include "fprof/analysis/fusion_chains.h"
#include "fprof/analysis/kernel_names.h"
#include "fprof/analysis/origin.h"
#include "fprof/core/text.h"

namespace fprof::analysis {

std::string_view fusionPatternName(FusionPattern p) {
  switch (p) {
    case FusionPattern::kAttention: return "attention";
    case FusionPattern::kGemmEpilogue: return "GEMM + epilogue";
    case FusionPattern::kResidualNorm: return "residual add + normalization";
    case FusionPattern::kElementwiseChain: return "elementwise chain";
    case FusionPattern::kReductionChain: return "reduction chain";
    case FusionPattern::kLayoutCopies: return "layout copies";
    case FusionPattern::kOther: return "chain";
  }
  return "chain";
}

namespace {

bool has(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }
bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// ---- The op a kernel computes.

struct Needle {
  std::string_view text;
  std::string_view op;
};

// ATen's kernels by what their names carry, the most specific first: a functor inside an
// elementwise kernel ("AUnaryFunctor<..., MulFunctor<float>>"), or the kernel's own name.
constexpr std::array<Needle, 56> kAtenNeedles = {{
    {"LogSoftMax", "log_softmax"},     {"log_softmax", "log_softmax"},   {"softmax", "softmax"},
    {"SoftMax", "softmax"},            {"layer_norm", "layer_norm"},     {"LayerNorm", "layer_norm"},
    {"rms_norm", "rms_norm"},          {"RMSNorm", "rms_norm"},          {"batch_norm", "batch_norm"},
    {"BatchNorm", "batch_norm"},       {"group_norm", "group_norm"},     {"GroupNorm", "group_norm"},
    {"masked_fill", "masked_fill"},    {"where_kernel", "where"},        {"CatArrayBatchedCopy", "cat"},
    {"direct_copy_kernel", "copy"},    {"_copy_kernel", "copy"},         {"index_select", "index_select"},
    {"gather_kernel", "gather"},       {"scatter", "scatter"},           {"arange", "arange"},
    {"FillFunctor", "fill"},           {"distribution_", "random"},      {"scan_innermost", "cumsum"},
    {"sum_functor", "sum"},            {"MeanOps", "mean"},              {"MaxNanFunctor", "max"},
    {"MaxOps", "max"},                 {"MinNanFunctor", "min"},         {"MinOps", "min"},
    {"and_kernel", "all"},             {"or_kernel", "any"},             {"reduce_kernel", "reduce"},
    {"multi_tensor_apply", "foreach"}, {"GeluCUDAKernelImpl", "gelu"},   {"gelu", "gelu"},
    {"tanh", "tanh"},                  {"pow_tensor", "pow"},            {"silu", "silu"},
    {"sigmoid", "sigmoid"},            {"threshold", "relu"},            {"relu", "relu"},
    {"clamp", "clamp"},                {"exp_kernel", "exp"},            {"rsqrt", "rsqrt"},
    {"sqrt", "sqrt"},                  {"neg_kernel", "neg"},            {"AbsFunctor", "abs"},
    {"CompareEqFunctor", "eq"},        {"CompareFunctor", "compare"},    {"DivFunctor", "div"},
    {"div_true", "div"},               {"MulFunctor", "mul"},            {"_add<", "add"},
    {"AddFunctor", "add"},             {"sub_kernel", "sub"},
}};

// The function's own name, without template arguments: what a CUDA C++ program's author wrote.
std::string functionName(std::string_view demangled) {
  std::string s = shortKernelName(demangled);
  if (const size_t angle = s.find('<'); angle != std::string::npos && angle > 0) s.resize(angle);
  return s;
}

// "triton_poi_fused_add_gelu_0" -> "fused_add_gelu".
std::string tritonOps(std::string_view h) {
  h.remove_prefix(std::string_view("triton_").size());
  for (std::string_view kind : {"poi_", "red_", "per_", "tem_"}) {
    if (startsWith(h, kind)) h.remove_prefix(kind.size());
  }
  size_t end = h.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(h[end - 1]))) --end;
  if (end < h.size() && end > 0 && h[end - 1] == '_') h = h.substr(0, end - 1);
  return std::string(h.empty() ? std::string_view("triton") : h);
}

// ---- What a stage computes.

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The op's own name: "aten::matmul" -> "matmul", "autograd::...: MmBackward0" stays.
std::string_view withoutNamespace(std::string_view op) {
  const size_t colons = op.rfind("::");
  return colons == std::string_view::npos ? op : op.substr(colons + 2);
}

bool oneOf(std::string_view s, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

std::optional<StageKind> kindFromOpName(std::string_view op_name) {
  const std::string op = lower(withoutNamespace(op_name));
  if (op.empty()) return std::nullopt;
  if (has(op, "softmax")) return StageKind::kSoftmax;
  if (has(op, "attention") || has(op, "sdpa")) return StageKind::kMatmul;
  if (oneOf(op, {"mm", "bmm", "addmm", "baddbmm", "matmul", "linear", "_addmm_activation", "qk", "pv", "conv",
                 "convolution", "conv2d", "einsum"}) ||
      has(op, "gemm") || has(op, "gemv") || startsWith(op, "matmul")) {
    return StageKind::kMatmul;
  }
  if (has(op, "norm") && !has(op, "normal")) return StageKind::kNorm;
  if (oneOf(op, {"masked_fill", "masked_fill_", "where"})) return StageKind::kMask;
  if (oneOf(op, {"copy", "copy_", "contiguous", "clone", "cat", "transpose", "permute", "_to_copy", "to", "reshape",
                 "view", "expand", "t", "split", "chunk", "stack"})) {
    return StageKind::kCopy;
  }
  if (oneOf(op, {"sum", "mean", "max", "min", "amax", "amin", "all", "any", "cumsum", "var", "std", "argmax",
                 "argmin", "reduce", "topk"}) ||
      startsWith(op, "reduce")) {
    return StageKind::kReduction;
  }
  if (oneOf(op, {"add", "add_", "sub", "sub_", "rsub", "bias", "bias_add"}) || startsWith(op, "residual") ||
      startsWith(op, "add_") ||
      (op.size() > 4 && op.compare(op.size() - 4, 4, "_add") == 0)) {
    return StageKind::kAdd;
  }
  if (oneOf(op, {"mul", "mul_", "div", "div_", "scale"})) return StageKind::kMul;
  for (std::string_view act : {"gelu", "relu", "silu", "tanh", "sigmoid", "swish", "pow", "exp", "erf", "softplus",
                               "mish", "elu"}) {
    if (has(op, act)) return StageKind::kActivation;
  }
  if (oneOf(op, {"fill", "fill_", "arange", "abs", "eq", "compare", "neg", "sqrt", "rsqrt", "clamp", "embedding",
                 "gather", "index_select", "scatter", "random", "foreach", "zeros", "ones", "full"}) ||
      startsWith(op, "fused_")) {
    return StageKind::kElementwise;
  }
  return std::nullopt;
}

StageKind kindFromKernels(const std::vector<std::string>& kernels) {
  bool elementwise = !kernels.empty();
  for (const std::string& k : kernels) {
    switch (nodeKindFromName(k)) {
      case NodeKind::kMatmul: return StageKind::kMatmul;
      case NodeKind::kSoftmax: return StageKind::kSoftmax;
      case NodeKind::kRowNorm: return StageKind::kNorm;
      case NodeKind::kCopy: return StageKind::kCopy;
      case NodeKind::kOther: break;
    }
    elementwise = elementwise && has(k, "elementwise");
  }
  return elementwise ? StageKind::kElementwise : StageKind::kOther;
}

bool isPointwise(StageKind k) {
  return k == StageKind::kAdd || k == StageKind::kMul || k == StageKind::kMask || k == StageKind::kActivation ||
         k == StageKind::kElementwise || k == StageKind::kCopy;
}

struct Pattern {
  FusionPattern pattern = FusionPattern::kOther;
  std::string variant;
};

// HF's gelu_new and its kin: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
bool isTanhGelu(const std::vector<std::string>& ops) {
  int muls = 0;
  bool tanh = false, pow = false;
  for (const std::string& op : ops) {
    const std::string o = lower(withoutNamespace(op));
    tanh = tanh || has(o, "tanh");
    pow = pow || has(o, "pow");
    muls += o == "mul" || o == "mul_";
  }
  return tanh && (pow || muls >= 3);
}

Pattern classify(const std::vector<StageKind>& kinds, const std::vector<std::string>& ops, std::string_view hint) {
  const auto count = [&](StageKind k) { return std::count(kinds.begin(), kinds.end(), k); };
  const auto matmuls = count(StageKind::kMatmul);
  const bool softmax = count(StageKind::kSoftmax) > 0;
  const bool norm = count(StageKind::kNorm) > 0;
  const bool reduction = count(StageKind::kReduction) > 0;
  const std::string h = lower(hint);
  if (matmuls >= 1 && (softmax || has(h, "attention") || has(h, "attn"))) return {FusionPattern::kAttention, ""};
  if (matmuls == 1) {
    size_t first = 0;
    while (first < kinds.size() && kinds[first] == StageKind::kCopy) ++first;
    const bool epilogue = first < kinds.size() && kinds[first] == StageKind::kMatmul &&
                          std::all_of(kinds.begin() + static_cast<std::ptrdiff_t>(first) + 1, kinds.end(), isPointwise);
    return {epilogue ? FusionPattern::kGemmEpilogue : FusionPattern::kOther, ""};
  }
  if (matmuls > 1) return {FusionPattern::kOther, ""};
  if (std::all_of(kinds.begin(), kinds.end(), [](StageKind k) { return k == StageKind::kCopy; })) {
    return {FusionPattern::kLayoutCopies, ""};
  }
  if (norm) {
    const auto first_norm = std::find(kinds.begin(), kinds.end(), StageKind::kNorm);
    if (std::find(kinds.begin(), first_norm, StageKind::kAdd) != first_norm) return {FusionPattern::kResidualNorm, ""};
  }
  if (softmax || norm || reduction) return {FusionPattern::kReductionChain, ""};
  if (std::all_of(kinds.begin(), kinds.end(), isPointwise)) {
    return {FusionPattern::kElementwiseChain, isTanhGelu(ops) ? "tanh GELU" : ""};
  }
  return {FusionPattern::kOther, ""};
}

// ---- The name.

// "aten::matmul -> mul -> softmax": a namespace every op shares is said once; a long chain keeps
// its first three and last two ops; a long op name is cut.
std::string opsChain(const std::vector<std::string>& ops) {
  constexpr size_t kMaxOpChars = 40, kMaxChars = 120;
  std::string ns;
  if (!ops.empty()) {
    const size_t colons = ops.front().rfind("::");
    if (colons != std::string::npos) ns = ops.front().substr(0, colons + 2);
    for (const std::string& op : ops) {
      if (!ns.empty() && !startsWith(op, ns)) ns.clear();
    }
  }
  std::vector<std::string> shown;
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string op = i == 0 || ns.empty() ? ops[i] : ops[i].substr(ns.size());
    shown.push_back(core::truncateText(op, kMaxOpChars));
  }
  auto join = [](const std::vector<std::string>& parts) {
    std::string s;
    for (const std::string& p : parts) s += (s.empty() ? "" : " -> ") + p;
    return s;
  };
  std::string all = join(shown);
  if (all.size() <= kMaxChars || shown.size() <= 5) return all;
  const size_t hidden = shown.size() - 5;
  std::vector<std::string> cut(shown.begin(), shown.begin() + 3);
  cut.push_back(fmt::format("... {} more ...", hidden));
  cut.insert(cut.end(), shown.end() - 2, shown.end());
  if (join(cut).size() > kMaxChars) {
    for (size_t i = 0; i < cut.size(); ++i) {
      if (i != 3) cut[i] = core::truncateText(cut[i], kMaxOpChars / 2);
    }
  }
  return join(cut);
}

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// ---- The suggestion.

// "the add and gelu": the ops after a GEMM, in order, each once.
std::string epilogueWords(const std::vector<std::string>& ops, const std::vector<StageKind>& kinds) {
  std::vector<std::string> words;
  bool after = false;
  for (size_t i = 0; i < ops.size() && i < kinds.size(); ++i) {
    if (kinds[i] == StageKind::kMatmul) {
      after = true;
      continue;
    }
    const std::string w(withoutNamespace(ops[i]));
    if (after && std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
  }
  if (words.empty()) return "the epilogue";
  std::string s = "the ";
  for (size_t i = 0; i < words.size(); ++i) s += (i == 0 ? "" : i + 1 == words.size() ? " and " : ", ") + words[i];
  return s;
}

std::string pytorchSuggestion(FusionPattern p, const std::string& variant, const std::string& epilogue) {
  switch (p) {
    case FusionPattern::kAttention:
      return "use torch.nn.functional.scaled_dot_product_attention: one fused attention kernel, the scores never "
             "written to memory";
    case FusionPattern::kGemmEpilogue:
      return "torch.compile the module: it fuses " + epilogue + " into the matrix multiply's epilogue or one kernel";
    case FusionPattern::kElementwiseChain:
      if (variant == "tanh GELU") {
        return "use torch.nn.functional.gelu(x, approximate=\"tanh\"): the same tanh GELU in one kernel (or "
               "torch.compile the module)";
      }
      return "torch.compile the module: the elementwise chain becomes one kernel";
    case FusionPattern::kResidualNorm:
      return "torch.compile the block, or a fused residual-add + normalization kernel: the sum stays on chip";
    case FusionPattern::kReductionChain:
      return "torch.compile the module: the reduction and its neighbours become one kernel";
    case FusionPattern::kLayoutCopies:
      return "keep the layout the consumer reads (no .contiguous() / transpose copy), or torch.compile the module";
    case FusionPattern::kOther: break;
  }
  return "torch.compile the module: the chain becomes fewer kernels";
}

std::string kernelSuggestion(FusionPattern p, const std::string& epilogue) {
  switch (p) {
    case FusionPattern::kAttention:
      return "one attention kernel (flash-attention style): the score tile stays in registers and shared memory, "
             "with an online softmax";
    case FusionPattern::kGemmEpilogue:
      return "apply " + epilogue + " in the GEMM's epilogue (cuBLASLt or CUTLASS): on the output tile in registers, "
             "before its one store";
    case FusionPattern::kElementwiseChain:
      return "one kernel computing the whole chain per element: the intermediates stay in registers";
    case FusionPattern::kResidualNorm:
      return "one kernel per row: the residual add and the normalization with the row in registers or shared memory";
    case FusionPattern::kReductionChain:
      return "one kernel: the reduction and its neighbours in one pass, the intermediate in shared memory";
    case FusionPattern::kLayoutCopies:
      return "write the layout the consumer reads in the producer, or read it strided: no copy kernel";
    case FusionPattern::kOther: break;
  }
  return "fuse the stages into one kernel: the intermediate stays in registers or shared memory";
}

}  // namespace

std::string kernelOpName(std::string_view n) {
  std::string_view h = n;
  if (startsWith(h, "void ")) h.remove_prefix(5);
  if (startsWith(h, "triton_")) return tritonOps(h);
  const Origin origin = classifyOrigin(n);
  if (origin == Origin::kFlashAttention) return "attention";
  if (origin == Origin::kCudnn && (has(h, "sdpa") || has(h, "flash") || has(h, "fmha"))) return "attention";
  if (origin == Origin::kAten) {
    for (const Needle& needle : kAtenNeedles) {
      if (has(h, needle.text)) return std::string(needle.op);
    }
  }
  if (nodeKindFromName(n) == NodeKind::kMatmul) return "matmul";
  // A CUDA C++ program's own kernel is what its author wrote: its short name.
  return origin == Origin::kUser ? shortKernelName(n) : functionName(n);
}

StageKind stageKind(std::string_view op_name, const std::vector<std::string>& kernel_names) {
  // A stage's kernels say what it is where its name does not (an NVTX stage named "qk").
  const StageKind by_kernels = kindFromKernels(kernel_names);
  if (by_kernels == StageKind::kMatmul || by_kernels == StageKind::kSoftmax) return by_kernels;
  if (const auto k = kindFromOpName(op_name)) return *k;
  return by_kernels;
}

ProgramKind programKind(const core::Profile& p, const FrameworkOps& fops) {
  if (fops.pytorch) return ProgramKind::kPytorch;
  std::unordered_set<uint32_t> seen;
  for (const core::KernelRow& k : p.kernels) {
    if (!seen.insert(k.demangled_id).second) continue;
    if (classifyOrigin(p.str(k.demangled_id)) == Origin::kAten) return ProgramKind::kPytorch;
  }
  return ProgramKind::kCuda;
}

void nameCandidate(FusionCandidate& c, ProgramKind program) {
  c.stage_ops.clear();
  std::vector<StageKind> kinds;
  for (size_t i = 0; i < c.stages.size(); ++i) {
    static const std::vector<std::string> kNone;
    const std::vector<std::string>& kernels = i < c.stage_kernels.size() ? c.stage_kernels[i] : kNone;
    // A stage named by its kernel (no op around it) goes by the op the kernel computes.
    const bool kernel_named = kernels.size() == 1 && kernels.front() == c.stages[i];
    c.stage_ops.push_back(kernel_named ? kernelOpName(c.stages[i]) : c.stages[i]);
    kinds.push_back(stageKind(c.stage_ops.back(), kernels));
  }
  const Pattern pattern = classify(kinds, c.stage_ops, c.op);
  c.pattern = pattern.pattern;
  c.variant = pattern.variant;
  const int64_t kernels = std::max<int64_t>(c.launches_per_instance, 1);
  c.name = fmt::format("{}{}, {} kernel{} ({})", fusionPatternName(c.pattern),
                       c.variant.empty() ? "" : " (" + c.variant + ")", kernels, kernels == 1 ? "" : "s",
                       opsChain(c.stage_ops));
  if (!c.shape.empty()) c.name += ", shapes " + shapeText(c.shape);
  const std::string epilogue = epilogueWords(c.stage_ops, kinds);
  c.suggestion = program == ProgramKind::kPytorch ? pytorchSuggestion(c.pattern, c.variant, epilogue)
                                                  : kernelSuggestion(c.pattern, epilogue);
}

}  // namespace fprof::analysis
