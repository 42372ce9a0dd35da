// fprof export: a .fprof database as CSV (one row per kernel), JSON (kernels plus the analysis:
// roofline per kernel group and op, origins, memory, fusion candidates) or a Chrome trace that
// opens in Perfetto and chrome://tracing. CSV and JSON name kernels in full and by their short
// name (analysis/kernel_names.h).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "command.h"
#include "export_stream.h"
#include "fprof/analysis/run_analysis.h"
#include "fprof/core/profile_stream.h"
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

// Empty where there is no number, or none that is finite (JSON writes such a value as null).
std::string optCsv(const std::optional<double>& v) { return v && std::isfinite(*v) ? fmt::format("{:.6g}", *v) : ""; }

constexpr const char* kCsvHeader =
    "kernel_id,process_id,device_id,stream_id,correlation_id,start_ns,end_ns,duration_ns,dependency_wait_ns,grid_x,"
    "grid_y,grid_z,block_x,block_y,block_z,registers_per_thread,shared_bytes,local_bytes_per_thread,"
    "theoretical_occupancy,graph_id,origin,bound,binding_roof,roof_fraction,attainable_ns,"
    "dram_intensity_flop_per_byte,achieved_flops_per_s,dram_bytes_per_s,name,nvtx_path,short_name\n";

// What the CSV says of a kernel beyond its own columns, the same for every kernel of one name:
// computed once per name, not once per row.
struct NameFacts {
  std::string short_name;
  analysis::Origin origin = analysis::Origin::kUser;
};

// The kernels of a streamed database with what the CSV adds to them: each one's placement on its
// device's roofline (the analysis's kernelPlacement, from the kernel, its counters and its
// device), its origin and short name. Only the names and devices are held.
class StreamedKernels {
 public:
  static core::Expected<StreamedKernels> of(core::ProfileStream& in) {
    auto ids = in.kernelNameIds();
    if (!ids) return core::Error{ids.error()};
    const core::Profile& p = in.small();
    std::vector<std::string> full;
    for (uint32_t id : *ids) full.push_back(p.str(id));
    StreamedKernels kernels(in, analysis::KernelNames(std::move(full)));
    for (const core::DeviceInfo& d : p.devices) kernels.ceilings_.emplace_back(d, analysis::ceilingsFor(p, d));
    return kernels;
  }

  core::Expected<analysis::Placement> placement(const core::KernelRow& k) {
    auto counters = in_.countersOf(k.id);
    if (!counters) return core::Error{counters.error()};
    const core::DeviceInfo* device = in_.small().device(k.process_id, k.device_id);
    const analysis::PlacementInput input =
        analysis::kernelInput(k, device, *counters ? &**counters : nullptr, in_.small().str(k.demangled_id));
    return analysis::place(input, ceilingsOf(k), analysis::RooflineOptions{});
  }

  const NameFacts& facts(uint32_t demangled_id) {
    auto [it, added] = facts_.try_emplace(demangled_id);
    if (added) {
      const std::string& name = in_.small().str(demangled_id);
      it->second = {names_.shortName(name), analysis::classifyOrigin(name)};
    }
    return it->second;
  }

 private:
  StreamedKernels(core::ProfileStream& in, analysis::KernelNames names) : in_(in), names_(std::move(names)) {}

  // As the analysis finds them: the first device recorded with the kernel's (process, device), or
  // no roofs for a kernel whose device was not recorded.
  const analysis::Ceilings& ceilingsOf(const core::KernelRow& k) const {
    for (const auto& [d, c] : ceilings_) {
      if (d.process_id == k.process_id && d.id == k.device_id) return c;
    }
    return no_device_;
  }

  core::ProfileStream& in_;
  analysis::KernelNames names_;
  std::vector<std::pair<core::DeviceInfo, analysis::Ceilings>> ceilings_;
  analysis::Ceilings no_device_;
  std::unordered_map<uint32_t, NameFacts> facts_;
};

