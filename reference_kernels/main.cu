// model: the reference ops and the reference transformer. Checks every op against the CPU
// fp64 reference (--check), benchmarks unfused vs fused vs vendor (--ops), and runs the
// transformer's prefill and decode (--ops transformer). It does not link fprof: fprof profiles it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "cpu_reference.hpp"
#include "ops.cuh"

namespace fprof::refk {
namespace {

constexpr const char* kUsage = R"(usage: model [options]
  --list                      list the ops and their variants
  --check                     check every op (all variants) against the CPU fp64 reference on
                              awkward shapes, and the transformer (unfused, fused, CPU) on a small
                              config; prints a table; exit status 1 if anything fails
  --ops all|NAME[,NAME...]    benchmark these ops (default all); 'transformer' is the model
  --variant unfused|fused|vendor|both|all   (default all: every variant the op has; both = unfused,fused)
  --dtype fp32|fp16|bf16|all  element type (default fp16; --check defaults to all)
  --repeat N                  timed invocations per variant (default 20; the transformer: 10)
  --warmup N                  untimed invocations first (default 3; the transformer: 1)
  --back-to-back N            ops: each timed sample is N queued invocations between two events,
                              divided by N (default: one invocation a sample)
  --csv FILE                  also write the benchmark rows as CSV
  --seed N                    seed of the random inputs (default: fresh from std::random_device)
  --batch N --seq N --width N --layers N --vocab N --decode-steps N
                              transformer shape (defaults 8, 1024, 1024, 8, 32000, 32; heads = width/64)
  --hand-matmul               the transformer's matmuls all use the hand GEMM
  --lt-matmul                 the transformer's matmuls all use cuBLASLt (default: the hand GEMM
                              where it matches cuBLASLt, the Hopper kernel at >= 1024 rows)
  --gemm-sweep                the hand GEMM (launchGemm) vs cuBLASLt with the same epilogue on
                              4096^3, 8192^3 and the transformer's prefill shapes, fp16 and bf16:
                              median ms, TFLOP/s, ratio, relative difference of the outputs
  --no-copy-bandwidth         skip the device-to-device copy measurement
environment: FPROF_REF_FLASH=mma     the fused fp16/bf16 attention's mma.sync kernel on Hopper too
                              (default there: the wgmma kernel)
             FPROF_REF_FLASH_SM90_ROWS=128|192  query rows a CTA of the wgmma kernel (default 192)
             FPROF_REF_FLASH_SM90_STAGES=2|4    key/value tiles in flight in it (default 2)
             FPROF_REF_FLASH_ROWS=16|32  query rows per warp in the mma.sync kernel
                              (default 16; 32 reuses K/V operands twice at 2 blocks per SM)
  --help
)";

struct Options {
  bool list = false, check = false, copy_bandwidth = true, gemm_sweep = false;
  std::string ops = "all", variant = "all", dtype = "";
  int repeat = -1, warmup = -1, back_to_back = 0;
  std::string csv;
  std::optional<std::uint64_t> seed;
  ModelConfig model;
};

[[noreturn]] void usageError(const std::string& what) {
  std::cerr << "model: " << what << "\n" << kUsage;
  std::exit(64);
}

