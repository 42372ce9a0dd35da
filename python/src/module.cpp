// fprof._core: the C++ analysis, bound for the Python package. Every number the package shows is
// computed here, by the same code as the fprof command; Python only arranges the tables.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>

#include "bindings.h"
#include "columns.h"
#include "fprof/core/schema.h"
#include "fprof/core/store.h"
#include "fprof/reports/format.h"
#include "fprof/reports/html_report.h"
#include "profile_tables.h"

namespace py = pybind11;

namespace fprof::python {
namespace {

std::string_view kindName(ColumnKind k) {
  switch (k) {
    case ColumnKind::kInt64: return "int64";
    case ColumnKind::kFloat64: return "float64";
    case ColumnKind::kBool: return "bool";
    case ColumnKind::kString: return "string";
  }
  return "?";
}

template <class T>
py::bytes rawBytes(const std::vector<T>& v) {
  return py::bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// The column's values as bytes in the machine's order: int64 (ints, bools), float64 or int32
// dictionary codes for strings.
py::bytes columnData(const Column& c) {
  switch (c.kind) {
    case ColumnKind::kFloat64: return rawBytes(c.floats);
    case ColumnKind::kString: return rawBytes(c.codes);
    default: return rawBytes(c.ints);
  }
}

py::dict summaryDict(LoadedProfile& loaded) {
  const reports::ReportData& r = [&]() -> const reports::ReportData& {
    py::gil_scoped_release release;
    return loaded.report();
  }();
  const reports::RunHeader& h = r.header;
  const core::Profile& p = loaded.profile();
  py::dict d;
  d["file"] = h.file;
  d["schema_version"] = p.schema_version;
  d["program"] = h.program;
  d["host"] = h.host;
  d["date_utc"] = h.date_utc;
  d["mode"] = h.mode;
  d["fprof_version"] = h.fprof_version;
  d["devices"] = h.devices;
  d["processes"] = p.processes.size();
  d["kernel_count"] = h.kernel_count;
  d["kernel_groups"] = r.group_count;
  d["total_kernel_ns"] = h.total_kernel_ns;
  d["programmatic_launches"] = h.programmatic_launches;
  d["dependency_wait_ns"] = h.dependency_wait_ns;
  d["timeline_known"] = h.timeline_known;
  d["gpu_busy_ns"] = h.timeline_known ? py::object(py::int_(h.gpu_busy_ns)) : py::object(py::none());
  d["span_ns"] = h.timeline_known ? py::object(py::int_(h.span_ns)) : py::object(py::none());
  d["has_counters"] = h.has_counters;
  d["counter_coverage"] = h.counter_coverage;
  d["counter_missing"] = h.counter_missing;
  d["counter_collection"] = h.counter_collection;
  d["graph_launches"] = h.graph_launches;
  d["best_fusion"] = reports::bestFusion(r);
  d["findings"] = r.findings;
  d["warnings"] = h.warnings;
  return d;
}

}  // namespace
}  // namespace fprof::python

PYBIND11_MODULE(_core, m) {
  using namespace fprof::python;
  namespace core = fprof::core;
  namespace reports = fprof::reports;
  m.doc() = "fprof's C++ analysis: profiles, their tables and the job summaries (the package fprof wraps it).";
  m.attr("version") = FPROF_VERSION_STRING;
  m.attr("schema_version") = core::kSchemaVersion;
  py::register_exception<InputError>(m, "FprofError", PyExc_ValueError);

  py::class_<Column>(m, "Column")
      .def_readonly("name", &Column::name)
      .def_readonly("doc", &Column::doc)
      .def_property_readonly("kind", [](const Column& c) { return std::string(kindName(c.kind)); })
      .def_property_readonly("size", &Column::size)
      .def_property_readonly("data", &columnData)
      .def_property_readonly("valid", [](const Column& c) -> py::object {
        if (c.valid.empty()) return py::none();
        return rawBytes(c.valid);
      })
      .def_readonly("dictionary", &Column::dictionary);
  py::class_<Table>(m, "Table")
      .def_readonly("name", &Table::name)
      .def_readonly("doc", &Table::doc)
      .def_readonly("rows", &Table::rows)
      .def_readonly("columns", &Table::columns);

  py::class_<LoadedProfile>(m, "Profile")
      .def_property_readonly("path", [](const LoadedProfile& l) { return l.profile().path; })
      .def_property_readonly("warnings", [](const LoadedProfile& l) { return l.profile().warnings; })
      .def_property_readonly("table_names", [](const LoadedProfile&) { return profileTableNames(); })
      .def("table", [](LoadedProfile& l, const std::string& name) {
             py::gil_scoped_release release;
             return profileTable(l, name);
           },
           py::arg("name"), "One table of the profile by name (table_names).")
      .def("summary", &summaryDict, "The report's header and findings as a dict.")
      .def("report_html", [](LoadedProfile& l) {
             py::gil_scoped_release release;
             return reports::renderHtml(l.pageReport());
           },
           "The HTML report, as fprof report writes it.")
      .def("roofline_svg", [](LoadedProfile& l) {
             py::gil_scoped_release release;
             return reports::renderRooflineSvg(l.pageReport());
           },
           "The report's roofline chart (<svg>), or a <div> saying why there is none.");

  m.def("load", &loadProfileOrThrow, py::arg("path"),
        "Reads a .fprof database; FprofError with a one-sentence message when it cannot.");
  m.def("report_style", [] { return std::string(reports::reportStyleSheet()); }, "The HTML report's stylesheet.");
  m.def("format_duration_ns", &reports::formatDurationNs);
  m.def("format_bytes", &reports::formatBytes);
  m.def("format_percent", [](std::optional<double> v) { return reports::formatPercent(v); });
  m.def("format_flop_rate", &reports::formatFlopRate);
  m.def("format_intensity", &reports::formatIntensity);
  m.def("format_count", &reports::formatCount);
  m.def("schema_docs", [] {
    py::dict out;
    for (const core::TableDef& t : core::schemaTables()) {
      py::dict cols;
      for (const core::ColumnDef& c : t.columns) cols[py::str(c.name)] = c.doc;
      out[py::str(t.name)] = py::make_tuple(t.doc, cols);
    }
    return out;
  }, "Every table of the .fprof schema: name -> (doc, {column: doc}).");
  bindJobFunctions(m);
  bindGateFunctions(m);
}
