// fprof ceilings: measures this GPU's roofs with fprof-ceilings and stores them, next to the
// datasheet values, in a .fprof database that `fprof run` and the analysis can attach.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>

#include "command.h"
#include "fprof/analysis/ceilings.h"
#include "fprof/core/child_output.h"
#include "fprof/core/store.h"
#include "paths.h"
#include "progress.h"
#include "text_table.h"

namespace fprof::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct CeilingsOptions {
  std::string output;
  std::string from_json;
  std::string save_json;
  bool quick = false;
  bool force = false;
  bool quiet = false;
};

core::Expected<std::string> runMeasurement(bool quick, bool quiet) {
  const std::string exe = findSibling("fprof-ceilings");
  if (exe.empty()) {
    return core::makeError("ceilings: fprof-ceilings not found next to fprof (this build has no CUDA compiler)");
  }
  std::vector<std::string> args{exe};
  if (quick) args.emplace_back("--quick");
  if (!quiet) std::fprintf(stderr, "[fprof] measuring ceilings with %s (about a minute)\n", exe.c_str());
  Progress progress(Progress::wanted(quiet));
  progress.step(quick ? "measuring ceilings (a few seconds)" : "measuring ceilings (about a minute)");
  core::Expected<core::ChildOutput> out = core::childOutput(std::move(args), core::ChildErrors::kShown);
  progress.done();
  if (!out) return core::makeError("ceilings: " + out.error());
  if (out->exit_status != 0) {
    return core::makeError("ceilings: fprof-ceilings failed (see its message above); is a GPU present?");
  }
  return std::move(out->text);
}

core::DeviceInfo deviceFromJson(const json& d) {
  core::DeviceInfo dev;
  dev.name = d.at("name").get<std::string>();
  dev.compute_major = d.at("compute_major").get<int>();
  dev.compute_minor = d.at("compute_minor").get<int>();
  dev.sm_count = d.at("sm_count").get<int>();
  dev.sm_clock_khz = d.at("sm_clock_khz").get<int64_t>();
  dev.memory_clock_khz = d.at("memory_clock_khz").get<int64_t>();
  dev.memory_bus_width_bits = d.at("memory_bus_width_bits").get<int>();
  dev.l2_bytes = d.at("l2_bytes").get<int64_t>();
  dev.global_memory_bytes = d.at("global_memory_bytes").get<int64_t>();
  dev.max_threads_per_sm = d.value("max_threads_per_sm", 0);
  dev.regs_per_sm = d.value("regs_per_sm", 0);
  dev.shared_per_sm_bytes = d.value("shared_per_sm_bytes", int64_t{0});
  dev.warp_size = 32;
  dev.max_warps_per_sm = dev.max_threads_per_sm / 32;
  return dev;
}

std::string rate(double v, const std::string& unit) {
  if (unit == "bytes_per_s") return fmt::format("{:.0f} GB/s", v / 1e9);
  if (unit == "ops_per_s") return fmt::format("{:.1f} TOP/s", v / 1e12);
  return fmt::format("{:.1f} TFLOP/s", v / 1e12);
}

// The per-user cache holds the latest measurement of each GPU model (replaced: the documented
// default); a file named with -o is kept unless --force.
core::OutputRules databaseRules(const CeilingsOptions& opt) {
  std::vector<std::string> inputs;
  if (!opt.from_json.empty()) inputs.push_back(opt.from_json);
  return outputRules(opt.force || opt.output.empty(), inputs, "the ceilings database");
}

core::OutputRules saveJsonRules(const CeilingsOptions& opt) {
  std::vector<std::string> inputs;
  if (!opt.from_json.empty()) inputs.push_back(opt.from_json);
  return outputRules(opt.force, inputs, "the measurement");
}

// Before a minute of measuring: the files asked for can be written.
core::Status checkOutputs(const CeilingsOptions& opt) {
  if (core::Status s = core::checkDistinctOutputs({{"-o", opt.output}, {"--save-json", opt.save_json}}); !s) return s;
  if (!opt.output.empty()) {
    if (core::Status s = core::checkOutputPath(opt.output, databaseRules(opt)); !s) return s;
  }
  if (!opt.save_json.empty() && opt.save_json != "-") {
    if (core::Status s = core::checkOutputPath(opt.save_json, saveJsonRules(opt)); !s) return s;
  }
  if (!opt.from_json.empty()) return core::checkStandardOutputIsNoInput({opt.from_json}, "the table");
  return {};
}

struct Measurement {
  std::string text;  // as fprof-ceilings wrote it (what --save-json keeps)
  json doc;
  core::DeviceInfo device;
};

