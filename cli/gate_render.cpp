// The gate's three outputs from one set of results (see gate_render.h).
#include "gate_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "fprof/core/text.h"
#include "fprof/reports/escape.h"
#include "fprof/reports/format.h"

namespace fprof::cli {
namespace {

using analysis::GateFinding;
using analysis::RunCheck;
using analysis::TimeCheck;

std::string num(const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : "n/a"; }

std::string signedPercent(const std::optional<double>& v) {
  return v ? fmt::format("{:+.2f}%", *v * 100) : "n/a";
}

// In a code span entities are not decoded: only pipes (table cells) and backticks need care.
// Text is cleaned to one line and cut to the display limit first: a table row stays a row.
std::string codeCell(const std::string& s) {
  std::string out;
  for (char c : core::cleanText(reports::shownText(s))) {
    if (c == '|') out += "\\|";
    else if (c == '`') out += '\'';
    else out += c;
  }
  return out;
}

std::string textCell(const std::string& s) {
  std::string out;
  for (char c : core::cleanText(reports::shownText(s))) {
    if (c == '|') out += "\\|";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else out += c;
  }
  return out;
}

std::string runCheckLabel(const std::string& metric) {
  if (metric == "kernel_time_ns") return "total kernel time";
  if (metric == "busy_time_ns") return "GPU busy time";
  if (metric == "launches") return "launches";
  if (metric == "new_kernel_time_ns") return "time in new kernels";
  return metric;
}

std::string runCheckRow(const RunCheck& c) {
  const bool time = c.metric != "launches";
  auto value = [&](double v) { return time ? reports::formatDurationNs(v) : fmt::format("{:.0f}", v); };
  std::string base = c.known ? value(c.base) : "n/a", cur = c.known ? value(c.cur) : "n/a";
  std::string change = signedPercent(c.change);
  if (c.metric == "new_kernel_time_ns") {
    base = "vanished " + base;
    cur = "new " + cur;
    change = "net " + change + " of base";
  }
  return fmt::format("| {} | {} | {} | {} | {} | {} |\n", runCheckLabel(c.metric), base, cur, change,
                     c.p_value ? fmt::format("{:.2g}", *c.p_value) : "-", c.regression ? "**regression**" : "ok");
}

std::string coverageSentence(const analysis::GateResult& r) {
  const auto& k = r.coverage.keys;
  int64_t kernels = 0;
  for (const analysis::GateGroup& g : r.groups) kernels += g.check == TimeCheck::kKernel ? 1 : 0;
  std::vector<std::string> parts;
  auto plural = [](int64_t n) { return n == 1 ? "launch group" : "launch groups"; };
  const auto at = [&](TimeCheck c) { return k[static_cast<size_t>(c)]; };
  if (at(TimeCheck::kAlone)) parts.push_back(fmt::format("{} {} alone", at(TimeCheck::kAlone), plural(at(TimeCheck::kAlone))));
  if (at(TimeCheck::kKernel)) {
    parts.push_back(fmt::format("{} {} too rare alone with the others of their kernel ({} kernel{})",
                                at(TimeCheck::kKernel), plural(at(TimeCheck::kKernel)), kernels,
                                kernels == 1 ? "" : "s"));
  }
  if (at(TimeCheck::kPool)) {
    parts.push_back(fmt::format("{} {} in the pool of rare kernels", at(TimeCheck::kPool), plural(at(TimeCheck::kPool))));
  }
  if (at(TimeCheck::kTotalsOnly)) {
    parts.push_back(fmt::format("{} {} ({} launches) by the whole-run checks only", at(TimeCheck::kTotalsOnly),
                                plural(at(TimeCheck::kTotalsOnly)),
                                r.coverage.launches[static_cast<size_t>(TimeCheck::kTotalsOnly)]));
  }
  if (parts.empty()) return "";
  std::string s = "Time tested: ";
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? "; " : "") + parts[i];
  return s + ".\n\n";
}

std::string kernelCell(const GateFinding& f, const analysis::KernelNames& names) {
  if (f.kind == GateFinding::Kind::kGroupTime && f.kernel.empty()) return "(rare kernels)";
  return "`" + codeCell(names.shortName(f.kernel)) + "`";
}

std::string findingRow(const GateFinding& f, const analysis::KernelNames& names) {
  return fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                     f.regression ? "**regression**" : "info", analysis::findingKindName(f.kind),
                     f.metric.empty() ? "-" : f.metric, num(f.base_value), num(f.cur_value), signedPercent(f.change),
                     f.p_value ? fmt::format("{:.2g}", *f.p_value) : "n/a", kernelCell(f, names),
                     f.op.empty() ? "-" : "`" + codeCell(f.op) + "`", textCell(analysis::shortMessage(f, names)));
}