std::size_t parseSize(const std::string& flag, const char* v) {
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (end == v || *end != '\0') usageError(flag + " needs a non-negative integer, got '" + v + "'");
  return std::size_t(n);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") { std::cout << kUsage; std::exit(0); }
    else if (a == "--list") o.list = true;
    else if (a == "--check") o.check = true;
    else if (a == "--ops") o.ops = value();
    else if (a == "--variant") o.variant = value();
    else if (a == "--dtype") o.dtype = value();
    else if (a == "--repeat") o.repeat = int(parseSize(a, value()));
    else if (a == "--warmup") o.warmup = int(parseSize(a, value()));
    else if (a == "--back-to-back") o.back_to_back = int(parseSize(a, value()));
    else if (a == "--csv") o.csv = value();
    else if (a == "--seed") o.seed = parseSize(a, value());
    else if (a == "--batch") o.model.batch = parseSize(a, value());
    else if (a == "--seq") o.model.seq = parseSize(a, value());
    else if (a == "--width") o.model.width = parseSize(a, value());
    else if (a == "--layers") o.model.layers = parseSize(a, value());
    else if (a == "--vocab") o.model.vocab = parseSize(a, value());
    else if (a == "--decode-steps") o.model.decode_steps = parseSize(a, value());
    else if (a == "--no-copy-bandwidth") o.copy_bandwidth = false;
    else if (a == "--hand-matmul") o.model.matmul = ModelConfig::Matmul::Hand;
    else if (a == "--lt-matmul") o.model.matmul = ModelConfig::Matmul::Lt;
    else if (a == "--gemm-sweep") o.gemm_sweep = true;
    else usageError("unknown option " + a);
  }
  o.model.heads = o.model.width / kFlashHeadDim;
  if (o.variant != "unfused" && o.variant != "fused" && o.variant != "vendor" && o.variant != "both" && o.variant != "all") {
    usageError("--variant must be unfused, fused, vendor, both or all");
  }
  return o;
}

std::vector<DType> parseDtypes(const std::string& s) {
  if (s == "fp32") return {DType::F32};
  if (s == "fp16") return {DType::F16};
  if (s == "bf16") return {DType::BF16};
  if (s == "all") return {DType::F32, DType::F16, DType::BF16};
  usageError("--dtype must be fp32, fp16, bf16 or all");
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) if (!item.empty()) out.push_back(item);
  return out;
}

bool wanted(const Options& o, const std::string& variant) {
  if (o.variant == "all") return true;
  if (o.variant == "both") return variant == "unfused" || variant == "fused";
  return o.variant == variant;
}

std::string fmt(double v, int precision = 3) {
  if (std::isnan(v)) return "n/a";
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(precision);
  s << v;
  return s.str();
}

std::string sci(double v) {
  if (std::isnan(v)) return "NaN";
  std::ostringstream s;
  s.setf(std::ios::scientific);
  s.precision(2);
  s << v;
  return s.str();
}

