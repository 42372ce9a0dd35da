// fprof export: a .fprof database as CSV (one row per kernel), JSON (kernels plus the analysis:
// roofline per kernel group and op, origins, memory, fusion candidates) or a Chrome trace that
// opens in Perfetto and chrome://tracing. CSV and JSON name kernels in full and by their short
// name (analysis/kernel_names.h).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "command.h"
#include "fprof/analysis/run_analysis.h"
#include "fprof/core/store.h"
#include "fprof/core/text.h"

namespace fprof::cli {
namespace {

using nlohmann::json;

struct ExportOptions {
  std::string file;
  std::string format;
  std::string output;
  bool force = false;
};

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// Text in exports is whole (never cut for display) and clean: the reader cleaned what the file
// held; the path is the user's and is cleaned here. A JSON string never throws on bad UTF-8.
using core::csvField;

std::string jsonText(const json& j, int indent) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

// Empty where there is no number, or none that is finite (JSON writes such a value as null).
std::string optCsv(const std::optional<double>& v) { return v && std::isfinite(*v) ? fmt::format("{:.6g}", *v) : ""; }

std::string exportCsv(const analysis::RunAnalysis& a) {
  const core::Profile& p = a.profile();
  std::string out =
      "kernel_id,process_id,device_id,stream_id,correlation_id,start_ns,end_ns,duration_ns,dependency_wait_ns,grid_x,"
      "grid_y,grid_z,"
      "block_x,block_y,block_z,registers_per_thread,shared_bytes,local_bytes_per_thread,theoretical_occupancy,"
      "graph_id,origin,bound,binding_roof,roof_fraction,attainable_ns,dram_intensity_flop_per_byte,"
      "achieved_flops_per_s,dram_bytes_per_s,name,nvtx_path,short_name\n";
  const analysis::KernelNames& names = a.kernelNames();
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const core::KernelRow& k = p.kernels[i];
    const analysis::Placement pl = a.kernelPlacement(i);
    const auto dram = static_cast<size_t>(analysis::MemLevel::kDram);
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", k.id,
                       k.process_id, k.device_id, k.stream_id, k.correlation_id, k.start_ns, k.end_ns, k.durationNs(),
                       k.dependency_wait_ns,
                       k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, k.registers_per_thread,
                       k.static_shared_bytes + k.dynamic_shared_bytes, k.local_bytes_per_thread,
                       optCsv(k.theoretical_occupancy), k.graph_id, analysis::originName(a.origin(i)),
                       analysis::boundName(pl.bound), pl.binding, optCsv(pl.roof_fraction), optCsv(pl.attainable_ns),
                       optCsv(pl.intensity_flop_per_byte[dram]), optCsv(pl.achieved_flops_per_s),
                       optCsv(pl.bytes_per_s[dram]), csvField(p.str(k.demangled_id)),
                       csvField(k.nvtx_path_id ? p.str(*k.nvtx_path_id) : ""),
                       csvField(names.shortName(p.str(k.demangled_id))));
  }
  return out;
}

json placementJson(const analysis::Placement& pl) {
  json j;
  j["duration_ns"] = pl.duration_ns;
  j["has_counters"] = pl.has_counters;
  j["bound"] = analysis::boundName(pl.bound);
  j["reason"] = pl.reason;
  j["binding_roof"] = pl.binding.empty() ? json(nullptr) : json(pl.binding);
  j["binding_source"] = pl.binding_source ? json(analysis::ceilingSourceName(*pl.binding_source)) : json(nullptr);
  j["roof_fraction"] = opt(pl.roof_fraction);
  j["attainable_ns"] = opt(pl.attainable_ns);
  j["total_flops"] = opt(pl.total_flops);
  j["achieved_flops_per_s"] = opt(pl.achieved_flops_per_s);
  j["effective_peak_flops_per_s"] = opt(pl.effective_peak_flops_per_s);
  for (size_t l = 0; l < analysis::kMemLevelCount; ++l) {
    const std::string level(analysis::memLevelName(static_cast<analysis::MemLevel>(l)));
    j["intensity_flop_per_byte"][level] = opt(pl.intensity_flop_per_byte[l]);
    j["bytes_per_s"][level] = opt(pl.bytes_per_s[l]);
  }
  j["missing"] = pl.missing;
  return j;
}

