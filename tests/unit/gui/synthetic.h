// A synthetic .fprof with hardware counters, measured ceilings and a declared NVTX op pair
// (unfused gemm -> relu, and the fused variant), with numbers chosen so placements are exact.
// Shared by the GUI unit tests and tests/gui's fixture generator (screenshots, benchmarks).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "fprof/core/store.h"

namespace fprof::gui::testing {

struct SyntheticOptions {
  int repeats = 4;            // instances of the op pair (each: unfused gemm + relu, and fused)
  int64_t extra_kernels = 0;  // more counted kernels spread over the plot (for 100,000-point runs)
  double saxpy_slowdown = 1.0;  // scales saxpy's duration (to make a regressed "current" run)
  int saxpy_launches = 1;       // repeats give the gate's significance test something to work on
  bool counters = true;       // false: a trace-only database
};

inline constexpr const char* kDeviceName = "NVIDIA H100 80GB HBM3";
// Measured roofs written to the ceiling table.
inline constexpr double kDramBytesPerS = 3.0e12;
inline constexpr double kL2BytesPerS = 1.0e13;
inline constexpr double kL1BytesPerS = 3.0e13;
inline constexpr double kFp32FlopsPerS = 5.0e13;
inline constexpr double kTensorFp16FlopsPerS = 7.0e14;
// saxpy: 2e9 fp32 FLOPs, 8e9 + 4e9 DRAM bytes, 5 ms -> intensity 1/6, 400 GFLOP/s.
inline constexpr int64_t kSaxpyNs = 5'000'000;

inline core::KernelRecord kernel(const std::string& name, int64_t start_ns, int64_t duration_ns, uint32_t corr) {
  core::KernelRecord k;
  k.process_id = 1;
  k.name = name;
  k.demangled_name = name;
  k.correlation_id = corr;
  k.start_ns = start_ns;
  k.end_ns = start_ns + duration_ns;
  k.grid_x = 264;
  k.grid_y = k.grid_z = 1;
  k.block_x = 256;
  k.block_y = k.block_z = 1;
  k.registers_per_thread = 40;
  k.static_shared_bytes = 1024;
  k.dynamic_shared_bytes = 0;
  k.local_bytes_per_thread = 0;
  k.theoretical_occupancy = 0.75;
  k.stream_id = 7;
  k.launch_api = "cudaLaunchKernel";
  return k;
}

// Writes the database at path (replacing it). Returns "" or the error.
inline std::string writeSynthetic(const std::string& path, const SyntheticOptions& o = {}) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  auto created = core::Writer::create(path);
  if (!created) return created.error();
  core::Writer& w = **created;
  if (auto s = w.setMetadata("mode", o.counters ? "metrics" : "trace"); !s) return s.error();
  core::ProcessInfo pr;
  pr.pid = 1234;
  pr.host = "synthetic";
  pr.command_line = "./model --ops mlp";
  auto pid = w.addProcess(pr);
  if (!pid) return pid.error();
  core::DeviceInfo d;
  d.process_id = *pid;
  d.name = kDeviceName;
  d.compute_major = 9;
  d.compute_minor = 0;
  d.sm_count = 132;
  d.max_threads_per_sm = 2048;
  d.max_threads_per_block = 1024;
  d.max_blocks_per_sm = 32;
  d.max_warps_per_sm = 64;
  d.regs_per_sm = 65536;
  d.regs_per_block = 65536;
  d.shared_per_sm_bytes = 233472;
  d.shared_per_block_bytes = 49152;
  d.l2_bytes = 52428800;
  d.global_memory_bytes = 85899345920;
  d.memory_bus_width_bits = 5120;
  d.memory_clock_khz = 2619000;
  d.sm_clock_khz = 1980000;
  if (auto s = w.addDevice(d); !s) return s.error();
  const auto ceiling = [&](const char* name, const char* unit, double v) {
    w.add(core::CeilingRecord{kDeviceName, name, unit, v, "measured", "synthetic"});
  };
  ceiling("dram", "bytes_per_s", kDramBytesPerS);
  ceiling("l2", "bytes_per_s", kL2BytesPerS);
  ceiling("l1", "bytes_per_s", kL1BytesPerS);
  ceiling("fp32", "flops_per_s", kFp32FlopsPerS);
  ceiling("tensor_fp16", "flops_per_s", kTensorFp16FlopsPerS);

  uint32_t corr = 1;
  int64_t t = 1'000'000;
  // Metrics mode collects every FLOP counter: a precision a kernel does not use reads 0, not absent.
  auto counted = [&](core::KernelRecord k, const core::KernelCounters& c) {
    core::KernelCounters cc = c;
    for (std::optional<double>* f : {&cc.flops_fp64, &cc.flops_fp32, &cc.flops_fp16, &cc.flops_bf16, &cc.flops_tensor_fp16,
                                     &cc.flops_tensor_bf16, &cc.flops_tensor_tf32, &cc.flops_tensor_fp8,
                                     &cc.flops_tensor_fp64, &cc.ops_tensor_int8}) {
      if (!*f) *f = 0.0;
    }
    cc.kernel_id = w.nextKernelId();
    w.add(k);
    if (o.counters) w.add(cc);
  };