// ---------------------------------------------------------------------------------------------
int runChecks(Context& ctx, const Options& o, std::vector<std::unique_ptr<Op>>& ops) {
  const auto dtypes = parseDtypes(o.dtype.empty() ? "all" : o.dtype);
  int failures = 0, passes = 0;
  std::cout << "| op | variant | dtype | shape | rel_err | tol | result |\n|---|---|---|---|---|---|---|\n";
  const auto selected = split(o.ops);
  auto isSelected = [&](const std::string& n) {
    return o.ops == "all" || std::find(selected.begin(), selected.end(), n) != selected.end();
  };
  for (auto& op : ops) {
    if (!isSelected(op->name())) continue;
    for (DType t : dtypes) {
      if (!op->supports(t)) continue;
      for (int shape = 0; shape < op->checkShapeCount(); ++shape) {
        op->setup(ctx, t, shape);  // fresh random inputs for every shape
        for (const auto& v : op->variants()) {
          if (!wanted(o, v)) continue;
          op->poisonOutputs();
          try {
            op->run(ctx, v, 0);
          } catch (const std::exception& e) {
            ++failures;
            std::cout << "| " << op->name() << " | " << v << " | " << dtypeName(t) << " | " << op->shapeText()
                      << " | error: " << e.what() << " | | FAIL |\n";
            continue;
          }
          CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
          const double err = op->check();
          const bool pass = err <= tolerance(t);  // NaN compares false: unwritten output fails
          (pass ? passes : failures)++;
          std::cout << "| " << op->name() << " | " << v << " | " << dtypeName(t) << " | " << op->shapeText() << " | "
                    << sci(err) << " | " << sci(tolerance(t)) << " | " << (pass ? "pass" : "FAIL") << " |\n";
        }
      }
    }
  }
  if (isSelected("transformer")) {
    // Small enough for the CPU reference; odd sizes on purpose.
    ModelConfig small;
    small.batch = 2; small.seq = 37; small.width = 128; small.heads = 2; small.layers = 2; small.vocab = 1001;
    small.decode_steps = 3;
    // Both matmul back-ends (cuBLASLt, the hand GEMM) for every dtype.
    for (std::size_t run = 0; run < 2 * dtypes.size(); ++run) {
      const bool hand = run >= dtypes.size();
      const DType t = dtypes[run % dtypes.size()];
      small.matmul = hand ? ModelConfig::Matmul::Hand : ModelConfig::Matmul::Lt;
      const std::string label = hand ? "transformer(hand matmul)" : "transformer";
      std::vector<float> logits[2][2];
      for (int fused = 0; fused < 2; ++fused) {
        if (!wanted(o, fused ? "fused" : "unfused")) continue;
        // Same seed for both forms: same weights and prompt.
        Context local;
        local.stream = ctx.stream;
        local.cublas = ctx.cublas;
        local.lt = std::make_unique<LtMatmul>();
        local.rng.seed(o.seed.value_or(0) + 977 + std::uint64_t(t));
        Transformer model(local, t, small);
        model.generate(fused != 0, 0);
        logits[fused][0] = model.prefillLogits();
        logits[fused][1] = model.decodeLogits();
        std::vector<double> ref_prefill, ref_decode;
        model.cpuReference(ref_prefill, ref_decode);
        const char* names[2] = {"prefill_logits", "decode_logits"};
        const std::vector<double>* refs[2] = {&ref_prefill, &ref_decode};
        for (int phase = 0; phase < 2; ++phase) {
          const double err = ref::relativeError(toDouble(logits[fused][phase]), *refs[phase]);
          const bool pass = err <= tolerance(t);
          (pass ? passes : failures)++;
          std::cout << "| " << label << " | " << (fused ? "fused" : "unfused") << " | " << dtypeName(t)
                    << " | b2s37w128l2v1001+3 " << names[phase] << " vs cpu | " << sci(err) << " | "
                    << sci(tolerance(t)) << " | " << (pass ? "pass" : "FAIL") << " |\n";
        }
      }
      if (!logits[0][0].empty() && !logits[1][0].empty()) {
        const double err = ref::relativeError(toDouble(logits[1][0]), toDouble(logits[0][0]));
        const bool pass = err <= tolerance(t);
        (pass ? passes : failures)++;
        std::cout << "| " << label << " | fused vs unfused | " << dtypeName(t) << " | b2s37w128l2v1001 prefill_logits | "
                  << sci(err) << " | " << sci(tolerance(t)) << " | " << (pass ? "pass" : "FAIL") << " |\n";
      }
    }
  }
  std::cout << "\ncheck: " << passes << " passed, " << failures << " failed\n";
  return failures == 0 ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
struct BenchRow {
  std::string op, variant, dtype, shape;
  double median_ms = NAN, min_ms = NAN, bytes = NAN, flops = NAN;
  int kernels = 0;
};

double measureCopyBandwidth(Context& ctx) {
  const std::size_t bytes = std::size_t(1) << 30;
  DeviceBuffer src(bytes), dst(bytes);
  fillUniform(DType::F32, src.get(), bytes / 4, ctx.nextSeed(), 1.0f, 0.0f);
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> ms;
  for (int i = 0; i < 13; ++i) {
    CUDA_CHECK(cudaEventRecord(a, ctx.stream));
    CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, ctx.stream));
    CUDA_CHECK(cudaEventRecord(b, ctx.stream));
    CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    if (i >= 3) ms.push_back(t);
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  // Bytes read plus bytes written, as METHOD.md counts a copy.
  return 2.0 * double(bytes) / (ref::median(ms).value() * 1e-3);
}

// Median event-timed milliseconds of f() after warm-ups.
template <class F> double medianMs(cudaStream_t s, int warmup, int repeat, const F& f) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    CUDA_CHECK(cudaEventRecord(a, s));
    f();
    CUDA_CHECK(cudaEventRecord(b, s));
    CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  return ref::median(ms).value();
}

