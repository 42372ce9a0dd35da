// fprof gate: the CI performance gate. Exit 0 when clean, 1 on a regression, 2 on bad input.
// Time regressions must be significant (one-sided Mann-Whitney U over repeated launches);
// counters (bytes, FLOPs, registers, spills, occupancy) are near-exact signals (docs/gate.md).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "command.h"
#include "fprof/analysis/diff.h"
#include "fprof/core/merge.h"
#include "fprof/core/store.h"
#include "fprof/core/text.h"
#include "fprof/reports/escape.h"
#include "gate_config.h"

namespace fprof::cli {
namespace {

struct GateCliOptions {
  std::string base, cur;
  std::string time_threshold, counter_threshold, config;
  double alpha = 0;
  std::string markdown, json, junit;
  bool force = false;
  bool quiet = false;
};

std::string num(const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : "n/a"; }

// The comparison sentence and the findings table of one comparison (a whole run, or one rank).
// Kernels by their short names (analysis/kernel_names.h); the JSON keeps the full ones too.
std::string markdownBody(const GateCliOptions& o, const analysis::GateOptions& g, const analysis::GateResult& r,
                         const analysis::KernelNames& names) {
  std::string md = fmt::format("`{}` -> `{}`: {} kernels compared, {} regression(s). Time threshold {:.3g}% (one-sided "
                    "Mann-Whitney U, alpha {}), counter threshold {:.3g}%.\n\n",
                    o.base, o.cur, r.kernels_checked, r.regressions, g.time_threshold * 100, g.alpha,
                    g.counter_threshold * 100);
  if (r.findings.empty()) return md + "No findings.\n";
  md += "| verdict | kind | metric | base | current | change | p | kernel | detail |\n";
  md += "|---|---|---|---|---|---|---|---|---|\n";
  // In a code span entities are not decoded: only pipes (table cells) and backticks need care.
  // Text is cleaned to one line and cut to the display limit first: a table row stays a row.
  auto code = [](const std::string& s) {
    std::string out;
    for (char c : core::cleanText(reports::shownText(s))) {
      if (c == '|') out += "\\|";
      else if (c == '`') out += '\'';
      else out += c;
    }
    return out;
  };
  auto esc = [](const std::string& s) {
    std::string out;
    for (char c : core::cleanText(reports::shownText(s))) {
      if (c == '|') out += "\\|";
      else if (c == '<') out += "&lt;";
      else if (c == '>') out += "&gt;";
      else out += c;
    }
    return out;
  };
  for (const auto& f : r.findings) {
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | `{}` | {} |\n", f.regression ? "**regression**" : "info",
                      analysis::findingKindName(f.kind), f.metric.empty() ? "-" : f.metric, num(f.base_value),
                      num(f.cur_value), f.change ? fmt::format("{:+.2f}%", *f.change * 100) : "n/a",
                      f.p_value ? fmt::format("{:.2g}", *f.p_value) : "n/a", code(names.shortName(f.kernel)),
                      esc(analysis::shortMessage(f, names)));
  }
  return md;
}

std::string markdown(const GateCliOptions& o, const analysis::GateOptions& g, const analysis::GateResult& r,
                     const analysis::KernelNames& names) {
  return fmt::format("## fprof gate: {}\n\n", r.passed() ? "passed" : "FAILED") + markdownBody(o, g, r, names);
}

// Databases holding several processes (fprof merge) are compared rank by rank when both hold the
// same ranks: a regression on one rank is not averaged away by the others. Otherwise the whole
// files are compared, and the note says why.
struct RankGate {
  std::string label;  // "rank 0"
  std::optional<int> rank;
  analysis::RunDiff diff;
  analysis::GateResult result;
};

struct GatePlan {
  std::vector<RankGate> ranks;  // empty: the whole files were compared
  std::string note;             // "" for two single-process files
};

std::optional<std::vector<int>> ranksOf(const std::vector<core::RankGroup>& groups) {
  std::vector<int> ranks;
  for (const core::RankGroup& g : groups) {
    if (!g.rank) return std::nullopt;
    ranks.push_back(*g.rank);
  }
  return ranks;
}

GatePlan planByRank(const GateCliOptions& o, const core::Profile& base, const core::Profile& cur,
                    const analysis::GateOptions& g) {
  GatePlan plan;
  if (base.processes.size() <= 1 && cur.processes.size() <= 1) return plan;
  const auto bg = core::rankGroups(base), cg = core::rankGroups(cur);
  const auto br = ranksOf(bg), cr = ranksOf(cg);
  if (br && cr && *br == *cr) {
    plan.note = fmt::format("Compared rank by rank: both files hold {}.", core::describeRanks(bg));
    for (const core::RankGroup& group : bg) {
      auto b = core::selectRank(base, *group.rank), c = core::selectRank(cur, *group.rank);
      RankGate rg{group.label, group.rank, analysis::diffProfiles(*b, *c), {}};
      rg.result = analysis::evaluateGate(rg.diff, g);
      plan.ranks.push_back(std::move(rg));
    }
    return plan;
  }
  plan.note = fmt::format("Compared all processes together, not rank by rank: `{}` holds {}, `{}` holds {}.", o.base,
                          core::describeRanks(bg), o.cur, core::describeRanks(cg));
  return plan;
}

std::string markdownByRank(const GateCliOptions& o, const analysis::GateOptions& g, const GatePlan& plan,
                           const analysis::KernelNames& names) {
  int failed = 0;
  for (const RankGate& r : plan.ranks) failed += r.result.passed() ? 0 : 1;
  std::string md = fmt::format("## fprof gate: {}\n\n{} {} of {} rank{} regressed.\n", failed ? "FAILED" : "passed",
                               plan.note, failed, plan.ranks.size(), plan.ranks.size() == 1 ? "" : "s");
  for (const RankGate& r : plan.ranks) {
    md += fmt::format("\n### {}: {}\n\n", r.label, r.result.passed() ? "passed" : "FAILED");
    md += markdownBody(o, g, r.result, names);
  }
  return md;
}

nlohmann::json findingsJson(const analysis::GateResult& r, std::optional<int> rank,
                            const analysis::KernelNames& names) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : r.findings) {
    nlohmann::json jf = {{"kind", analysis::findingKindName(f.kind)}, {"regression", f.regression},
                         {"kernel", f.kernel}, {"short_name", names.shortName(f.kernel)}, {"shape", f.shape},
                         {"metric", f.metric},
                         {"base", opt(f.base_value)}, {"current", opt(f.cur_value)}, {"change", opt(f.change)},
                         {"p_value", opt(f.p_value)}, {"message", f.message}};
    if (rank) jf["rank"] = *rank;
    findings.push_back(std::move(jf));
  }
  return findings;
}

