// Writes the small synthetic .fprof fixtures the analysis golden tests run fprof on. Deterministic
// (fixed seeds, no clocks), so the same source always yields the same command output.
// Usage: analysis_golden_fixtures OUTPUT_DIR
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "fprof/core/store.h"
#include "sm90_limits.h"

namespace {

using namespace fprof;

// A small linear congruential generator: the same numbers on every platform.
struct Lcg {
  uint64_t state;
  double next() {  // uniform in [-1, 1)
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53) * 2.0 - 1.0;
  }
};

core::DeviceInfo h100(uint32_t process_id) {
  core::DeviceInfo d;
  d.process_id = process_id;
  d.name = "NVIDIA H100 80GB HBM3";
  testing::setSm90Limits(d);
  d.sm_count = 132;
  d.l2_bytes = 52428800;
  d.global_memory_bytes = 85520809984;
  d.memory_bus_width_bits = 5120;
  d.memory_clock_khz = 2619000;
  d.sm_clock_khz = 1980000;
  return d;
}

class Fixture {
 public:
  explicit Fixture(const std::string& path) {
    auto w = core::Writer::create(path, true);
    if (!w) {
      std::fprintf(stderr, "%s\n", w.error().c_str());
      std::exit(2);
    }
    w_ = std::move(*w);
    check(w_->setMetadata("mode", "trace"));
    core::ProcessInfo pi;
    pi.pid = 1000;
    pi.host = "fixture";
    pi.command_line = "./model --ops all";
    pi.start_unix_ns = 1763683200000000000;
    pid_ = w_->addProcess(pi).value();
    check(w_->addDevice(h100(pid_)));
  }
  static void check(const core::Status& s) {
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.error().c_str());
      std::exit(2);
    }
  }
  core::Writer& w() { return *w_; }

  core::KernelRecord kernel(const std::string& name, int64_t start, int64_t dur, int32_t grid, int32_t block,
                            uint32_t stream = 7) {
    core::KernelRecord k;
    k.process_id = pid_;
    k.stream_id = stream;
    k.correlation_id = ++corr_;
    k.start_ns = start;
    k.end_ns = start + dur;
    k.grid_x = grid;
    k.grid_y = k.grid_z = 1;
    k.block_x = block;
    k.block_y = k.block_z = 1;
    k.registers_per_thread = 40;
    k.theoretical_occupancy = 0.75;
    k.theoretical_blocks_per_sm = 6;
    k.occupancy_limiter = "registers";
    k.launch_api = "cudaLaunchKernel";
    k.name = name;
    k.demangled_name = name;
    return k;
  }
  int64_t add(const core::KernelRecord& k) {
    const int64_t id = w_->nextKernelId();
    w_->add(k);
    return id;
  }
  void args(const core::KernelRecord& k, std::initializer_list<uint64_t> ptrs) {
    int32_t i = 0;
    for (uint64_t v : ptrs) {
      w_->add(core::KernelArgRecord{k.correlation_id, pid_, i, i * 8, 8, v});
      ++i;
    }
  }
  void mem(uint64_t addr, int64_t bytes, int64_t ts, bool alloc = true) {
    core::MemoryEventRecord m;
    m.process_id = pid_;
    m.timestamp_ns = ts;
    m.is_alloc = alloc;
    m.address = addr;
    m.bytes = bytes;
    m.memory_kind = "device";
    w_->add(m);
  }
  void range(uint64_t key, std::optional<uint64_t> parent, const std::string& msg, int64_t start, int64_t end,
             uint64_t payload) {
    core::NvtxRangeRecord r;
    r.key = key;
    r.process_id = pid_;
    r.parent_key = parent;
    r.domain = "fprof";
    r.message = msg;
    r.payload = payload;
    r.thread_id = 1;
    r.depth = parent ? 1 : 0;
    r.start_ns = start;
    r.end_ns = end;
    w_->add(r);
  }
  void counters(int64_t id, double flops_fp32, double flops_tensor, double dram_read, double dram_write) {
    core::KernelCounters c;
    c.kernel_id = id;
    c.flops_fp32 = flops_fp32;
    if (flops_tensor > 0) c.flops_tensor_fp16 = flops_tensor;
    c.dram_read_bytes = dram_read;
    c.dram_write_bytes = dram_write;
    c.l2_bytes = (dram_read + dram_write) * 1.5;
    c.achieved_occupancy = 0.6;
    w_->add(c);
  }
  void close() { check(w_->close()); }
  uint32_t pid() const { return pid_; }

 private:
  std::unique_ptr<core::Writer> w_;
  uint32_t pid_ = 0;
  uint32_t corr_ = 0;
};

