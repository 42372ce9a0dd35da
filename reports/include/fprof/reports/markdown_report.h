// The Markdown summary (`fprof report --format md`): the report's top findings as text, for CI job
// summaries and PR comments. Same numbers and units as `fprof info` and the HTML report.
#pragma once

#include <string>

#include "fprof/reports/report_data.h"

namespace fprof::reports {

struct MarkdownOptions {
  size_t top_kernels = 10;
  size_t top_fusions = 10;
  size_t top_diffs = 10;
};

std::string renderMarkdown(const ReportData& report, const MarkdownOptions& options = {});

}  // namespace fprof::reports
