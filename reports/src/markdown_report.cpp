// The Markdown summary (see markdown_report.h). Kernel names are set in code spans with table
// pipes escaped, so GitHub renders a name full of <, > and | as the literal text it is.
#include "fprof/reports/markdown_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "fprof/core/text.h"
#include "fprof/reports/escape.h"
#include "fprof/reports/format.h"

namespace fprof::reports {
namespace {

// One line of text, as shown: our own line breaks flattened to spaces, then cleaned (the data
// is cleaned by the reader; this keeps any other control character out of the table too) and
// cut to the display limit, so a 1 MB name is no 1 MB table row.
std::string oneLine(const std::string& s) {
  std::string flat = s;
  std::replace(flat.begin(), flat.end(), '\n', ' ');
  std::replace(flat.begin(), flat.end(), '\r', ' ');
  return core::cleanText(shownText(flat));
}

// Inline text for a table cell: pipes escaped, line breaks flattened.
std::string cellText(const std::string& s) {
  std::string out;
  for (char c : oneLine(s)) {
    if (c == '|') {
      out += "\\|";
    } else {
      out += c;
    }
  }
  return out;
}

std::string shorten(const std::string& s, size_t max_chars) { return core::truncateTextMiddle(s, max_chars, "..."); }

// A kernel's short name in a table cell: a name its run had to spell out in full to tell it apart
// (over 190 characters) keeps its start and end; the full name is in the folded list.
std::string kernelCell(const std::string& short_name) { return shorten(short_name, 190); }

// A code span of text already made one line: it survives backticks in the text (CommonMark: a
// fence longer than any run of backticks inside, padded with spaces).
std::string fenced(const std::string& text) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  if (longest == 0) return "`" + text + "`";
  const std::string fence(longest + 1, '`');
  return fence + " " + text + " " + fence;
}

// A code span for a table cell: one line, cut for display, pipes escaped.
std::string code(const std::string& s) { return fenced(cellText(s)); }

// Text outside code spans: escape what would otherwise become markup. A lone '>' cannot open a
// tag, and mid-line it is no blockquote, so arrows stay readable.
std::string plain(const std::string& s) {
  std::string out;
  for (char c : oneLine(s)) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '&') {
      out += "&amp;";
    } else if (c == '*' || c == '_' || c == '[' || c == ']' || c == '\\' || c == '|') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

std::string findingText(const std::string& s) {
  // Findings quote commands in backticks; keep those spans as code, escape the rest.
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const size_t open = s.find('`', i);
    if (open == std::string::npos) {
      out += plain(s.substr(i));
      break;
    }
    const size_t close = s.find('`', open + 1);
    if (close == std::string::npos) {
      out += plain(s.substr(i));
      break;
    }
    out += plain(s.substr(i, open - i)) + "`" + oneLine(s.substr(open + 1, close - open - 1)) + "`";
    i = close + 1;
  }
  return out;
}

// Markdown has no hover: the full names of the kernels shown by a short name are listed at the
// end, folded, in the order they first appear.
class FullNames {
 public:
  void note(const std::string& full, const std::string& shown) {
    if (full != shown && seen_.insert(full).second) list_.emplace_back(shown, full);
  }
  std::string render() const {
    if (list_.empty()) return "";
    std::string s = "\n<details><summary>Full kernel names</summary>\n\n";
    for (const auto& [shown, full] : list_) s += "- " + span(shown) + ": " + span(full) + "\n";
    return s + "\n</details>\n";
  }

 private:
  // A code span outside a table: no pipe escapes; one line, cleaned and cut for display like
  // every text shown (a 1 MB full name is no 1 MB line).
  static std::string span(const std::string& text) { return fenced(oneLine(text)); }
  std::set<std::string> seen_;
  std::vector<std::pair<std::string, std::string>> list_;
};

std::string row(const std::vector<std::string>& cells) {
  std::string s = "|";
  for (const std::string& c : cells) s += " " + c + " |";
  return s + "\n";
}

std::string separator(const std::vector<bool>& right) {
  std::string s = "|";
  for (bool r : right) s += r ? " ---: |" : " --- |";
  return s + "\n";
}