// The hand GEMM against cuBLASLt with the same epilogue on large shapes. Both outputs are
// compared with each other (relative L2 difference); the CPU reference checks small shapes.
void runGemmSweep(Context& ctx, const Options& o) {
  struct Shape { std::size_t m, n, k; Epilogue e; const char* what; };
  const Shape shapes[] = {
      {4096, 4096, 4096, Epilogue::None, "square"},
      {4096, 4096, 4096, Epilogue::BiasRelu, "square"},
      {8192, 8192, 8192, Epilogue::None, "square"},
      {8192, 8192, 8192, Epilogue::BiasGelu, "square"},
      {8192, 4096, 1024, Epilogue::Relu, "bench pair"},
      {8192, 4096, 1024, Epilogue::BiasGelu, "bench pair"},
      {8192, 3072, 1024, Epilogue::Bias, "transformer qkv"},
      {8192, 1024, 1024, Epilogue::Bias, "transformer attn out"},
      {8192, 4096, 1024, Epilogue::BiasGelu, "transformer fc1"},
      {8192, 1024, 4096, Epilogue::Bias, "transformer fc2"},
  };
  const int repeat = o.repeat < 0 ? 20 : std::max(1, o.repeat);
  const int warmup = o.warmup < 0 ? 3 : o.warmup;
  std::cout << "\n| gemm shape | what | epilogue | dtype | hand ms | cuBLASLt ms | hand TFLOP/s | cuBLASLt TFLOP/s | hand / cuBLASLt speed | rel diff |\n"
            << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (DType t : parseDtypes(o.dtype.empty() ? "fp16" : o.dtype)) {
    if (t == DType::F32) continue;
    for (const Shape& sh : shapes) {
      DeviceBuffer x(sh.m * sh.k * 2), w(sh.n * sh.k * 2), b(sh.n * 2), y_hand(sh.m * sh.n * 2), y_lt(sh.m * sh.n * 2);
      fillUniform(t, x.get(), sh.m * sh.k, ctx.nextSeed(), 1.0f, 0.0f);
      fillUniform(t, w.get(), sh.n * sh.k, ctx.nextSeed(), float(std::sqrt(3.0 / double(sh.k))), 0.0f);
      fillUniform(t, b.get(), sh.n, ctx.nextSeed(), 0.5f, 0.0f);
      y_hand.poison();
      const double hand = medianMs(ctx.stream, warmup, repeat, [&] {
        launchGemm(t, sh.e, x.get(), sh.k, w.get(), b.get(), y_hand.get(), sh.m, sh.n, sh.k, ctx.stream);
      });
      const double lt = medianMs(ctx.stream, warmup, repeat, [&] {
        ctx.lt->run(t, sh.e, x.get(), w.get(), b.get(), y_lt.get(), sh.m, sh.n, sh.k, ctx.stream);
      });
      CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
      const double diff = ref::relativeError(toDouble(downloadAsFloat(t, y_hand.get(), sh.m * sh.n)),
                                             toDouble(downloadAsFloat(t, y_lt.get(), sh.m * sh.n)));
      const double flops = 2.0 * double(sh.m) * double(sh.n) * double(sh.k);
      std::cout << "| m" << sh.m << "n" << sh.n << "k" << sh.k << " | " << sh.what << " | " << epilogueName(sh.e) << " | "
                << dtypeName(t) << " | " << fmt(hand, 4) << " | " << fmt(lt, 4) << " | " << fmt(flops / hand / 1e9, 1)
                << " | " << fmt(flops / lt / 1e9, 1) << " | " << fmt(100.0 * lt / hand, 1) << "% | " << sci(diff)
                << (diff <= tolerance(t) ? "" : " FAIL") << " |\n";
    }
  }
}

