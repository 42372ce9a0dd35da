// The tables of one loaded profile, as the Python package shows them: the recorded rows (kernels,
// counters, NVTX ranges, processes, devices) with the schema's doc strings, and what the report's
// analysis computes from them (kernel groups placed on the roofline, ops, fusion candidates,
// ranks, roofs), so a DataFrame and `fprof report` never disagree.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "columns.h"
#include "fprof/analysis/run_analysis.h"
#include "fprof/analysis/summary.h"
#include "fprof/core/store.h"
#include "fprof/reports/report_data.h"

namespace fprof::python {

// A profile read once, with its analysis (analysis::RunAnalysis, the pipeline every front end
// reads) and the report's rows built from it on first use and kept.
class LoadedProfile {
 public:
  explicit LoadedProfile(core::Profile p) : analysis_(analysis::RunAnalysis::owning(std::move(p))) {}

  const core::Profile& profile() const { return analysis_.profile(); }
  const analysis::RunAnalysis& analysis() const { return analysis_; }
  // The report's analysis of the whole profile, every kernel group listed (no cap).
  const reports::ReportData& report();
  // The same as fprof report builds it (its default cap on listed groups), for the HTML report.
  const reports::ReportData& pageReport();
  const analysis::RunSummary& summary();

 private:
  analysis::RunAnalysis analysis_;
  std::mutex mutex_;
  std::optional<reports::ReportData> report_;
  std::optional<reports::ReportData> page_report_;
};

// The names of the tables below, in the order the package lists them.
const std::vector<std::string>& profileTableNames();

// One table by name (profileTableNames); throws std::out_of_range for another name.
Table profileTable(LoadedProfile& loaded, const std::string& name);

}  // namespace fprof::python