// Several processes: one row per rank (kernel time, its share of the job's, NCCL share, top kernel).
std::string rankSection(const ReportData& r, FullNames& full_names) {
  if (r.ranks.empty()) return "";
  std::string s = "\n### Ranks\n\n" +
                  row({"rank", "host", "device", "mode", "kernels", "kernel time", "share", "NCCL", "top kernel"}) +
                  separator({true, false, false, false, true, true, true, true, false});
  for (const analysis::RankRow& k : r.ranks) {
    const std::string top = kernelCell(r.names.shortName(k.top_kernel));
    if (!k.top_kernel.empty()) full_names.note(k.top_kernel, top);
    s += row({k.group.rank ? std::to_string(*k.group.rank) : plain(k.group.label), plain(k.hosts),
              plain(k.devices.empty() ? "?" : k.devices), plain(k.mode), std::to_string(k.kernel_count),
              formatDurationNs(static_cast<double>(k.total_kernel_ns)), formatPercent(k.share),
              formatPercent(k.nccl_share),
              k.top_kernel.empty() ? "none" : formatPercent(k.topKernelShare()) + " " + code(top)});
  }
  return s + "\nNCCL = share of the rank's kernel time in NCCL kernels; `fprof report --rank N` reports one rank.\n";
}


// A table cell's text that can be long (a suggestion, a reason): at most 160 code points, the
// whole text in the candidates' details below the table.
std::string shortCell(const std::string& text) { return core::truncateText(text, 160); }

// Markdown has no hover: each listed candidate's stages by their kernels, its intermediates, how
// it was found and its risks, folded below the table.
std::string fusionDetails(const ReportData& r, size_t shown, FullNames& full_names) {
  std::string s = "\n<details><summary>Kernels, intermediates and risks of each candidate</summary>\n\n";
  for (size_t i = 0; i < shown; ++i) {
    const FusionRow& f = r.fusion[i];
    std::string stages;
    for (size_t k = 0; k < f.stage_labels.size(); ++k) {
      const std::string op = k < f.ops.size() && f.ops[k] != f.stage_labels[k] ? plain(f.ops[k]) + ": " : "";
      stages += (stages.empty() ? "" : " -> ") + op + code(f.stage_labels[k]);
      if (k < f.stages.size()) full_names.note(f.stages[k], f.stage_labels[k]);
    }
    s += fmt::format("{}. {}. Kernels: {}.", i + 1, plain(f.pattern), stages);
    if (!f.intermediates.empty()) {
      std::string names;
      for (const std::string& n : f.intermediates) names += (names.empty() ? "" : ", ") + n;
      s += " Intermediates: " + plain(names) + ".";
    }
    s += " Found by " + plain(f.evidence) + ".";
    if (f.fuse) s += " Suggestion: " + plain(f.suggestion) + ".";
    if (!f.fuse) s += " Do not fuse: " + plain(f.reason) + ".";
    for (const std::string& k : f.risks) s += " Risk: " + plain(k) + ".";
    s += "\n";
  }
  return s + "\n</details>\n";
}

// The baseline's fusion candidates this run runs fused: predicted and measured saving side by side.
std::string appliedFusions(const BaselineSection& b) {
  std::string s = "#### Fusions applied\n\n" + plain(b.fusions_note) + ".\n\n";
  if (b.fusions.empty()) return s;
  s += row({"candidate (baseline)", "found by", "instances", "launches", "saving (predicted)", "saving (measured)",
            "error"}) +
       separator({false, false, true, true, true, true, true});
  for (const AppliedFusionRow& f : b.fusions) {
    s += row({plain(shortCell(f.name)), plain(f.matched_by), std::to_string(f.instances),
              fmt::format("{} -> {}", f.launches_before, f.launches_after), orNa(f.predicted_saving_ns, formatDurationNs),
              formatDurationNs(f.measured_saving_ns), f.error ? formatSignedPercent(*f.error) : "n/a"});
  }
  return s + "\n";
}

}  // namespace