// CUDA graph launches counted whole (schema 5): their sums and the kernel rows they cover.
json graphLaunchesJson(const core::Profile& p) {
  json out = json::array();
  if (p.graph_launch_counters.empty()) return out;
  std::map<std::pair<uint32_t, uint32_t>, json> kernels_of;  // (process, correlation) -> kernel ids
  for (const core::GraphLaunchCounters& g : p.graph_launch_counters) kernels_of[{g.process_id, g.correlation_id}] = json::array();
  for (const core::KernelRow& k : p.kernels) {
    if (k.graph_id == 0) continue;
    if (auto it = kernels_of.find({k.process_id, k.correlation_id}); it != kernels_of.end()) it->second.push_back(k.id);
  }
  for (const core::GraphLaunchCounters& g : p.graph_launch_counters) {
    const core::KernelCounters& c = g.counters;
    out.push_back({{"process_id", g.process_id}, {"correlation_id", g.correlation_id},
                   {"kernel_ids", kernels_of[{g.process_id, g.correlation_id}]},
                   {"dram_read_bytes", opt(c.dram_read_bytes)}, {"dram_write_bytes", opt(c.dram_write_bytes)},
                   {"l2_bytes", opt(c.l2_bytes)}, {"l1_bytes", opt(c.l1_bytes)},
                   {"achieved_occupancy", opt(c.achieved_occupancy)}, {"gpu_time_ns", opt(c.gpu_time_ns)}});
  }
  return out;
}

