// What `fprof gate` writes: the Markdown summary (stdout, --markdown), the JSON findings (--json)
// and the JUnit XML (--junit), from one set of gate results (docs/gate.md, "Outputs").
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fprof/analysis/diff.h"
#include "fprof/analysis/kernel_names.h"

namespace fprof::cli {

// One comparison: the two whole files, or one rank of each.
struct GateComparison {
  std::string label;  // "" for the whole files, "rank 0"
  std::optional<int> rank;
  const analysis::RunDiff* diff = nullptr;
  analysis::GateResult result;
};

struct GateRun {
  std::string base_path, cur_path;
  analysis::GateOptions options;
  bool per_rank = false;
  std::string note;  // how the files were compared when they hold several processes ("" otherwise)
  std::vector<GateComparison> comparisons;
  const analysis::KernelNames* names = nullptr;
  bool passed() const;
};

// The Markdown shows at most this many findings of each kind (regressions, information); the JSON
// holds them all and the Markdown says how many it left out.
inline constexpr size_t kMarkdownRegressionRows = 50;
inline constexpr size_t kMarkdownInfoRows = 20;

std::string gateMarkdown(const GateRun& run);
nlohmann::json gateJson(const GateRun& run);
std::string gateJunit(const GateRun& run);

// XML 1.0 text: escaped, control characters made visible, U+FFFE/U+FFFF replaced.
std::string xmlEscape(const std::string& s);

}  // namespace fprof::cli