namespace {

// One line under the title: what was run, on what, how much (the details fold away at the end).
std::string summaryLine(const ReportData& r) {
  const RunHeader& h = r.header;
  std::string devices;
  for (const std::string& d : h.devices) devices += (devices.empty() ? "" : "; ") + d;
  std::string s = code(h.file) + " · " + plain(h.mode) + (h.has_counters ? " (counters)" : " (trace: no counters)") +
                  " · " + plain(devices.empty() ? "device unknown" : devices) + " · " +
                  fmt::format("{} launches in {} kernel groups, kernel time {}", h.kernel_count, r.group_count,
                              formatDurationNs(static_cast<double>(h.total_kernel_ns)));
  if (!h.warnings.empty()) {
    s += fmt::format(" · **{} warning{}** (run details)", h.warnings.size(), h.warnings.size() == 1 ? "" : "s");
  }
  return s + "\n";
}

// The first table: the kernels by time with what a reader acts on; the other columns fold away
// (kernelDetailsTable).
std::string kernelTable(const ReportData& r, size_t shown, FullNames& full_names) {
  const bool counters = r.header.has_counters;
  std::vector<std::string> head = {"#", "kernel", "op", "time", "share", "calls", "mean"};
  std::vector<bool> right = {true, false, false, true, true, true, true};
  const std::vector<const char*> tail = counters ? std::vector<const char*>{"% of roof", "bound", "to gain"}
                                                 : std::vector<const char*>{"bound", "occupancy"};
  for (const char* c : tail) {
    head.push_back(c);
    right.push_back(std::string(c) != "bound");
  }
  std::string s = row(head) + separator(right);
  for (size_t i = 0; i < shown; ++i) {
    const GroupRow& g = r.groups[i];
    std::vector<std::string> cells = {std::to_string(i + 1), code(kernelCell(g.short_name)),
                                      g.op.empty() ? "-" : code(shorten(g.op, 60)),
                                      formatDurationNs(static_cast<double>(g.total_ns)), formatPercent(g.share),
                                      std::to_string(g.calls), formatDurationNs(g.mean_ns)};
    if (counters) {
      cells.push_back(formatPercent(g.roof_fraction) + (g.roof_fraction ? " (" + g.binding_roof + ")" : ""));
      cells.push_back(g.bound.empty() ? "n/a" : g.bound);
      cells.push_back(orNa(g.headroom_ns, formatDurationNs));
    } else {
      cells.push_back(g.bound.empty() ? "n/a" : g.bound);
      cells.push_back(formatPercent(g.theoretical_occupancy));
    }
    full_names.note(g.name, kernelCell(g.short_name));
    s += row(cells);
  }
  if (counters) s += "\nto gain = time x (1 - fraction of roof): what the group would save running at its roof.\n";
  return s;
}

std::string kernelDetailsTable(const ReportData& r, size_t shown) {
  const RunHeader& h = r.header;
  std::vector<std::string> head = {"#", "grid", "block", "regs", "smem", "local/thr", "occupancy"};
  if (h.has_counters) {
    for (const char* c : {"intensity (DRAM)", "FLOP/s", "DRAM B/s", "spill traffic", "occupancy (achieved)"}) {
      head.push_back(c);
    }
  }
  const bool provenance = !h.counter_coverage.empty();
  if (provenance) head.push_back("counters");
  std::vector<bool> right(head.size(), true);
  if (provenance) right.back() = false;
  std::string s = "\n<details><summary>All columns of the kernels above</summary>\n\n" + row(head) + separator(right);
  for (size_t i = 0; i < shown; ++i) {
    const GroupRow& g = r.groups[i];
    std::vector<std::string> cells = {std::to_string(i + 1), g.grid, g.block, std::to_string(g.registers_per_thread),
                                      formatBytes(static_cast<double>(g.shared_bytes)),
                                      formatBytes(static_cast<double>(g.local_bytes_per_thread)),
                                      formatPercent(g.theoretical_occupancy)};
    if (h.has_counters) {
      cells.push_back(orNa(g.intensity_dram, formatIntensity));
      cells.push_back(orNa(g.flops_per_s, formatFlopRate));
      cells.push_back(orNa(g.dram_bytes_per_s, formatByteRate));
      cells.push_back(orNa(g.spill_bytes, formatBytes));
      cells.push_back(formatPercent(g.achieved_occupancy));
    }
    if (provenance) cells.push_back(plain(g.counters));
    s += row(cells);
  }
  s += "\noccupancy = theoretical (launch configuration and device limits); local/thr = stack frame and spills";
  s += h.has_counters ? "; intensity, FLOP/s, bytes/s: measured counters; % of roof against the ceilings in the run details\n"
                      : "; trace-mode run: no counters, so no intensity or % of roof (record them with `fprof run "
                        "--metrics roofline`)\n";
  return s + "\n</details>\n";
}

std::string fusionSection(const ReportData& r, const MarkdownOptions& options, FullNames& full_names) {
  std::string s = "\n### Fusion opportunities\n\n";
  for (const std::string& n : r.fusion_notes) s += plain(n) + "\n\n";
  if (r.fusion.empty()) return s + "No producer -> consumer pairs found in this run.\n";
  s += row({"#", "candidate", "runs", "intermediate", "launches removed", "unfused (measured)", "fused (predicted)",
            "fused (measured)", "payoff (predicted)", "share", "suggestion"}) +
       separator({true, false, true, true, true, true, true, true, true, true, false});
  const size_t shown = std::min(options.top_fusions, r.fusion.size());
  for (size_t i = 0; i < shown; ++i) {
    const FusionRow& f = r.fusion[i];
    const std::string candidate = f.declared && f.id != f.pattern ? code(f.id) + ": " + plain(f.name) : plain(f.name);
    const std::string advice = f.fuse ? f.suggestion : "do not fuse: " + f.reason;
    s += row({std::to_string(i + 1), candidate, std::to_string(f.instances), orNa(f.intermediate_bytes, formatBytes),
              std::to_string(f.launches_removed), formatDurationNs(f.unfused_ns),
              orNa(f.predicted_fused_ns, formatDurationNs), orNa(f.measured_fused_ns, formatDurationNs),
              orNa(f.payoff_ns, formatDurationNs), formatPercent(f.payoff_share), plain(shortCell(advice))});
  }
  s += fusionDetails(r, shown, full_names);
  if (r.fusion_median_abs_error) {
    s += fmt::format("\nMedian absolute error of the fusion model over {} pairs measured both ways: {}.\n",
                     r.fusion_measured_pairs, formatPercent(*r.fusion_median_abs_error));
  }
  return s;
}

std::string opSection(const ReportData& r) {
  if (r.ops.empty() || (r.ops.size() == 1 && r.ops.front().op == "(no NVTX range)")) return "";
  std::string s = "\n### Time by op (NVTX)\n\n" + row({"op", "time", "share", "launches"}) +
                  separator({false, true, true, true});
  const size_t shown = std::min<size_t>(r.ops.size(), 10);
  for (size_t i = 0; i < shown; ++i) {
    const OpRow& o = r.ops[i];
    s += row({code(shorten(o.op, 190)), formatDurationNs(static_cast<double>(o.total_ns)), formatPercent(o.share),
              std::to_string(o.launches)});
  }
  return s;
}

std::string baselineSection(const ReportData& r, const MarkdownOptions& options, FullNames& full_names) {
  if (!r.baseline) return "";
  const BaselineSection& b = *r.baseline;
  std::string s = "\n### Against the baseline " + code(b.header.file) + "\n\n";
  s += fmt::format("Kernel time {} -> {}; {}.\n\n", formatDurationNs(static_cast<double>(b.header.total_kernel_ns)),
                   formatDurationNs(static_cast<double>(r.header.total_kernel_ns)), b.note);
  s += fmt::format("**Gate: {}** ({} kernels checked; {})\n\n", b.gate.pass ? "pass" : "FAIL", b.gate.kernels_checked,
                   b.gate.method);
  for (const std::string& reason : b.gate.reasons) s += "- " + plain(reason) + "\n";
  if (!b.gate.reasons.empty()) s += "\n";
  s += appliedFusions(b);
  const size_t shown = std::min(options.top_diffs, b.diff.size());
  if (shown == 0) return s;
  s += row({"kernel", "shape", "baseline (total)", "this run (total)", "median per launch", "note"}) +
       separator({false, false, true, true, true, false});
  for (size_t i = 0; i < shown; ++i) {
    const DiffRow& d = b.diff[i];
    full_names.note(d.name, kernelCell(d.short_name));
    s += row({code(kernelCell(d.short_name)), d.shape, orNa(d.base_ns, formatDurationNs), orNa(d.cur_ns, formatDurationNs),
              d.change ? formatSignedPercent(*d.change) : "n/a", plain(shortCell(d.note))});
  }
  return s;
}

// The run's metadata and ceilings, folded at the end: they explain the answer, they are not it.
std::string runDetails(const ReportData& r) {
  const RunHeader& h = r.header;
  std::string s = "\n<details><summary>Run details and ceilings</summary>\n\n";
  s += fmt::format("- file: {} (mode {}, recorded by fprof {})\n", code(h.file), plain(h.mode), plain(h.fprof_version));
  s += "- program: " + code(shorten(h.program.empty() ? "unknown" : h.program, 190)) + "\n";
  if (!h.date_utc.empty()) s += "- date: " + h.date_utc + "\n";
  for (const std::string& d : h.devices) s += "- device: " + plain(d) + "\n";
  const std::string timeline =
      h.timeline_known ? fmt::format("GPU busy {} of a {} span", formatDurationNs(static_cast<double>(h.gpu_busy_ns)),
                                     formatDurationNs(static_cast<double>(h.span_ns)))
                       : std::string("no timeline: kernels replayed for their counters carry no timestamps");
  s += fmt::format("- kernels: {} launches of {} distinct kernel shapes; kernel time {} ({})\n", h.kernel_count,
                   r.group_count, formatDurationNs(static_cast<double>(h.total_kernel_ns)), timeline);
  if (r.roofs.empty()) s += "- ceilings: none in this run (measure them with `fprof ceilings`)\n";
  for (const Roof& roof : r.roofs) {
    s += fmt::format("- ceiling {}: {} ({})\n", roof.name,
                     roof.is_bandwidth ? formatByteRate(roof.value) : formatFlopRate(roof.value), roof.source);
  }
  if (!h.counter_coverage.empty()) s += "- counters: " + plain(h.counter_coverage) + "\n";
  if (!h.counter_missing.empty()) s += "- without counters: " + plain(h.counter_missing) + "\n";
  if (!h.counter_collection.empty()) s += "- collected by: " + plain(h.counter_collection) + "\n";
  if (!h.graph_launches.empty()) s += "- graph launches: " + plain(h.graph_launches) + "\n";
  for (const std::string& w : h.warnings) s += "- **warning**: " + plain(w) + "\n";
  return s + "\n</details>\n";
}

}  // namespace

