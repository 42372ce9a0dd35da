// Device and process facts; see device_query.h.
#include "trace/device_query.h"

#include <cuda.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "cupti/checks.h"

namespace fprof::collector {

std::optional<core::DeviceInfo> queryDevice(uint32_t ordinal) {
  CUdevice device = 0;
  if (!FPROF_CU_OK(cuDeviceGet(&device, static_cast<int>(ordinal)))) return std::nullopt;
  core::DeviceInfo d;
  d.id = ordinal;
  char name[256] = {0};
  if (FPROF_CU_OK(cuDeviceGetName(name, sizeof name - 1, device))) d.name = name;
  CUuuid uuid{};
  if (FPROF_CU_OK(cuDeviceGetUuid_v2(&uuid, device))) {
    char text[64];
    const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
    std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    d.uuid = text;
  }
  bool ok = true;
  auto attr = [&](CUdevice_attribute a) -> int {
    int v = 0;
    if (!FPROF_CU_OK(cuDeviceGetAttribute(&v, a, device))) ok = false;
    return v;
  };
  d.compute_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  d.compute_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  d.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  d.max_threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  d.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  d.max_blocks_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  d.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  d.max_warps_per_sm = d.warp_size > 0 ? d.max_threads_per_sm / d.warp_size : 0;
  d.regs_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  d.regs_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  d.shared_per_sm_bytes = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  d.shared_per_block_bytes = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  d.shared_per_block_optin_bytes = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  d.reserved_shared_per_block_bytes = attr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  d.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  d.memory_bus_width_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  d.memory_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  d.sm_clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  size_t total = 0;
  if (FPROF_CU_OK(cuDeviceTotalMem(&total, device))) d.global_memory_bytes = static_cast<int64_t>(total);
  if (!ok) logWarning("device %u: some attributes could not be read; occupancy may be missing", ordinal);
  return d;
}

core::ProcessInfo currentProcess(const Ranks& ranks, int64_t start_unix_ns) {
  core::ProcessInfo p;
  p.pid = getpid();
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) p.host = host;
  p.rank = ranks.rank;
  p.local_rank = ranks.local_rank;
  p.start_unix_ns = start_unix_ns;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string arg;
  for (char c : raw) {
    if (c != '\0') {
      arg += c;
      continue;
    }
    if (!p.command_line.empty()) p.command_line += ' ';
    const bool quote = arg.empty() || arg.find_first_of(" \t\"'\\$") != std::string::npos;
    if (quote) {
      p.command_line += '\'';
      for (char a : arg) p.command_line += a == '\'' ? std::string("'\\''") : std::string(1, a);
      p.command_line += '\'';
    } else {
      p.command_line += arg;
    }
    arg.clear();
  }
  return p;
}

}  // namespace fprof::collector