// The measurement's text: a file saved earlier (--from-json), or fprof-ceilings run now. The
// error's exit code: 2 for bad input, 1 when the measurement itself failed.
core::Expected<Measurement> readMeasurement(const CeilingsOptions& opt, int& exit_code) {
  exit_code = 2;
  Measurement m;
  if (!opt.from_json.empty()) {
    auto text = core::readInputFile(opt.from_json, "the ceilings measurement");
    if (!text) return core::makeError("ceilings: " + text.error());
    m.text = std::move(*text);
  } else {
    auto measured = runMeasurement(opt.quick, opt.quiet);
    if (!measured) {
      exit_code = 1;
      return core::Error{measured.error()};
    }
    m.text = std::move(*measured);
  }
  try {
    m.doc = json::parse(m.text);
    m.device = deviceFromJson(m.doc.at("device"));
  } catch (const json::exception& e) {
    const std::string source = opt.from_json.empty() ? std::string("fprof-ceilings output") : opt.from_json;
    return core::makeError("ceilings: " + source + " is not a ceilings measurement: " + e.what());
  }
  return m;
}

core::Status saveJson(const CeilingsOptions& opt, const std::string& text) {
  auto out = core::TextOutput::open(opt.save_json, saveJsonRules(opt));
  if (!out) return core::Error{out.error()};
  if (core::Status s = out->write(text); !s) return s;
  return out->finish();
}

// The measured rows; the DRAM roof is the best any access pattern reached (read, write, copy
// kernel or cudaMemcpy). `reference` gets the ref_* measurements (metadata, not roofs).
std::vector<core::CeilingRecord> measuredRows(const Measurement& m, std::map<std::string, json>& by_name) {
  for (const json& row : m.doc.at("measurements")) by_name[row.at("ceiling").get<std::string>()] = row;
  std::string dram_from;
  double dram_best = 0;
  for (const char* name : {"dram_read", "dram_write", "dram", "ref_cudaMemcpy_d2d"}) {
    if (by_name.count(name) && by_name[name].at("best").get<double>() > dram_best) {
      dram_best = by_name[name].at("best").get<double>();
      dram_from = by_name[name].at("method").get<std::string>();
    }
  }
  std::vector<core::CeilingRecord> rows;
  for (const auto& [name, row] : by_name) {
    if (name.rfind("ref_", 0) == 0) continue;
    core::CeilingRecord r{m.device.name, name, row.at("unit").get<std::string>(), row.at("best").get<double>(),
                          "measured",
                          fmt::format("{}; best of 10 timed runs (median {:.4g})", row.at("method").get<std::string>(),
                                      row.at("median").get<double>())};
    if (name == "dram") {
      r.value = dram_best;
      r.method = "best of read, write, copy kernels and cudaMemcpy: " + dram_from;
    }
    rows.push_back(r);
  }
  return rows;
}

std::map<std::string, const analysis::Roof*> datasheetByName(const analysis::Ceilings& sheet) {
  std::map<std::string, const analysis::Roof*> by_name;
  for (size_t i = 0; i < analysis::kMemLevelCount; ++i) {
    if (!sheet.bandwidth[i]) continue;
    by_name[std::string(analysis::memLevelName(static_cast<analysis::MemLevel>(i)))] = &*sheet.bandwidth[i];
  }
  for (size_t i = 0; i < analysis::kPrecisionCount; ++i) {
    if (!sheet.compute[i]) continue;
    by_name[std::string(analysis::precisionName(static_cast<analysis::Precision>(i)))] = &*sheet.compute[i];
  }
  return by_name;
}

std::vector<core::CeilingRecord> datasheetRows(const std::string& device_name,
                                               const std::map<std::string, const analysis::Roof*>& sheet) {
  std::vector<core::CeilingRecord> rows;
  for (const auto& [name, roof] : sheet) {
    const bool is_bw = name == "dram" || name == "l2" || name == "l1";
    rows.push_back({device_name, name, is_bw ? "bytes_per_s" : (name == "tensor_int8" ? "ops_per_s" : "flops_per_s"),
                    roof->value, "datasheet", roof->method});
  }
  return rows;
}

// The database: one process (this fprof), the device, the measured and datasheet rows, and the
// reference measurements as metadata. Written beside the target and put in place once closed.
core::Status fillCeilingsDatabase(core::Writer& w, Measurement m, const std::map<std::string, json>& by_name,
                                  const std::vector<core::CeilingRecord>& rows) {
  core::ProcessInfo proc;
  proc.pid = getpid();
  proc.command_line = "fprof ceilings";
  auto pid = w.addProcess(proc);
  if (!pid) return core::Error{pid.error()};
  m.device.process_id = *pid;
  core::Status st = w.addDevice(m.device);
  if (st) st = w.setMetadata("mode", "ceilings");
  if (st) st = w.setMetadata("fprof_version", FPROF_VERSION_STRING);
  if (st) st = w.setMetadata("ceilings_quick", m.doc.value("quick", false) ? "1" : "0");
  for (const auto& [name, row] : by_name) {
    if (name.rfind("ref_", 0) != 0 || !st) continue;
    st = w.setMetadata("reference." + name.substr(4) + "." + row.at("unit").get<std::string>(),
                       fmt::format("{:.6e}", row.at("best").get<double>()));
  }
  for (const core::CeilingRecord& r : rows) w.add(r);
  if (st) st = w.close();
  return st;
}

