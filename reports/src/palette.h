// Colours for ops, shared by the roofline points and the time-breakdown bars so an op keeps its
// colour across the report, and the colours of the chart's "% of roof" view.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "fprof/reports/report_data.h"

namespace fprof::reports {

class Palette {
 public:
  // The ten ops with the most time get a colour each; the rest share grey.
  const char* colour(const std::string& op) const {
    auto it = index_.find(op);
    return it == index_.end() ? kOther : kColours[it->second];
  }
  void add(const std::string& op) {
    if (index_.size() < 10 && !index_.count(op)) index_.emplace(op, index_.size());
  }
  const std::map<std::string, size_t>& ops() const { return index_; }

  static constexpr const char* kColours[10] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                               "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#2f4b7c"};
  static constexpr const char* kOther = "#9a9a9a";

 private:
  std::map<std::string, size_t> index_;
};

// The colours of the chart's "% of roof" view: a group's fraction of roof falls in the first band
// it is below.
struct RoofBand {
  double below;  // fraction of roof
  const char* colour;
  const char* label;
};
inline constexpr RoofBand kRoofBands[] = {{0.25, "#c0392b", "below 25%"},
                                          {0.5, "#e67e22", "25-50%"},
                                          {0.75, "#e2c044", "50-75%"},
                                          {1e300, "#27ae60", "75% and more"}};
inline constexpr const char* kRoofUnknown = "#9a9a9a";

inline const char* roofColour(const std::optional<double>& fraction) {
  if (!fraction) return kRoofUnknown;
  for (const RoofBand& b : kRoofBands) {
    if (*fraction < b.below) return b.colour;
  }
  return kRoofUnknown;
}

// Ops in time order (ReportData::ops is sorted); kernels with no op are keyed by "".
inline Palette opPalette(const ReportData& report) {
  Palette p;
  for (const OpRow& o : report.ops) p.add(o.op == "(no NVTX range)" ? std::string() : o.op);
  return p;
}

}  // namespace fprof::reports
