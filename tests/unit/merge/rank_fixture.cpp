// Per-rank fixture databases (see rank_fixture.h).
#include "rank_fixture.h"

#include <filesystem>
#include <optional>

#include "fprof/core/store.h"
#include "sm90_limits.h"

namespace fprof::testing {
namespace {

core::DeviceInfo device(const RankFixture& f, uint32_t process_id) {
  core::DeviceInfo d;
  d.process_id = process_id;
  d.id = static_cast<uint32_t>(f.local_rank);
  d.name = f.device_name;
  const bool h100 = f.device_name.find("H100") != std::string::npos;
  d.uuid = "GPU-" + f.host + "-" + std::to_string(f.local_rank);
  setSm90Limits(d);
  d.sm_count = 132;
  d.l2_bytes = h100 ? 52428800 : 62914560;
  d.global_memory_bytes = h100 ? 85520809984 : 150110011392;
  d.memory_bus_width_bits = h100 ? 5120 : 6144;
  d.memory_clock_khz = h100 ? 2619000 : 3201000;
  d.sm_clock_khz = 1980000;
  return d;
}

}  // namespace

core::Status writeRankDatabase(const std::string& path, const RankFixture& f) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
  auto created = core::Writer::create(path, true);
  if (!created) return core::makeError(created.error());
  core::Writer& w = **created;
  for (const auto& [key, value] :
       {std::pair<std::string, std::string>{"fprof_version", "0.1.0"},
        {"mode", f.metrics ? "metrics" : "trace"},
        {"cupti_version", "130001"},
        {"dropped_records", "0"},
        {"start_unix_ns", std::to_string(f.start_unix_ns)}}) {
    if (auto st = w.setMetadata(key, value); !st) return st;
  }
  if (f.metrics) {
    if (auto st = w.setMetadata("metric_set", "roofline"); !st) return st;
  }
  core::ProcessInfo proc;
  proc.pid = f.pid;
  proc.host = f.host;
  proc.rank = f.rank;
  proc.local_rank = f.local_rank;
  proc.command_line = "python train.py --steps " + std::to_string(f.steps);
  proc.start_unix_ns = f.start_unix_ns;
  auto pid = w.addProcess(proc);
  if (!pid) return core::makeError(pid.error());
  if (auto st = w.addDevice(device(f, *pid)); !st) return st;
  if (f.measured_ceilings) {
    w.add(core::CeilingRecord{f.device_name, "dram", "bytes_per_s", f.measured_dram_bytes_per_s, "measured",
                              "fprof ceilings: stream copy"});
  }

  // Buffers: x (input), w (weights), t0 (matmul -> bias_relu), y (output), g (gradient buffer
  // the all-reduce sums). The same addresses in every rank, as two processes on two hosts get.
  const uint64_t x = 0x7f0000000000, wgt = 0x7f0000100000, t0 = 0x7f0000200000, y = 0x7f0000300000,
                 g = 0x7f0000400000;
  const int64_t buffer_bytes = 1 << 20;
  uint32_t correlation = 1;
  int64_t t = 1'000'000;
  for (uint64_t address : {x, wgt, t0, y, g}) {
    core::MemoryEventRecord m;
    m.process_id = *pid;
    m.device_id = static_cast<uint32_t>(f.local_rank);
    m.context_id = 1;
    m.correlation_id = correlation++;
    m.timestamp_ns = t;
    t += 1000;
    m.is_alloc = true;
    m.address = address;
    m.bytes = buffer_bytes;
    m.memory_kind = "device";
    w.add(m);
  }
  core::MemcpyRecord copy;
  copy.process_id = *pid;
  copy.device_id = static_cast<uint32_t>(f.local_rank);
  copy.context_id = 1;
  copy.stream_id = 7;
  copy.correlation_id = correlation++;
  copy.start_ns = t;
  copy.end_ns = t + 40'000;
  copy.bytes = buffer_bytes;
  copy.copy_kind = "HtoD";
  copy.src_kind = "pinned";
  copy.dst_kind = "device";
  w.add(copy);
  t += 50'000;
  core::MemsetRecord set;
  set.process_id = *pid;
  set.device_id = static_cast<uint32_t>(f.local_rank);
  set.context_id = 1;
  set.stream_id = 7;
  set.correlation_id = correlation++;
  set.start_ns = t;
  set.end_ns = t + 2'000;
  set.bytes = buffer_bytes;
  set.memory_kind = "device";
  w.add(set);
  t += 10'000;

