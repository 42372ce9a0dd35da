// Device limits and process facts gathered once at start-up.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fprof/core/model.h"
#include "injection/config.h"

namespace fprof::collector {

// Queries one CUDA device (ordinal) through the driver. None (and a warning) if the driver fails.
std::optional<core::DeviceInfo> queryDevice(uint32_t ordinal);

// pid, host, ranks, /proc/self/cmdline (arguments joined by spaces, quoted where needed).
core::ProcessInfo currentProcess(const Ranks& ranks, int64_t start_unix_ns);

}  // namespace fprof::collector