// One row per kernel, each written as it is read.
core::Status exportCsv(core::ProfileStream& in, RowWriter& w) {
  auto kernels = StreamedKernels::of(in);
  if (!kernels) return core::makeError(kernels.error());
  auto rows = in.kernelsByStart();
  if (!rows) return core::makeError(rows.error());
  w.write(kCsvHeader);
  const auto dram = static_cast<size_t>(analysis::MemLevel::kDram);
  core::KernelRow k;
  while (w.ok()) {
    auto more = (*rows)->next(k);
    if (!more) return core::makeError(more.error());
    if (!*more) break;
    auto placed = kernels->placement(k);
    if (!placed) return core::makeError(placed.error());
    const analysis::Placement& pl = *placed;
    const core::Profile& p = in.small();
    const NameFacts& facts = kernels->facts(k.demangled_id);
    w.format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", k.id,
             k.process_id, k.device_id, k.stream_id, k.correlation_id, k.start_ns, k.end_ns, k.durationNs(),
             k.dependency_wait_ns, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z,
             k.registers_per_thread, k.static_shared_bytes + k.dynamic_shared_bytes, k.local_bytes_per_thread,
             optCsv(k.theoretical_occupancy), k.graph_id, analysis::originName(facts.origin),
             analysis::boundName(pl.bound), pl.binding, optCsv(pl.roof_fraction), optCsv(pl.attainable_ns),
             optCsv(pl.intensity_flop_per_byte[dram]), optCsv(pl.achieved_flops_per_s), optCsv(pl.bytes_per_s[dram]),
             csvField(p.str(k.demangled_id)), csvField(k.nvtx_path_id ? p.str(*k.nvtx_path_id) : ""),
             csvField(facts.short_name));
  }
  return w.flush();
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
void graphLaunchesJson(const core::Profile& p, JsonStream& out) {
  out.beginArray("graph_launches");
  std::map<std::pair<uint32_t, uint32_t>, json> kernels_of;  // (process, correlation) -> kernel ids
  for (const core::GraphLaunchCounters& g : p.graph_launch_counters) {
    kernels_of[{g.process_id, g.correlation_id}] = json::array();
  }
  for (const core::KernelRow& k : p.kernels) {
    if (k.graph_id == 0 || kernels_of.empty()) continue;
    if (auto it = kernels_of.find({k.process_id, k.correlation_id}); it != kernels_of.end()) it->second.push_back(k.id);
  }
  for (const core::GraphLaunchCounters& g : p.graph_launch_counters) {
    const core::KernelCounters& c = g.counters;
    out.value({{"process_id", g.process_id}, {"correlation_id", g.correlation_id},
               {"kernel_ids", std::move(kernels_of[{g.process_id, g.correlation_id}])},
               {"dram_read_bytes", opt(c.dram_read_bytes)}, {"dram_write_bytes", opt(c.dram_write_bytes)},
               {"l2_bytes", opt(c.l2_bytes)}, {"l1_bytes", opt(c.l1_bytes)},
               {"achieved_occupancy", opt(c.achieved_occupancy)}, {"gpu_time_ns", opt(c.gpu_time_ns)}});
  }
  out.end();
}

json ceilingsJson(const analysis::Ceilings& c) {
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
  return roofs;
}

json devicesJson(const analysis::RunAnalysis& a) {
  json devices = json::array();
  for (const core::DeviceInfo& d : a.profile().devices) {
    devices.push_back({{"process_id", d.process_id}, {"id", d.id}, {"name", d.name},
                       {"compute_capability", fmt::format("{}.{}", d.compute_major, d.compute_minor)},
                       {"sm_count", d.sm_count}, {"ceilings", ceilingsJson(a.ceilings(d.process_id, d.id))}});
  }
  return devices;
}

// One launch, with its roofline verdict (the groups carry the full placement) and its op, as the
// text JsonStream::valueText gives the object of these members at `depth`, made without building
// it: members in nlohmann's order (by key), numbers in decimal, and strings and fractions written
// by nlohmann itself (a name, path, op, origin or roof once per block of launches, not once per
// launch).
class KernelTexts {
 public:
  KernelTexts(const analysis::RunAnalysis& a, size_t depth)
      : a_(a), inner_("\n" + std::string((depth + 1) * 2, ' ')), element_(inner_ + "  "),
        close_("\n" + std::string(depth * 2, ' ') + "}") {
    for (size_t f = 0; f < kFields; ++f) order_[f] = f;
    std::sort(order_.begin(), order_.end(), [](size_t x, size_t y) { return kKeys[x] < kKeys[y]; });
  }

