// The gate over two job folders (`fprof gate JOBDIR JOBDIR`): the package reads each rank's launch
// groups from the jobs' Parquet tables and hands them here; the comparison, the verdict and the
// three outputs are fprof gate's own (analysis::evaluateGate, cli/gate_render), rank by rank and
// for the ranks both jobs hold taken together.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "bindings.h"
#include "fprof/analysis/diff.h"
#include "fprof/analysis/kernel_names.h"
#include "fprof/core/text.h"
#include "gate_config.h"
#include "gate_render.h"

namespace py = pybind11;

namespace fprof::python {
namespace {

// The samples of the whole job's launch groups: every rank gives an equal part of them.
constexpr size_t kJobSamples = 4096;

struct LaunchGroups {
  std::vector<analysis::LaunchGroupStats> groups;
};

template <class T>
std::vector<T> numbers(const py::dict& columns, const char* name, size_t rows) {
  if (!columns.contains(name)) throw std::invalid_argument(std::string("launch_groups: no column ") + name);
  auto v = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(columns[name]);
  if (!v || static_cast<size_t>(v.size()) != rows) {
    throw std::invalid_argument(std::string("launch_groups: column ") + name + " has the wrong length");
  }
  return std::vector<T>(v.data(), v.data() + rows);
}

std::vector<std::string> strings(const py::dict& columns, const char* name, size_t rows) {
  auto v = columns[name].cast<std::vector<std::string>>();
  if (v.size() != rows) throw std::invalid_argument(std::string("launch_groups: column ") + name + " has the wrong length");
  return v;
}

std::optional<double> present(double v) { return std::isnan(v) ? std::nullopt : std::optional<double>(v); }

// One rank's launch groups from the columns of rank_launch_groups.parquet (NaN where a value is
// absent) and its rows of rank_launch_samples.parquet. JobGate::addRank consumes them.
LaunchGroups launchGroupsOf(const py::dict& columns, const py::array_t<int64_t>& sample_key,
                            const py::array_t<double>& sample_ns) {
  if (!columns.contains("name")) throw std::invalid_argument("launch_groups: no column name");
  const size_t rows = py::len(columns["name"]);
  const auto names = strings(columns, "name", rows), shapes = strings(columns, "shape", rows),
             ops = strings(columns, "op", rows), paths = strings(columns, "nvtx_path", rows);
  const auto keys = numbers<int64_t>(columns, "key", rows), calls = numbers<int64_t>(columns, "calls", rows);
  const auto total = numbers<double>(columns, "total_ns", rows), med = numbers<double>(columns, "median_ns", rows),
             spread = numbers<double>(columns, "squared_deviation_ns2", rows);
  std::vector<std::vector<double>> metrics;
  for (size_t i = 0; i < analysis::kCounterMetricCount; ++i) {
    const std::string name(analysis::counterMetricName(static_cast<analysis::CounterMetric>(i)));
    metrics.push_back(numbers<double>(columns, name.c_str(), rows));
  }
  LaunchGroups out;
  std::unordered_map<int64_t, size_t> row_of_key;
  for (size_t r = 0; r < rows; ++r) {
    analysis::LaunchGroupStats g{names[r], shapes[r], ops[r], paths[r], {}};
    g.stats.calls = calls[r];
    g.stats.total_ns = total[r];
    g.stats.median_ns = present(med[r]);
    g.stats.squared_deviation_ns2 = spread[r];
    for (size_t i = 0; i < analysis::kCounterMetricCount; ++i) g.stats.metrics[i] = present(metrics[i][r]);
    row_of_key.emplace(keys[r], r);
    out.groups.push_back(std::move(g));
  }
  auto k = sample_key.unchecked<1>();
  auto ns = sample_ns.unchecked<1>();
  if (k.shape(0) != ns.shape(0)) throw std::invalid_argument("launch_samples: key and duration_ns differ in length");
  for (py::ssize_t i = 0; i < k.shape(0); ++i) {
    auto it = row_of_key.find(k(i));
    if (it != row_of_key.end()) out.groups[it->second].stats.samples_ns.push_back(ns(i));
  }
  return out;
}

analysis::RecordingSetup setupOf(const py::dict& d) {
  auto item = [&](const char* key) { return d.contains(key) ? d[key].cast<std::string>() : std::string(); };
  return {item("devices"), item("mode"), item("metric_set"), item("metrics")};
}

std::vector<analysis::SetupDifference> warningsOf(const std::vector<std::vector<std::string>>& given) {
  std::vector<analysis::SetupDifference> out;
  for (const auto& w : given) {
    if (w.size() != 4) throw std::invalid_argument("a warning is (what, base, current, message)");
    out.push_back({w[0], w[1], w[2], w[3]});
  }
  return out;
}

// A rank's diff holds its launch groups' samples only until its verdict: the outputs read names,
// shapes and ops, so a job of many ranks keeps ranks x launch groups entries, not their samples.
void dropSamples(analysis::RunDiff& d) {
  for (analysis::DiffEntry& e : d.kernels) {
    for (auto* side : {&e.base, &e.cur}) {
      if (!*side) continue;
      (*side)->samples_ns.clear();
      (*side)->samples_ns.shrink_to_fit();
    }
  }
}

struct OpenOutputs {
  cli::GateOutputs files;
};

// The comparisons of two jobs, added rank by rank, then the whole job; rendered as fprof gate's
// Markdown, JSON and JUnit.
class JobGate {
 public:
  JobGate(analysis::GateOptions options, size_t ranks)
      : options_(std::move(options)), base_all_(ranks, kJobSamples), cur_all_(ranks, kJobSamples) {}

