// fprof ceilings: measures this GPU's roofs with fprof-ceilings and stores them, next to the
// datasheet values, in a .fprof database that `fprof run` and the analysis can attach.
#include <fmt/format.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unistd.h>

#include "command.h"
#include "fprof/analysis/ceilings.h"
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
  const std::string cmd = "'" + exe + "'" + (quick ? " --quick" : "");
  if (!quiet) std::fprintf(stderr, "[fprof] measuring ceilings with %s (about a minute)\n", exe.c_str());
  Progress progress(Progress::wanted(quiet));
  progress.step(quick ? "measuring ceilings (a few seconds)" : "measuring ceilings (about a minute)");
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return core::makeError("ceilings: cannot start " + exe);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
  const int status = pclose(f);
  progress.done();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return core::makeError("ceilings: fprof-ceilings failed (see its message above); is a GPU present?");
  }
  return out;
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

int runCeilings(const CeilingsOptions& opt) {
  std::string text;
  if (!opt.from_json.empty()) {
    std::ifstream in(opt.from_json);
    if (!in) return inputError("ceilings: cannot read " + opt.from_json);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  } else {
    auto measured = runMeasurement(opt.quick, opt.quiet);
    if (!measured) {
      std::fprintf(stderr, "fprof: %s\n", measured.error().c_str());
      return 1;
    }
    text = *measured;
  }
  json doc;
  core::DeviceInfo dev;
  try {
    doc = json::parse(text);
    dev = deviceFromJson(doc.at("device"));
  } catch (const json::exception& e) {
    return inputError("ceilings: " + (opt.from_json.empty() ? std::string("fprof-ceilings output") : opt.from_json) +
                      " is not a ceilings measurement: " + e.what());
  }
  if (!opt.save_json.empty()) std::ofstream(opt.save_json) << text;

  std::string output = opt.output;
  if (output.empty()) output = ceilingsCachePath(dev.name);
  std::error_code ec;
  fs::create_directories(fs::path(output).parent_path().empty() ? fs::path(".") : fs::path(output).parent_path(), ec);
  // The per-user cache holds the latest measurement of each GPU model; a named file is kept.
  const bool overwrite = opt.force || opt.output.empty();
  auto writer = core::Writer::create(output, overwrite);
  if (!writer) return inputError(writer.error());
  core::Writer& w = **writer;
  core::ProcessInfo proc;
  proc.pid = getpid();
  proc.command_line = "fprof ceilings";
  auto pid = w.addProcess(proc);
  if (!pid) return inputError(pid.error());
  dev.process_id = *pid;
  core::Status st = w.addDevice(dev);
  if (st) st = w.setMetadata("mode", "ceilings");
  if (st) st = w.setMetadata("fprof_version", FPROF_VERSION_STRING);
  if (st) st = w.setMetadata("ceilings_quick", doc.value("quick", false) ? "1" : "0");

  // The DRAM roof is the best any access pattern reached: read, write, copy kernel or cudaMemcpy.
  std::map<std::string, json> by_name;
  for (const json& m : doc.at("measurements")) by_name[m.at("ceiling").get<std::string>()] = m;
  std::vector<core::CeilingRecord> rows;
  std::string dram_from;
  double dram_best = 0;
  for (const char* name : {"dram_read", "dram_write", "dram", "ref_cudaMemcpy_d2d"}) {
    if (by_name.count(name) && by_name[name].at("best").get<double>() > dram_best) {
      dram_best = by_name[name].at("best").get<double>();
      dram_from = by_name[name].at("method").get<std::string>();
    }
  }
  for (const auto& [name, m] : by_name) {
    if (name.rfind("ref_", 0) == 0) {
      if (st) st = w.setMetadata("reference." + name.substr(4) + "." + m.at("unit").get<std::string>(),
                                 fmt::format("{:.6e}", m.at("best").get<double>()));
      continue;
    }
    core::CeilingRecord r{dev.name, name, m.at("unit").get<std::string>(), m.at("best").get<double>(), "measured",
                          fmt::format("{}; best of 10 timed runs (median {:.4g})", m.at("method").get<std::string>(),
                                      m.at("median").get<double>())};
    if (name == "dram") {
      r.value = dram_best;
      r.method = "best of read, write, copy kernels and cudaMemcpy: " + dram_from;
    }
    rows.push_back(r);
  }
  const analysis::Ceilings sheet = analysis::datasheetCeilings(dev);
  std::map<std::string, const analysis::Roof*> sheet_by_name;
  for (size_t i = 0; i < analysis::kMemLevelCount; ++i) {
    if (sheet.bandwidth[i]) {
      sheet_by_name[std::string(analysis::memLevelName(static_cast<analysis::MemLevel>(i)))] = &*sheet.bandwidth[i];
    }
  }
  for (size_t i = 0; i < analysis::kPrecisionCount; ++i) {
    if (sheet.compute[i]) {
      sheet_by_name[std::string(analysis::precisionName(static_cast<analysis::Precision>(i)))] = &*sheet.compute[i];
    }
  }
  for (const auto& [name, roof] : sheet_by_name) {
    const bool is_bw = name == "dram" || name == "l2" || name == "l1";
    rows.push_back({dev.name, name, is_bw ? "bytes_per_s" : (name == "tensor_int8" ? "ops_per_s" : "flops_per_s"),
                    roof->value, "datasheet", roof->method});
  }
  for (const core::CeilingRecord& r : rows) w.add(r);
  if (st) st = w.close();
  if (!st) return inputError(st.error());

  using A = TextTable::Align;
  TextTable t({"ceiling", "measured", "datasheet", "measured/datasheet"}, {A::kLeft, A::kRight, A::kRight, A::kRight});
  for (const core::CeilingRecord& r : rows) {
    if (r.source != "measured") continue;
    auto it = sheet_by_name.find(r.ceiling);
    t.addRow({r.ceiling, rate(r.value, r.unit), it == sheet_by_name.end() ? "n/a" : rate(it->second->value, r.unit),
              it == sheet_by_name.end() ? "n/a" : fmt::format("{:.1f}%", 100.0 * r.value / it->second->value)});
  }
  std::string out = fmt::format("{}: {} (sm_{}{}, {} SMs)\n", output, dev.name, dev.compute_major, dev.compute_minor,
                                dev.sm_count);
  out += t.render();
  for (const auto& [name, m] : by_name) {
    if (name.rfind("ref_", 0) != 0) continue;
    out += fmt::format("reference {}: {}\n", name.substr(4), rate(m.at("best").get<double>(), m.at("unit").get<std::string>()));
  }
  for (const json& note : doc.value("notes", json::array())) out += "note: " + note.get<std::string>() + "\n";
  std::fputs(out.c_str(), stdout);
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
  app->add_flag("--force", opt->force, "Overwrite the output database if it exists");
  app->add_flag("--quick", opt->quick, "Smaller problem sizes: seconds instead of a minute, slightly lower roofs");
  app->add_option("--from-json", opt->from_json,
                  "Store a measurement saved earlier with --save-json instead of measuring (no GPU needed)");
  app->add_option("--save-json", opt->save_json, "Also save the raw measurement as JSON");
  app->add_flag("-q,--quiet", opt->quiet, "No note and no progress line on stderr while measuring");
  return {app, [opt] { return runCeilings(*opt); }};
}

}  // namespace fprof::cli