std::vector<BenchRow> benchOps(Context& ctx, const Options& o, std::vector<std::unique_ptr<Op>>& ops, DType t) {
  std::vector<BenchRow> rows;
  const auto selected = split(o.ops);
  const int repeat = o.repeat < 0 ? 20 : std::max(1, o.repeat);
  const int warmup = o.warmup < 0 ? 3 : o.warmup;
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  for (auto& op : ops) {
    if (o.ops != "all" && std::find(selected.begin(), selected.end(), op->name()) == selected.end()) continue;
    if (!op->supports(t)) continue;
    op->setup(ctx, t, -1);
    for (const auto& v : op->variants()) {
      if (!wanted(o, v)) continue;
      try {
        op->run(ctx, v, 0);
      } catch (const std::exception& e) {
        std::cout << "model: " << op->name() << " " << v << " " << dtypeName(t) << " not benchmarked: " << e.what() << "\n";
        continue;
      }
      for (int i = 0; i < warmup; ++i) op->run(ctx, v, std::uint64_t(i));
      std::vector<double> ms;
      // A sample is one invocation between two events, or with --back-to-back N the mean of N
      // queued invocations (the GPU never waits for the host between them).
      const int per_sample = std::max(1, o.back_to_back);
      for (int i = 0; i < repeat; ++i) {
        CUDA_CHECK(cudaEventRecord(a, ctx.stream));
        for (int j = 0; j < per_sample; ++j) op->run(ctx, v, std::uint64_t(warmup + i * per_sample + j));
        CUDA_CHECK(cudaEventRecord(b, ctx.stream));
        CUDA_CHECK(cudaEventSynchronize(b));
        float elapsed = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&elapsed, a, b));
        ms.push_back(elapsed / per_sample);
      }
      BenchRow r{op->name(), v, dtypeName(t), op->shapeText()};
      r.median_ms = ref::median(ms).value();
      r.min_ms = *std::min_element(ms.begin(), ms.end());
      r.bytes = op->minimumBytes(v);
      r.flops = op->flops();
      r.kernels = op->kernelCount(v);
      rows.push_back(r);
    }
    op->setup(ctx, t, 0);  // release the large benchmark buffers before the next op
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  return rows;
}

void printBench(const std::vector<BenchRow>& rows, double copy_bytes_per_s) {
  std::cout << "\n| op | variant | dtype | shape | kernels | median ms | min ms | min bytes (analytic) | GB/s | % copy BW | TFLOP/s |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    const double bw = r.bytes / (r.median_ms * 1e-3);
    const double tflops = r.flops > 0.0 ? r.flops / (r.median_ms * 1e-3) / 1e12 : NAN;
    std::cout << "| " << r.op << " | " << r.variant << " | " << r.dtype << " | " << r.shape << " | " << r.kernels << " | "
              << fmt(r.median_ms, 4) << " | " << fmt(r.min_ms, 4) << " | " << fmt(r.bytes / 1e6, 1) << " MB | "
              << fmt(bw / 1e9, 0) << " | " << fmt(copy_bytes_per_s > 0 ? 100.0 * bw / copy_bytes_per_s : NAN, 1) << " | "
              << fmt(tflops, 1) << " |\n";
  }
  // Pair summary, next to the seed note's table.
  static const std::map<std::string, std::string> kSeed{
      {"matmul_relu", "1.07x"}, {"matmul_bias_relu", "1.24x"}, {"matmul_bias_gelu", "1.35x"},
      {"conv_bn_relu", "1.41x"}, {"residual_layernorm", "1.94x"}, {"attention", "3.33x"}};
  std::cout << "\n| pair | dtype | unfused ms | fused ms | speedup | seed table | bytes unfused/fused | vendor ms | fused/vendor speed |\n"
               "|---|---|---|---|---|---|---|---|---|\n";
  std::map<std::pair<std::string, std::string>, std::map<std::string, BenchRow>> by_pair;
  std::vector<std::pair<std::string, std::string>> order;
  for (const auto& r : rows) {
    const auto key = std::make_pair(r.op, r.dtype);
    if (by_pair.find(key) == by_pair.end()) order.push_back(key);
    by_pair[key][r.variant] = r;
  }
  for (const auto& key : order) {
    const auto& v = by_pair[key];
    const auto get = [&](const char* name) { auto it = v.find(name); return it == v.end() ? NAN : it->second.median_ms; };
    const auto bytes = [&](const char* name) { auto it = v.find(name); return it == v.end() ? NAN : it->second.bytes; };
    const double u = get("unfused"), f = get("fused"), vd = get("vendor");
    const auto seed = kSeed.find(key.first);
    std::cout << "| " << key.first << " | " << key.second << " | " << fmt(u, 4) << " | " << fmt(f, 4) << " | "
              << fmt(u / f, 2) << "x | " << (seed == kSeed.end() ? "-" : seed->second) << " | "
              << fmt(bytes("unfused") / bytes("fused"), 2) << " | " << fmt(vd, 4) << " | "
              << (std::isnan(vd) ? std::string("n/a") : fmt(vd / f * 100.0, 1) + "%") << " |\n";
  }
}