// The answer first (findings, the kernels with what they could gain, the fusions), then the
// breakdowns and the baseline; the run's details and the full kernel names fold away at the end.
std::string renderMarkdown(const ReportData& r, const MarkdownOptions& options) {
  const RunHeader& h = r.header;
  FullNames full_names;
  std::string s = "## fprof report: " + code(h.program.empty() ? h.file : shorten(h.program, 120)) + "\n\n";
  s += summaryLine(r);
  s += "\n### Findings\n\n";
  for (size_t i = 0; i < r.findings.size(); ++i) s += fmt::format("{}. {}\n", i + 1, findingText(r.findings[i]));
  if (!r.groups.empty()) {
    const size_t shown = std::min(options.top_kernels, r.groups.size());
    s += fmt::format("\n### Top {} kernels by GPU time (grouped by name and launch shape)\n\n", shown);
    s += kernelTable(r, shown, full_names);
    s += kernelDetailsTable(r, shown);
    if (r.omitted_groups > 0) {
      s += fmt::format("\n{} more kernel groups beyond the {} listed in the HTML report.\n", r.omitted_groups, r.groups.size());
    }
  }
  s += fusionSection(r, options, full_names);
  s += opSection(r);
  s += baselineSection(r, options, full_names);
  s += rankSection(r, full_names);
  s += runDetails(r);
  return s + full_names.render();
}

}  // namespace fprof::reports