  // saxpy, outside any NVTX range; exact numbers (see kSaxpyNs).
  for (int n = 0; n < o.saxpy_launches; ++n) {
    core::KernelRecord k = kernel("saxpy(int, float, const float*, float*)", t,
                                  static_cast<int64_t>(static_cast<double>(kSaxpyNs) * o.saxpy_slowdown), corr++);
    core::KernelCounters c;
    c.flops_fp32 = 2e9;
    c.dram_read_bytes = 8e9;
    c.dram_write_bytes = 4e9;
    c.l2_bytes = 1.2e10;
    c.l1_bytes = 1.2e10;
    c.achieved_occupancy = 0.5;
    counted(k, c);
    t = k.end_ns + 1000;
  }

  // The declared pair p1: unfused (gemm then relu through buffer h), and fused.
  uint64_t key = 1;
  const std::string unfused_msg = "op=mlp variant=unfused pair=p1 reads=x writes=y";
  const std::string fused_msg = "op=mlp variant=fused pair=p1 reads=x writes=y";
  for (int r = 0; r < o.repeats; ++r) {
    const uint64_t op_key = key++, gemm_key = key++, relu_key = key++, fused_key = key++;
    auto range = [&](uint64_t k, std::optional<uint64_t> parent, const std::string& msg, int64_t start, int64_t end,
                     int depth) {
      core::NvtxRangeRecord n;
      n.key = k;
      n.process_id = *pid;
      n.parent_key = parent;
      n.domain = "fprof";
      n.message = msg;
      n.payload = static_cast<uint64_t>(r);
      n.depth = depth;
      n.start_ns = start;
      n.end_ns = end;
      w.add(n);
    };
    const int64_t op_start = t;
    core::KernelRecord g = kernel("gemm_f16_tensorop", t + 100, 200'000, corr++);
    g.nvtx_range_key = gemm_key;
    g.nvtx_path = "fprof::" + unfused_msg + "/op=gemm reads=x writes=h";
    g.registers_per_thread = 168;
    g.dynamic_shared_bytes = 98304;
    g.theoretical_occupancy = 0.125;
    core::KernelCounters gc;
    gc.flops_tensor_fp16 = 6.872e10;
    gc.dram_read_bytes = 5.0e7;
    gc.dram_write_bytes = 3.3554432e7;  // h: 4096 x 4096 fp16
    gc.l2_bytes = 4.0e8;
    gc.l1_bytes = 2.0e9;
    gc.achieved_occupancy = 0.12;
    counted(g, gc);
    core::KernelRecord rl = kernel("relu_f16", g.end_ns + 2000, 30'000, corr++);
    rl.nvtx_range_key = relu_key;
    rl.nvtx_path = "fprof::" + unfused_msg + "/op=relu reads=h writes=y";
    core::KernelCounters rc;
    rc.flops_fp32 = 1.6777216e7;
    rc.dram_read_bytes = 3.3554432e7;
    rc.dram_write_bytes = 3.3554432e7;
    rc.l2_bytes = 6.7108864e7;
    rc.l1_bytes = 6.7108864e7;
    rc.achieved_occupancy = 0.7;
    counted(rl, rc);
    range(op_key, std::nullopt, unfused_msg, op_start, rl.end_ns + 100, 0);
    range(gemm_key, op_key, "op=gemm reads=x writes=h", g.start_ns - 50, g.end_ns + 50, 1);
    range(relu_key, op_key, "op=relu reads=h writes=y", rl.start_ns - 50, rl.end_ns + 50, 1);
    t = rl.end_ns + 5000;
    core::KernelRecord f = kernel("gemm_relu_fused_f16", t + 100, 205'000, corr++);
    f.nvtx_range_key = fused_key;
    f.nvtx_path = "fprof::" + fused_msg;
    f.registers_per_thread = 200;
    f.dynamic_shared_bytes = 98304;
    f.theoretical_occupancy = 0.125;
    core::KernelCounters fc;
    fc.flops_tensor_fp16 = 6.872e10;
    fc.flops_fp32 = 1.6777216e7;
    fc.dram_read_bytes = 5.0e7;
    fc.dram_write_bytes = 3.3554432e7;
    fc.l2_bytes = 3.4e8;
    fc.l1_bytes = 2.0e9;
    fc.achieved_occupancy = 0.12;
    counted(f, fc);
    range(fused_key, std::nullopt, fused_msg, t, f.end_ns + 100, 0);
    t = f.end_ns + 5000;
  }

  // Many more kernels, spread deterministically over intensity 0.01..1000 and 1..95% of roof.
  uint64_t state = 88172645463325252ull;
  auto next = [&]() {  // xorshift64: the same database on every machine
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<double>(state % 1000000) / 1e6;
  };
  for (int64_t i = 0; i < o.extra_kernels; ++i) {
    const double intensity = std::pow(10.0, -2 + 5 * next());
    const double roof = std::min(kDramBytesPerS * intensity, kFp32FlopsPerS);
    const double rate = roof * (0.01 + 0.94 * next());
    const int64_t ns = 2000 + static_cast<int64_t>(next() * 200000);
    const double flops = rate * static_cast<double>(ns) * 1e-9;
    core::KernelRecord k = kernel("bench_kernel_" + std::to_string(i % 50), t, ns, corr++);
    core::KernelCounters c;
    c.flops_fp32 = flops;
    c.dram_read_bytes = flops / intensity;
    c.dram_write_bytes = 0;
    c.l2_bytes = flops / intensity * 2;
    c.l1_bytes = flops / intensity * 4;
    counted(k, c);
    t += ns + 500;
    if (w.pendingRecords() > 50000) {
      if (auto s = w.flush(); !s) return s.error();
    }
  }
  if (auto s = w.close(); !s) return s.error();
  return "";
}

}  // namespace fprof::gui::testing