  std::string of(size_t i) {
    fill(i);
    std::string out = "{";
    for (size_t n = 0; n < kFields; ++n) {
      if (n > 0) out += ',';
      out += inner_;
      out += '"';
      out += kKeys[order_[n]];
      out += "\": ";
      out += values_[order_[n]];
    }
    out += close_;
    return out;
  }

 private:
  enum Field : size_t {
    kId, kName, kShortName, kProcessId, kDeviceId, kStreamId, kStartNs, kDurationNs, kDependencyWaitNs,
    kProgrammaticLaunch, kGrid, kBlock, kRegisters, kSharedBytes, kLocalBytes, kTheoreticalOccupancy, kGraphId,
    kNvtxPath, kOp, kOrigin, kBound, kRoofFraction, kBindingRoof, kFields
  };
  static constexpr std::array<std::string_view, kFields> kKeys{
      "id", "name", "short_name", "process_id", "device_id", "stream_id", "start_ns", "duration_ns",
      "dependency_wait_ns", "programmatic_launch", "grid", "block", "registers_per_thread", "shared_bytes",
      "local_bytes_per_thread", "theoretical_occupancy", "graph_id", "nvtx_path", "op", "origin", "bound",
      "roof_fraction", "binding_roof"};

  void fill(size_t i) {
    const core::Profile& p = a_.profile();
    const core::KernelRow& k = p.kernels[i];
    const analysis::Placement pl = a_.kernelPlacement(i);
    const analysis::KernelOps& ops = a_.kernelOps();
    const uint32_t op = ops.of_kernel[i];
    number(kId, k.id);
    values_[kName] = cached(names_, k.demangled_id, [&] { return string(p.str(k.demangled_id)); });
    values_[kShortName] =
        cached(short_names_, k.demangled_id, [&] { return string(a_.kernelNames().shortName(p.str(k.demangled_id))); });
    number(kProcessId, k.process_id);
    number(kDeviceId, k.device_id);
    number(kStreamId, k.stream_id);
    number(kStartNs, k.start_ns);
    number(kDurationNs, k.durationNs());
    number(kDependencyWaitNs, k.dependency_wait_ns);
    values_[kProgrammaticLaunch] = k.programmatic_launch ? "true" : "false";
    triple(kGrid, k.grid_x, k.grid_y, k.grid_z);
    triple(kBlock, k.block_x, k.block_y, k.block_z);
    number(kRegisters, k.registers_per_thread);
    number(kSharedBytes, k.static_shared_bytes + k.dynamic_shared_bytes);
    number(kLocalBytes, k.local_bytes_per_thread);
    values_[kTheoreticalOccupancy] = jsonText(opt(k.theoretical_occupancy), -1);
    number(kGraphId, k.graph_id);
    values_[kNvtxPath] =
        k.nvtx_path_id ? cached(paths_, *k.nvtx_path_id, [&] { return string(p.str(*k.nvtx_path_id)); }) : "null";
    values_[kOp] = cached(ops_, op, [&] { return ops.names[op].empty() ? "null" : string(ops.names[op]); });
    values_[kOrigin] = cached(origins_, static_cast<uint32_t>(a_.origin(i)),
                              [&] { return string(analysis::originName(a_.origin(i))); });
    values_[kBound] = cached(bounds_, static_cast<uint32_t>(pl.bound), [&] { return string(analysis::boundName(pl.bound)); });
    values_[kRoofFraction] = jsonText(opt(pl.roof_fraction), -1);
    values_[kBindingRoof] = pl.binding.empty() ? "null" : cached(roofs_, pl.binding, [&] { return string(pl.binding); });
  }