// The model fixture: an NVTX-declared matmul+bias+relu pair (unfused, fused, vendor) over three
// repeats, an undeclared data-flow chain (add -> mul -> gelu), library kernels of several origins,
// a graph launch and a second stream. With metrics: counters and measured DRAM/FP32 ceilings.
void writeModel(const std::string& path, bool metrics) {
  Fixture f(path);
  if (metrics) {
    f.w().add(core::CeilingRecord{"NVIDIA H100 80GB HBM3", "dram", "bytes_per_s", 3.0e12, "measured",
                                  "copy kernel (bytes read + written)"});
    f.w().add(core::CeilingRecord{"NVIDIA H100 80GB HBM3", "fp32", "flops_per_s", 6.0e13, "measured", "FFMA chains"});
    f.w().add(core::CeilingRecord{"NVIDIA H100 80GB HBM3", "l2", "bytes_per_s", 7.5e12, "measured", "L2-resident read"});
    f.w().add(core::CeilingRecord{"NVIDIA H100 80GB HBM3", "tensor_fp16", "flops_per_s", 8.0e14, "measured",
                                  "cuBLASLt GEMM"});
  }
  constexpr uint64_t kX = 0x7f0000000000, kW = 0x7f0000400000, kT0 = 0x7f0000800000, kY = 0x7f0000c00000,
                     kA = 0x7f0001000000, kB = 0x7f0001400000, kC = 0x7f0001800000, kD = 0x7f0001c00000;
  const int64_t mib4 = 4 << 20;
  int64_t ts = 100;
  for (uint64_t a : {kX, kW, kT0, kY, kA, kB, kC, kD}) f.mem(a, mib4, ts++);
  Lcg rng{42};
  int64_t t = 10000;
  uint64_t key = 1;
  for (uint64_t rep = 0; rep < 3; ++rep) {
    // Unfused: matmul (tensor cores) then bias_relu, intermediate t0 (4 MiB).
    const uint64_t top = key++;
    const int64_t top_start = t;
    const uint64_t s1 = key++, s2 = key++;
    auto mm = f.kernel("void gemm_tensor_kernel<128, 128>(float const*, float const*, float*)", t + 500,
                       60000 + static_cast<int64_t>(rng.next() * 600), 256, 256);
    mm.nvtx_range_key = s1;
    mm.nvtx_path = "fprof::op=matmul_bias_relu variant=unfused pair=mbr/op=matmul";
    const int64_t mm_id = f.add(mm);
    f.args(mm, {kX, kW, kT0});
    f.range(s1, top, "op=matmul variant=unfused pair=mbr reads=x,w writes=t0", t + 100, mm.end_ns + 100, rep);
    t = mm.end_ns + 2000;
    auto br = f.kernel("void bias_relu_kernel<float>(float const*, float const*, float*, int)", t,
                       9000 + static_cast<int64_t>(rng.next() * 90), 4096, 256);
    br.nvtx_range_key = s2;
    br.nvtx_path = "fprof::op=matmul_bias_relu variant=unfused pair=mbr/op=bias_relu";
    const int64_t br_id = f.add(br);
    f.args(br, {kT0, kW, kY});
    f.range(s2, top, "op=bias_relu variant=unfused pair=mbr reads=t0,b writes=y", t - 100, br.end_ns + 100, rep);
    f.range(top, std::nullopt, "op=matmul_bias_relu variant=unfused pair=mbr reads=x,w,b writes=y", top_start,
            br.end_ns + 300, rep);
    t = br.end_ns + 5000;
    // Fused and vendor variants.
    const uint64_t fk = key++;
    auto fused = f.kernel("void gemm_bias_relu_fused<128, 128>(float const*, float const*, float const*, float*)",
                          t + 200, 62000 + static_cast<int64_t>(rng.next() * 600), 256, 256);
    fused.nvtx_range_key = fk;
    fused.nvtx_path = "fprof::op=matmul_bias_relu variant=fused pair=mbr";
    const int64_t fused_id = f.add(fused);
    f.range(fk, std::nullopt, "op=matmul_bias_relu variant=fused pair=mbr reads=x,w,b writes=y", t, fused.end_ns + 200,
            rep);
    t = fused.end_ns + 5000;
    const uint64_t vk = key++;
    auto vendor = f.kernel("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_cublas", t + 200,
                           58000 + static_cast<int64_t>(rng.next() * 600), 264, 384);
    vendor.nvtx_range_key = vk;
    vendor.nvtx_path = "fprof::op=matmul_bias_relu variant=vendor pair=mbr";
    f.add(vendor);
    f.range(vk, std::nullopt, "op=matmul_bias_relu variant=vendor pair=mbr reads=x,w,b writes=y", t,
            vendor.end_ns + 200, rep);
    t = vendor.end_ns + 5000;
    if (metrics) {
      // 2*M*N*K with M=N=K=2048 on tensor cores; the fp32 epilogue is small.
      f.counters(mm_id, 0, 1.718e10, 1.2e7, 4.2e6);
      f.counters(br_id, 4.2e6, 0, 8.4e6, 4.2e6);
      f.counters(fused_id, 4.2e6, 1.718e10, 1.2e7, 4.2e6);
    }
    // Undeclared chain: add -> mul -> gelu, each 4 MiB in, 4 MiB out.
    auto add = f.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)",
                        t, 4000 + static_cast<int64_t>(rng.next() * 40), 1024, 256);
    const int64_t add_id = f.add(add);
    f.args(add, {kA, kY, kB});
    t = add.end_ns + 1500;
    auto mul = f.kernel("triton_poi_fused_mul_0", t, 3800 + static_cast<int64_t>(rng.next() * 40), 1024, 256);
    const int64_t mul_id = f.add(mul);
    f.args(mul, {kB, kC});
    t = mul.end_ns + 1500;
    auto gelu = f.kernel("gelu_kernel", t, 3900 + static_cast<int64_t>(rng.next() * 40), 1024, 256);
    const int64_t gelu_id = f.add(gelu);
    f.args(gelu, {kC, kD});
    t = gelu.end_ns + 3000;
    if (metrics) {
      f.counters(add_id, 1.05e6, 0, 6.0e6, 3.0e6);
      f.counters(mul_id, 1.05e6, 0, 3.0e6, 3.0e6);
      f.counters(gelu_id, 8.4e6, 0, 3.0e6, 3.0e6);
    }
    // A tiny launch-bound kernel, a latency-bound one, and an NCCL kernel on another stream.
    auto tiny = f.kernel("void fill_kernel<float>(float*, float, int)", t, 1800, 8, 128);
    f.add(tiny);
    f.args(tiny, {kD});
    t = tiny.end_ns + 1000;
    auto small = f.kernel("reduce_rows_kernel", t, 25000, 16, 1024);
    f.add(small);
    f.args(small, {kD, kA});
    auto nccl = f.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", t + 2000,
                         30000, 32, 512, 13);
    f.add(nccl);
    t = small.end_ns + 4000;
    // A graph launch with two kernel nodes (one correlation id).
    auto g1 = f.kernel("graph_node_a", t, 5000, 264, 256);
    auto g2 = f.kernel("graph_node_b", t + 5500, 5000, 264, 256);
    g1.graph_id = g2.graph_id = 3;
    g1.graph_node_id = 1;
    g2.graph_node_id = 2;
    g2.correlation_id = g1.correlation_id;
    g1.launch_api = g2.launch_api = "cudaGraphLaunch";
    f.add(g1);
    f.add(g2);
    t = g2.end_ns + 20000;
  }
  f.mem(kT0, mib4, t, false);
  f.mem(kA, mib4, t + 1, false);
  f.close();
}