nlohmann::json toJson(const GateCliOptions& o, const analysis::GateOptions& g, const analysis::GateResult& r,
                      const analysis::KernelNames& names) {
  nlohmann::json j;
  j["base"] = core::cleanText(o.base);
  j["current"] = core::cleanText(o.cur);
  j["passed"] = r.passed();
  j["regressions"] = r.regressions;
  j["kernels_checked"] = r.kernels_checked;
  j["options"] = {{"time_threshold", g.time_threshold}, {"counter_threshold", g.counter_threshold},
                  {"alpha", g.alpha}, {"min_share", g.min_share}, {"test", "one-sided Mann-Whitney U"}};
  j["findings"] = findingsJson(r, std::nullopt, names);
  return j;
}

// Per rank: the totals over the ranks at the top level, findings tagged with their rank, and one
// entry per rank with its own verdict.
nlohmann::json toJsonByRank(const GateCliOptions& o, const analysis::GateOptions& g, const GatePlan& plan,
                            const analysis::KernelNames& names) {
  analysis::GateResult all;
  for (const RankGate& r : plan.ranks) {
    all.regressions += r.result.regressions;
    all.kernels_checked += r.result.kernels_checked;
  }
  nlohmann::json j = toJson(o, g, all, names);
  j["comparison"] = "per rank";
  j["note"] = plan.note;
  j["ranks"] = nlohmann::json::array();
  for (const RankGate& r : plan.ranks) {
    const nlohmann::json findings = findingsJson(r.result, r.rank, names);
    for (const auto& f : findings) j["findings"].push_back(f);
    j["ranks"].push_back({{"rank", r.rank ? nlohmann::json(*r.rank) : nlohmann::json(nullptr)},
                          {"passed", r.result.passed()},
                          {"regressions", r.result.regressions},
                          {"kernels_checked", r.result.kernels_checked},
                          {"findings", findings}});
  }
  return j;
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

// One test case per regression or per compared kernel that passed; regressions are failures.
// `prefix` names the rank ("rank 0: ") when ranks are compared one by one.
struct JunitCases {
  std::string cases;
  int tests = 0, failures = 0;
};

JunitCases junitCases(const analysis::RunDiff& d, const analysis::GateResult& r, const std::string& prefix,
                      const analysis::KernelNames& names) {
  std::string cases;
  int tests = 0, failures = 0;
  std::set<std::string> failed;
  for (const auto& f : r.findings) {
    if (!f.regression) continue;
    ++tests;
    ++failures;
    failed.insert(f.kernel + '\x1f' + f.shape);
    cases += fmt::format("    <testcase classname=\"fprof.gate.{}\" name=\"{} [{}]\">\n      <failure message=\"{}\"/>\n    </testcase>\n",
                         analysis::findingKindName(f.kind), xmlEscape(prefix + names.shortName(f.kernel)),
                         xmlEscape(f.metric.empty() ? f.shape : f.metric), xmlEscape(analysis::shortMessage(f, names)));
  }
  for (const auto& e : d.kernels) {
    if (!e.base || !e.cur || failed.count(e.name + '\x1f' + e.shape)) continue;
    ++tests;
    cases += fmt::format("    <testcase classname=\"fprof.gate.kernel\" name=\"{} [{}]\"/>\n",
                         xmlEscape(prefix + names.shortName(e.name)),
                         xmlEscape(e.shape));
  }
  return {cases, tests, failures};
}

std::string junitDocument(const std::vector<JunitCases>& parts) {
  std::string cases;
  int tests = 0, failures = 0;
  for (const JunitCases& p : parts) {
    cases += p.cases;
    tests += p.tests;
    failures += p.failures;
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"fprof gate\" "
                     "tests=\"{}\" failures=\"{}\">\n{}  </testsuite>\n</testsuites>\n",
                     tests, failures, cases);
}

core::Expected<analysis::GateOptions> gateOptions(const GateCliOptions& o) {
  analysis::GateOptions g;
  if (!o.config.empty()) {
    if (core::Status s = applyGateConfigFile(o.config, g); !s) return core::Error{s.error()};
  }
  // Command-line options override the configuration file.
  if (!o.time_threshold.empty()) {
    auto v = parsePercent(o.time_threshold, "--time-threshold");
    if (!v) return core::Error{v.error()};
    g.time_threshold = *v;
  }
  if (!o.counter_threshold.empty()) {
    auto v = parsePercent(o.counter_threshold, "--counter-threshold");
    if (!v) return core::Error{v.error()};
    g.counter_threshold = *v;
  }
  if (o.alpha > 0) g.alpha = o.alpha;
  return g;
}

// The files asked for, opened before the comparison: a name that cannot be written costs nothing.
struct GateOutputs {
  std::unique_ptr<core::OutputFile> markdown, json, junit;
};

core::Expected<GateOutputs> openGateOutputs(const GateCliOptions& o) {
  const core::Status distinct =
      core::checkDistinctOutputs({{"--markdown", o.markdown}, {"--json", o.json}, {"--junit", o.junit}});
  if (!distinct) return core::Error{distinct.error()};
  std::vector<std::string> inputs = {o.base, o.cur};
  if (!o.config.empty()) inputs.push_back(o.config);
  GateOutputs out;
  for (auto [path, file, what] : {std::tuple{&o.markdown, &out.markdown, "the Markdown summary"},
                                  std::tuple{&o.json, &out.json, "the JSON findings"},
                                  std::tuple{&o.junit, &out.junit, "the JUnit report"}}) {
    if (path->empty()) continue;
    auto opened = core::OutputFile::create(*path, outputRules(o.force, inputs, what));
    if (!opened) return core::Error{opened.error()};
    *file = std::move(*opened);
  }
  return out;
}

// What the gate says, in each form it can be written.
struct GateTexts {
  std::string markdown;
  nlohmann::json json;
  std::string junit;
  bool passed = true;
};

GateTexts gateTexts(const GateCliOptions& o, const analysis::GateOptions& g, const core::Profile& base,
                    const core::Profile& cur) {
  const GatePlan plan = planByRank(o, base, cur, g);
  const analysis::KernelNames names = analysis::KernelNames::of({&base, &cur});
  GateTexts t;
  std::vector<JunitCases> junit;
  if (!plan.ranks.empty()) {
    t.markdown = markdownByRank(o, g, plan, names);
    t.json = toJsonByRank(o, g, plan, names);
    for (const RankGate& r : plan.ranks) {
      junit.push_back(junitCases(r.diff, r.result, r.label + ": ", names));
      t.passed = t.passed && r.result.passed();
    }
  } else {
    const analysis::RunDiff d = analysis::diffProfiles(base, cur);
    const analysis::GateResult r = analysis::evaluateGate(d, g);
    t.markdown = markdown(o, g, r, names);
    t.json = toJson(o, g, r, names);
    if (!plan.note.empty()) {
      // Several processes whose ranks differ: say that the comparison is of the whole files.
      t.markdown.insert(t.markdown.find("\n\n") + 2, plan.note + "\n\n");
      t.json["comparison"] = "all processes";
      t.json["note"] = plan.note;
    }
    junit.push_back(junitCases(d, r, "", names));
    t.passed = r.passed();
  }
  t.junit = junitDocument(junit);
  return t;
}

// Every file is complete before any is put in place; a failure leaves none of them half-written.
core::Status writeGateOutputs(GateOutputs& out, const GateTexts& t) {
  const std::string json = t.json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  for (auto [file, text] : {std::pair{out.markdown.get(), &t.markdown}, std::pair{out.json.get(), &json},
                            std::pair{out.junit.get(), &t.junit}}) {
    if (!file) continue;
    if (core::Status s = file->write(*text); !s) return s;
  }
  for (core::OutputFile* file : {out.markdown.get(), out.json.get(), out.junit.get()}) {
    if (!file) continue;
    if (core::Status s = file->commit(); !s) return s;
  }
  return {};
}

int runGate(const GateCliOptions& o) {
  auto g = gateOptions(o);
  if (!g) return inputError(g.error());
  auto out = openGateOutputs(o);
  if (!out) return inputError(out.error());
  auto base = loadProfile(o.base);
  if (!base) return inputError(base.error());
  auto cur = loadProfile(o.cur);
  if (!cur) return inputError(cur.error());
  const GateTexts texts = gateTexts(o, *g, *base, *cur);
  if (core::Status s = writeGateOutputs(*out, texts); !s) return inputError(s.error());
  if (!o.quiet) printText(stdout, texts.markdown);
  return texts.passed ? 0 : 1;
}

}  // namespace

