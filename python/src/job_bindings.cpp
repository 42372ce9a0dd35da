// The job functions of fprof._core: a rank file summarised (on a Dask worker), the job's kernel
// groups placed on the roofline from the summaries' sums, its roofline drawn by the report's SVG.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <regex>
#include <string>
#include <vector>

#include "bindings.h"
#include "fprof/analysis/kernel_names.h"
#include "fprof/reports/html_report.h"
#include "palette.h"  // the report's op colours (reports/src), so a job's chart reads like a report's
#include "rank_summary.h"

namespace py = pybind11;

namespace fprof::python {
namespace {

std::vector<Table> summarizeRankFile(const std::string& path, const std::string& step_regex) {
  RankSummaryOptions options;
  options.step_regex = step_regex;
  py::gil_scoped_release release;
  // The profile alone, not a LoadedProfile: the summary builds each rank's analysis itself, once.
  core::Expected<core::Profile> loaded = core::loadProfile(path);
  if (!loaded) throw InputError(loaded.error());
  try {
    return summarizeRanks(*loaded, options);
  } catch (const std::regex_error& e) {
    throw InputError("--step-regex '" + step_regex + "' is not a regular expression: " + e.what());
  }
}

std::vector<RoofRow> roofRows(const py::list& roofs) {
  std::vector<RoofRow> out;
  for (const py::handle& r : roofs) {
    auto t = r.cast<py::tuple>();
    out.push_back({t[0].cast<std::string>(), t[1].cast<double>(), t[2].cast<std::string>(), t[3].cast<std::string>()});
  }
  return out;
}

template <class T>
std::vector<T> columnOf(const py::dict& columns, const char* name, size_t rows) {
  if (!columns.contains(name)) throw std::invalid_argument(std::string("place_groups: no column ") + name);
  auto v = columns[name].cast<std::vector<T>>();
  if (v.size() != rows) throw std::invalid_argument(std::string("place_groups: column ") + name + " has the wrong length");
  return v;
}

// The job's kernel groups placed: `columns` holds, per group, the summed inputs under the rank
// summary's column names (duration_ns, launches, sm_count, has_counters, flops_<precision>,
// bytes_<level>, occupancy_weighted, occupancy_complete, occupancy_achieved).
Table placeJobGroups(const py::list& roofs, const py::dict& columns) {
  const size_t rows = columns["duration_ns"].cast<std::vector<int64_t>>().size();
  const auto duration = columnOf<int64_t>(columns, "duration_ns", rows);
  const auto launches = columnOf<int64_t>(columns, "launches", rows);
  const auto sm = columnOf<std::optional<int>>(columns, "sm_count", rows);
  const auto has = columnOf<bool>(columns, "has_counters", rows);
  const auto occ = columnOf<double>(columns, "occupancy_weighted", rows);
  const auto complete = columnOf<bool>(columns, "occupancy_complete", rows);
  const auto achieved = columnOf<bool>(columns, "occupancy_achieved", rows);
  std::vector<std::vector<std::optional<double>>> flops, bytes;
  for (size_t q = 0; q < analysis::kPrecisionCount; ++q) {
    const std::string name = "flops_" + std::string(analysis::precisionName(static_cast<analysis::Precision>(q)));
    flops.push_back(columnOf<std::optional<double>>(columns, name.c_str(), rows));
  }
  for (size_t l = 0; l < analysis::kMemLevelCount; ++l) {
    const std::string name = "bytes_" + std::string(analysis::memLevelName(static_cast<analysis::MemLevel>(l)));
    bytes.push_back(columnOf<std::optional<double>>(columns, name.c_str(), rows));
  }
  std::vector<GroupSums> groups(rows);
  for (size_t i = 0; i < rows; ++i) {
    GroupSums& g = groups[i];
    g.duration_ns = duration[i];
    g.launches = launches[i];
    g.sm_count = sm[i];
    g.work.has_counters = has[i];
    for (size_t q = 0; q < analysis::kPrecisionCount; ++q) g.work.flops[q] = flops[q][i];
    for (size_t l = 0; l < analysis::kMemLevelCount; ++l) g.work.bytes[l] = bytes[l][i];
    g.occupancy_weighted = occ[i];
    g.occupancy_complete = complete[i];
    g.occupancy_achieved = achieved[i];
  }
  const analysis::Ceilings ceilings = ceilingsFromRoofs(roofRows(roofs));
  py::gil_scoped_release release;
  return placeGroups(groups, ceilings);
}

template <class T>
std::optional<T> optionalItem(const py::dict& d, const char* key) {
  if (!d.contains(key) || d[key].is_none()) return std::nullopt;
  return d[key].cast<T>();
}

std::string stringItem(const py::dict& d, const char* key) {
  return d.contains(key) && !d[key].is_none() ? d[key].cast<std::string>() : std::string();
}

// The job's ops by time, as the report's OpRows: what colours the roofline's points.
std::vector<reports::OpRow> opRows(const py::list& ops) {
  std::vector<reports::OpRow> out;
  for (const py::handle& h : ops) {
    auto t = h.cast<py::tuple>();
    out.push_back({t[0].cast<std::string>(), t[1].cast<int64_t>(), 0, 0});
  }
  return out;
}

// The report's roofline chart of a job: groups as dicts with GroupRow's field names, ops as
// (op, total_ns) by time.
std::string jobRooflineSvg(const py::list& groups, const py::list& roofs, const py::list& ops, bool has_counters) {
  reports::ReportData r;
  r.header.has_counters = has_counters;
  r.ops = opRows(ops);
  for (const RoofRow& roof : roofRows(roofs)) {
    const bool bandwidth = roof.name == "dram" || roof.name == "l2" || roof.name == "l1";
    r.roofs.push_back({roof.name, bandwidth, roof.value, roof.source, roof.method});
  }
  for (const py::handle& h : groups) {
    const auto d = h.cast<py::dict>();
    reports::GroupRow g;
    g.name = stringItem(d, "name");
    g.short_name = stringItem(d, "short_name");
    g.grid = stringItem(d, "grid");
    g.block = stringItem(d, "block");
    g.op = stringItem(d, "op");
    g.calls = optionalItem<int64_t>(d, "calls").value_or(0);
    g.total_ns = optionalItem<int64_t>(d, "total_ns").value_or(0);
    g.share = optionalItem<double>(d, "share").value_or(0);
    g.intensity_dram = optionalItem<double>(d, "intensity_dram");
    g.intensity_l2 = optionalItem<double>(d, "intensity_l2");
    g.intensity_l1 = optionalItem<double>(d, "intensity_l1");
    g.flops_per_s = optionalItem<double>(d, "flops_per_s");
    g.roof_fraction = optionalItem<double>(d, "roof_fraction");
    g.binding_roof = stringItem(d, "binding_roof");
    g.bound = stringItem(d, "bound");
    g.precision = stringItem(d, "precision");
    r.groups.push_back(std::move(g));
  }
  py::gil_scoped_release release;
  return reports::renderRooflineSvg(r);
}

}  // namespace

void bindJobFunctions(py::module_& m) {
  m.attr("rank_summary_version") = kRankSummaryVersion;
  m.attr("default_step_regex") = RankSummaryOptions{}.step_regex;
  m.def("summarize_rank_file", &summarizeRankFile, py::arg("path"), py::arg("step_regex"),
        "The summary tables of every rank a file holds (ranks, groups, ops, steps, fusion, roofs).");
  m.def("place_groups", &placeJobGroups, py::arg("roofs"), py::arg("columns"),
        "analysis::place over summed group inputs, against roofs [(name, value, source, method)].");
  m.def("roofline_svg", &jobRooflineSvg, py::arg("groups"), py::arg("roofs"), py::arg("ops"), py::arg("has_counters"),
        "The report's roofline <svg> of these groups, their points coloured by op as the report colours them.");
  m.def("op_colours", [](const py::list& ops) {
    reports::ReportData r;
    r.ops = opRows(ops);
    const reports::Palette palette = reports::opPalette(r);
    std::vector<std::pair<std::string, std::string>> out;
    for (const reports::OpRow& o : r.ops) {
      const std::string key = o.op == "(no NVTX range)" ? std::string() : o.op;
      if (palette.ops().count(key)) out.emplace_back(o.op, palette.colour(key));
    }
    if (r.ops.size() > palette.ops().size()) out.emplace_back("other ops", reports::Palette::kOther);
    return out;
  }, py::arg("ops"), "The report's colour of each op of the roofline's legend (the ten with most time, then grey).");
  m.def("short_names", [](const std::vector<std::string>& names) {
    const analysis::KernelNames shortened(names);
    std::vector<std::string> out;
    out.reserve(names.size());
    for (const std::string& n : names) out.push_back(shortened.shortName(n));
    return out;
  }, py::arg("names"), "Short kernel names, told apart over the set (docs/analysis.md, Kernel names).");
}

}  // namespace fprof::python