// The database: one process (this fprof), the device, the measured and datasheet rows, and the
// reference measurements as metadata. Written beside the target and put in place once closed.
core::Status writeCeilingsDatabase(const std::string& output, const CeilingsOptions& opt, const Measurement& m,
                                   const std::map<std::string, json>& by_name,
                                   const std::vector<core::CeilingRecord>& rows) {
  auto out = core::OutputFile::create(output, databaseRules(opt), core::OutputKind::kDatabase);
  if (!out) return core::Error{out.error()};
  core::Status st;
  {
    auto writer = core::Writer::create((*out)->temporaryPath(), /*overwrite=*/true);
    st = writer ? fillCeilingsDatabase(**writer, m, by_name, rows) : core::Status(core::Error{writer.error()});
  }
  if (!st) return core::makeError((*out)->inTermsOfTarget(st.error()));
  return (*out)->commit();
}

std::string ceilingsTable(const std::string& output, const Measurement& m, const std::map<std::string, json>& by_name,
                          const std::vector<core::CeilingRecord>& rows,
                          const std::map<std::string, const analysis::Roof*>& sheet) {
  using A = TextTable::Align;
  TextTable t({"ceiling", "measured", "datasheet", "measured/datasheet"}, {A::kLeft, A::kRight, A::kRight, A::kRight});
  for (const core::CeilingRecord& r : rows) {
    if (r.source != "measured") continue;
    auto it = sheet.find(r.ceiling);
    t.addRow({r.ceiling, rate(r.value, r.unit), it == sheet.end() ? "n/a" : rate(it->second->value, r.unit),
              it == sheet.end() ? "n/a" : fmt::format("{:.1f}%", 100.0 * r.value / it->second->value)});
  }
  const core::DeviceInfo& dev = m.device;
  std::string out = fmt::format("{}: {} (sm_{}{}, {} SMs)\n", output, dev.name, dev.compute_major, dev.compute_minor,
                                dev.sm_count);
  out += t.render();
  for (const auto& [name, row] : by_name) {
    if (name.rfind("ref_", 0) != 0) continue;
    out += fmt::format("reference {}: {}\n", name.substr(4),
                       rate(row.at("best").get<double>(), row.at("unit").get<std::string>()));
  }
  for (const json& note : m.doc.value("notes", json::array())) out += "note: " + note.get<std::string>() + "\n";
  return out;
}

int runCeilings(const CeilingsOptions& opt) {
  if (core::Status s = checkOutputs(opt); !s) return inputError(s.error());
  int exit_code = 2;
  auto m = readMeasurement(opt, exit_code);
  if (!m) {
    printText(stderr, "fprof: " + m.error() + "\n");
    return exit_code;
  }
  if (!opt.save_json.empty()) {
    if (core::Status s = saveJson(opt, m->text); !s) return inputError(s.error());
  }
  std::string output = opt.output;
  if (output.empty()) {
    output = ceilingsCachePath(m->device.name);
    std::error_code ec;
    fs::create_directories(fs::path(output).parent_path(), ec);
  }
  std::map<std::string, json> by_name;
  std::vector<core::CeilingRecord> rows;
  std::map<std::string, const analysis::Roof*> sheet;
  const analysis::Ceilings datasheet = analysis::datasheetCeilings(m->device);
  try {
    rows = measuredRows(*m, by_name);
    sheet = datasheetByName(datasheet);
    for (core::CeilingRecord& r : datasheetRows(m->device.name, sheet)) rows.push_back(std::move(r));
  } catch (const json::exception& e) {
    return inputError("ceilings: the measurement lacks a field: " + std::string(e.what()));
  }
  if (core::Status s = writeCeilingsDatabase(output, opt, *m, by_name, rows); !s) return inputError(s.error());
  // With --save-json -, standard output carries the measurement alone.
  if (opt.save_json != "-") printText(stdout, ceilingsTable(output, *m, by_name, rows, sheet));
  return 0;
}

}  // namespace

Command addCeilingsCommand(CLI::App& root) {
  auto opt = std::make_shared<CeilingsOptions>();
  CLI::App* app = root.add_subcommand(
      "ceilings",
      "Measure this GPU's roofs (DRAM, L2, L1 and shared-memory bandwidth; FP64/FP32/FP16/BF16 FMA and tensor-core "
      "rates) and store them with the datasheet values. By default the result goes to the per-user cache, where "
      "the analysis finds it for runs on the same GPU model.");
  app->add_option("-o,--output", opt->output, "Database to write (default: ~/.cache/fprof/ceilings/<GPU>.fprof)");
  app->add_flag("--force", opt->force,
                "Replace the files named by -o and --save-json if they exist (never the --from-json input; the cache "
                "is always replaced)");
  app->add_flag("--quick", opt->quick, "Smaller problem sizes: seconds instead of a minute, slightly lower roofs");
  app->add_option("--from-json", opt->from_json,
                  "Store a measurement saved earlier with --save-json instead of measuring (no GPU needed)");
  app->add_option("--save-json", opt->save_json, "Also save the raw measurement as JSON ('-': standard output, instead of the table)");
  app->add_flag("-q,--quiet", opt->quiet, "No note and no progress line on stderr while measuring");
  app->footer(kOutputRulesFooter);
  return {app, [opt] { return runCeilings(*opt); }};
}

}  // namespace fprof::cli
