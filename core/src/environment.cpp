// The environment table and its parser (see environment.h).
#include "fprof/core/environment.h"

#include <array>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace fprof::core::env {
namespace {

constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();
constexpr unsigned kBoth = kFprof | kCollector;

// The entries, in the order of Var (checked below).
constexpr std::array kTable = {
    // Public.
    Spec{Var::kCollector, "FPROF_COLLECTOR", Kind::kPath, Audience::kPublic, kFprof, "",
         "libfprof_collector.so beside fprof (bin/ or ../lib/)", "", 0, 0,
         "The collector library `fprof run` injects into the program."},
    Spec{Var::kCupti, "FPROF_CUPTI", Kind::kPath, Audience::kPublic, kFprof, "",
         "the CUPTI the program loads (the toolkit's)", "", 0, 0,
         "A libcupti.so.13 to use instead of the toolkit's (for example from the nvidia-cuda-cupti wheel), as "
         "`fprof run --cupti`, which wins over it."},
    Spec{Var::kNvdisasm, "FPROF_NVDISASM", Kind::kPath, Audience::kPublic, kFprof, "",
         "nvdisasm on PATH, then $CUDA_HOME/bin, then /usr/local/cuda/bin", "", 0, 0,
         "The nvdisasm that decodes the SASS of profiled functions after a metrics run (half-precision FLOPs, "
         "SASS counters from per-PC counts); a path that is not executable finds none."},
    Spec{Var::kNvdisasmJobs, "FPROF_NVDISASM_JOBS", Kind::kInteger, Audience::kPublic, kFprof, "",
         "one per core, at most 8", "", 1, 256, "How many nvdisasm processes decode at once after a metrics run."},
    Spec{Var::kSelfTiming, "FPROF_SELF_TIMING", Kind::kFlag, Audience::kPublic, kBoth, "0", "", "", 0, 0,
         "`1`: the collector times its own work and reports it at exit (stderr lines `[fprof] self-timing:` and "
         "metadata `self_timing`), and `fprof run` times each of its steps after the program. Off, it costs "
         "nothing."},
    Spec{Var::kQuiet, "FPROF_QUIET", Kind::kFlag, Audience::kPublic, kCollector, "0", "", "", 0, 0,
         "`1`: the collector prints no info lines (`tracing to`, `wrote`); warnings are always printed."},
    Spec{Var::kFlushMs, "FPROF_FLUSH_MS", Kind::kInteger, Audience::kPublic, kCollector, "500", "", "", 10,
         3'600'000,
         "How often, in milliseconds, the collector's writer moves collected records into the database: a "
         "program killed by SIGKILL loses at most the last period."},

    // The contract between `fprof run` and the collector.
    Spec{Var::kOutput, "FPROF_OUTPUT", Kind::kPath, Audience::kContract, kCollector, "",
         "the collector stays off, with one warning", "", 0, 0,
         "The database to write (`fprof run -o`). Setting it by hand, with CUDA_INJECTION64_PATH and "
         "NVTX_INJECTION64_PATH naming the collector, traces a program without `fprof run`. A process of a rank "
         "(RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK, MV2_COMM_WORLD_RANK) writes NAME.rank<N>.fprof; "
         "where that file exists, NAME.pid<PID>.fprof."},
    Spec{Var::kForce, "FPROF_FORCE", Kind::kFlag, Audience::kContract, kCollector, "0", "", "", 0, 0,
         "`1`: a NAME.pid<PID>.fprof left by an earlier process of the same pid is replaced. The named "
         "database itself is never replaced: where it exists, the collector writes NAME.pid<PID>.fprof."},
    Spec{Var::kMode, "FPROF_MODE", Kind::kChoice, Audience::kContract, kCollector, "trace", "", "trace|metrics", 0,
         0, "`metrics`: hardware counters per kernel (`fprof run --metrics`); `trace`: timeline only."},
    Spec{Var::kMetrics, "FPROF_METRICS", Kind::kText, Audience::kContract, kCollector, "roofline", "", "", 0, 0,
         "The metric set (memory, roofline, full) or metric names separated by commas (`--metrics`)."},
    Spec{Var::kKernelRegex, "FPROF_KERNEL_REGEX", Kind::kText, Audience::kContract, kCollector, "",
         "every kernel", "", 0, 0,
         "Profile only kernels whose demangled name matches this ECMAScript regular expression "
         "(`--kernel-regex`)."},
    Spec{Var::kNvtxInclude, "FPROF_NVTX_INCLUDE", Kind::kList, Audience::kContract, kCollector, "",
         "no NVTX filter", "", 0, 0,
         "Profile only kernels launched inside an NVTX range whose path contains one of these texts "
         "(`--nvtx-include`)."},
    Spec{Var::kNvtxScope, "FPROF_NVTX_SCOPE", Kind::kChoice, Audience::kContract, kCollector, "process", "",
         "process|thread", 0, 0,
         "Whose NVTX ranges `FPROF_NVTX_INCLUDE` looks at: any thread's (`process`) or the launching thread's "
         "(`thread`) (`--nvtx-scope`)."},
    Spec{Var::kOps, "FPROF_OPS", Kind::kList, Audience::kContract, kCollector, "", "no op filter", "", 0, 0,
         "Profile only kernels inside NVTX op ranges of these names (`--ops`)."},
    Spec{Var::kLaunchSkip, "FPROF_LAUNCH_SKIP", Kind::kInteger, Audience::kContract, kCollector, "0", "", "", 0,
         kNoMax, "Selected launches to let run before profiling (`--launch-skip`)."},
    Spec{Var::kLaunchCount, "FPROF_LAUNCH_COUNT", Kind::kInteger, Audience::kContract, kCollector, "",
         "no limit", "", 1, kNoMax, "Selected launches to profile at most (`--launch-count`)."},
    Spec{Var::kSamplesPerLaunchKind, "FPROF_SAMPLES_PER_LAUNCH_KIND", Kind::kInteger, Audience::kContract,
         kCollector, "1", "", "", 0, kNoMax,
         "Launches profiled per launch signature; later identical ones get their values; `0`: every launch "
         "(`--samples-per-launch-kind`, `--every-launch`)."},
    Spec{Var::kCacheControl, "FPROF_CACHE_CONTROL", Kind::kChoice, Audience::kContract, kCollector, "",
         "all where the loaded CUPTI can, else none (said so)", "all|none", 0, 0,
         "Caches emptied before each counted pass (`all`) or as the program left them (`none`) "
         "(`--cache-control`)."},
    Spec{Var::kReplay, "FPROF_REPLAY", Kind::kChoice, Audience::kContract, kCollector, "auto", "",
         "kernel|application|auto|sass_patching", 0, 0,
         "How profiled launches are counted (`--replay`); `sass_patching`: only the SASS counters, by patching "
         "the launched functions, as the second run of application replay does (needs `FPROF_SASS_PC_FILE`)."},
    Spec{Var::kSecondRun, "FPROF_SECOND_RUN", Kind::kFlag, Audience::kContract, kCollector, "0", "", "", 0, 0,
         "`1`: this is the second run of application replay; what the first run said is not said again."},
    Spec{Var::kSassPcFile, "FPROF_SASS_PC_FILE", Kind::kPath, Audience::kContract, kCollector, "", "none", "", 0,
         0,
         "Where a run under `FPROF_REPLAY=sass_patching` appends each profiled launch's per-PC counts "
         "(`.rank<N>` appended in a process of a rank); `fprof run` turns them into counters."},
    Spec{Var::kSassDuplicate, "FPROF_SASS_DUPLICATE", Kind::kFlag, Audience::kContract, kCollector, "0", "", "", 0,
         0,
         "`1` (application replay): the SASS counters come from a duplicate of each profiled launch between a "
         "checkpoint of the memory it can write and its restore, written to `DATABASE_NAME.pcs` in `FPROF_CUBIN_DIR` (beside the database, + `.pcs`, without one)."},
    Spec{Var::kCubinDir, "FPROF_CUBIN_DIR", Kind::kPath, Audience::kContract, kCollector, "", "no cubins saved",
         "", 0, 0,
         "Metrics mode: the collector saves each loaded module's cubin here, for `fprof run`'s SASS step, which "
         "removes them."},
    Spec{Var::kCuptiHostPinned, "FPROF_CUPTI_HOST_PINNED", Kind::kFlag, Audience::kContract, kCollector, "0", "",
         "", 0, 0,
         "`1`: CUPTI keeps kernel timestamps in pinned host memory, so that a GPU fault leaves the kernels before "
         "it with their times (`--gpu-fault-safe`)."},

    // Internal.
    Spec{Var::kActivity, "FPROF_ACTIVITY", Kind::kList, Audience::kInternal, kCollector,
         "kernel,memcpy,memset,memory", "", "kernel|memcpy|memset|memory|none", 0, 0,
         "The CUPTI activity kinds enabled (`none`: callbacks only). Kept so that bench/decode_overhead.sh can "
         "take CUPTI's own cost apart; recorded in metadata `collector_settings` when not the default."},
    Spec{Var::kNvtxCallbacks, "FPROF_NVTX_CALLBACKS", Kind::kFlag, Audience::kInternal, kCollector, "1", "", "", 0,
         0,
         "`0` with `FPROF_NVTX_INJECTION=cupti`: NVTX stays injected into CUPTI but no NVTX callbacks are asked "
         "for. Kept for bench/decode_overhead.sh; recorded in `collector_settings`."},
    Spec{Var::kCuptiFlushAll, "FPROF_CUPTI_FLUSH_ALL", Kind::kFlag, Audience::kInternal, kCollector, "1", "", "", 0,
         0,
         "`0`: the writer never calls cuptiActivityFlushAll (records arrive as buffers fill, and at exit). Kept "
         "for bench/decode_overhead.sh; recorded in `collector_settings`."},
    Spec{Var::kNvtxInjection, "FPROF_NVTX_INJECTION", Kind::kChoice, Audience::kInternal, kCollector, "direct", "",
         "direct|cupti", 0, 0,
         "`direct`: NVTX calls go to fprof's own handlers; `cupti`: through CUPTI's NVTX layer and callbacks (the "
         "same ranges either way). Kept for bench/decode_overhead.sh, which compares the two routes, and as the "
         "other route should a program's NVTX not work with the direct one."},
    Spec{Var::kOwnCheckpoint, "FPROF_OWN_CHECKPOINT", Kind::kFlag, Audience::kInternal, kCollector, "1", "", "", 0,
         0,
         "`0`: every duplicate of a profiled launch takes CUPTI's checkpoint of the whole context instead of "
         "fprof's own. Kept to rule fprof's checkpoint out when a duplicate's counters are in doubt."},
    Spec{Var::kProfilerSession, "FPROF_PROFILER_SESSION", Kind::kChoice, Audience::kInternal, kCollector,
         "toggled", "", "toggled|range", 0, 0,
         "Application replay: one profiler session kept open with counting switched on and off around each "
         "launch (`toggled`), or a range profiler start and stop each (`range`, the way CUPTI documents). Kept "
         "to check the toggled session against CUPTI's documented way on a new CUPTI or GPU."},
    Spec{Var::kDebugRanges, "FPROF_DEBUG_RANGES", Kind::kFlag, Audience::kInternal, kCollector, "0", "", "", 0, 0,
         "`1`: the collector logs each decoded counter range (its name and first value) and the launch it went "
         "to. Kept to diagnose range-to-launch matching on a new CUPTI or GPU."},
};

constexpr bool inVarOrder() {
  for (size_t i = 0; i < kTable.size(); ++i) {
    if (static_cast<size_t>(kTable[i].var) != i) return false;
  }
  return true;
}
static_assert(inVarOrder(), "the environment table must list the variables in the order of Var");
static_assert(kTable.size() == static_cast<size_t>(Var::kDebugRanges) + 1, "a variable without an entry");

std::optional<int64_t> parseInteger(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::vector<std::string> splitOn(const std::string& text, char separator) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t at = text.find(separator, pos);
    std::string item = text.substr(pos, at == std::string::npos ? std::string::npos : at - pos);
    if (!item.empty()) out.push_back(std::move(item));
    if (at == std::string::npos) break;
    pos = at + 1;
  }
  return out;
}

