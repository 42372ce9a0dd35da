// Helpers shared by the core tests: temporary paths and a small synthetic profile.
#pragma once

#include <filesystem>
#include <string>

#include "fprof/core/store.h"

namespace fprof::testing {

inline std::string tempPath(const std::string& name) {
  std::filesystem::create_directories(FPROF_TEST_TMP);
  std::string p = std::string(FPROF_TEST_TMP) + "/" + name;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(p + suffix);
  return p;
}

inline core::KernelRecord makeKernel(const std::string& name, int64_t start_ns, int64_t duration_ns,
                                     uint32_t correlation_id) {
  core::KernelRecord k;
  k.process_id = 1;
  k.name = name;
  k.demangled_name = name;
  k.correlation_id = correlation_id;
  k.start_ns = start_ns;
  k.end_ns = start_ns + duration_ns;
  k.grid_x = 128;
  k.grid_y = 1;
  k.grid_z = 1;
  k.block_x = 256;
  k.block_y = 1;
  k.block_z = 1;
  k.registers_per_thread = 32;
  k.stream_id = 7;
  return k;
}

}  // namespace fprof::testing