  static std::string string(std::string_view s) { return jsonText(json(std::string(s)), -1); }
  template <class Int>
  void number(Field f, Int v) {
    values_[f].clear();
    fmt::format_to(std::back_inserter(values_[f]), "{}", v);
  }
  // An array of three numbers, one a line.
  void triple(Field f, int32_t x, int32_t y, int32_t z) {
    values_[f] = fmt::format("[{0}{1},{0}{2},{0}{3}{4}]", element_, x, y, z, inner_);
  }
  template <class Key, class Make>
  static const std::string& cached(std::unordered_map<Key, std::string>& texts, const Key& id, Make&& make) {
    auto it = texts.find(id);
    if (it == texts.end()) it = texts.emplace(id, make()).first;
    return it->second;
  }

  const analysis::RunAnalysis& a_;
  const std::string inner_, element_, close_;  // a member's line start, an array element's, the close
  std::array<size_t, kFields> order_{};
  std::array<std::string, kFields> values_;
  std::unordered_map<uint32_t, std::string> names_, short_names_, paths_, ops_, origins_, bounds_;
  std::unordered_map<std::string, std::string> roofs_;  // by binding roof
};

// The launches in order. Each one's text is made apart from the others, so blocks of them are
// made on up to eight threads while the analysis, done by then, waits; a round of blocks is
// written before the next is made, so a few MB are held whatever the number of launches.
void kernelsJson(const analysis::RunAnalysis& a, JsonStream& out, RowWriter& w) {
  constexpr size_t kBlock = 2048;
  const size_t n = a.profile().kernels.size();
  const size_t depth = out.depth();
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
  auto block_text = [&a, n, depth](size_t first) {
    KernelTexts kernels(a, depth);
    std::vector<std::string> texts;
    for (size_t i = first; i < std::min(n, first + kBlock); ++i) texts.push_back(kernels.of(i));
    return texts;
  };
  for (size_t round = 0; round < n && w.ok(); round += kBlock * threads) {
    std::vector<std::future<std::vector<std::string>>> blocks;
    for (size_t first = round; first < std::min(n, round + kBlock * threads); first += kBlock) {
      // On a thread of its own where one can be had, else when its texts are asked for.
      blocks.push_back(std::async(std::launch::async | std::launch::deferred, block_text, first));
    }
    for (auto& block : blocks) {
      for (const std::string& text : block.get()) out.writeValueText(text);
    }
  }
}

void kernelGroupsJson(const analysis::RunAnalysis& a, JsonStream& out) {
  const analysis::KernelNames& names = a.kernelNames();
  out.beginArray("kernel_groups");
  for (const auto& g : a.roofline().kernel_groups) {
    out.value({{"name", g.label}, {"short_name", names.shortName(g.label)}, {"calls", g.calls},
               {"origin", analysis::originName(analysis::classifyOrigin(g.label))},
               {"roofline", placementJson(g.placement)}});
  }
  out.end();
}

// Ops by name (the op each kernel is reported under: "aten::linear", not one per emit_nvtx range).
void opsJson(const analysis::RunAnalysis& a, JsonStream& out) {
  out.beginArray("ops");
  for (const auto& g : a.opPlacements()) {
    out.value({{"op", g.label}, {"calls", g.calls}, {"roofline", placementJson(g.placement)}});
  }
  out.end();
}

json originsJson(const analysis::RunAnalysis& a) {
  const analysis::OriginTotals& origins = a.origins();
  json j = json::object();
  for (size_t o = 0; o < analysis::kOriginCount; ++o) {
    if (origins.launches[o] == 0) continue;
    j[std::string(analysis::originName(static_cast<analysis::Origin>(o)))] = {
        {"launches", origins.launches[o]}, {"duration_ns", origins.duration_ns[o]}};
  }
  return j;
}

