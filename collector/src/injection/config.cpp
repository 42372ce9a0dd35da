// Environment parsing for the collector; see config.h.
#include "injection/config.h"

#include <algorithm>
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

// The switches of CUPTI's work; each bad value warns and keeps the default.
void readCuptiSettings(core::env::Parser& env, CollectorConfig& c) {
  using core::env::Var;
  CuptiSettings& s = c.cupti;
  s.nvtx_callbacks = env.flag(Var::kNvtxCallbacks);
  c.nvtx_direct = env.choice(Var::kNvtxInjection) == "direct";
  s.periodic_flush_all = env.flag(Var::kCuptiFlushAll);
  s.host_pinned = env.flag(Var::kCuptiHostPinned);
  const std::vector<std::string> kinds = env.list(Var::kActivity);
  auto has = [&kinds](const char* kind) { return std::find(kinds.begin(), kinds.end(), kind) != kinds.end(); };
  s.kernel = has("kernel");
  s.memcpy = has("memcpy");
  s.memset = has("memset");
  s.memory = has("memory");
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

CollectorConfig readConfig(const EnvLookup& lookup) {
  using core::env::Var;
  CollectorConfig c;
  core::env::Parser env(lookup);
  c.output = env.text(Var::kOutput);
  if (c.output.empty()) {
    c.warnings.push_back("FPROF_OUTPUT is not set; the collector stays off (use `fprof run`)");
    return c;
  }
  c.enabled = true;
  c.force = env.flag(Var::kForce);
  c.quiet = env.flag(Var::kQuiet);
  (void)env.choice(Var::kMode);  // metrics mode reads it too (metrics_config.h); a bad value is said here
  c.flush_interval_ms = static_cast<int>(*env.integer(Var::kFlushMs));
  c.self_timing = env.flag(Var::kSelfTiming);
  readCuptiSettings(env, c);
  c.warnings.insert(c.warnings.end(), env.problems().begin(), env.problems().end());
  c.ranks = readRanks(lookup);
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
