// What `fprof gate` writes: the Markdown summary (stdout, --markdown), the JSON findings (--json)
// and the JUnit XML (--junit), from one set of gate results (docs/gate.md, "Outputs").
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fprof/analysis/diff.h"
#include "fprof/analysis/kernel_names.h"
#include "fprof/core/output.h"

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
  // Two job folders (fprof job): comparisons[0] is the whole job (the ranks both hold, together),
  // the others its ranks; per_rank is set too.
  bool job = false;
  std::string note;  // how the files were compared when they hold several processes ("" otherwise)
  std::vector<GateComparison> comparisons;
  const analysis::KernelNames* names = nullptr;
  bool passed() const;
};

// The Markdown shows at most this many findings of each kind (regressions, information); the JSON
// holds them all and the Markdown says how many it left out.
inline constexpr size_t kMarkdownRegressionRows = 50;
inline constexpr size_t kMarkdownInfoRows = 20;
// Compared rank by rank, the Markdown gives a section to every rank up to this many; beyond, the
// ranks that passed without a warning are named in one line (the JSON holds their tables).
inline constexpr size_t kMarkdownRankSections = 16;

std::string gateMarkdown(const GateRun& run);
nlohmann::json gateJson(const GateRun& run);
std::string gateJunit(const GateRun& run);

// The files a gate writes (--markdown, --json, --junit), opened before the comparison so that a
// name that cannot be written costs nothing, following core/output's rules (docs/outputs.md).
// One of them may be "-", standard output, which then carries that output and no printed summary.
struct GateOutputPaths {
  std::string markdown, json, junit;
};
struct GateOutputs {
  std::optional<core::TextOutput> markdown, json, junit;
  bool toStandardOutput() const;
};
core::Expected<GateOutputs> openGateOutputs(const GateOutputPaths& paths, bool force,
                                            const std::vector<std::string>& inputs);
// Every file is complete before any is put in place; a failure leaves none of them half-written.
// (Standard output cannot wait: what goes there is written first.)
core::Status writeGateOutputs(GateOutputs& out, const GateRun& run, const std::string& markdown);

// XML 1.0 text: escaped, control characters made visible, U+FFFE/U+FFFF replaced.
std::string xmlEscape(const std::string& s);

}  // namespace fprof::cli