// The data flow: allocations, and per device the allocated bytes over time (a point per
// allocation and free, written one by one).
void memoryJson(const analysis::RunAnalysis& a, JsonStream& out) {
  const core::Profile& p = a.profile();
  const analysis::DataFlow& df = a.dataFlow();
  out.beginObject("memory");
  out.value(df.allocations.size(), "allocations");
  out.beginArray("devices");
  for (const auto& t : df.timelines) {
    out.beginObject();
    out.value(t.device_id, "device_id");
    out.value(t.peak_allocated_bytes, "peak_allocated_bytes");
    out.value(t.peak_ns, "peak_ns");
    out.value(t.process_id, "process_id");
    out.beginArray("timeline");
    for (const auto& [ts, bytes] : t.points) out.value({ts, bytes});
    out.end();
    out.end();
  }
  out.end();
  out.value(df.unmatched_frees, "unmatched_frees");
  json once = json::array();
  // A value's one reader may have passed it with an unknown role (arg_roles.h): then no kernel
  // is known to have read the allocation, and its reader is null.
  auto kernelName = [&](const std::optional<size_t>& k) {
    return k && *k < p.kernels.size() ? json(p.str(p.kernels[*k].demangled_id)) : json(nullptr);
  };
  for (uint32_t allocation : df.written_once_read_once) {
    const analysis::Allocation& al = df.allocations[allocation];
    once.push_back({{"address", fmt::format("0x{:x}", al.address)}, {"bytes", al.bytes},
                    {"values_written", al.values_written}, {"writer", kernelName(al.first_writer)},
                    {"reader", kernelName(al.first_reader)}});
  }
  out.value(once, "written_once_read_once");
  out.end();
}

json fusionCandidateJson(const analysis::FusionCandidate& c, const analysis::KernelNames& names) {
  // Stages are kernels or NVTX ops; a data-flow pair is named by its kernels.
  std::vector<std::string> short_stages;
  for (const std::string& st : c.stages) short_stages.push_back(names.label(st));
  const std::string short_id = c.source == analysis::PairSource::kDataFlow ? names.chainLabel(c.stages) : c.id;
  return {{"source", analysis::pairSourceName(c.source)}, {"id", c.id}, {"short_id", short_id}, {"op", c.op},
          {"stages", c.stages}, {"short_stages", short_stages}, {"stage_kernels", c.stage_kernels},
          {"links", c.links}, {"roles", c.roles}, {"intermediates", c.intermediates}, {"instances", c.instances},
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
          {"shape", c.shape}, {"suggestion", c.suggestion}};
}

json fusionJson(const analysis::RunAnalysis& a) {
  const analysis::FusionResult& fr = a.fusion();
  json fusion;
  fusion["program_gpu_ns"] = fr.program_gpu_ns;
  fusion["nvtx_convention"] = fr.nvtx_convention;
  fusion["median_abs_error"] = opt(fr.median_abs_error);
  fusion["measured_pairs"] = fr.measured_pairs;
  fusion["notes"] = fr.notes;
  fusion["candidates"] = json::array();
  for (const auto& c : fr.candidates) fusion["candidates"].push_back(fusionCandidateJson(c, a.kernelNames()));
  return fusion;
}

// The document's members in nlohmann's order (by key), each written as it is made: the kernels
// and the memory timeline, which grow with the run, never stand whole in memory.
core::Status exportJson(const analysis::RunAnalysis& a, RowWriter& w) {
  const core::Profile& p = a.profile();
  JsonStream out(w);
  out.beginObject();
  out.value(devicesJson(a), "devices");
  out.value(core::cleanText(p.path), "file");
  out.value(fusionJson(a), "fusion");
  graphLaunchesJson(p, out);
  kernelGroupsJson(a, out);
  out.beginArray("kernels");
  kernelsJson(a, out, w);
  out.end();
  out.value(a.roofline().kernels_with_counters, "kernels_with_counters");
  memoryJson(a, out);
  opsJson(a, out);
  out.value(originsJson(a), "origins");
  out.value(p.schema_version, "schema_version");
  out.end();
  return w.flush();
}

