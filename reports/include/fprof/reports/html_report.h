// The self-contained HTML report: one file, inline CSS, JS and SVG, no network access.
#pragma once

#include <string>
#include <string_view>

#include "fprof/reports/report_data.h"

namespace fprof::reports {

struct HtmlOptions {
  // Nonce for the Content-Security-Policy that lets only the report's own script run. Empty:
  // a random one. Tests pass a fixed one to get byte-identical output.
  std::string csp_nonce;
};

std::string renderHtml(const ReportData& report, const HtmlOptions& options = {});

// The report's stylesheet (CSS, no <style> tag): other pages fprof writes (the job report of the
// Python package, a notebook's roofline) use it to look the same.
std::string_view reportStyleSheet();

// The roofline chart as an <svg> element, or a <div class="nochart"> saying why there is none.
std::string renderRooflineSvg(const ReportData& report);

}  // namespace fprof::reports