void writeCsv(const std::string& path, const std::vector<BenchRow>& rows, double copy_bytes_per_s) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  out << "op,variant,dtype,shape,kernels,median_ms,min_ms,min_bytes,flops,copy_bandwidth_bytes_per_s\n";
  for (const auto& r : rows) {
    out << r.op << "," << r.variant << "," << r.dtype << "," << r.shape << "," << r.kernels << "," << r.median_ms << ","
        << r.min_ms << "," << r.bytes << "," << r.flops << "," << copy_bytes_per_s << "\n";
  }
}

void benchTransformer(Context& ctx, const Options& o, DType t, std::vector<BenchRow>& rows) {
  const int repeat = o.repeat < 0 ? 10 : std::max(1, o.repeat);
  const int warmup = o.warmup < 0 ? 1 : o.warmup;
  const auto& c = o.model;
  std::ostringstream shape;
  shape << "b" << c.batch << "s" << c.seq << "w" << c.width << "h" << c.heads << "l" << c.layers << "v" << c.vocab << "+"
        << c.decode_steps;
  Transformer model(ctx, t, c);
  std::cout << "\ntransformer matmuls: "
            << (c.matmul == ModelConfig::Matmul::Hand ? "hand GEMM"
                : c.matmul == ModelConfig::Matmul::Lt ? "cuBLASLt"
                                                      : "auto (hand GEMM at >= 1024 rows where usable, cuBLASLt below)")
            << "\n";
  std::cout << "\n| transformer | dtype | shape | prefill ms | prefill tokens/s | decode ms (" << c.decode_steps
            << " steps) | decode tokens/s |\n|---|---|---|---|---|---|---|\n";
  for (int fused = 0; fused < 2; ++fused) {
    const std::string v = fused ? "fused" : "unfused";
    if (!wanted(o, v)) continue;
    for (int i = 0; i < warmup; ++i) model.generate(fused != 0, std::uint64_t(i));
    std::vector<double> prefill, decode;
    for (int i = 0; i < repeat; ++i) {
      const ModelTiming timing = model.generate(fused != 0, std::uint64_t(warmup + i));
      prefill.push_back(timing.prefill_ms);
      decode.push_back(timing.decode_ms);
    }
    const double p = ref::median(prefill).value(), d = ref::median(decode).value();
    std::cout << "| " << v << " | " << dtypeName(t) << " | " << shape.str() << " | " << fmt(p, 3) << " | "
              << fmt(double(c.batch * c.seq) / (p * 1e-3), 0) << " | " << fmt(d, 3) << " | "
              << fmt(c.decode_steps > 0 ? double(c.batch * c.decode_steps) / (d * 1e-3) : NAN, 0) << " |\n";
    BenchRow pr{"transformer_prefill", v, dtypeName(t), shape.str()};
    pr.median_ms = p;
    pr.min_ms = *std::min_element(prefill.begin(), prefill.end());
    rows.push_back(pr);
    BenchRow dr{"transformer_decode", v, dtypeName(t), shape.str()};
    dr.median_ms = d;
    dr.min_ms = *std::min_element(decode.begin(), decode.end());
    rows.push_back(dr);
  }
}