std::string exportJson(const analysis::RunAnalysis& a) {
  const core::Profile& p = a.profile();
  const analysis::KernelNames& names = a.kernelNames();
  json j;
  j["file"] = core::cleanText(p.path);
  j["schema_version"] = p.schema_version;
  j["devices"] = json::array();
  for (const core::DeviceInfo& d : p.devices) {
    const analysis::Ceilings& c = a.ceilings(d.process_id, d.id);
    json roofs = json::object();
    for (size_t l = 0; l < analysis::kMemLevelCount; ++l) {
      if (const auto& r = c.bandwidth[l]) {
        roofs[std::string(analysis::memLevelName(static_cast<analysis::MemLevel>(l)))] = {
            {"bytes_per_s", r->value}, {"source", analysis::ceilingSourceName(r->source)}, {"method", r->method}};
      }
    }
    for (size_t i = 0; i < analysis::kPrecisionCount; ++i) {
      if (const auto& r = c.compute[i]) {
        roofs[std::string(analysis::precisionName(static_cast<analysis::Precision>(i)))] = {
            {"flops_per_s", r->value}, {"source", analysis::ceilingSourceName(r->source)}, {"method", r->method}};
      }
    }
    j["devices"].push_back({{"process_id", d.process_id}, {"id", d.id}, {"name", d.name},
                            {"compute_capability", fmt::format("{}.{}", d.compute_major, d.compute_minor)},
                            {"sm_count", d.sm_count}, {"ceilings", roofs}});
  }
  // Every launch, with the per-kernel roofline verdict (the groups below carry the full placement).
  j["kernels"] = json::array();
  const analysis::KernelOps& kernel_ops = a.kernelOps();
  auto opOf = [&](size_t i) {
    const std::string& name = kernel_ops.names[kernel_ops.of_kernel[i]];
    return name.empty() ? json(nullptr) : json(name);
  };
  {
    for (size_t i = 0; i < p.kernels.size(); ++i) {
      const core::KernelRow& k = p.kernels[i];
      const analysis::Placement pl = a.kernelPlacement(i);
      j["kernels"].push_back({{"id", k.id}, {"name", p.str(k.demangled_id)},
                              {"short_name", names.shortName(p.str(k.demangled_id))}, {"process_id", k.process_id},
                              {"device_id", k.device_id}, {"stream_id", k.stream_id}, {"start_ns", k.start_ns},
                              {"duration_ns", k.durationNs()}, {"dependency_wait_ns", k.dependency_wait_ns},
                              {"programmatic_launch", k.programmatic_launch},
                              {"grid", {k.grid_x, k.grid_y, k.grid_z}},
                              {"block", {k.block_x, k.block_y, k.block_z}},
                              {"registers_per_thread", k.registers_per_thread},
                              {"shared_bytes", k.static_shared_bytes + k.dynamic_shared_bytes},
                              {"local_bytes_per_thread", k.local_bytes_per_thread},
                              {"theoretical_occupancy", opt(k.theoretical_occupancy)}, {"graph_id", k.graph_id},
                              {"nvtx_path", k.nvtx_path_id ? json(p.str(*k.nvtx_path_id)) : json(nullptr)},
                              {"op", opOf(i)},
                              {"origin", analysis::originName(a.origin(i))},
                              {"bound", analysis::boundName(pl.bound)}, {"roof_fraction", opt(pl.roof_fraction)},
                              {"binding_roof", pl.binding.empty() ? json(nullptr) : json(pl.binding)}});
    }
  }
  j["graph_launches"] = graphLaunchesJson(p);
  const analysis::RooflineResult& roof = a.roofline();
  j["kernels_with_counters"] = roof.kernels_with_counters;
  j["kernel_groups"] = json::array();
  for (const auto& g : roof.kernel_groups) {
    j["kernel_groups"].push_back({{"name", g.label}, {"short_name", names.shortName(g.label)}, {"calls", g.calls},
                                  {"origin", analysis::originName(analysis::classifyOrigin(g.label))},
                                  {"roofline", placementJson(g.placement)}});
  }
  // Ops by name (the op each kernel is reported under: "aten::linear", not one per emit_nvtx range).
  j["ops"] = json::array();
  for (const auto& g : a.opPlacements()) {
    j["ops"].push_back({{"op", g.label}, {"calls", g.calls}, {"roofline", placementJson(g.placement)}});
  }
  const analysis::OriginTotals& origins = a.origins();
  j["origins"] = json::object();
  for (size_t o = 0; o < analysis::kOriginCount; ++o) {
    if (origins.launches[o] == 0) continue;
    j["origins"][std::string(analysis::originName(static_cast<analysis::Origin>(o)))] = {
        {"launches", origins.launches[o]}, {"duration_ns", origins.duration_ns[o]}};
  }
  const analysis::DataFlow& df = a.dataFlow();
  json mem;
  mem["allocations"] = df.allocations.size();
  mem["unmatched_frees"] = df.unmatched_frees;
  mem["devices"] = json::array();
  for (const auto& t : df.timelines) {
    json points = json::array();
    for (const auto& [ts, bytes] : t.points) points.push_back({ts, bytes});
    mem["devices"].push_back({{"process_id", t.process_id}, {"device_id", t.device_id},
                              {"peak_allocated_bytes", t.peak_allocated_bytes}, {"peak_ns", t.peak_ns},
                              {"timeline", points}});
  }
  mem["written_once_read_once"] = json::array();
  for (uint32_t allocation : df.written_once_read_once) {
    const analysis::Allocation& al = df.allocations[allocation];
    mem["written_once_read_once"].push_back(
        {{"address", fmt::format("0x{:x}", al.address)}, {"bytes", al.bytes}, {"values_written", al.values_written},
         {"writer", p.str(p.kernels[*al.first_writer].demangled_id)},
         {"reader", p.str(p.kernels[*al.first_reader].demangled_id)}});
  }
  j["memory"] = mem;
  const analysis::FusionResult& fr = a.fusion();
  json fusion;
  fusion["program_gpu_ns"] = fr.program_gpu_ns;
  fusion["nvtx_convention"] = fr.nvtx_convention;
  fusion["median_abs_error"] = opt(fr.median_abs_error);
  fusion["measured_pairs"] = fr.measured_pairs;
  fusion["notes"] = fr.notes;
  fusion["candidates"] = json::array();
  for (const auto& c : fr.candidates) {
    // Stages are kernels or NVTX ops; a data-flow pair is named by its kernels.
    std::vector<std::string> short_stages;
    for (const std::string& st : c.stages) short_stages.push_back(names.label(st));
    const std::string short_id = c.source == analysis::PairSource::kDataFlow ? names.chainLabel(c.stages) : c.id;
    fusion["candidates"].push_back(
        {{"source", analysis::pairSourceName(c.source)}, {"id", c.id}, {"short_id", short_id}, {"op", c.op},
         {"stages", c.stages}, {"short_stages", short_stages}, {"stage_kernels", c.stage_kernels}, {"links", c.links},
         {"roles", c.roles},
         {"intermediates", c.intermediates}, {"instances", c.instances},
         {"launches_per_instance", c.launches_per_instance}, {"launches_removed", c.launches_removed},
         {"unfused_ns", c.unfused_ns}, {"stage_ns", c.stage_ns}, {"intermediate_bytes", opt(c.intermediate_bytes)},
         {"intermediate_bytes_source", analysis::bytesSourceName(c.bytes_source)},
         {"predicted_fused_ns", opt(c.predicted_fused_ns)},
         {"model", c.model ? json(analysis::predictionModelName(*c.model)) : json(nullptr)},
         {"predicted_saving_ns", opt(c.predicted_saving_ns)}, {"total_saving_ns", opt(c.total_saving_ns)},
         {"program_share", opt(c.program_share)}, {"measured_fused_ns", opt(c.measured_fused_ns)},
         {"measured_saving_ns", opt(c.measured_saving_ns)}, {"prediction_error", opt(c.prediction_error)},
         {"vendor_ns", opt(c.vendor_ns)}, {"fused_occupancy", opt(c.fused_occupancy)}, {"fuse", c.fuse},
         {"reason", c.reason}, {"risks", c.risks}, {"name", c.name},
         {"pattern", analysis::fusionPatternName(c.pattern)}, {"variant", c.variant}, {"ops", c.stage_ops},
         {"shape", c.shape}, {"suggestion", c.suggestion}});
  }
  j["fusion"] = fusion;
  return jsonText(j, 2) + "\n";
}