// Diff/gate runs: the same two kernels, 40 launches each, with per-run noise; knobs for a slower
// kernel, more DRAM bytes and a rename.
struct RunKnobs {
  uint64_t seed = 1;
  double gemm_scale = 1.0;
  double gemm_dram_bytes = 1.0e8;
  const char* gemm_name = "void gemm_kernel<128>(float const*, float const*, float*)";
};

void writeRun(const std::string& path, const RunKnobs& k) {
  Fixture f(path);
  Lcg rng{k.seed};
  int64_t t = 1000;
  for (int i = 0; i < 40; ++i) {
    auto g = f.kernel(k.gemm_name, t, static_cast<int64_t>(100000 * k.gemm_scale * (1 + 0.03 * rng.next())), 264, 256);
    g.nvtx_path = "fprof::op=step";
    const int64_t gid = f.add(g);
    f.counters(gid, 2.0e9, 0, k.gemm_dram_bytes * 0.75, k.gemm_dram_bytes * 0.25);
    t = g.end_ns + 1000;
    auto r = f.kernel("relu_kernel", t, static_cast<int64_t>(20000 * (1 + 0.03 * rng.next())), 2048, 256);
    r.nvtx_path = "fprof::op=step";
    const int64_t rid = f.add(r);
    f.counters(rid, 4.0e6, 0, 1.6e7, 1.6e7);
    t = r.end_ns + 1000;
  }
  f.close();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  writeModel((dir / "model_trace.fprof").string(), false);
  writeModel((dir / "model_metrics.fprof").string(), true);
  writeRun((dir / "base.fprof").string(), {.seed = 1});
  writeRun((dir / "base_again.fprof").string(), {.seed = 2});
  writeRun((dir / "slower.fprof").string(), {.seed = 3, .gemm_scale = 1.10});
  writeRun((dir / "more_bytes.fprof").string(), {.seed = 4, .gemm_dram_bytes = 1.2e8});
  writeRun((dir / "renamed.fprof").string(),
           {.seed = 5, .gemm_name = "void gemm_kernel_v2<128>(float const*, float const*, float*)"});
  return 0;
}
