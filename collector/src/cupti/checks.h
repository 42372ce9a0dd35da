// Checked CUPTI and driver calls: every failure is logged with the call's text, file and line,
// and the caller decides how to degrade. Nothing here aborts the target.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <string>

#include "injection/log.h"

namespace fprof::collector {

inline bool cuptiSucceeded(CUptiResult r, const char* call, const char* file, int line, std::atomic<int>& budget) {
  if (r == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  logCallFailure("CUPTI", static_cast<int>(r), text, call, file, line, budget);
  return false;
}

inline bool cuSucceeded(CUresult r, const char* call, const char* file, int line, std::atomic<int>& budget) {
  if (r == CUDA_SUCCESS) return true;
  const char* text = nullptr;
  cuGetErrorString(r, &text);
  logCallFailure("CUDA driver", static_cast<int>(r), text, call, file, line, budget);
  return false;
}

// "CALL failed: TEXT": a failed driver call as the sentence a caller passes on.
inline std::string cuErrorText(const std::string& call, CUresult r) {
  const char* text = nullptr;
  cuGetErrorString(r, &text);
  return call + " failed: " + (text != nullptr ? text : "unknown CUDA error");
}

}  // namespace fprof::collector

// True on success. Each call site may report 3 failures.
#define FPROF_CUPTI_OK(call)                                                                   \
  ([&]() -> bool {                                                                             \
    static std::atomic<int> fprof_budget_{3};                                                  \
    return ::fprof::collector::cuptiSucceeded((call), #call, __FILE__, __LINE__, fprof_budget_); \
  }())
#define FPROF_CU_OK(call)                                                                      \
  ([&]() -> bool {                                                                             \
    static std::atomic<int> fprof_budget_{3};                                                  \
    return ::fprof::collector::cuSucceeded((call), #call, __FILE__, __LINE__, fprof_budget_);  \
  }())