  void addRank(const std::string& label, std::optional<int> rank, LaunchGroups& base, LaunchGroups& cur,
               const py::dict& base_setup, const py::dict& cur_setup, std::optional<double> base_busy_ns,
               std::optional<double> cur_busy_ns) {
    const analysis::RecordingSetup b = setupOf(base_setup), c = setupOf(cur_setup);
    py::gil_scoped_release release;
    base_all_.add(base.groups);
    cur_all_.add(cur.groups);
    analysis::RunDiff d = analysis::diffLaunchGroups(std::move(base.groups), std::move(cur.groups));
    d.setup_differences = analysis::setupDifferences(b, c);
    d.busy = analysis::RecordedBusy{base_busy_ns, cur_busy_ns};
    add(label, rank, std::move(d), false);
  }

  // The ranks added so far taken together, compared first; `warnings` are the job's own (ranks
  // only one job holds, ranks set apart).
  void addWhole(const std::string& label, const py::dict& base_setup, const py::dict& cur_setup,
                std::optional<double> base_busy_ns, std::optional<double> cur_busy_ns,
                const std::vector<std::vector<std::string>>& warnings) {
    analysis::RunDiff d = analysis::diffLaunchGroups(base_all_.groups(), cur_all_.groups());
    d.setup_differences = analysis::setupDifferences(setupOf(base_setup), setupOf(cur_setup));
    for (analysis::SetupDifference& w : warningsOf(warnings)) d.setup_differences.push_back(std::move(w));
    d.busy = analysis::RecordedBusy{base_busy_ns, cur_busy_ns};
    py::gil_scoped_release release;
    add(label, std::nullopt, std::move(d), true);
  }

  bool passed() const { return run("", "", "").passed(); }

  // As fprof gate prints it: cleaned for a terminal (line breaks kept), as it is written to --markdown.
  std::string markdown(const std::string& base, const std::string& cur, const std::string& note) const {
    return core::cleanText(cli::gateMarkdown(run(base, cur, note)), core::TextLines::kKeepLineBreaks);
  }
  std::string json(const std::string& base, const std::string& cur, const std::string& note) const {
    return cli::gateJson(run(base, cur, note)).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }

  void write(OpenOutputs& out, const std::string& base, const std::string& cur, const std::string& note,
             const std::string& markdown_text) const {
    const cli::GateRun r = run(base, cur, note);
    py::gil_scoped_release release;
    if (core::Status s = cli::writeGateOutputs(out.files, r, markdown_text); !s) throw InputError(s.error());
  }

 private:
  void add(const std::string& label, std::optional<int> rank, analysis::RunDiff d, bool whole) {
    for (const analysis::DiffEntry& e : d.kernels) {
      names_.insert(e.name);
      if (!e.base_name.empty()) names_.insert(e.base_name);
    }
    // A deque: the comparisons point at the diffs, which must not move as more are added.
    analysis::RunDiff& kept = whole ? diffs_.emplace_front(std::move(d)) : diffs_.emplace_back(std::move(d));
    analysis::GateResult result = analysis::evaluateGate(kept, options_);
    dropSamples(kept);
    cli::GateComparison c{label, rank, &kept, std::move(result)};
    if (whole) {
      comparisons_.push_front(std::move(c));
    } else {
      comparisons_.push_back(std::move(c));
    }
    short_names_.reset();
  }