std::string exportChromeTrace(const core::Profile& p) {
  // Times in microseconds relative to the first event, printed with ns precision.
  int64_t t0 = INT64_MAX;
  for (const auto& k : p.kernels) t0 = std::min(t0, k.start_ns);
  for (const auto& r : p.nvtx_ranges) t0 = std::min(t0, r.start_ns);
  for (const auto& m : p.memcpys) t0 = std::min(t0, m.start_ns);
  for (const auto& m : p.memsets) t0 = std::min(t0, m.start_ns);
  if (t0 == INT64_MAX) t0 = 0;
  auto us = [&](int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns - t0) / 1e3); };
  auto dur = [](int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1e3); };
  constexpr int64_t kHostTid = 1000000;  // NVTX tracks sit above the stream ids
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& e) {
    out += first ? "" : ",\n";
    out += e;
    first = false;
  };
  auto str = [](const std::string& s) { return jsonText(json(core::cleanText(s)), -1); };
  std::set<std::pair<uint32_t, int64_t>> tracks;
  for (const auto& pr : p.processes) {
    emit(fmt::format("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":{}}}}}", pr.id,
                     str(fmt::format("process {} (pid {})", pr.id, pr.pid))));
  }
  for (const auto& k : p.kernels) {
    tracks.emplace(k.process_id, k.stream_id);
    emit(fmt::format("{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
                     "\"args\":{{\"grid\":\"{}x{}x{}\",\"block\":\"{}x{}x{}\",\"registers_per_thread\":{},"
                     "\"device\":{},\"correlation_id\":{}}}}}",
                     str(p.str(k.demangled_id)), k.process_id, k.stream_id, us(k.ownStartNs()), dur(k.durationNs()),
                     k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, k.registers_per_thread,
                     k.device_id, k.correlation_id));
  }
  for (const auto& m : p.memcpys) {
    tracks.emplace(m.process_id, m.stream_id);
    emit(fmt::format("{{\"ph\":\"X\",\"cat\":\"memcpy\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},"
                     "\"dur\":{},\"args\":{{\"bytes\":{}}}}}",
                     str("memcpy " + m.copy_kind), m.process_id, m.stream_id, us(m.start_ns),
                     dur(m.end_ns - m.start_ns), m.bytes));
  }
  for (const auto& m : p.memsets) {
    tracks.emplace(m.process_id, m.stream_id);
    emit(fmt::format("{{\"ph\":\"X\",\"cat\":\"memset\",\"name\":\"memset\",\"pid\":{},\"tid\":{},\"ts\":{},"
                     "\"dur\":{},\"args\":{{\"bytes\":{}}}}}",
                     m.process_id, m.stream_id, us(m.start_ns), dur(m.end_ns - m.start_ns), m.bytes));
  }
  for (const auto& r : p.nvtx_ranges) {
    if (!r.end_ns) continue;  // still open at exit: no duration to draw
    const int64_t tid = kHostTid + r.thread_id;
    tracks.emplace(r.process_id, tid);
    emit(fmt::format("{{\"ph\":\"X\",\"cat\":\"nvtx\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
                     "\"args\":{{\"domain\":{},\"payload\":{}}}}}",
                     str(r.message), r.process_id, tid, us(r.start_ns), dur(*r.end_ns - r.start_ns), str(r.domain),
                     r.payload ? std::to_string(*r.payload) : "null"));
  }
  for (const auto& [pid, tid] : tracks) {
    const std::string name = tid >= kHostTid ? fmt::format("NVTX (thread {})", tid - kHostTid)
                                             : fmt::format("stream {}", tid);
    emit(fmt::format("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}", pid,
                     tid, str(name)));
  }
  return out + "\n]}\n";
}

