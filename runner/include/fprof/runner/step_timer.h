// FPROF_SELF_TIMING=1: how long each step of `fprof run` after the program's exit took (the
// collector prints its own share inside the program), so that a run's fixed cost can be told from
// its replay time.
#pragma once

#include <chrono>
#include <cstdio>

#include "fprof/core/environment.h"

namespace fprof::runner {

class StepTimer {
 public:
  StepTimer()
      : on_(core::env::Parser(core::env::processEnvironment()).flag(core::env::Var::kSelfTiming)),
        last_(std::chrono::steady_clock::now()) {}
  // Prints the time since the last step (or since construction) under `step`'s name.
  void done(const char* step) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    std::fprintf(stderr, "[fprof] self-timing: after the program: %-40s %8.1f ms\n", step,
                 std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }

 private:
  bool on_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace fprof::runner
