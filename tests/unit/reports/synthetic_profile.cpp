// Synthetic profiles (see synthetic_profile.h).
#include "synthetic_profile.h"

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fprof/core/store.h"

namespace fprof::testing {
namespace {

constexpr int64_t kRunStartUnixNs = 1795219200LL * 1000000000LL;  // 2026-11-21 00:00:00 UTC
constexpr int64_t kTraceStartNs = 1000000000;

core::DeviceInfo h100() {
  core::DeviceInfo d;
  d.process_id = 1;
  d.id = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.uuid = "GPU-00000000-0000-0000-0000-000000000000";
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
  d.shared_per_block_optin_bytes = 232448;
  d.l2_bytes = 52428800;
  d.global_memory_bytes = 85520809984;
  d.memory_bus_width_bits = 5120;
  d.memory_clock_khz = 2619000;
  d.sm_clock_khz = 1980000;
  return d;
}

void addCeilings(core::Writer& w, bool measured) {
  const std::string dev = "NVIDIA H100 80GB HBM3";
  auto add = [&](const char* name, const char* unit, double value, const char* source, const char* method) {
    w.add(core::CeilingRecord{dev, name, unit, value, source, method});
  };
  add("dram", "bytes_per_s", 3.35e12, "datasheet", "memory clock x bus width x 2 (DDR)");
  add("fp32", "flops_per_s", 66.9e12, "datasheet", "SMs x 128 FP32 lanes x 2 x boost clock");
  add("fp16", "flops_per_s", 133.8e12, "datasheet", "SMs x 256 FP16 lanes x 2 x boost clock");
  add("tensor_fp16", "flops_per_s", 989.4e12, "datasheet", "dense tensor core rate at boost clock");
  if (measured) {
    add("dram", "bytes_per_s", 3.0e12, "measured", "fprof ceilings: streaming copy, 4 GiB");
    add("l2", "bytes_per_s", 10.0e12, "measured", "fprof ceilings: L2-resident read, 24 MiB");
    add("l1", "bytes_per_s", 30.0e12, "measured", "fprof ceilings: shared/L1-resident read");
    add("fp32", "flops_per_s", 60.0e12, "measured", "fprof ceilings: FMA chain, all SMs");
    add("tensor_fp16", "flops_per_s", 700.0e12, "measured", "fprof ceilings: mma.sync m16n8k16 loop");
  }
}

struct KernelSpec {
  std::string name;
  int grid_x, grid_y, block_x;
  int registers;
  int64_t local_bytes_per_thread;
  int calls;
  int64_t duration_ns;
  std::string op;     // op range message (docs/nvtx-convention.md); "" = outside any range
  std::string stage;  // stage range nested in the op range; "" = none
  // Counters per call.
  double flops_fp32, flops_fp16, flops_tensor_fp16;
  double dram_bytes, l2_bytes, l1_bytes;
  double spill_bytes;
  double achieved_occupancy;
  double theoretical_occupancy;
};

const char* const kMbrUnfused = "op=matmul_bias_relu variant=unfused pair=matmul_bias_relu reads=x,w,b writes=y";
const char* const kMbrFused = "op=matmul_bias_relu variant=fused pair=matmul_bias_relu reads=x,w,b writes=y";
const char* const kRlUnfused = "op=residual_layernorm variant=unfused pair=residual_layernorm reads=x,r,g writes=h";
const char* const kAttnUnfused = "op=attention variant=unfused pair=attention reads=s,v writes=o";

std::vector<KernelSpec> specs(const SyntheticOptions& o) {
  const std::string gemm = "void gemm_kernel<float, 128, 128>(float const*, float const*, float*, int, int, int)";
  std::vector<KernelSpec> k = {
      {gemm, 64, 8, 256, 48, 0, 10, 400000, kMbrUnfused,
       "op=matmul variant=unfused pair=matmul_bias_relu reads=x,w writes=t0", 8.0e9, 0, 0, 1.2e8, 6.0e8, 2.4e9, 0, 0.45,
       0.5},
      {"bias_relu_kernel(float*, float const*, int)", 4096, 1, 256, 16, 0, 10,
       static_cast<int64_t>(std::llround(60000 * o.slowdown)), kMbrUnfused,
       "op=bias_relu variant=unfused pair=matmul_bias_relu reads=t0,b writes=y", 1.6e7, 0, 0, 6.7e7, 6.7e7, 6.7e7, 0,
       0.9, 1.0},
      {"void gemm_bias_relu_fused<float, 128, 128>(float const*, float const*, float const*, float*, int, int, int)", 64,
       8, 256, 56, 0, 10, 430000, kMbrFused, "", 8.016e9, 0, 0, 1.2e8, 6.0e8, 2.4e9, 0, 0.35, 0.375},
      {gemm, 32, 8, 256, 48, 0, 4, 220000, "op=matmul variant=vendor reads=x2,w2 writes=y2", "", 4.0e9, 0, 0, 7.0e7,
       3.0e8, 1.2e9, 0, 0.45, 0.5},
      {"residual_add(float*, float const*, float const*, int)", 2048, 1, 256, 12, 0, 20, 25000, kRlUnfused,
       "op=residual_add variant=unfused pair=residual_layernorm reads=x,r writes=t1", 4.0e6, 0, 0, 5.0e7, 5.0e7, 5.0e7, 0,
       0.92, 1.0},
      {"void layernorm_kernel<__half>(__half*, __half const*, __half const*, float, int)", 2048, 1, 128, 40, 0, 20, 30000,
       kRlUnfused, "op=layernorm variant=unfused pair=residual_layernorm reads=t1,g writes=h", 6.0e6, 2.0e7, 0, 2.0e7,
       2.4e7, 4.0e7, 0, 0.7, 0.75},
      {"void softmax_kernel<float>(float*, float const*, int) [with \"safe\" & masked]", 1024, 1, 256, 32, 0, 50, 40000,
       kAttnUnfused, "op=softmax variant=unfused pair=attention reads=s writes=p", 5.0e7, 0, 0, 8.0e7, 8.0e7, 1.6e8, 0,
       0.8, 1.0},
      {"void attention_pv_kernel<64, true>(__half const*, __half const*, __half*, float)", 128, 16, 128, 255, 96, 50,
       200000, kAttnUnfused, "op=pv variant=unfused pair=attention reads=p,v writes=o", 2.0e8, 0, 6.0e10, 3.0e8, 1.2e9,
       4.0e9, 4.0e6, 0.2, 0.25},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >"
       "(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
       512, 1, 128, 20, 0, 5, 8000, "", "", 1.0e6, 0, 0, 4.0e6, 4.0e6, 4.0e6, 0, 0.85, 1.0},
      {"void copy_kernel<float>(float*, float const*, long)", 256, 1, 256, 14, 0, 4, 12000, "", "", 0, 0, 0, 3.2e7, 3.2e7,
       3.2e7, 0, 0.9, 1.0},
  };
  if (o.hostile_names) {
    k.push_back({"<script>alert(1)</script>", 1, 1, 32, 8, 0, 1, 5000, "", "", 1.0e6, 0, 0, 1.0e6, 1.0e6, 1.0e6, 0, 0.5,
                 1.0});
    k.push_back({"</script><script>document.documentElement.setAttribute('data-injected','json')</script><!--", 1, 1, 32,
                 8, 0, 1, 5000,
                 "op=</script><script>document.documentElement.setAttribute('data-injected','op')</script> variant=fused",
                 "", 1.0e6, 0, 0, 1.0e6, 1.0e6, 1.0e6, 0, 0.5, 1.0});
    k.push_back({"<img src=x onerror=\"document.documentElement.setAttribute('data-injected','attr')\">", 1, 1, 32, 8, 0,
                 1, 5000, "", "", 1.0e6, 0, 0, 1.0e6, 1.0e6, 1.0e6, 0, 0.5, 1.0});
    k.push_back({"\"><svg onload=\"document.documentElement.setAttribute('data-injected','svg')\"></svg>", 1, 1, 32, 8,
                 0, 1, 5000, "", "", 1.0e6, 0, 0, 1.0e6, 1.0e6, 1.0e6, 0, 0.5, 1.0});
  }
  return k;
}

std::optional<double> nonZero(double v) { return v > 0 ? std::optional<double>(v) : std::nullopt; }

core::Status prepare(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
  return {};
}

}  // namespace