int runExport(const ExportOptions& o) {
  // The output is opened first: a name that cannot be written costs no reading.
  auto out = core::TextOutput::open(o.output, outputRules(o.force, {o.file}, "the export"));
  if (!out) return inputError(out.error());
  auto loaded = loadProfile(o.file);
  if (!loaded) return inputError(loaded.error());
  std::string text;
  if (o.format == "csv" || o.format == "json") {
    // Data flow and fusion only for JSON, which lists the fusion candidates.
    analysis::AnalysisOptions options;
    options.fusion_in_background = o.format == "json";
    const analysis::RunAnalysis analysed = analysis::RunAnalysis::of(*loaded, nullptr, options);
    text = o.format == "csv" ? exportCsv(analysed) : exportJson(analysed);
  } else {
    text = exportChromeTrace(*loaded);
  }
  core::Status written = out->write(text);
  if (written) written = out->finish();
  if (!written) return inputError(written.error());
  return 0;
}

}  // namespace

Command addExportCommand(CLI::App& root) {
  auto opt = std::make_shared<ExportOptions>();
  CLI::App* app = root.add_subcommand(
      "export", "Export a .fprof database: csv (one row per kernel, with origin and roofline), json (kernels groups, "
                "ops, origins, memory, fusion candidates) or chrome-trace (opens in Perfetto / chrome://tracing).");
  app->add_option("file", opt->file, "The .fprof database")->required();
  app->add_option("--format", opt->format, "csv, json or chrome-trace")
      ->required()
      ->check(CLI::IsMember({"csv", "json", "chrome-trace"}));
  app->add_option("-o,--output", opt->output, "Output file (default, or '-': standard output)");
  app->add_flag("--force", opt->force, kForceHelp);
  app->footer(kOutputRulesFooter);
  return {app, [opt] { return runExport(*opt); }};
}

}  // namespace fprof::cli
