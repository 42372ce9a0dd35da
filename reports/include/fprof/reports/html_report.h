// The self-contained HTML report: one file, inline CSS, JS and SVG, no network access.
#pragma once

#include <string>

#include "fprof/reports/report_data.h"

namespace fprof::reports {

struct HtmlOptions {
  // Nonce for the Content-Security-Policy that lets only the report's own script run. Empty:
  // a random one. Tests pass a fixed one to get byte-identical output.
  std::string csp_nonce;
};

std::string renderHtml(const ReportData& report, const HtmlOptions& options = {});

// The roofline chart as an <svg> element, or a <div class="nochart"> saying why there is none.
std::string renderRooflineSvg(const ReportData& report);

}  // namespace fprof::reports
