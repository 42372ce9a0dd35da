// Environment parsing for the collector; see config.h.
#include "config.h"

#include <charconv>
#include <cstring>
#include <string_view>

namespace fprof::collector {
namespace {

std::optional<int64_t> parseInt(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  int64_t value = 0;
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<int> firstRank(const EnvLookup& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto v = parseInt(env(name));
    if (v && *v >= 0 && *v <= 0x7fffffff) return static_cast<int>(*v);
  }
  return std::nullopt;
}

constexpr std::string_view kSuffix = ".fprof";

bool endsWithSuffix(const std::string& path) {
  return path.size() > kSuffix.size() && path.compare(path.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

// The FPROF_* switches of CUPTI's work; each bad value warns and keeps the default.
void readCuptiSettings(const EnvLookup& env, CollectorConfig& c) {
  CuptiSettings& s = c.cupti;
  auto flag = [&](const char* name, bool& out) {
    const char* v = env(name);
    if (v == nullptr) return;
    if (std::strcmp(v, "0") == 0 || std::strcmp(v, "1") == 0) {
      out = v[0] == '1';
    } else {
      c.warnings.push_back(std::string(name) + "=" + v + " is not 0 or 1; using " + (out ? "1" : "0"));
    }
  };
  flag("FPROF_NVTX_CALLBACKS", s.nvtx_callbacks);
  if (const char* v = env("FPROF_NVTX_INJECTION"); v != nullptr) {
    if (std::strcmp(v, "direct") == 0 || std::strcmp(v, "cupti") == 0) {
      c.nvtx_direct = v[0] == 'd';
    } else {
      c.warnings.push_back(std::string("FPROF_NVTX_INJECTION=") + v + " is not direct or cupti; using direct");
    }
  }
  flag("FPROF_CUPTI_FLUSH_ALL", s.periodic_flush_all);
  flag("FPROF_WRITER_IDLE", s.writer_idle);
  flag("FPROF_EVENT_PREFILL", s.event_prefill);
  flag("FPROF_CUPTI_ZEROED_BUFFERS", s.zeroed_buffers);
  flag("FPROF_RUNTIME_API_ACTIVITY", s.runtime_api_activity);
  flag("FPROF_CUPTI_HOST_PINNED", s.host_pinned);
  if (const char* v = env("FPROF_LAUNCH_CALLBACKS"); v != nullptr) {
    if (std::strcmp(v, "all") == 0 || std::strcmp(v, "driver") == 0 || std::strcmp(v, "none") == 0) {
      s.runtime_launch_callbacks = v[0] == 'a';
      s.driver_launch_callbacks = v[0] != 'n';
    } else {
      c.warnings.push_back(std::string("FPROF_LAUNCH_CALLBACKS=") + v + " is not all, driver or none; using all");
    }
  }
  if (const char* v = env("FPROF_CUPTI_FLUSH_PERIOD_MS"); v != nullptr) {
    auto ms = parseInt(v);
    if (ms && *ms >= 0 && *ms <= 3'600'000) {
      s.flush_period_ms = static_cast<int>(*ms);
    } else {
      c.warnings.push_back(std::string("FPROF_CUPTI_FLUSH_PERIOD_MS=") + v +
                           " is not a number of milliseconds in 0..3600000; using the flush period");
    }
  }
  if (const char* v = env("FPROF_BUFFER_MB"); v != nullptr) {
    auto mb = parseInt(v);
    if (mb && *mb >= 1 && *mb <= 256) {
      s.buffer_bytes = static_cast<size_t>(*mb) << 20;
    } else {
      c.warnings.push_back(std::string("FPROF_BUFFER_MB=") + v + " is not a size in MiB in 1..256; using 8");
    }
  }
  if (const char* v = env("FPROF_ACTIVITY"); v != nullptr) {
    CuptiSettings kinds = s;
    kinds.kernel = kinds.memcpy = kinds.memset = kinds.memory = false;
    bool ok = true;
    std::string_view list = v;
    while (ok && !list.empty()) {
      const size_t comma = list.find(',');
      const std::string_view item = list.substr(0, comma);
      if (item == "kernel") kinds.kernel = true;
      else if (item == "memcpy") kinds.memcpy = true;
      else if (item == "memset") kinds.memset = true;
      else if (item == "memory") kinds.memory = true;
      else if (item != "none") ok = false;
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    if (ok) {
      s = kinds;
    } else {
      c.warnings.push_back(std::string("FPROF_ACTIVITY=") + v +
                           " is not a list of kernel, memcpy, memset, memory (or none); recording all four");
    }
  }
}

}  // namespace

Ranks readRanks(const EnvLookup& env) {
  Ranks r;
  // torchrun, Open MPI, Slurm, then MPICH/Intel MPI (Hydra's PMI_RANK, MPI_LOCALRANKID) and MVAPICH2.
  r.rank = firstRank(env, {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK", "MV2_COMM_WORLD_RANK"});
  r.local_rank = firstRank(env, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID",
                                 "MV2_COMM_WORLD_LOCAL_RANK"});
  return r;
}

CollectorConfig readConfig(const EnvLookup& env) {
  CollectorConfig c;
  const char* output = env("FPROF_OUTPUT");
  if (output == nullptr || *output == '\0') {
    c.warnings.push_back("FPROF_OUTPUT is not set; the collector stays off (use `fprof run`)");
    return c;
  }
  c.enabled = true;
  c.output = output;
  const char* force = env("FPROF_FORCE");
  c.force = force != nullptr && std::strcmp(force, "1") == 0;
  const char* quiet = env("FPROF_QUIET");
  c.quiet = quiet != nullptr && std::strcmp(quiet, "1") == 0;
  if (const char* mode = env("FPROF_MODE");
      mode != nullptr && std::strcmp(mode, "trace") != 0 && std::strcmp(mode, "metrics") != 0) {
    c.warnings.push_back(std::string("FPROF_MODE=") + mode + " is not supported by this collector; using trace");
  }
  if (const char* flush = env("FPROF_FLUSH_MS"); flush != nullptr) {
    auto v = parseInt(flush);
    if (v && *v >= 10 && *v <= 3'600'000) {
      c.flush_interval_ms = static_cast<int>(*v);
    } else {
      c.warnings.push_back(std::string("FPROF_FLUSH_MS=") + flush +
                           " is not a number of milliseconds in 10..3600000; using 500");
    }
  }
  const char* timing = env("FPROF_SELF_TIMING");
  c.self_timing = timing != nullptr && std::strcmp(timing, "1") == 0;
  readCuptiSettings(env, c);
  c.ranks = readRanks(env);
  return c;
}

std::string rankedOutputPath(const std::string& output, std::optional<int> rank) {
  if (!rank) return output;
  const std::string tag = ".rank" + std::to_string(*rank);
  if (endsWithSuffix(output)) return output.substr(0, output.size() - kSuffix.size()) + tag + std::string(kSuffix);
  return output + tag;
}

std::string pidOutputPath(const std::string& path, int64_t pid) {
  const std::string stem = endsWithSuffix(path) ? path.substr(0, path.size() - kSuffix.size()) : path;
  return stem + ".pid" + std::to_string(pid) + std::string(kSuffix);
}

}  // namespace fprof::collector
