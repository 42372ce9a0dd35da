// Synthetic .fprof databases for the analysis tests, built with core::Writer and read back with
// core::loadProfile, so the tests go through the same path as real files.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "fprof/core/store.h"
#include "sm90_limits.h"

namespace fprof::analysis::testing {

// A round-numbered GPU: 100 SMs at 1 GHz, DRAM 2 x 1 GHz x 4096 bits / 8 = 1.024e12 B/s,
// FP32 100 x 256 x 1e9 = 2.56e13 FLOP/s, tensor FP16 100 x 4096 x 1e9 = 4.096e14 FLOP/s (sm_90 table).
inline core::DeviceInfo testDevice() {
  core::DeviceInfo d;
  d.process_id = 1;
  d.id = 0;
  d.name = "TestGPU";
  ::fprof::testing::setSm90Limits(d);
  d.sm_count = 100;
  d.l2_bytes = 50 << 20;
  d.global_memory_bytes = int64_t{80} << 30;
  d.memory_bus_width_bits = 4096;
  d.memory_clock_khz = 1000000;
  d.sm_clock_khz = 1000000;
  return d;
}

// Builds a database in the test's temporary directory; load() closes and reads it back.
class DbBuilder {
 public:
  explicit DbBuilder(const std::string& name) {
    dir_ = std::filesystem::path(FPROF_TEST_TMP) / "analysis";
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / (name + ".fprof")).string();
    auto w = core::Writer::create(path_, true);
    EXPECT_TRUE(w.ok()) << (w.ok() ? "" : w.error());
    writer_ = std::move(*w);
    core::ProcessInfo pi;
    pi.pid = 4242;
    pi.host = "testhost";
    pi.command_line = "./model";
    auto id = writer_->addProcess(pi);
    EXPECT_TRUE(id.ok());
    process_id_ = *id;
    core::DeviceInfo d = testDevice();
    d.process_id = process_id_;
    EXPECT_TRUE(writer_->addDevice(d).ok());
  }

  uint32_t processId() const { return process_id_; }
  core::Writer& writer() { return *writer_; }
  const std::string& path() const { return path_; }

  // A kernel with a 256-thread block and 200 blocks (enough for 100 SMs), 32 registers.
  core::KernelRecord kernel(const std::string& name, int64_t start_ns, int64_t duration_ns, uint32_t stream = 7) {
    core::KernelRecord k;
    k.process_id = process_id_;
    k.device_id = 0;
    k.stream_id = stream;
    k.correlation_id = ++correlation_;
    k.start_ns = start_ns;
    k.end_ns = start_ns + duration_ns;
    k.grid_x = 200;
    k.grid_y = k.grid_z = 1;
    k.block_x = 256;
    k.block_y = k.block_z = 1;
    k.registers_per_thread = 32;
    k.theoretical_occupancy = 1.0;
    k.name = name;
    k.demangled_name = name;
    return k;
  }
  // Adds the kernel and returns its id (for counters).
  int64_t add(const core::KernelRecord& k) {
    const int64_t id = writer_->nextKernelId();
    writer_->add(k);
    return id;
  }
  void args(const core::KernelRecord& k, std::initializer_list<uint64_t> pointers) {
    int32_t i = 0;
    for (uint64_t v : pointers) {
      writer_->add(core::KernelArgRecord{k.correlation_id, process_id_, i, i * 8, 8, v});
      ++i;
    }
  }
  void alloc(uint64_t address, int64_t bytes, int64_t ts, bool is_alloc = true) {
    core::MemoryEventRecord m;
    m.process_id = process_id_;
    m.timestamp_ns = ts;
    m.is_alloc = is_alloc;
    m.address = address;
    m.bytes = bytes;
    m.memory_kind = "device";
    writer_->add(m);
  }
  void range(uint64_t key, std::optional<uint64_t> parent, const std::string& message, int64_t start_ns,
             int64_t end_ns, uint64_t payload = 0, const std::string& domain = "fprof") {
    core::NvtxRangeRecord r;
    r.key = key;
    r.process_id = process_id_;
    r.parent_key = parent;
    r.domain = domain;
    r.message = message;
    r.payload = payload;
    r.start_ns = start_ns;
    r.end_ns = end_ns;
    writer_->add(r);
  }

  core::Profile load() {
    EXPECT_TRUE(writer_->close().ok());
    auto p = core::loadProfile(path_);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error());
    return std::move(*p);
  }

 private:
  std::filesystem::path dir_;
  std::string path_;
  std::unique_ptr<core::Writer> writer_;
  uint32_t process_id_ = 0;
  uint32_t correlation_ = 0;
};

}  // namespace fprof::analysis::testing