int realMain(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.list) {
    auto ops = makeOps(true);
    for (const auto& op : ops) {
      std::cout << op->name() << "  [";
      const auto vs = op->variants();
      for (std::size_t i = 0; i < vs.size(); ++i) std::cout << (i ? "," : "") << vs[i];
      std::cout << "]  " << op->description() << "\n";
    }
    std::cout << "transformer  [unfused,fused]  decoder-only transformer: prefill + greedy decode, tokens/s\n";
    return 0;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::cerr << "model: no CUDA device\n";
    return 77;  // the CTest skip code
  }
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  Context ctx;
  // A blocking stream: the setup's fills, the checks' poison memsets and the host copies run on the
  // legacy default stream, which then orders itself with every launch on ctx.stream. (A
  // non-blocking stream lets the ops' kernels start before a fill or poison of their buffers ends:
  // under compute-sanitizer's racecheck, which slows the kernels, the top-k's unfused checks read
  // poison.)
  CUDA_CHECK(cudaStreamCreate(&ctx.stream));
  std::string cudnn_reason;
  ctx.cudnn = CudnnConv::load(cudnn_reason);
  auto ops = makeOps(ctx.cudnn != nullptr);
  CUBLAS_CHECK(cublasCreate(&ctx.cublas));
  CUBLAS_CHECK(cublasSetStream(ctx.cublas, ctx.stream));
  ctx.lt = std::make_unique<LtMatmul>();
  const std::uint64_t seed = o.seed.value_or((std::uint64_t(std::random_device{}()) << 32) | std::random_device{}());
  ctx.rng.seed(seed);
  std::cout << "device: " << prop.name << " (" << prop.multiProcessorCount << " SMs, sm_" << prop.major << prop.minor
            << "), seed " << seed << "\n";
  if (ctx.cudnn) std::cout << "cuDNN " << ctx.cudnn->version() << " loaded: conv_bn_relu has a vendor variant\n";
  else std::cout << "cuDNN not usable (" << cudnn_reason << "): conv_bn_relu has no vendor variant\n";

  int status = 0;
  if (o.gemm_sweep) {
    runGemmSweep(ctx, o);
  } else if (o.check) {
    Options checked = o;
    checked.seed = seed;
    status = runChecks(ctx, checked, ops);
  } else {
    const double copy_bw = o.copy_bandwidth ? measureCopyBandwidth(ctx) : 0.0;
    if (o.copy_bandwidth) std::cout << "device-to-device copy (1 GiB, read+write): " << fmt(copy_bw / 1e9, 0) << " GB/s\n";
    std::vector<BenchRow> rows;
    const auto selected = split(o.ops);
    const bool want_model = o.ops == "all" || std::find(selected.begin(), selected.end(), "transformer") != selected.end();
    for (DType t : parseDtypes(o.dtype.empty() ? "fp16" : o.dtype)) {
      auto r = benchOps(ctx, o, ops, t);
      printBench(r, copy_bw);
      rows.insert(rows.end(), r.begin(), r.end());
      if (want_model) benchTransformer(ctx, o, t, rows);
    }
    if (!o.csv.empty()) writeCsv(o.csv, rows, copy_bw);
  }
  // On stderr, so the tables on stdout stay as they are.
  std::cerr << "model: " << nvtxRangesPushed().load() << " NVTX ranges pushed\n";
  ops.clear();
  ctx.lt.reset();
  ctx.cudnn.reset();
  CUBLAS_CHECK(cublasDestroy(ctx.cublas));
  CUDA_CHECK(cudaStreamDestroy(ctx.stream));
  return status;
}

}  // namespace
}  // namespace fprof::refk

int main(int argc, char** argv) {
  try {
    return fprof::refk::realMain(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "model: " << e.what() << "\n";
    return 2;
  }
}