// Chrome trace events, one per line, written as they are made.
class TraceEvents {
 public:
  TraceEvents(RowWriter& w, int64_t t0_ns) : w_(w), t0_ns_(t0_ns) {
    w_.write("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  }

  template <class... Args>
  void emit(fmt::format_string<Args...> f, Args&&... args) {
    if (!first_) w_.write(",\n");
    first_ = false;
    w_.format(f, std::forward<Args>(args)...);
  }
  // Times in microseconds relative to the first event, printed with ns precision.
  std::string at(int64_t ns) const { return fmt::format("{:.3f}", static_cast<double>(ns - t0_ns_) / 1e3); }
  static std::string span(int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1e3); }
  static std::string str(const std::string& s) { return jsonText(json(core::cleanText(s)), -1); }
  void end() { w_.write("\n]}\n"); }

 private:
  RowWriter& w_;
  int64_t t0_ns_;
  bool first_ = true;
};

constexpr int64_t kHostTid = 1000000;  // NVTX tracks sit above the stream ids
using Tracks = std::set<std::pair<uint32_t, int64_t>>;

void kernelEvent(TraceEvents& e, const core::Profile& p, const core::KernelRow& k) {
  e.emit("{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
         "\"args\":{{\"grid\":\"{}x{}x{}\",\"block\":\"{}x{}x{}\",\"registers_per_thread\":{},"
         "\"device\":{},\"correlation_id\":{}}}}}",
         TraceEvents::str(p.str(k.demangled_id)), k.process_id, k.stream_id, e.at(k.ownStartNs()),
         TraceEvents::span(k.durationNs()), k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z,
         k.registers_per_thread, k.device_id, k.correlation_id);
}

void copyEvent(TraceEvents& e, const core::MemcpyRecord& m) {
  e.emit("{{\"ph\":\"X\",\"cat\":\"memcpy\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},"
         "\"dur\":{},\"args\":{{\"bytes\":{}}}}}",
         TraceEvents::str("memcpy " + m.copy_kind), m.process_id, m.stream_id, e.at(m.start_ns),
         TraceEvents::span(m.end_ns - m.start_ns), m.bytes);
}

void memsetEvent(TraceEvents& e, const core::MemsetRecord& m) {
  e.emit("{{\"ph\":\"X\",\"cat\":\"memset\",\"name\":\"memset\",\"pid\":{},\"tid\":{},\"ts\":{},"
         "\"dur\":{},\"args\":{{\"bytes\":{}}}}}",
         m.process_id, m.stream_id, e.at(m.start_ns), TraceEvents::span(m.end_ns - m.start_ns), m.bytes);
}

void rangeEvent(TraceEvents& e, const core::NvtxRangeRecord& r) {
  e.emit("{{\"ph\":\"X\",\"cat\":\"nvtx\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
         "\"args\":{{\"domain\":{},\"payload\":{}}}}}",
         TraceEvents::str(r.message), r.process_id, kHostTid + r.thread_id, e.at(r.start_ns),
         TraceEvents::span(*r.end_ns - r.start_ns), TraceEvents::str(r.domain),
         r.payload ? std::to_string(*r.payload) : "null");
}

void trackNames(TraceEvents& e, const Tracks& tracks) {
  for (const auto& [pid, tid] : tracks) {
    const std::string name =
        tid >= kHostTid ? fmt::format("NVTX (thread {})", tid - kHostTid) : fmt::format("stream {}", tid);
    e.emit("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}", pid, tid,
           TraceEvents::str(name));
  }
}

// Every row of a streamed table to `write`, while the output takes them; `write` says the track
// its event is drawn on, or none for a row it leaves out.
template <class Row, class Write>
core::Status traceRows(core::ProfileStream& in, RowWriter& w, Tracks& tracks, Write&& write) {
  auto rows = in.rows<Row>();
  if (!rows) return core::makeError(rows.error());
  Row row;
  while (w.ok()) {
    auto more = (*rows)->next(row);
    if (!more) return core::makeError(more.error());
    if (!*more) break;
    if (std::optional<std::pair<uint32_t, int64_t>> track = write(row)) tracks.insert(*track);
  }
  return {};
}

core::Status traceKernels(core::ProfileStream& in, TraceEvents& e, RowWriter& w, Tracks& tracks) {
  auto rows = in.kernelsByStart();
  if (!rows) return core::makeError(rows.error());
  core::KernelRow k;
  while (w.ok()) {
    auto more = (*rows)->next(k);
    if (!more) return core::makeError(more.error());
    if (!*more) break;
    tracks.emplace(k.process_id, k.stream_id);
    kernelEvent(e, in.small(), k);
  }
  return {};
}

// Processes, kernels, copies, memsets, NVTX ranges, then the names of the tracks they used; each
// event written as its row is read.
core::Status exportChromeTrace(core::ProfileStream& in, RowWriter& w) {
  auto first = in.firstEventNs();
  if (!first) return core::makeError(first.error());
  TraceEvents e(w, first->value_or(0));
  Tracks tracks;
  for (const auto& pr : in.small().processes) {
    e.emit("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":{}}}}}", pr.id,
           TraceEvents::str(fmt::format("process {} (pid {})", pr.id, pr.pid)));
  }
  using Track = std::optional<std::pair<uint32_t, int64_t>>;
  core::Status s = traceKernels(in, e, w, tracks);
  if (s) s = traceRows<core::MemcpyRecord>(in, w, tracks, [&](const core::MemcpyRecord& m) -> Track {
    copyEvent(e, m);
    return std::pair{m.process_id, int64_t{m.stream_id}};
  });
  if (s) s = traceRows<core::MemsetRecord>(in, w, tracks, [&](const core::MemsetRecord& m) -> Track {
    memsetEvent(e, m);
    return std::pair{m.process_id, int64_t{m.stream_id}};
  });
  if (s) s = traceRows<core::NvtxRangeRecord>(in, w, tracks, [&](const core::NvtxRangeRecord& r) -> Track {
    if (!r.end_ns) return std::nullopt;  // still open at exit: no duration to draw
    rangeEvent(e, r);
    return std::pair{r.process_id, kHostTid + r.thread_id};
  });
  if (!s) return s;
  trackNames(e, tracks);
  e.end();
  return w.flush();
}