core::Status writeSyntheticProfile(const std::string& path, const SyntheticOptions& options) {
  if (auto st = prepare(path); !st) return st;
  auto created = core::Writer::create(path, true);
  if (!created) return core::makeError(created.error());
  core::Writer& w = **created;
  if (auto st = w.setMetadata("mode", options.counters ? "metrics" : "trace"); !st) return st;
  if (auto st = w.setMetadata("fprof_version", "0.1.0"); !st) return st;
  core::ProcessInfo proc;
  proc.pid = 4242;
  proc.host = "synthetic";
  proc.command_line = "./model --ops all --variant unfused";
  proc.start_unix_ns = kRunStartUnixNs;
  auto pid = w.addProcess(proc);
  if (!pid) return core::makeError(pid.error());
  core::DeviceInfo dev = h100();
  dev.process_id = *pid;
  if (auto st = w.addDevice(dev); !st) return st;
  addCeilings(w, options.counters);

  // Each op runs inside its NVTX op range, each stage kernel inside a nested stage range, as the
  // reference model does (docs/nvtx-convention.md); the payload is the iteration.
  const std::vector<KernelSpec> ks = specs(options);
  int64_t t = kTraceStartNs;
  uint32_t correlation = 1;
  uint64_t range_key = 1;
  const int iterations = 50;  // the largest call count; a spec runs in the first `calls` iterations
  auto range = [&](uint64_t key, std::optional<uint64_t> parent, const std::string& message, int depth,
                   int64_t start_ns, int64_t end_ns, int it) {
    core::NvtxRangeRecord r;
    r.key = key;
    r.process_id = *pid;
    r.parent_key = parent;
    r.domain = "fprof";
    r.message = message;
    r.payload = static_cast<uint64_t>(it);
    r.thread_id = 1;
    r.depth = depth;
    r.start_ns = start_ns;
    r.end_ns = end_ns;
    w.add(r);
  };
  for (int it = 0; it < iterations; ++it) {
    std::string open_op;
    std::optional<uint64_t> open_key;
    int64_t open_start = 0;
    auto closeOp = [&] {
      if (open_key) range(*open_key, std::nullopt, open_op, 0, open_start, t, it);
      open_key.reset();
      open_op.clear();
    };
    for (const KernelSpec& s : ks) {
      if (it >= s.calls) continue;
      if (s.op != open_op || !open_key) {
        closeOp();
        if (!s.op.empty()) {
          open_op = s.op;
          open_key = range_key++;
          open_start = t;
        }
      }
      std::optional<uint64_t> stage_key;
      const int64_t stage_start = t + 500;
      if (open_key && !s.stage.empty()) stage_key = range_key++;
      core::KernelRecord k;
      k.process_id = *pid;
      k.device_id = 0;
      k.context_id = 1;
      k.stream_id = 7;
      k.correlation_id = correlation++;
      k.thread_id = 1;
      k.start_ns = t + 2000;
      k.end_ns = k.start_ns + s.duration_ns;
      t = k.end_ns + 3000;
      k.grid_x = s.grid_x;
      k.grid_y = s.grid_y;
      k.grid_z = 1;
      k.block_x = s.block_x;
      k.block_y = 1;
      k.block_z = 1;
      k.registers_per_thread = s.registers;
      k.static_shared_bytes = s.registers > 100 ? 49152 : 0;
      k.local_bytes_per_thread = s.local_bytes_per_thread;
      k.theoretical_occupancy = s.theoretical_occupancy;
      k.name = s.name;
      k.demangled_name = s.name;
      k.launch_api = "cudaLaunchKernel";
      if (stage_key) {
        k.nvtx_range_key = *stage_key;
        k.nvtx_path = "fprof::" + s.op + "/" + s.stage;
        range(*stage_key, open_key, s.stage, 1, stage_start, t - 1000, it);
      } else if (open_key) {
        k.nvtx_range_key = *open_key;
        k.nvtx_path = "fprof::" + s.op;
      }
      if (options.counters) {
        core::KernelCounters c;
        c.kernel_id = w.nextKernelId();
        c.flops_fp32 = nonZero(s.flops_fp32);
        c.flops_fp16 = nonZero(s.flops_fp16);
        c.flops_tensor_fp16 = nonZero(s.flops_tensor_fp16);
        if (s.flops_fp32 == 0 && s.flops_fp16 == 0 && s.flops_tensor_fp16 == 0) c.flops_fp32 = 0.0;  // measured zero
        c.dram_read_bytes = s.dram_bytes * 0.5;
        c.dram_write_bytes = s.dram_bytes * 0.5;
        c.l2_bytes = s.l2_bytes;
        c.l1_bytes = s.l1_bytes;
        if (s.spill_bytes > 0) {
          c.local_load_bytes = s.spill_bytes / 2;
          c.local_store_bytes = s.spill_bytes / 2;
        }
        c.achieved_occupancy = s.achieved_occupancy;
        c.gpu_time_ns = static_cast<double>(s.duration_ns);
        w.add(c);
      }
      w.add(k);
    }
    closeOp();
  }
  if (auto st = w.close(); !st) return st;
  return {};
}

