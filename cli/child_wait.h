// Waiting for the profiled program's process (fprof run), with or without a deadline.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>

namespace fprof::cli {

inline constexpr int kNotStarted = -1;

// Waits for `child` (-1: fork failed, kNotStarted); SIGINT and SIGTERM are ignored here meanwhile
// (Ctrl-C reaches the child directly through the shared terminal: fprof only waits). Its wait status.
int waitForChild(pid_t child);

// The same with a deadline: past it the child is killed (SIGKILL) and reaped, and there is no status.
std::optional<int> waitForChildUntil(pid_t child, std::chrono::steady_clock::time_point deadline);

}  // namespace fprof::cli
