// Self-timing totals and their report; see self_timing.h.
#include "injection/self_timing.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace fprof::collector {
namespace {

std::atomic<bool> g_enabled{false};

const char* const kAppNames[] = {"launch_callback",  "nvtx_callback", "launch_context",      "function_lookup",
                                 "argument_capture", "nvtx_queueing", "argument_role_probe"};
const char* const kWriterNames[] = {"cupti_flush", "collect", "translate", "store", "final_write"};
static_assert(std::size(kAppNames) == static_cast<size_t>(AppTimer::kCount));
static_assert(std::size(kWriterNames) == static_cast<size_t>(WriterTimer::kCount));

std::string format(const char* fmt, auto... args) {
  char line[256];
  std::snprintf(line, sizeof line, fmt, args...);
  return line;
}

double perCall(uint64_t ns, uint64_t calls) { return calls == 0 ? 0.0 : double(ns) / double(calls); }

}  // namespace

bool selfTimingEnabled() { return g_enabled.load(std::memory_order_relaxed); }
void setSelfTimingEnabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }

void SelfTimingTotals::add(const AppTimes& t) {
  for (size_t i = 0; i < static_cast<size_t>(AppTimer::kCount); ++i) {
    app_ns[i] += t.ns[i].load(std::memory_order_relaxed);
    app_calls[i] += t.calls[i].load(std::memory_order_relaxed);
    app_slow_ns[i] += t.slow_ns[i].load(std::memory_order_relaxed);
    for (size_t b = 0; b < kSelfTimingBuckets; ++b) app_buckets[i][b] += t.buckets[i][b].load(std::memory_order_relaxed);
  }
}

std::optional<uint64_t> SelfTimingTotals::appPercentileNs(AppTimer t, double fraction) const {
  const size_t i = static_cast<size_t>(t);
  if (app_calls[i] == 0) return std::nullopt;
  const double wanted = fraction * double(app_calls[i]);
  uint64_t seen = 0;
  for (size_t b = 0; b < kSelfTimingBuckets; ++b) {
    seen += app_buckets[i][b];
    if (double(seen) >= wanted) return uint64_t{2} << b;
  }
  return uint64_t{2} << (kSelfTimingBuckets - 1);
}

void SelfTimingTotals::addWriter(WriterTimer t, int64_t elapsed_ns) {
  const size_t i = static_cast<size_t>(t);
  const uint64_t ns = static_cast<uint64_t>(std::max<int64_t>(0, elapsed_ns));
  writer_ns[i] += ns;
  writer_calls[i] += 1;
  writer_max_ns[i] = std::max(writer_max_ns[i], ns);
}

std::string selfTimingText(const SelfTimingTotals& t) {
  std::string out;
  const double launches = double(std::max<uint64_t>(1, t.launches));
  out += format("self-timing: %" PRIu64 " launches, %" PRIu64 " NVTX events, %" PRIu64
                " threads; %" PRIu64 " KiB of events in %" PRIu64 " chunks allocated; at most %" PRIu64
                " launches awaiting their kernel record\n",
                t.launches, t.nvtx_events, t.threads, t.event_bytes / 1024, t.chunks_allocated, t.max_pending_launches);
  // p50/p99: upper ends of power-of-two buckets; "slow ms": the total of calls of 16 us or more
  // (first launches of a function, the argument-role probe, page faults, preemption).
  out += "self-timing: application threads (inside CUPTI's callbacks)    total ms   calls    ns/call  ns/launch"
         "  p50 ns<  p99 ns<  slow ms  ns/launch w/o slow\n";
  for (size_t i = 0; i < static_cast<size_t>(AppTimer::kCount); ++i) {
    const AppTimer timer = static_cast<AppTimer>(i);
    out += format("self-timing:   %-46s %10.1f %7" PRIu64 " %10.0f %10.0f %8" PRIu64 " %8" PRIu64 " %8.1f %10.0f\n",
                  kAppNames[i], double(t.app_ns[i]) * 1e-6, t.app_calls[i], perCall(t.app_ns[i], t.app_calls[i]),
                  double(t.app_ns[i]) / launches, t.appPercentileNs(timer, 0.5).value_or(0),
                  t.appPercentileNs(timer, 0.99).value_or(0), double(t.app_slow_ns[i]) * 1e-6,
                  double(t.app_ns[i] - t.app_slow_ns[i]) / launches);
  }
  out += "self-timing: writer thread                                        total ms   calls     max ms  ns/launch\n";
  for (size_t i = 0; i < static_cast<size_t>(WriterTimer::kCount); ++i) {
    out += format("self-timing:   %-46s %10.1f %7" PRIu64 " %10.1f %10.0f\n", kWriterNames[i],
                  double(t.writer_ns[i]) * 1e-6, t.writer_calls[i], double(t.writer_max_ns[i]) * 1e-6,
                  double(t.writer_ns[i]) / launches);
  }
  return out;
}

std::string selfTimingJson(const SelfTimingTotals& t) {
  std::string out = format("{\"launches\":%" PRIu64 ",\"nvtx_events\":%" PRIu64 ",\"threads\":%" PRIu64
                           ",\"event_bytes\":%" PRIu64 ",\"chunks_allocated\":%" PRIu64
                           ",\"max_pending_launches\":%" PRIu64,
                           t.launches, t.nvtx_events, t.threads, t.event_bytes, t.chunks_allocated,
                           t.max_pending_launches);
  for (size_t i = 0; i < static_cast<size_t>(AppTimer::kCount); ++i) {
    const AppTimer timer = static_cast<AppTimer>(i);
    out += format(",\"%s\":{\"ns\":%" PRIu64 ",\"calls\":%" PRIu64 ",\"slow_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64
                  ",\"p99_ns\":%" PRIu64 "}",
                  kAppNames[i], t.app_ns[i], t.app_calls[i], t.app_slow_ns[i], t.appPercentileNs(timer, 0.5).value_or(0),
                  t.appPercentileNs(timer, 0.99).value_or(0));
  }
  for (size_t i = 0; i < static_cast<size_t>(WriterTimer::kCount); ++i) {
    out += format(",\"%s\":{\"ns\":%" PRIu64 ",\"calls\":%" PRIu64 ",\"max_ns\":%" PRIu64 "}", kWriterNames[i],
                  t.writer_ns[i], t.writer_calls[i], t.writer_max_ns[i]);
  }
  return out + "}";
}

}  // namespace fprof::collector