std::string findingsTable(const analysis::GateResult& r, const analysis::KernelNames& names) {
  std::string rows;
  size_t regressions = 0, infos = 0, left_out = 0, left_out_regressions = 0;
  for (const GateFinding& f : r.findings) {
    if (f.kind == GateFinding::Kind::kRun) continue;  // in the whole-run table
    size_t& shown = f.regression ? regressions : infos;
    if (shown >= (f.regression ? kMarkdownRegressionRows : kMarkdownInfoRows)) {
      ++left_out;
      left_out_regressions += f.regression ? 1 : 0;
      continue;
    }
    ++shown;
    rows += findingRow(f, names);
  }
  if (rows.empty()) return "No findings per kernel.\n";
  std::string md = "| verdict | kind | metric | base | current | change | p | kernel | op | detail |\n"
                   "|---|---|---|---|---|---|---|---|---|---|\n" + rows;
  if (left_out) {
    md += fmt::format("\n{} more finding{} ({} regression{}) in the JSON output (--json).\n", left_out,
                      left_out == 1 ? "" : "s", left_out_regressions, left_out_regressions == 1 ? "" : "s");
  }
  return md;
}

std::string markdownBody(const GateRun& run, const analysis::GateResult& r) {
  const analysis::GateOptions& g = run.options;
  std::string md = fmt::format(
      "`{}` -> `{}`: {} launch groups compared (kernel, launch shape, op), {} regression(s). Time threshold {:.3g}% "
      "(one-sided Mann-Whitney U, alpha {}), counter threshold {:.3g}%.\n\n",
      run.base_path, run.cur_path, r.kernels_checked, r.regressions, g.time_threshold * 100, g.alpha,
      g.counter_threshold * 100);
  for (const analysis::SetupDifference& d : r.setup_differences) md += "> **Warning:** " + textCell(d.message) + ".\n\n";
  md += coverageSentence(r);
  md += "| whole run | base | current | change | p | verdict |\n|---|---|---|---|---|---|\n";
  for (const RunCheck& c : r.run_checks) md += runCheckRow(c);
  return md + "\n" + findingsTable(r, *run.names);
}

// ---- JSON ---------------------------------------------------------------------------------------

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json findingsJson(const analysis::GateResult& r, std::optional<int> rank,
                            const analysis::KernelNames& names) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : r.findings) {
    nlohmann::json jf = {{"kind", analysis::findingKindName(f.kind)}, {"regression", f.regression},
                         {"kernel", f.kernel}, {"short_name", f.kernel.empty() ? "" : names.shortName(f.kernel)},
                         {"shape", f.shape}, {"op", f.op}, {"metric", f.metric},
                         {"base", opt(f.base_value)}, {"current", opt(f.cur_value)}, {"change", opt(f.change)},
                         {"p_value", opt(f.p_value)}, {"message", f.message}};
    if (rank) jf["rank"] = *rank;
    findings.push_back(std::move(jf));
  }
  return findings;
}

nlohmann::json warningsJson(const analysis::GateResult& r, std::optional<int> rank) {
  nlohmann::json out = nlohmann::json::array();
  for (const analysis::SetupDifference& d : r.setup_differences) {
    nlohmann::json w = {{"what", d.what}, {"base", d.base}, {"current", d.cur}, {"message", d.message}};
    if (rank) w["rank"] = *rank;
    out.push_back(std::move(w));
  }
  return out;
}

nlohmann::json checksJson(const analysis::GateResult& r, const analysis::KernelNames& names) {
  nlohmann::json run = nlohmann::json::array(), groups = nlohmann::json::array(), coverage = nlohmann::json::object();
  for (const RunCheck& c : r.run_checks) {
    const auto value = [&](double v) { return c.known ? nlohmann::json(v) : nlohmann::json(nullptr); };
    run.push_back({{"metric", c.metric}, {"base", value(c.base)}, {"current", value(c.cur)}, {"change", opt(c.change)},
                   {"p_value", opt(c.p_value)}, {"regression", c.regression}, {"message", c.message}});
  }
  for (const analysis::GateGroup& g : r.groups) {
    groups.push_back({{"check", analysis::timeCheckName(g.check)}, {"kernel", g.kernel},
                      {"short_name", g.kernel.empty() ? "" : names.shortName(g.kernel)}, {"launch_groups", g.keys},
                      {"base_launches", g.base_launches}, {"current_launches", g.cur_launches},
                      {"change", opt(g.change)}, {"p_value", opt(g.p_value)}, {"regression", g.regression}});
  }
  for (size_t i = 0; i < r.coverage.keys.size(); ++i) {
    coverage[std::string(analysis::timeCheckName(static_cast<TimeCheck>(i)))] = {
        {"launch_groups", r.coverage.keys[i]}, {"launches", r.coverage.launches[i]}};
  }
  return {{"run_checks", run}, {"groups", groups}, {"time_tested", coverage}};
}