Command addGateCommand(CLI::App& root) {
  auto opt = std::make_shared<GateCliOptions>();
  CLI::App* app = root.add_subcommand(
      "gate", "CI performance gate: exit 0 when CURRENT is no worse than BASE, 1 on a regression, 2 on bad input. "
              "Time regressions must be significant (one-sided Mann-Whitney U over repeated launches); counters are "
              "exact signals. Databases of several processes (fprof merge) holding the same ranks are compared rank "
              "by rank.");
  app->add_option("base", opt->base, "The baseline .fprof database")->required();
  app->add_option("current", opt->cur, "The current .fprof database")->required();
  app->add_option("--time-threshold", opt->time_threshold,
                  "Median slowdown that fails the gate when significant, in percent (default 5%)");
  app->add_option("--counter-threshold", opt->counter_threshold,
                  "Change of a counter (bytes, FLOPs, registers, spills, occupancy) that fails the gate, in percent "
                  "(default 1%)");
  app->add_option("--alpha", opt->alpha, "Significance level of the time test (default 0.01)")
      ->check(CLI::Range(1e-12, 0.5));
  app->add_option("--config", opt->config,
                  "JSON or TOML file (by extension) with the options above and ignore lists (docs/gate.md)");
  app->add_option("--markdown", opt->markdown,
                  "Write the Markdown summary here (e.g. $GITHUB_STEP_SUMMARY, which the runner creates: add --force)");
  app->add_option("--json", opt->json, "Write the findings as JSON here");
  app->add_option("--junit", opt->junit, "Write a JUnit XML report here");
  app->add_flag("--force", opt->force, kForceHelp);
  app->footer(kOutputRulesFooter);
  app->add_flag("-q,--quiet", opt->quiet, "Print nothing; only the exit code and the files asked for");
  return {app, [opt] { return runGate(*opt); }};
}

}  // namespace fprof::cli
