// Analyzer benchmark: a synthetic database of 1,000,000 kernels and 100,000 NVTX ranges,
// analysed end to end: open, roofline, pairs (NVTX and data flow), summary.
//   analysis_bench generate FILE [kernels] [ranges]   write the database (not timed)
//   analysis_bench run FILE                           time each phase, print peak RSS
//   analysis_bench report FILE [OUT.html]             time `fprof report`'s phases
// Results go to bench/RESULTS.md, sections "Analyzer" and "Report".
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "fprof/analysis/dataflow.h"
#include "fprof/analysis/fusion.h"
#include "fprof/analysis/nvtx_ops.h"
#include "fprof/analysis/origin.h"
#include "fprof/analysis/roofline.h"
#include "fprof/analysis/summary.h"
#include "fprof/core/store.h"
#include "fprof/reports/html_report.h"
#include "fprof/reports/report_data.h"
#include "sm90_limits.h"

namespace {

using namespace fprof;
using Clock = std::chrono::steady_clock;

int generate(const std::string& path, int64_t kernels, int64_t ranges) {
  auto w = core::Writer::create(path, true);
  if (!w) {
    std::fprintf(stderr, "%s\n", w.error().c_str());
    return 2;
  }
  core::Writer& out = **w;
  core::ProcessInfo pi;
  pi.pid = 1;
  pi.host = "bench";
  pi.command_line = "./model --ops all";
  const uint32_t pid = out.addProcess(pi).value();
  core::DeviceInfo d;
  d.process_id = pid;
  d.name = "NVIDIA H100 80GB HBM3";
  testing::setSm90Limits(d);
  d.sm_count = 132;
  d.memory_bus_width_bits = 5120;
  d.memory_clock_khz = 2619000;
  d.sm_clock_khz = 1980000;
  if (!out.addDevice(d).ok()) return 2;
  // 64 buffers of 4 MiB, reused round-robin by the kernels (every launch has 2 pointer args).
  constexpr int kBuffers = 64;
  constexpr uint64_t kBase = 0x7f0000000000;
  for (int b = 0; b < kBuffers; ++b) {
    core::MemoryEventRecord m;
    m.process_id = pid;
    m.timestamp_ns = b;
    m.address = kBase + uint64_t(b) * (8 << 20);
    m.bytes = 4 << 20;
    m.memory_kind = "device";
    out.add(m);
  }
  // Op instances: one top range + two stage ranges (unfused), or one range (fused): 4 ranges per
  // pair of instances, each instance pair holding 3 kernels.
  const int64_t instance_pairs = ranges / 4;
  int64_t t = 1000;
  uint64_t key = 1;
  uint32_t corr = 0;
  int64_t written = 0;
  auto kernel = [&](const std::string& name, int64_t dur, uint32_t stream, std::optional<uint64_t> range,
                    const std::string& nvtx_path, int buf_in, int buf_out) {
    core::KernelRecord k;
    k.process_id = pid;
    k.stream_id = stream;
    k.correlation_id = ++corr;
    k.start_ns = t;
    k.end_ns = t + dur;
    k.grid_x = 264;
    k.grid_y = k.grid_z = 1;
    k.block_x = 256;
    k.block_y = k.block_z = 1;
    k.registers_per_thread = 32;
    k.theoretical_occupancy = 1.0;
    k.name = name;
    k.demangled_name = name;
    k.nvtx_range_key = range;
    k.nvtx_path = nvtx_path;
    out.add(k);
    out.add(core::KernelArgRecord{k.correlation_id, pid, 0, 0, 8, kBase + uint64_t(buf_in) * (8 << 20)});
    out.add(core::KernelArgRecord{k.correlation_id, pid, 1, 8, 8, kBase + uint64_t(buf_out) * (8 << 20)});
    t = k.end_ns + 500;
    ++written;
    if (written % 100000 == 0 && !out.flush().ok()) std::exit(2);
  };
  static const char* kNames[] = {"ampere_sgemm_128x64_tn", "triton_poi_fused_add_mul_0", "void at::native::vectorized_elementwise_kernel<4>(int)",
                                 "layernorm_kernel", "softmax_kernel", "gelu_kernel", "residual_add_kernel",
                                 "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
  const int64_t plain = kernels - instance_pairs * 3;
  const int64_t plain_per_gap = instance_pairs > 0 ? plain / instance_pairs : plain;
  int64_t plain_done = 0;
  for (int64_t i = 0; i < instance_pairs || plain_done < plain; ++i) {
    for (int64_t j = 0; j < plain_per_gap && plain_done < plain; ++j, ++plain_done) {
      const int b = static_cast<int>(plain_done % kBuffers);
      kernel(kNames[plain_done % 8], 3000 + (plain_done % 7) * 1000, 7, std::nullopt, "", b, (b + 1) % kBuffers);
    }
    if (i >= instance_pairs) continue;
    const std::string pair = "p" + std::to_string(i % 500);
    const uint64_t top = key++, s1 = key++, s2 = key++, fused = key++;
    const int64_t top_start = t;
    kernel("matmul_kernel", 20000, 7, s1, "fprof::op=mm variant=unfused pair=" + pair + "/op=matmul", 0, 1);
    kernel("bias_relu_kernel", 6000, 7, s2, "fprof::op=mm variant=unfused pair=" + pair + "/op=bias_relu", 1, 2);
    auto range = [&](uint64_t k, std::optional<uint64_t> parent, const std::string& msg, int64_t a, int64_t b) {
      core::NvtxRangeRecord r;
      r.key = k;
      r.process_id = pid;
      r.parent_key = parent;
      r.domain = "fprof";
      r.message = msg;
      r.payload = uint64_t(i / 500);
      r.start_ns = a;
      r.end_ns = b;
      out.add(r);
    };
    range(top, std::nullopt, "op=mm variant=unfused pair=" + pair + " reads=x,w writes=y", top_start, t);
    range(s1, top, "op=matmul variant=unfused pair=" + pair + " reads=x,w writes=t0", top_start, top_start + 20000);
    range(s2, top, "op=bias_relu variant=unfused pair=" + pair + " reads=t0 writes=y", top_start + 20500, t);
    const int64_t fused_start = t;
    kernel("matmul_bias_relu_fused", 21000, 7, fused, "fprof::op=mm variant=fused pair=" + pair, 0, 2);
    range(fused, std::nullopt, "op=mm variant=fused pair=" + pair + " reads=x,w writes=y", fused_start, t);
  }
  if (!out.close().ok()) return 2;
  std::printf("wrote %s: %lld kernels, %lld NVTX ranges, %lld pointer args, %d allocations\n", path.c_str(),
              static_cast<long long>(written), static_cast<long long>(key - 1), static_cast<long long>(2 * written),
              kBuffers);
  return 0;
}

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// CPU seconds of this process: on a shared, loaded machine wall time overstates the cost.
double cpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int run(const std::string& path) {
  const auto t0 = Clock::now();
  const double c0 = cpuSeconds();
  auto loaded = core::loadProfile(path);
  if (!loaded) {
    std::fprintf(stderr, "%s\n", loaded.error().c_str());
    return 2;
  }
  const core::Profile& p = *loaded;
  const double t_open = since(t0);
  const double c_open = cpuSeconds() - c0;
  // The summary first: the roofline reuses it, as fprof report does.
  auto t = Clock::now();
  double c = cpuSeconds();
  const analysis::RunSummary summary = analysis::summarize(p);
  const double t_summary = since(t);
  const double c_summary = cpuSeconds() - c;
  t = Clock::now();
  c = cpuSeconds();
  const analysis::RooflineResult roof = analysis::analyzeRoofline(p, summary);
  const analysis::OriginTotals origins = analysis::sumByOrigin(p);
  const double t_roof = since(t);
  const double c_roof = cpuSeconds() - c;
  t = Clock::now();
  c = cpuSeconds();
  const analysis::OpIndex ops = analysis::indexOps(p);
  const analysis::DataFlow df = analysis::analyzeDataFlow(p);
  const analysis::FusionResult fusion = analysis::analyzeFusion(p, ops, df);
  const double t_pairs = since(t);
  const double c_pairs = cpuSeconds() - c;
  const double total = since(t0);
  const double c_total = cpuSeconds() - c0;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("kernels %zu, NVTX ranges %zu, kernel args %zu, op instances %zu, data-flow edges %zu\n",
              p.kernels.size(), p.nvtx_ranges.size(), p.kernel_args.size(), ops.ops.size(), df.edges.size());
  std::printf("kernel groups %zu, NVTX op groups %zu, fusion candidates %zu, origins: user %lld launches\n",
              roof.kernel_groups.size(), roof.ops.size(), fusion.candidates.size(),
              static_cast<long long>(origins.launches[static_cast<size_t>(analysis::Origin::kUser)]));
  std::printf("wall: open %.3f s, roofline+origins %.3f s, pairs %.3f s, summary %.3f s, total %.3f s\n", t_open,
              t_roof, t_pairs, t_summary, total);
  std::printf("cpu:  open %.3f s, roofline+origins %.3f s, pairs %.3f s, summary %.3f s, total %.3f s\n", c_open,
              c_roof, c_pairs, c_summary, c_total);
  std::printf("peak RSS %.0f MiB\n", static_cast<double>(ru.ru_maxrss) / 1024.0);
  return summary.kernel_count > 0 ? 0 : 1;
}

// What `fprof report FILE -o OUT` does (cli/cmd_report.cpp), phase by phase.
int report(const std::string& path, const std::string& out) {
  const auto t0 = Clock::now();
  const double c0 = cpuSeconds();
  auto loaded = core::loadProfile(path);
  if (!loaded) {
    std::fprintf(stderr, "%s\n", loaded.error().c_str());
    return 2;
  }
  const double t_open = since(t0), c_open = cpuSeconds() - c0;
  auto t = Clock::now();
  double c = cpuSeconds();
  const reports::ReportData data = reports::buildReport(*loaded, nullptr);
  const double t_build = since(t), c_build = cpuSeconds() - c;
  t = Clock::now();
  c = cpuSeconds();
  const std::string html = reports::renderHtml(data);
  const double t_render = since(t), c_render = cpuSeconds() - c;
  t = Clock::now();
  c = cpuSeconds();
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f.write(html.data(), static_cast<std::streamsize>(html.size()));
  f.close();
  if (!f) {
    std::fprintf(stderr, "%s: cannot write\n", out.c_str());
    return 2;
  }
  const double t_write = since(t), c_write = cpuSeconds() - c;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("kernels %zu, groups %lld, fusion rows %zu, HTML %zu bytes -> %s\n", loaded->kernels.size(),
              static_cast<long long>(data.group_count), data.fusion.size(), html.size(), out.c_str());
  std::printf("wall: open %.3f s, analysis+build %.3f s, render %.3f s, write %.3f s, total %.3f s\n", t_open, t_build,
              t_render, t_write, since(t0));
  std::printf("cpu:  open %.3f s, analysis+build %.3f s, render %.3f s, write %.3f s, total %.3f s\n", c_open, c_build,
              c_render, c_write, cpuSeconds() - c0);
  std::printf("peak RSS %.0f MiB\n", static_cast<double>(ru.ru_maxrss) / 1024.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "generate") {
    const int64_t kernels = argc > 3 ? std::atoll(argv[3]) : 1000000;
    const int64_t ranges = argc > 4 ? std::atoll(argv[4]) : 100000;
    return generate(argv[2], kernels, ranges);
  }
  if (argc == 3 && std::string(argv[1]) == "run") return run(argv[2]);
  if ((argc == 3 || argc == 4) && std::string(argv[1]) == "report") {
    return report(argv[2], argc == 4 ? argv[3] : "/tmp/analysis_bench_report.html");
  }
  std::fprintf(stderr, "usage: %s generate FILE [kernels] [ranges] | run FILE | report FILE [OUT.html]\n", argv[0]);
  return 2;
}