nlohmann::json comparisonJson(const GateRun& run, const GateComparison& c) {
  nlohmann::json j = checksJson(c.result, *run.names);
  j["passed"] = c.result.passed();
  j["regressions"] = c.result.regressions;
  j["kernels_checked"] = c.result.kernels_checked;
  j["warnings"] = warningsJson(c.result, c.rank);
  j["findings"] = findingsJson(c.result, c.rank, *run.names);
  return j;
}

// ---- JUnit --------------------------------------------------------------------------------------

// Test names a CI's report view can tell apart: a repeated name gets " #2", " #3", ...
class UniqueNames {
 public:
  std::string operator()(const std::string& name) {
    if (taken_.insert(name).second) return name;
    for (int i = 2;; ++i) {
      std::string candidate = fmt::format("{} #{}", name, i);
      if (taken_.insert(candidate).second) return candidate;
    }
  }

 private:
  std::set<std::string> taken_;
};

struct JunitCases {
  std::string cases;
  int tests = 0, failures = 0;
};

void addCase(JunitCases& j, UniqueNames& unique, const std::string& classname, const std::string& name,
             const std::string* failure) {
  ++j.tests;
  const std::string shown = xmlEscape(unique(name));
  if (!failure) {
    j.cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\"/>\n", classname, shown);
    return;
  }
  ++j.failures;
  j.cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n      <failure message=\"{}\"/>\n    </testcase>\n",
                         classname, shown, xmlEscape(*failure));
}

std::string keyName(const std::string& prefix, const std::string& short_name, const std::string& shape,
                    const std::string& op) {
  std::string s = prefix + short_name;
  if (!shape.empty()) s += " [" + shape + "]";
  if (!op.empty()) s += " in " + op;
  return s;
}

std::string groupName(const std::string& prefix, const analysis::GateGroup& g, const analysis::KernelNames& names) {
  if (g.check == TimeCheck::kPool) return fmt::format("{}rare kernels ({} launch groups)", prefix, g.keys);
  return fmt::format("{}{} ({} rare launch groups)", prefix, names.shortName(g.kernel), g.keys);
}

// One failing case per regression; one passing case per compared launch group, pooled test and
// whole-run check that raised none.
void junitComparison(const GateComparison& c, const analysis::KernelNames& names, UniqueNames& unique,
                     JunitCases& j) {
  const std::string prefix = c.label.empty() ? "" : c.label + ": ";
  std::set<std::string> failed;
  for (const GateFinding& f : c.result.findings) {
    if (!f.regression) continue;
    const std::string message = analysis::shortMessage(f, names);
    if (f.kind == GateFinding::Kind::kRun) {
      failed.insert("run\x1f" + f.metric);
      addCase(j, unique, "fprof.gate.run", prefix + runCheckLabel(f.metric), &message);
    } else if (f.kind == GateFinding::Kind::kGroupTime) {
      failed.insert("group\x1f" + f.kernel);
      const std::string name = f.kernel.empty() ? prefix + "rare kernels" : prefix + names.shortName(f.kernel) + " (rare launch groups)";
      addCase(j, unique, "fprof.gate.group", name + " time", &message);
    } else {
      failed.insert(f.kernel + '\x1f' + f.shape + '\x1f' + f.op);
      addCase(j, unique, fmt::format("fprof.gate.{}", analysis::findingKindName(f.kind)),
              keyName(prefix, names.shortName(f.kernel), f.shape, f.op) + (f.metric.empty() ? "" : " " + f.metric),
              &message);
    }
  }
  for (const analysis::DiffEntry& e : c.diff->kernels) {
    if (!e.base || !e.cur || failed.count(e.name + '\x1f' + e.shape + '\x1f' + e.op)) continue;
    addCase(j, unique, "fprof.gate.kernel", keyName(prefix, names.shortName(e.name), e.shape, e.op), nullptr);
  }
  for (const analysis::GateGroup& g : c.result.groups) {
    if (failed.count("group\x1f" + g.kernel)) continue;
    addCase(j, unique, "fprof.gate.group", groupName(prefix, g, names), nullptr);
  }
  for (const RunCheck& rc : c.result.run_checks) {
    if (failed.count("run\x1f" + rc.metric)) continue;
    addCase(j, unique, "fprof.gate.run", prefix + runCheckLabel(rc.metric), nullptr);
  }
}

