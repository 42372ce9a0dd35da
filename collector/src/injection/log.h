// Messages to the target's stderr, each starting with "[fprof] ". The collector never writes to
// stdout: the target's output stays its own.
#pragma once

#include <atomic>

namespace fprof::collector {

void setQuiet(bool quiet);
void logInfo(const char* format, ...) __attribute__((format(printf, 1, 2)));
void logWarning(const char* format, ...) __attribute__((format(printf, 1, 2)));

// A failed call, named with its text and place. `budget` limits repeats from one call site (a
// failing per-launch call must not flood the target's stderr).
void logCallFailure(const char* api, int code, const char* detail, const char* call, const char* file, int line,
                    std::atomic<int>& budget);

}  // namespace fprof::collector