core::Status writeLargeProfile(const std::string& path, int64_t kernels, int64_t distinct_names, bool counters) {
  if (auto st = prepare(path); !st) return st;
  auto created = core::Writer::create(path, true);
  if (!created) return core::makeError(created.error());
  core::Writer& w = **created;
  if (auto st = w.setMetadata("mode", counters ? "metrics" : "trace"); !st) return st;
  if (auto st = w.setMetadata("fprof_version", "0.1.0"); !st) return st;
  core::ProcessInfo proc;
  proc.pid = 4343;
  proc.host = "synthetic";
  proc.command_line = "./large_synthetic";
  proc.start_unix_ns = kRunStartUnixNs;
  auto pid = w.addProcess(proc);
  if (!pid) return core::makeError(pid.error());
  core::DeviceInfo dev = h100();
  dev.process_id = *pid;
  if (auto st = w.addDevice(dev); !st) return st;
  addCeilings(w, counters);
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(distinct_names));
  for (int64_t n = 0; n < distinct_names; ++n) {
    names.push_back("void synthetic_kernel_" + std::to_string(n) + "<float, " + std::to_string(n % 7) +
                    ">(float const*, float*, int)");
  }
  static const char* const kOps[] = {"embedding", "attention", "mlp", "layernorm", "logits"};
  std::vector<uint64_t> op_keys;
  for (uint64_t r = 0; r < 5; ++r) op_keys.push_back(r + 1);
  int64_t t = kTraceStartNs;
  for (int64_t i = 0; i < kernels; ++i) {
    const int64_t n = i % distinct_names;
    const int shape = static_cast<int>((i / distinct_names) % 4);
    const int64_t duration = 2000 + (n * 7919 + shape * 104729) % 50000;
    core::KernelRecord k;
    k.process_id = *pid;
    k.context_id = 1;
    k.stream_id = 7;
    k.correlation_id = static_cast<uint32_t>(i + 1);
    k.start_ns = t;
    k.end_ns = t + duration;
    t = k.end_ns + 1000;
    k.grid_x = 128 << shape;
    k.grid_y = 1;
    k.grid_z = 1;
    k.block_x = 256;
    k.block_y = 1;
    k.block_z = 1;
    k.registers_per_thread = 32 + static_cast<int32_t>(n % 64);
    k.theoretical_occupancy = 1.0;
    k.name = names[static_cast<size_t>(n)];
    k.demangled_name = k.name;
    const size_t op = static_cast<size_t>(n % 5);
    k.nvtx_range_key = op_keys[op];
    k.nvtx_path = std::string("fprof.model::") + kOps[op];
    if (counters) {
      core::KernelCounters c;
      c.kernel_id = w.nextKernelId();
      c.flops_fp32 = static_cast<double>(duration) * (1.0e3 + static_cast<double>(n % 13) * 2.0e3);
      c.dram_read_bytes = static_cast<double>(duration) * 1.0e3;
      c.dram_write_bytes = static_cast<double>(duration) * 0.5e3;
      c.l2_bytes = static_cast<double>(duration) * 3.0e3;
      c.l1_bytes = static_cast<double>(duration) * 9.0e3;
      w.add(c);
    }
    w.add(k);
    if (w.pendingRecords() >= 200000) {
      if (auto st = w.flush(); !st) return st;
    }
  }
  for (size_t r = 0; r < op_keys.size(); ++r) {
    core::NvtxRangeRecord range;
    range.key = op_keys[r];
    range.process_id = *pid;
    range.domain = "fprof.model";
    range.message = kOps[r];
    range.thread_id = 1;
    range.start_ns = kTraceStartNs;
    range.end_ns = t;
    w.add(range);
  }
  if (auto st = w.close(); !st) return st;
  return {};
}

}  // namespace fprof::testing
