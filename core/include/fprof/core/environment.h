// fprof's environment variables, declared once: each with its type, default, audience and a doc
// line, and the one parser that `fprof` and the collector read them with. docs/environment.md is
// generated from this table (environmentMarkdown; a test fails when the two differ).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fprof::core::env {

// Every FPROF_* variable the product reads, in the table's order (variables()).
enum class Var {
  // Public: a user may set these.
  kCollector,
  kCupti,
  kNvdisasm,
  kNvdisasmJobs,
  kSelfTiming,
  kQuiet,
  kFlushMs,
  // The contract between `fprof run` and the collector: `fprof run` sets them from its options.
  kOutput,
  kForce,
  kMode,
  kMetrics,
  kKernelRegex,
  kNvtxInclude,
  kNvtxScope,
  kOps,
  kLaunchSkip,
  kLaunchCount,
  kSamplesPerLaunchKind,
  kCacheControl,
  kReplay,
  kSecondRun,
  kSassPcFile,
  kSassDuplicate,
  kCubinDir,
  kCuptiHostPinned,
  // Internal: switches kept for measurement or diagnosis, each with its reason.
  kActivity,
  kNvtxCallbacks,
  kCuptiFlushAll,
  kNvtxInjection,
  kOwnCheckpoint,
  kProfilerSession,
  kDebugRanges,
};

enum class Kind {
  kPath,     // a file or directory
  kText,     // free text (a metric selection, a regular expression)
  kFlag,     // 0 or 1
  kInteger,  // an integer in [min, max]
  kChoice,   // one of `accepted`
  kList,     // items separated by commas (each one of `accepted` where that is given)
};

enum class Audience {
  kPublic,    // set by users
  kContract,  // set by `fprof run` for the collector it injects
  kInternal,  // measurement or diagnosis only; the doc line says why it is kept
};

// Who reads a variable (a bit set).
enum Reader : unsigned { kFprof = 1, kCollector = 2 };

struct Spec {
  Var var;
  const char* name;
  Kind kind;
  Audience audience;
  unsigned readers;
  // The value an unset (or empty) variable stands for; "" where unset has a meaning of its own,
  // said by `unset_means`.
  const char* default_value;
  const char* unset_means;
  // kChoice, kList: the accepted values, separated by '|' ("" for a free list).
  const char* accepted;
  int64_t min, max;  // kInteger
  const char* doc;
};

// The table, in the order of Var. (A vector: collector sources compiled as CUDA C++17 include this.)
const std::vector<Spec>& variables();
const Spec& spec(Var var);
// The entry named `name`, or none: a variable fprof does not read.
const Spec* find(const std::string& name);

// Looks a variable up: its value, or nullptr where it is unset.
using Lookup = std::function<const char*(const char*)>;
// The process's own environment (getenv).
Lookup processEnvironment();

// What a bad value does: kUseDefault says so and goes on with the default (a warning);
// kRefuse says so with no default (the caller turns the feature off: an error).
enum class OnBadValue { kUseDefault, kRefuse };

// The one parser. Each read returns the declared default where the variable is unset or empty,
// and, where its value is not of the declared kind, records a one-sentence problem naming the
// variable, its value and what it accepts, then returns the default too.
class Parser {
 public:
  explicit Parser(Lookup lookup, OnBadValue on_bad = OnBadValue::kUseDefault);

  bool isSet(Var var) const;                  // set to a non-empty value
  std::string text(Var var) const;            // kPath, kText: the value, or the default
  bool flag(Var var);                         // kFlag
  std::optional<int64_t> integer(Var var);    // kInteger; none where unset and there is no default
  std::string choice(Var var);                // kChoice; "" where unset and there is no default
  std::vector<std::string> list(Var var);     // kList; empty items dropped

  const std::vector<std::string>& problems() const { return problems_; }

 private:
  const char* raw(Var var) const;
  bool declaredAs(const Spec& s, Kind kind);
  void bad(const Spec& s, const std::string& value, const std::string& what);

  Lookup lookup_;
  OnBadValue on_bad_;
  std::vector<std::string> problems_;
};

// Every problem of the variables `readers` read, as set in `lookup` (each variable parsed once).
std::vector<std::string> problemsOf(const Lookup& lookup, unsigned readers);

// The environment a process is given: variable name -> value.
using Assignments = std::vector<std::pair<std::string, std::string>>;
// Adds `var` = `value` to `out`, under its declared name.
void assign(Assignments& out, Var var, const std::string& value);

// docs/environment.md: the table as Markdown, one section per audience.
std::string environmentMarkdown();

}  // namespace fprof::core::env