// The tables a streamed export does not write, read to their end all the same: their damage is
// then said as every command says it (ProfileStream::warnings).
template <class Row>
core::Status readToEnd(core::ProfileStream& in) {
  auto rows = in.rows<Row>();
  if (!rows) return core::makeError(rows.error());
  Row row;
  for (;;) {
    auto more = (*rows)->next(row);
    if (!more) return core::makeError(more.error());
    if (!*more) return {};
  }
}

// CSV and the Chrome trace: rows from the database straight to the output.
core::Status exportStreamed(const ExportOptions& o, core::ProfileStream& in, RowWriter& w) {
  core::Status written = o.format == "csv" ? exportCsv(in, w) : exportChromeTrace(in, w);
  if (written) written = readToEnd<core::KernelCounters>(in);
  if (written) written = readToEnd<core::KernelMetricRecord>(in);
  return written;
}

// JSON: the kernels and the analysis of the loaded run (fusion and the data flow need the whole run).
// The run is read through the analysis alone: its launch tables are read once its NVTX ranges
// have been indexed and let go.
core::Status exportAnalysed(const ExportOptions& o, RowWriter& w) {
  auto loaded = loadProfile(o.file, nullptr, {.launch_tables = false, .nvtx_messages = false});
  if (!loaded) return core::makeError(loaded.error());
  const size_t printed = loaded->warnings.size();
  auto analysed = analysis::RunAnalysis::owningThenLoadingLaunchTables(std::move(*loaded));
  if (!analysed) return core::makeError(analysed.error());
  printWarningsAfter(analysed->profile().warnings, printed);
  return exportJson(*analysed, w);
}

int runExport(const ExportOptions& o) {
  // The output is opened first: a name that cannot be written costs no reading.
  auto out = core::TextOutput::open(o.output, outputRules(o.force, {o.file}, "the export"));
  if (!out) return inputError(out.error());
  RowWriter w(*out);
  std::vector<std::string> warnings;
  core::Status written;
  if (o.format == "json") {
    written = exportAnalysed(o, w);
  } else {
    auto in = core::ProfileStream::open(o.file);
    if (!in) return inputError(in.error());
    written = exportStreamed(o, **in, w);
    if (written) warnings = (*in)->warnings();
  }
  if (written) written = out->finish();
  if (!written) return inputError(written.error());
  // A streamed file's damage is known once it has been read; loadProfile said the JSON's.
  printWarnings(warnings);
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