// "a|b|c" -> "a, b or c".
std::string spokenChoices(const char* accepted) {
  const std::vector<std::string> items = splitOn(accepted, '|');
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
  }
  return out;
}

bool accepts(const Spec& s, const std::string& value) {
  for (const std::string& a : splitOn(s.accepted, '|')) {
    if (a == value) return true;
  }
  return false;
}

std::string integerRange(const Spec& s) {
  return s.max == kNoMax ? ">= " + std::to_string(s.min) : "in " + std::to_string(s.min) + ".." + std::to_string(s.max);
}

// What the variable accepts, as a phrase for errors and the docs.
std::string acceptedPhrase(const Spec& s) {
  switch (s.kind) {
    case Kind::kPath: return "a path";
    case Kind::kText: return "text";
    case Kind::kFlag: return "0 or 1";
    case Kind::kInteger: return "an integer " + integerRange(s);
    case Kind::kChoice: return spokenChoices(s.accepted);
    case Kind::kList:
      return *s.accepted == '\0' ? "a list separated by commas" : "a list of " + spokenChoices(s.accepted);
  }
  return "";
}

std::string defaultPhrase(const Spec& s) { return *s.default_value != '\0' ? s.default_value : s.unset_means; }

}  // namespace

const std::vector<Spec>& variables() {
  static const std::vector<Spec> table(kTable.begin(), kTable.end());
  return table;
}