  auto scaled = [&](int64_t ns) { return static_cast<int64_t>(static_cast<double>(ns) * f.slowdown); };
  uint64_t range_key = 1;
  auto range = [&](uint64_t key, std::optional<uint64_t> parent, const std::string& message, int depth,
                   int64_t start_ns, int64_t end_ns, int step) {
    core::NvtxRangeRecord r;
    r.key = key;
    r.process_id = *pid;
    r.parent_key = parent;
    r.domain = "fprof";
    r.message = message;
    r.payload = static_cast<uint64_t>(step);
    r.thread_id = 1;
    r.depth = depth;
    r.start_ns = start_ns;
    r.end_ns = end_ns;
    w.add(r);
  };
  struct Spec {
    const char* name;
    int64_t duration_ns;
    const char* stage;  // stage range under the op range; nullptr: in the all-reduce range
    int32_t grid_x, block_x, registers;
    std::vector<uint64_t> args;
    double flops_fp32, dram_bytes;
  };
  const std::vector<Spec> specs = {
      {"void gemm_kernel<128>(float const*, float const*, float*, int)", 120'000,
       "op=matmul variant=unfused pair=matmul_bias_relu reads=x,w writes=t0", 256, 256, 96, {x, wgt, t0}, 2.0e9, 6.0e6},
      {"bias_relu(float*, float const*, int)", 30'000,
       "op=bias_relu variant=unfused pair=matmul_bias_relu reads=t0 writes=y", 1024, 256, 16, {t0, y}, 2.6e5, 2.1e6},
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 80'000, nullptr, 2, 640, 64, {g},
       2.6e5, 4.2e6},
  };
  for (int step = 0; step < f.steps; ++step) {
    const uint64_t step_key = range_key++;
    const int64_t step_start = t;
    const uint64_t op_key = range_key++;
    const int64_t op_start = t + 500;
    t += 1000;
    for (const Spec& s : specs) {
      std::optional<uint64_t> key;
      std::string nvtx_path;
      const int64_t range_start = t;
      if (s.stage) {
        key = range_key++;
        nvtx_path = std::string("fprof::step/op=matmul_bias_relu variant=unfused pair=matmul_bias_relu reads=x,w writes=y/") +
               s.stage;
      } else {
        key = range_key++;
        nvtx_path = "fprof::step/allreduce";
      }
      core::KernelRecord k;
      k.process_id = *pid;
      k.device_id = static_cast<uint32_t>(f.local_rank);
      k.context_id = 1;
      k.stream_id = s.stage ? 7u : 13u;
      k.correlation_id = correlation++;
      k.thread_id = 1;
      k.start_ns = t + 2000;
      k.end_ns = k.start_ns + scaled(s.duration_ns);
      t = k.end_ns + 3000;
      k.grid_x = s.grid_x;
      k.grid_y = 1;
      k.grid_z = 1;
      k.block_x = s.block_x;
      k.block_y = 1;
      k.block_z = 1;
      k.registers_per_thread = s.registers;
      k.theoretical_occupancy = s.registers > 64 ? 0.5 : 1.0;
      k.theoretical_blocks_per_sm = s.registers > 64 ? 4 : 8;
      k.occupancy_limiter = s.registers > 64 ? "registers" : "warps";
      k.name = s.name;
      k.demangled_name = s.name;
      k.launch_api = "cudaLaunchKernel";
      k.nvtx_range_key = key;
      k.nvtx_path = nvtx_path;
      for (size_t a = 0; a < s.args.size(); ++a) {
        core::KernelArgRecord arg;
        arg.process_id = *pid;
        arg.correlation_id = k.correlation_id;
        arg.index = static_cast<int32_t>(a);
        arg.offset_bytes = static_cast<int32_t>(8 * a);
        arg.size_bytes = 8;
        arg.value = s.args[a];
        w.add(arg);
      }
      // As the collector does: NCCL kernels wait on other ranks, so metrics mode never replays them.
      if (f.metrics && s.stage) {
        core::KernelCounters c;
        c.flops_fp32 = s.flops_fp32;
        c.dram_read_bytes = s.dram_bytes * 0.5;
        c.dram_write_bytes = s.dram_bytes * 0.5;
        c.l2_bytes = s.dram_bytes * 1.5;
        c.l1_bytes = s.dram_bytes * 3;
        c.achieved_occupancy = 0.4;
        c.gpu_time_ns = static_cast<double>(k.end_ns - k.start_ns);
        w.addCountersForLaunch(*pid, k.correlation_id, 0, c,
                               {{"dram__bytes_read.sum", *c.dram_read_bytes},
                                {"dram__bytes_write.sum", *c.dram_write_bytes}});
      }
      w.add(k);
      range(*key, s.stage ? std::optional<uint64_t>(op_key) : std::optional<uint64_t>(step_key),
            s.stage ? s.stage : "allreduce", s.stage ? 2 : 1, range_start, t - 500, step);
    }
    range(op_key, step_key, "op=matmul_bias_relu variant=unfused pair=matmul_bias_relu reads=x,w writes=y", 1, op_start,
          t - 200, step);
    range(step_key, std::nullopt, "step", 0, step_start, t, step);
    t += 20'000;
  }
  core::CollectorEventRecord started{*pid, 0, "info", "collector started (rank " + std::to_string(f.rank) + ")"};
  w.add(started);
  if (f.metrics) {
    w.add(core::CollectorEventRecord{*pid, t, "warning",
                                     "NCCL kernels wait on other ranks: " + std::to_string(f.steps) +
                                         " launches kept in trace mode, without counters"});
  }
  if (auto st = w.close(); !st) return st;
  return {};
}

std::vector<RankFixture> threeRanks() {
  RankFixture r0;
  RankFixture r1;
  r1.rank = 1;
  r1.local_rank = 1;
  r1.slowdown = 1.25;
  RankFixture r2;
  r2.rank = 2;
  r2.local_rank = 0;
  r2.host = "nodeB";
  r2.metrics = true;
  r2.device_name = "NVIDIA H100 80GB HBM3";
  r2.slowdown = 1.5;
  r2.measured_dram_bytes_per_s = 3.0e12;
  return {r0, r1, r2};
}

std::vector<std::string> writeThreeRanks(const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> paths;
  for (const RankFixture& f : threeRanks()) {
    const std::string path = dir + "/job.rank" + std::to_string(f.rank) + ".fprof";
    if (auto st = writeRankDatabase(path, f); !st) return {};
    paths.push_back(path);
  }
  return paths;
}

}  // namespace fprof::testing