  cli::GateRun run(const std::string& base, const std::string& cur, const std::string& note) const {
    if (!short_names_) short_names_.emplace(std::vector<std::string>(names_.begin(), names_.end()));
    cli::GateRun r{base, cur, options_, true, true, note, {}, &*short_names_};
    r.comparisons.assign(comparisons_.begin(), comparisons_.end());
    return r;
  }

  analysis::GateOptions options_;
  analysis::LaunchGroupCombiner base_all_, cur_all_;
  std::deque<analysis::RunDiff> diffs_;
  std::deque<cli::GateComparison> comparisons_;
  std::set<std::string> names_;
  mutable std::optional<analysis::KernelNames> short_names_;
};

analysis::GateOptions gateOptions(const std::string& config, const std::string& time_threshold,
                                  const std::string& counter_threshold, double alpha) {
  auto g = cli::gateOptionsOf({config, time_threshold, counter_threshold, alpha});
  if (!g) throw InputError(g.error());
  return *g;
}

std::unique_ptr<OpenOutputs> openOutputs(const std::string& markdown, const std::string& json,
                                         const std::string& junit, bool force, const std::vector<std::string>& inputs) {
  auto opened = cli::openGateOutputs({markdown, json, junit}, force, inputs);
  if (!opened) throw InputError(opened.error());
  auto out = std::make_unique<OpenOutputs>();
  out->files = std::move(*opened);
  return out;
}

}  // namespace

void bindGateFunctions(py::module_& m) {
  m.attr("summary_samples") = analysis::kSummarySamples;
  py::class_<analysis::GateOptions>(m, "GateOptions", "fprof gate's options (docs/gate.md).")
      .def_readonly("time_threshold", &analysis::GateOptions::time_threshold)
      .def_readonly("counter_threshold", &analysis::GateOptions::counter_threshold)
      .def_readonly("alpha", &analysis::GateOptions::alpha);
  m.def("gate_options", &gateOptions, py::arg("config"), py::arg("time_threshold"), py::arg("counter_threshold"),
        py::arg("alpha"),
        "The gate's options: defaults, then the configuration file, then the options given (\"\"/0: not given).");
  py::class_<LaunchGroups>(m, "LaunchGroups", "One rank's launch groups, as fprof gate compares them.")
      .def("__len__", [](const LaunchGroups& g) { return g.groups.size(); });
  m.def("launch_groups", &launchGroupsOf, py::arg("columns"), py::arg("sample_key"), py::arg("sample_ns"),
        "One rank's launch groups from its rows of rank_launch_groups and rank_launch_samples.");
  py::class_<OpenOutputs>(m, "GateOutputs", "The gate's output files, opened (nothing is in place until written).")
      .def_property_readonly(
          "to_standard_output", [](const OpenOutputs& o) { return o.files.toStandardOutput(); },
          "One of them is '-': standard output carries it, and the summary is not printed.");
  m.def("open_gate_outputs", &openOutputs, py::arg("markdown"), py::arg("json"), py::arg("junit"), py::arg("force"),
        py::arg("inputs"), "Opens --markdown, --json and --junit as fprof gate does (core/output's rules).");
  py::class_<JobGate>(m, "JobGate", "Two jobs compared rank by rank and as a whole by fprof gate's checks.")
      .def(py::init<analysis::GateOptions, size_t>(), py::arg("options"), py::arg("ranks"))
      .def("add_rank", &JobGate::addRank, py::arg("label"), py::arg("rank"), py::arg("base"), py::arg("current"),
           py::arg("base_setup"), py::arg("current_setup"), py::arg("base_busy_ns"), py::arg("current_busy_ns"))
      .def("add_whole", &JobGate::addWhole, py::arg("label"), py::arg("base_setup"), py::arg("current_setup"),
           py::arg("base_busy_ns"), py::arg("current_busy_ns"), py::arg("warnings"))
      .def_property_readonly("passed", &JobGate::passed)
      .def("markdown", &JobGate::markdown, py::arg("base"), py::arg("current"), py::arg("note"))
      .def("json", &JobGate::json, py::arg("base"), py::arg("current"), py::arg("note"))
      .def("write", &JobGate::write, py::arg("outputs"), py::arg("base"), py::arg("current"), py::arg("note"),
           py::arg("markdown"));
}

}  // namespace fprof::python