// "ranks 0-4, 7" for rank numbers; labels without a number follow as they are.
std::string rankList(const std::vector<const GateComparison*>& comparisons) {
  std::vector<int> numbers;
  std::vector<std::string> parts;
  for (const GateComparison* c : comparisons) {
    if (c->rank) numbers.push_back(*c->rank);
  }
  std::sort(numbers.begin(), numbers.end());
  for (size_t i = 0; i < numbers.size();) {
    size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    parts.push_back(i == j ? std::to_string(numbers[i]) : fmt::format("{}-{}", numbers[i], numbers[j]));
    i = j + 1;
  }
  std::string out = numbers.empty() ? "" : (numbers.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  for (const GateComparison* c : comparisons) {
    if (!c->rank) out += (out.empty() ? "" : ", ") + c->label;
  }
  return out;
}

// A section per comparison (for two jobs the whole job's first); past kMarkdownRankSections ranks,
// the ranks that passed without a warning are named in one line instead.
std::string perRankMarkdown(const GateRun& run) {
  const size_t first_rank = run.job ? 1 : 0;
  const size_t ranks = run.comparisons.size() - first_rank;
  size_t failed = 0;
  for (size_t i = first_rank; i < run.comparisons.size(); ++i) failed += run.comparisons[i].result.passed() ? 0 : 1;
  std::string md = fmt::format("{} {} of {} rank{} regressed", run.note, failed, ranks, ranks == 1 ? "" : "s");
  if (run.job) md += fmt::format("; the job as a whole {}", run.comparisons.front().result.passed() ? "passed" : "regressed");
  md += ".\n";
  std::vector<const GateComparison*> quiet;
  for (size_t i = 0; i < run.comparisons.size(); ++i) {
    const GateComparison& c = run.comparisons[i];
    if (ranks > kMarkdownRankSections && i >= first_rank && c.result.passed() && c.result.setup_differences.empty()) {
      quiet.push_back(&c);
      continue;
    }
    md += fmt::format("\n### {}: {}\n\n", c.label, c.result.passed() ? "passed" : "FAILED");
    md += markdownBody(run, c.result);
  }
  if (!quiet.empty()) {
    md += fmt::format("\nPassed without a warning: {} (their checks are in the JSON output, --json).\n",
                      rankList(quiet));
  }
  return md;
}

}  // namespace

bool GateRun::passed() const {
  for (const GateComparison& c : comparisons) {
    if (!c.result.passed()) return false;
  }
  return true;
}

std::string gateMarkdown(const GateRun& run) {
  std::string md = fmt::format("## fprof gate: {}\n\n", run.passed() ? "passed" : "FAILED");
  if (!run.per_rank) {
    const std::string body = markdownBody(run, run.comparisons.front().result);
    if (run.note.empty()) return md + body;
    // Several processes whose ranks differ: say that the comparison is of the whole files.
    const size_t first = body.find("\n\n") + 2;
    return md + body.substr(0, first) + run.note + "\n\n" + body.substr(first);
  }
  return md + perRankMarkdown(run);
}

// Whole files: one comparison's results at the top level. Per rank: the totals over the ranks at
// the top level, findings and warnings tagged with their rank, and one entry per rank.
nlohmann::json gateJson(const GateRun& run) {
  nlohmann::json j;
  if (!run.per_rank) {
    j = comparisonJson(run, run.comparisons.front());
    if (!run.note.empty()) {
      j["comparison"] = "all processes";
      j["note"] = run.note;
    }
  } else {
    j["comparison"] = run.job ? "per rank and whole job" : "per rank";
    j["note"] = run.note;
    j["passed"] = run.passed();
    int64_t regressions = 0, checked = 0;
    j["findings"] = nlohmann::json::array();
    j["warnings"] = nlohmann::json::array();
    j["ranks"] = nlohmann::json::array();
    for (size_t i = 0; i < run.comparisons.size(); ++i) {
      const GateComparison& c = run.comparisons[i];
      regressions += c.result.regressions;
      if (!run.job || i > 0) checked += c.result.kernels_checked;  // the ranks' launch groups
      nlohmann::json one = comparisonJson(run, c);
      for (const auto& f : one["findings"]) j["findings"].push_back(f);
      for (const auto& w : one["warnings"]) j["warnings"].push_back(w);
      if (run.job && i == 0) {
        one["label"] = c.label;
        j["job"] = std::move(one);  // its findings and warnings carry no rank
        continue;
      }
      one["rank"] = c.rank ? nlohmann::json(*c.rank) : nlohmann::json(nullptr);
      j["ranks"].push_back(std::move(one));
    }
    j["regressions"] = regressions;
    j["kernels_checked"] = checked;
  }
  const analysis::GateOptions& g = run.options;
  j["base"] = core::cleanText(run.base_path);
  j["current"] = core::cleanText(run.cur_path);
  j["options"] = {{"time_threshold", g.time_threshold}, {"counter_threshold", g.counter_threshold},
                  {"alpha", g.alpha}, {"min_share", g.min_share}, {"test", "one-sided Mann-Whitney U"}};
  return j;
}