const Spec& spec(Var var) { return variables()[static_cast<size_t>(var)]; }

const Spec* find(const std::string& name) {
  for (const Spec& s : variables()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

Lookup processEnvironment() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

Parser::Parser(Lookup lookup, OnBadValue on_bad) : lookup_(std::move(lookup)), on_bad_(on_bad) {}

const char* Parser::raw(Var var) const {
  const char* v = lookup_ ? lookup_(spec(var).name) : nullptr;
  return v != nullptr && *v != '\0' ? v : nullptr;
}

bool Parser::isSet(Var var) const { return raw(var) != nullptr; }

void Parser::bad(const Spec& s, const std::string& value, const std::string& what) {
  std::string p = std::string(s.name) + "='" + value + "' is not " + what;
  if (on_bad_ == OnBadValue::kUseDefault) p += "; using the default (" + defaultPhrase(s) + ")";
  problems_.push_back(std::move(p));
}

// A read of the wrong kind is fprof's own mistake; said as a problem so that its tests catch it.
bool Parser::declaredAs(const Spec& s, Kind kind) {
  if (s.kind == kind) return true;
  problems_.push_back(std::string("fprof reads ") + s.name + " otherwise than it is declared (" + acceptedPhrase(s) +
                      ")");
  return false;
}

std::string Parser::text(Var var) const {
  const char* v = raw(var);
  return v != nullptr ? v : spec(var).default_value;
}

bool Parser::flag(Var var) {
  const Spec& s = spec(var);
  const bool fallback = std::strcmp(s.default_value, "1") == 0;
  const char* v = raw(var);
  if (!declaredAs(s, Kind::kFlag) || v == nullptr) return fallback;
  if (std::strcmp(v, "0") == 0 || std::strcmp(v, "1") == 0) return v[0] == '1';
  bad(s, v, acceptedPhrase(s));
  return fallback;
}

std::optional<int64_t> Parser::integer(Var var) {
  const Spec& s = spec(var);
  const std::optional<int64_t> fallback =
      *s.default_value != '\0' ? parseInteger(s.default_value) : std::optional<int64_t>();
  const char* v = raw(var);
  if (!declaredAs(s, Kind::kInteger) || v == nullptr) return fallback;
  const std::optional<int64_t> parsed = parseInteger(v);
  if (parsed && *parsed >= s.min && *parsed <= s.max) return parsed;
  bad(s, v, acceptedPhrase(s));
  return fallback;
}

std::string Parser::choice(Var var) {
  const Spec& s = spec(var);
  const char* v = raw(var);
  if (!declaredAs(s, Kind::kChoice) || v == nullptr) return s.default_value;
  if (accepts(s, v)) return v;
  bad(s, v, acceptedPhrase(s));
  return s.default_value;
}

std::vector<std::string> Parser::list(Var var) {
  const Spec& s = spec(var);
  const char* v = raw(var);
  if (!declaredAs(s, Kind::kList)) return {};
  if (v == nullptr) return splitOn(s.default_value, ',');
  std::vector<std::string> items = splitOn(v, ',');
  if (*s.accepted == '\0') return items;
  for (const std::string& item : items) {
    if (!accepts(s, item)) {
      bad(s, v, acceptedPhrase(s));
      return splitOn(s.default_value, ',');
    }
  }
  return items;
}

std::vector<std::string> problemsOf(const Lookup& lookup, unsigned readers) {
  Parser parser(lookup);
  for (const Spec& s : kTable) {
    if ((s.readers & readers) == 0) continue;
    switch (s.kind) {
      case Kind::kFlag: (void)parser.flag(s.var); break;
      case Kind::kInteger: (void)parser.integer(s.var); break;
      case Kind::kChoice: (void)parser.choice(s.var); break;
      case Kind::kList: (void)parser.list(s.var); break;
      case Kind::kPath:
      case Kind::kText: break;
    }
  }
  return parser.problems();
}

void assign(Assignments& out, Var var, const std::string& value) { out.emplace_back(spec(var).name, value); }

namespace {

std::string readersPhrase(unsigned readers) {
  if (readers == kBoth) return "fprof, collector";
  return readers == kFprof ? "fprof" : "collector";
}

// A cell of a Markdown table: '|' escaped.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

void appendSection(std::string& out, Audience audience, const char* title, const char* intro) {
  out += std::string("\n## ") + title + "\n\n" + intro + "\n\n";
  out += "| variable | accepts | default | read by | what it does |\n| --- | --- | --- | --- | --- |\n";
  for (const Spec& s : kTable) {
    if (s.audience != audience) continue;
    out += "| `" + std::string(s.name) + "` | " + cell(acceptedPhrase(s)) + " | " + cell(defaultPhrase(s)) + " | " +
           readersPhrase(s.readers) + " | " + cell(s.doc) + " |\n";
  }
}

}  // namespace

std::string environmentMarkdown() {
  std::string out =
      "# Environment variables\n\n"
      "Every `FPROF_*` variable fprof and its collector read. This page is generated from the table in\n"
      "core/src/environment.cpp (`fprof-environment-doc > docs/environment.md`); a test fails when they differ.\n"
      "An unset or empty variable takes its default. A value of the wrong kind is said in one line naming the\n"
      "variable; the collector then keeps the default, and in metrics mode a bad filter or replay setting turns\n"
      "metrics mode off (the program still runs, traced).\n";
  appendSection(out, Audience::kPublic, "Public", "What a user may set.");
  appendSection(out, Audience::kContract, "Set by `fprof run` for the collector",
                "`fprof run` sets these from its options; each option's `--help` says the same. Set by hand, they "
                "drive the collector without `fprof run` (collector/README.md).");
  appendSection(out, Audience::kInternal, "Internal",
                "Switches for measurement or diagnosis; no user needs them. Each says why it is kept.");
  out +=
      "\nTest and build scripts read variables of their own (`FPROF_BUILD`, `FPROF_TEST_TMP`, "
      "`FPROF_GOLDEN_UPDATE`, ...):\nthey are described in tests/README.md.\n";
  return out;
}

}  // namespace fprof::core::env
