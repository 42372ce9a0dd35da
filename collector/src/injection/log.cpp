// stderr logging for the collector; see log.h.
#include "injection/log.h"

#include <cstdarg>
#include <cstdio>

namespace fprof::collector {
namespace {
std::atomic<bool> g_quiet{false};

void emit(const char* level, const char* format, va_list args) {
  char text[1024];
  std::vsnprintf(text, sizeof text, format, args);
  // One fprintf per message so lines from several threads do not interleave.
  std::fprintf(stderr, "[fprof] %s%s\n", level, text);
}
}  // namespace

void setQuiet(bool quiet) { g_quiet.store(quiet); }

void logInfo(const char* format, ...) {
  if (g_quiet.load()) return;
  va_list args;
  va_start(args, format);
  emit("", format, args);
  va_end(args);
}

void logWarning(const char* format, ...) {
  va_list args;
  va_start(args, format);
  emit("warning: ", format, args);
  va_end(args);
}

void logCallFailure(const char* api, int code, const char* detail, const char* call, const char* file, int line,
                    std::atomic<int>& budget) {
  const int left = budget.fetch_sub(1);
  if (left <= 0) return;
  logWarning("%s call %s failed at %s:%d: error %d (%s)%s", api, call, file, line, code, detail ? detail : "?",
             left == 1 ? " [further failures of this call are not reported]" : "");
}

}  // namespace fprof::collector