// Differences between how the runs were recorded are testsuite properties (name fprof.warning)
// and lines of <system-err>: marked, but no test fails for them.
std::string gateJunit(const GateRun& run) {
  JunitCases j;
  UniqueNames unique;
  std::string properties, errors;
  for (const GateComparison& c : run.comparisons) {
    junitComparison(c, *run.names, unique, j);
    for (const analysis::SetupDifference& d : c.result.setup_differences) {
      const std::string text = (c.label.empty() ? "" : c.label + ": ") + "warning: " + d.message;
      properties += fmt::format("      <property name=\"fprof.warning\" value=\"{}\"/>\n", xmlEscape(text));
      errors += xmlEscape(text) + "\n";
    }
  }
  std::string suite_extra;
  if (!properties.empty()) suite_extra = "    <properties>\n" + properties + "    </properties>\n";
  std::string tail;
  if (!errors.empty()) tail = "    <system-err>" + errors + "    </system-err>\n";
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"fprof gate\" "
                     "tests=\"{}\" failures=\"{}\">\n{}{}{}  </testsuite>\n</testsuites>\n",
                     j.tests, j.failures, suite_extra, j.cases, tail);
}

core::Expected<GateOutputs> openGateOutputs(const GateOutputPaths& paths, bool force,
                                            const std::vector<std::string>& inputs) {
  const core::Status distinct =
      core::checkDistinctOutputs({{"--markdown", paths.markdown}, {"--json", paths.json}, {"--junit", paths.junit}});
  if (!distinct) return core::Error{distinct.error()};
  GateOutputs out;
  for (auto [path, file, what] : {std::tuple{&paths.markdown, &out.markdown, "the Markdown summary"},
                                  std::tuple{&paths.json, &out.json, "the JSON findings"},
                                  std::tuple{&paths.junit, &out.junit, "the JUnit report"}}) {
    if (path->empty()) continue;
    core::OutputRules rules;
    rules.replace = force;
    rules.inputs = inputs;
    rules.what = what;
    auto opened = core::TextOutput::open(*path, rules);
    if (!opened) return core::Error{opened.error()};
    file->emplace(std::move(*opened));
  }
  return out;
}

bool GateOutputs::toStandardOutput() const {
  for (const std::optional<core::TextOutput>* file : {&markdown, &json, &junit}) {
    if (*file && (*file)->toStandardOutput()) return true;
  }
  return false;
}

core::Status writeGateOutputs(GateOutputs& out, const GateRun& run, const std::string& markdown) {
  const std::string json = gateJson(run).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const std::string junit = out.junit ? gateJunit(run) : std::string();
  for (auto [file, text] : {std::pair{&out.markdown, &markdown}, std::pair{&out.json, &json},
                            std::pair{&out.junit, &junit}}) {
    if (!*file) continue;
    if (core::Status s = (*file)->write(*text); !s) return s;
  }
  for (std::optional<core::TextOutput>* file : {&out.markdown, &out.json, &out.junit}) {
    if (!*file) continue;
    if (core::Status s = (*file)->finish(); !s) return s;
  }
  return {};
}

// XML 1.0 forbids control characters even as references: the text is cleaned first (they become
// visible pictures), and the two noncharacters U+FFFE and U+FFFF, valid UTF-8 but no XML, become U+FFFD.
std::string xmlEscape(const std::string& s) {
  std::string out;
  const std::string clean = core::cleanText(s);
  for (size_t i = 0; i < clean.size(); ++i) {
    const char c = clean[i];
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (c == '\xEF' && i + 2 < clean.size() && clean[i + 1] == '\xBF' &&
            (clean[i + 2] == '\xBE' || clean[i + 2] == '\xBF')) {
          out += core::kReplacementCharacter;
          i += 2;
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace fprof::cli
