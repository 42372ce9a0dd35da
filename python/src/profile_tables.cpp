// The tables of one profile (see profile_tables.h). Columns that mirror the .fprof schema take its
// doc strings (schemaDoc); derived columns say here what they are and where they come from.
#include "profile_tables.h"

#include <fmt/format.h>

#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "fprof/analysis/origin.h"
#include "fprof/core/schema.h"

namespace fprof::python {
namespace {

using core::KernelRow;

std::string joined(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& s : parts) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

// Global rank of each process id, where it has one.
std::unordered_map<uint32_t, std::optional<int>> ranksByProcess(const core::Profile& p) {
  std::unordered_map<uint32_t, std::optional<int>> out;
  for (const core::ProcessInfo& pr : p.processes) out[pr.id] = pr.rank;
  return out;
}

// Origin of each demangled name id, classified once per name.
std::vector<std::string_view> originByName(const core::Profile& p) {
  std::vector<std::string_view> out(p.strings.size());
  std::vector<bool> done(p.strings.size(), false);
  for (const KernelRow& k : p.kernels) {
    if (k.demangled_id >= out.size() || done[k.demangled_id]) continue;
    done[k.demangled_id] = true;
    out[k.demangled_id] = analysis::originName(analysis::classifyOrigin(p.str(k.demangled_id)));
  }
  return out;
}

Table kernelsTable(const core::Profile& p) {
  const auto rank_of = ranksByProcess(p);
  const std::vector<std::string_view> origin = originByName(p);
  auto k = [](const char* column) { return schemaDoc("kernel", column); };
  auto str = [&p](uint32_t id) -> std::string_view { return id < p.strings.size() ? p.strings[id] : std::string_view(); };
  TableBuilder<KernelRow> t("kernels", schemaTableDoc("kernel") + " In start order.", p.kernels);
  t.integer("id", k("id"), [](const KernelRow& r) { return r.id; })
      .integer("process_id", k("process_id"), [](const KernelRow& r) { return r.process_id; })
      .optionalInteger("rank",
                       "Global rank of the kernel's process (processes.rank: RANK, OMPI_COMM_WORLD_RANK, "
                       "SLURM_PROCID, ...); absent if none.",
                       [&](const KernelRow& r) -> std::optional<int64_t> {
                         auto it = rank_of.find(r.process_id);
                         if (it == rank_of.end() || !it->second) return std::nullopt;
                         return *it->second;
                       })
      .integer("device_id", k("device_id"), [](const KernelRow& r) { return r.device_id; })
      .integer("context_id", k("context_id"), [](const KernelRow& r) { return r.context_id; })
      .integer("stream_id", k("stream_id"), [](const KernelRow& r) { return r.stream_id; })
      .integer("correlation_id", k("correlation_id"), [](const KernelRow& r) { return r.correlation_id; })
      .integer("thread_id", k("thread_id"), [](const KernelRow& r) { return r.thread_id; })
      .integer("start_ns", k("start_ns"), [](const KernelRow& r) { return r.start_ns; })
      .integer("end_ns", k("end_ns"), [](const KernelRow& r) { return r.end_ns; })
      .integer("duration_ns", k("duration_ns"), [](const KernelRow& r) { return r.end_ns - r.start_ns; })
      .integer("dependency_wait_ns",
               "Part of [start_ns, end_ns] a programmatic dependent launch spent waiting for the stream's previous "
               "kernel to end (derived when the profile is read; 0 for other launches).",
               [](const KernelRow& r) { return r.dependency_wait_ns; })
      .integer("own_duration_ns",
               "duration_ns less dependency_wait_ns: the time the kernel adds to its stream, which every fprof "
               "figure (kernel time, groups, ranks) counts.",
               [](const KernelRow& r) { return r.durationNs(); })
      .text("name", k("name_id"), [&](const KernelRow& r) { return str(r.name_id); })
      .text("demangled_name", k("demangled_id"), [&](const KernelRow& r) { return str(r.demangled_id); })
      .text("origin",
            "Library the kernel came from, from its name: cuBLAS, cuDNN, CUTLASS, Triton, ATen, FlashAttention, "
            "NCCL or user (docs/analysis.md, Origins).",
            [&](const KernelRow& r) { return r.demangled_id < origin.size() ? origin[r.demangled_id] : "user"; })
      .integer("grid_x", k("grid_x"), [](const KernelRow& r) { return r.grid_x; })
      .integer("grid_y", k("grid_y"), [](const KernelRow& r) { return r.grid_y; })
      .integer("grid_z", k("grid_z"), [](const KernelRow& r) { return r.grid_z; })
      .integer("block_x", k("block_x"), [](const KernelRow& r) { return r.block_x; })
      .integer("block_y", k("block_y"), [](const KernelRow& r) { return r.block_y; })
      .integer("block_z", k("block_z"), [](const KernelRow& r) { return r.block_z; })
      .integer("cluster_x", k("cluster_x"), [](const KernelRow& r) { return r.cluster_x; })
      .integer("cluster_y", k("cluster_y"), [](const KernelRow& r) { return r.cluster_y; })
      .integer("cluster_z", k("cluster_z"), [](const KernelRow& r) { return r.cluster_z; })
      .integer("registers_per_thread", k("registers_per_thread"), [](const KernelRow& r) { return r.registers_per_thread; })
      .integer("static_shared_bytes", k("static_shared_bytes"), [](const KernelRow& r) { return r.static_shared_bytes; })
      .integer("dynamic_shared_bytes", k("dynamic_shared_bytes"), [](const KernelRow& r) { return r.dynamic_shared_bytes; })
      .integer("local_bytes_per_thread", k("local_bytes_per_thread"), [](const KernelRow& r) { return r.local_bytes_per_thread; })
      .integer("local_bytes_total", k("local_bytes_total"), [](const KernelRow& r) { return r.local_bytes_total; })
      .integer("shared_carveout_bytes", k("shared_carveout_bytes"), [](const KernelRow& r) { return r.shared_carveout_bytes; })
      .optionalReal("theoretical_occupancy", k("theoretical_occupancy"),
                    [](const KernelRow& r) { return r.theoretical_occupancy; })
      .optionalInteger("theoretical_blocks_per_sm", k("theoretical_blocks_per_sm"),
                       [](const KernelRow& r) -> std::optional<int64_t> {
                         if (!r.theoretical_blocks_per_sm) return std::nullopt;
                         return *r.theoretical_blocks_per_sm;
                       })
      .text("occupancy_limiter", k("occupancy_limiter"), [&](const KernelRow& r) { return str(r.occupancy_limiter_id); })
      .integer("graph_id", k("graph_id"), [](const KernelRow& r) { return r.graph_id; })
      .integer("graph_node_id", k("graph_node_id"), [](const KernelRow& r) { return static_cast<int64_t>(r.graph_node_id); })
      .text("launch_api", k("launch_api"), [&](const KernelRow& r) { return str(r.launch_api_id); })
      .optionalInteger("nvtx_range_id", k("nvtx_range_id"), [](const KernelRow& r) -> std::optional<int64_t> {
        if (!r.nvtx_range_key) return std::nullopt;
        return static_cast<int64_t>(*r.nvtx_range_key);
      })
      .optionalText("nvtx_path", k("nvtx_path_id"), [&](const KernelRow& r) -> std::optional<std::string_view> {
        if (!r.nvtx_path_id) return std::nullopt;
        return str(*r.nvtx_path_id);
      })
      .boolean("programmatic_launch", k("programmatic_launch"), [](const KernelRow& r) { return r.programmatic_launch; });
  return t.build();
}

Table countersTable(const core::Profile& p) {
  using C = core::KernelCounters;
  auto c = [](const char* column) { return schemaDoc("kernel_counter", column); };
  TableBuilder<C> t("counters", schemaTableDoc("kernel_counter"), p.counters);
  t.integer("kernel_id", c("kernel_id"), [](const C& r) { return r.kernel_id; });
  const std::pair<const char*, std::optional<double> C::*> values[] = {
      {"dram_read_bytes", &C::dram_read_bytes},     {"dram_write_bytes", &C::dram_write_bytes},
      {"l2_bytes", &C::l2_bytes},                   {"l1_bytes", &C::l1_bytes},
      {"flops_fp64", &C::flops_fp64},               {"flops_fp32", &C::flops_fp32},
      {"flops_fp16", &C::flops_fp16},               {"flops_bf16", &C::flops_bf16},
      {"flops_tensor_fp16", &C::flops_tensor_fp16}, {"flops_tensor_bf16", &C::flops_tensor_bf16},
      {"flops_tensor_tf32", &C::flops_tensor_tf32}, {"flops_tensor_fp8", &C::flops_tensor_fp8},
      {"flops_tensor_fp64", &C::flops_tensor_fp64}, {"ops_tensor_int8", &C::ops_tensor_int8},
      {"achieved_occupancy", &C::achieved_occupancy}, {"local_load_bytes", &C::local_load_bytes},
      {"local_store_bytes", &C::local_store_bytes}, {"instructions", &C::instructions},
      {"gpu_time_ns", &C::gpu_time_ns}};
  for (const auto& [name, field] : values) {
    t.optionalReal(name, c(name), [field = field](const C& r) { return r.*field; });
  }
  t.text("source", c("source"), [](const C& r) { return std::string_view(r.source); })
      .optionalInteger("source_kernel_id", c("source_kernel_id"), [](const C& r) { return r.source_kernel_id; })
      .optionalBoolean("signature_varies", c("signature_varies"), [](const C& r) { return r.signature_varies; })
      .optionalText("half_flops_method", c("half_flops_method"), [](const C& r) -> std::optional<std::string_view> {
        if (r.half_flops_method.empty()) return std::nullopt;
        return r.half_flops_method;
      })
      .optionalText("tensor_flops_method", c("tensor_flops_method"), [](const C& r) -> std::optional<std::string_view> {
        if (r.tensor_flops_method.empty()) return std::nullopt;
        return r.tensor_flops_method;
      });
  return t.build();
}

Table countersMissingTable(const core::Profile& p) {
  using M = core::KernelCounterMissing;
  TableBuilder<M> t("counters_missing", schemaTableDoc("kernel_counter_missing"), p.counters_missing);
  t.integer("kernel_id", schemaDoc("kernel_counter_missing", "kernel_id"), [](const M& r) { return r.kernel_id; })
      .text("reason", schemaDoc("kernel_counter_missing", "reason"), [](const M& r) { return std::string_view(r.reason); });
  return t.build();
}

Table processesTable(const core::Profile& p) {
  using P = core::ProcessInfo;
  auto c = [](const char* column) { return schemaDoc("process", column); };
  TableBuilder<P> t("processes", schemaTableDoc("process"), p.processes);
  t.integer("id", c("id"), [](const P& r) { return r.id; })
      .integer("pid", c("pid"), [](const P& r) { return r.pid; })
      .text("host", c("host"), [](const P& r) { return std::string_view(r.host); })
      .optionalInteger("rank", c("rank"), [](const P& r) -> std::optional<int64_t> {
        if (!r.rank) return std::nullopt;
        return *r.rank;
      })
      .optionalInteger("local_rank", c("local_rank"), [](const P& r) -> std::optional<int64_t> {
        if (!r.local_rank) return std::nullopt;
        return *r.local_rank;
      })
      .text("command_line", c("command_line"), [](const P& r) { return std::string_view(r.command_line); })
      .integer("start_unix_ns", c("start_unix_ns"), [](const P& r) { return r.start_unix_ns; });
  return t.build();
}

Table devicesTable(const core::Profile& p) {
  using D = core::DeviceInfo;
  auto c = [](const char* column) { return schemaDoc("device", column); };
  TableBuilder<D> t("devices", schemaTableDoc("device"), p.devices);
  t.integer("process_id", c("process_id"), [](const D& r) { return r.process_id; })
      .integer("id", c("id"), [](const D& r) { return r.id; })
      .text("name", c("name"), [](const D& r) { return std::string_view(r.name); })
      .text("uuid", c("uuid"), [](const D& r) { return std::string_view(r.uuid); })
      .integer("compute_major", c("compute_major"), [](const D& r) { return r.compute_major; })
      .integer("compute_minor", c("compute_minor"), [](const D& r) { return r.compute_minor; })
      .integer("sm_count", c("sm_count"), [](const D& r) { return r.sm_count; })
      .integer("max_threads_per_sm", c("max_threads_per_sm"), [](const D& r) { return r.max_threads_per_sm; })
      .integer("max_warps_per_sm", c("max_warps_per_sm"), [](const D& r) { return r.max_warps_per_sm; })
      .integer("regs_per_sm", c("regs_per_sm"), [](const D& r) { return r.regs_per_sm; })
      .integer("shared_per_sm_bytes", c("shared_per_sm_bytes"), [](const D& r) { return r.shared_per_sm_bytes; })
      .integer("l2_bytes", c("l2_bytes"), [](const D& r) { return r.l2_bytes; })
      .integer("global_memory_bytes", c("global_memory_bytes"), [](const D& r) { return r.global_memory_bytes; })
      .integer("memory_bus_width_bits", c("memory_bus_width_bits"), [](const D& r) { return r.memory_bus_width_bits; })
      .integer("memory_clock_khz", c("memory_clock_khz"), [](const D& r) { return r.memory_clock_khz; })
      .integer("sm_clock_khz", c("sm_clock_khz"), [](const D& r) { return r.sm_clock_khz; });
  return t.build();
}

Table nvtxRangesTable(const core::Profile& p) {
  using N = core::NvtxRangeRow;
  auto c = [](const char* column) { return schemaDoc("nvtx_range", column); };
  TableBuilder<N> t("nvtx_ranges", schemaTableDoc("nvtx_range"), p.nvtx_ranges);
  t.integer("id", c("id"), [](const N& r) { return static_cast<int64_t>(r.key); })
      .integer("process_id", c("process_id"), [](const N& r) { return r.process_id; })
      .optionalInteger("parent_id", c("parent_id"), [](const N& r) -> std::optional<int64_t> {
        if (!r.parent_key) return std::nullopt;
        return static_cast<int64_t>(*r.parent_key);
      })
      .text("domain", c("domain"), [](const N& r) { return std::string_view(r.domain); })
      .text("message", c("message"), [](const N& r) { return std::string_view(r.message); })
      .optionalInteger("payload", c("payload"), [](const N& r) -> std::optional<int64_t> {
        if (!r.payload) return std::nullopt;
        return static_cast<int64_t>(*r.payload);
      })
      .integer("thread_id", c("thread_id"), [](const N& r) { return r.thread_id; })
      .integer("depth", c("depth"), [](const N& r) { return r.depth; })
      .integer("start_ns", c("start_ns"), [](const N& r) { return r.start_ns; })
      .optionalInteger("end_ns", c("end_ns"), [](const N& r) { return r.end_ns; })
      .boolean("push_pop", c("push_pop"), [](const N& r) { return r.push_pop; });
  return t.build();
}

// Kernel groups as the report lists them (reports/report_data.h: GroupRow), with the summary's
// min and max duration beside them (the two list the same groups in the same order).
struct GroupWithSpread {
  const reports::GroupRow* row;
  int64_t min_ns;
  int64_t max_ns;
};

Table kernelGroupsTable(LoadedProfile& loaded) {
  const reports::ReportData& r = loaded.report();
  const analysis::RunSummary& s = loaded.summary();
  std::vector<GroupWithSpread> rows;
  rows.reserve(r.groups.size());
  for (size_t i = 0; i < r.groups.size(); ++i) {
    const analysis::KernelGroup* kg = i < s.groups.size() ? &s.groups[i] : nullptr;
    rows.push_back({&r.groups[i], kg ? kg->min_ns : 0, kg ? kg->max_ns : 0});
  }
  using G = GroupWithSpread;
  TableBuilder<G> t("kernel_groups",
                    "Kernels with the same demangled name and launch shape (grid, block), by total time, with their "
                    "roofline placement where counters exist: the rows of fprof report's kernel table and of fprof "
                    "info's top kernels.",
                    rows);
  t.text("name", "Demangled kernel name.", [](const G& g) { return std::string_view(g.row->name); })
      .text("short_name", "The name a person reads (docs/analysis.md, Kernel names); told apart from the others.",
            [](const G& g) { return std::string_view(g.row->short_name); })
      .text("grid", "Grid in blocks, \"128\" or \"64x8x1\".", [](const G& g) { return std::string_view(g.row->grid); })
      .text("block", "Block in threads.", [](const G& g) { return std::string_view(g.row->block); })
      .text("op", "NVTX or framework op holding most of the group's time; empty if none.",
            [](const G& g) { return std::string_view(g.row->op); })
      .text("origin", "Library the kernel came from, from its name (docs/analysis.md, Origins).",
            [](const G& g) { return std::string_view(g.row->origin); })
      .integer("calls", "Launches.", [](const G& g) { return g.row->calls; })
      .integer("total_ns", "Kernel time summed over the launches (own durations).", [](const G& g) { return g.row->total_ns; })
      .real("mean_ns", "total_ns / calls.", [](const G& g) { return g.row->mean_ns; })
      .integer("min_ns", "Shortest launch.", [](const G& g) { return g.min_ns; })
      .integer("max_ns", "Longest launch.", [](const G& g) { return g.max_ns; })
      .real("share", "Of the profile's kernel time, 0..1.", [](const G& g) { return g.row->share; })
      .integer("registers_per_thread", "Registers per thread, max over the launches.",
               [](const G& g) { return g.row->registers_per_thread; })
      .integer("shared_bytes", "Static + dynamic shared memory per block, max over the launches.",
               [](const G& g) { return g.row->shared_bytes; })
      .integer("local_bytes_per_thread", "Local memory per thread (stack frame, spills), max over the launches.",
               [](const G& g) { return g.row->local_bytes_per_thread; })
      .optionalReal("theoretical_occupancy", "Theoretical occupancy, min over the launches, 0..1.",
                    [](const G& g) { return g.row->theoretical_occupancy; })
      .optionalReal("achieved_occupancy", "Achieved occupancy from the counters, time-weighted, 0..1.",
                    [](const G& g) { return g.row->achieved_occupancy; })
      .text("counters", "How the launches' counters were obtained, or why they have none (metrics runs).",
            [](const G& g) { return std::string_view(g.row->counters); })
      .optionalReal("flops", "FLOPs summed over the launches (all precisions; counters).", [](const G& g) { return g.row->flops; })
      .optionalReal("dram_bytes", "DRAM bytes read and written, summed (counters).", [](const G& g) { return g.row->dram_bytes; })
      .optionalReal("spill_bytes", "Local-memory (spill) traffic, summed (counters).", [](const G& g) { return g.row->spill_bytes; })
      .optionalReal("intensity_dram", "Arithmetic intensity, FLOP per DRAM byte.", [](const G& g) { return g.row->intensity_dram; })
      .optionalReal("intensity_l2", "FLOP per L2 byte.", [](const G& g) { return g.row->intensity_l2; })
      .optionalReal("intensity_l1", "FLOP per L1 byte.", [](const G& g) { return g.row->intensity_l1; })
      .optionalReal("flops_per_s", "Achieved FLOP/s.", [](const G& g) { return g.row->flops_per_s; })
      .optionalReal("dram_bytes_per_s", "Achieved DRAM bytes/s.", [](const G& g) { return g.row->dram_bytes_per_s; })
      .optionalReal("roof_fraction", "Attainable time at this intensity / measured time: % of roof, 0..1.",
                    [](const G& g) { return g.row->roof_fraction; })
      .text("binding_roof", "The roof that binds, e.g. dram or fp32; empty when unknown.",
            [](const G& g) { return std::string_view(g.row->binding_roof); })
      .text("bound", "memory, compute, latency or launch; empty when unknown.",
            [](const G& g) { return std::string_view(g.row->bound); })
      .text("bound_reason", "Why this bound, in words.", [](const G& g) { return std::string_view(g.row->bound_reason); })
      .text("precision", "Precision with the most FLOP/s; empty when none ran.",
            [](const G& g) { return std::string_view(g.row->precision); });
  return t.build();
}

Table opsTable(LoadedProfile& loaded) {
  using O = reports::OpRow;
  TableBuilder<O> t("ops", "Kernel time by op (NVTX op ranges, framework ops), as fprof report's Time by op.",
                    loaded.report().ops);
  t.text("op", "The op; \"(no NVTX range)\" for kernels launched outside any range.",
         [](const O& o) { return std::string_view(o.op); })
      .integer("total_ns", "Kernel time of its launches.", [](const O& o) { return o.total_ns; })
      .integer("launches", "Kernel launches.", [](const O& o) { return o.launches; })
      .real("share", "Of the profile's kernel time, 0..1.", [](const O& o) { return o.share; });
  return t.build();
}

Table fusionTable(LoadedProfile& loaded) {
  using F = reports::FusionRow;
  TableBuilder<F> t("fusion",
                    "Producer->consumer pairs and chains, and what fusing each would pay (predicted by the fusion "
                    "model, measured where the run holds a fused variant): fprof report's fusion table.",
                    loaded.report().fusion);
  std::vector<std::string> stages, labels, intermediates, risks;
  for (const F& f : loaded.report().fusion) {
    stages.push_back(joined(f.stages, " -> "));
    labels.push_back(joined(f.stage_labels, " -> "));
    intermediates.push_back(joined(f.intermediates, ", "));
    risks.push_back(joined(f.risks, "; "));
  }
  const F* first = loaded.report().fusion.data();
  auto at = [first](const F& f) { return static_cast<size_t>(&f - first); };
  t.text("id", "NVTX pair id, or the kernels joined by \" -> \".", [](const F& f) { return std::string_view(f.id); })
      .text("label", "The id with short kernel names.", [](const F& f) { return std::string_view(f.label); })
      .text("op", "NVTX op name; empty for data-flow pairs.", [](const F& f) { return std::string_view(f.op); })
      .text("stages", "Stages, producer first, joined by \" -> \" (full names).",
            [&](const F& f) { return std::string_view(stages[at(f)]); })
      .text("stage_labels", "Stages with short kernel names.", [&](const F& f) { return std::string_view(labels[at(f)]); })
      .text("evidence", "How the pair was found, in words.", [](const F& f) { return std::string_view(f.evidence); })
      .text("intermediates", "Buffers between the stages (names or allocation addresses), \", \"-joined.",
            [&](const F& f) { return std::string_view(intermediates[at(f)]); })
      .integer("instances", "Times the unfused chain ran.", [](const F& f) { return f.instances; })
      .integer("launches_removed", "Launches fusing removes, per instance.", [](const F& f) { return f.launches_removed; })
      .real("unfused_ns", "Measured kernel time of the chain, median per instance.", [](const F& f) { return f.unfused_ns; })
      .optionalReal("intermediate_bytes", "Bytes of the intermediates, per instance.",
                    [](const F& f) { return f.intermediate_bytes; })
      .text("bytes_source", "Where intermediate_bytes comes from: counters, allocation size or n/a.",
            [](const F& f) { return std::string_view(f.bytes_source); })
      .optionalReal("predicted_fused_ns", "Predicted time of the fused kernel, per instance (median).",
                    [](const F& f) { return f.predicted_fused_ns; })
      .text("model", "Prediction model; empty when none.", [](const F& f) { return std::string_view(f.model); })
      .optionalReal("measured_fused_ns", "Measured time of the fused variant, where the run holds one.",
                    [](const F& f) { return f.measured_fused_ns; })
      .optionalReal("predicted_saving_ns", "Predicted saving per instance.", [](const F& f) { return f.predicted_saving_ns; })
      .optionalReal("measured_saving_ns", "Measured saving per instance.", [](const F& f) { return f.measured_saving_ns; })
      .optionalReal("payoff_ns", "Predicted saving summed over the instances.", [](const F& f) { return f.payoff_ns; })
      .optionalReal("payoff_share", "payoff_ns as a share of the profile's kernel time, 0..1.",
                    [](const F& f) { return f.payoff_share; })
      .optionalReal("model_error", "(predicted fused - measured fused) / measured fused.",
                    [](const F& f) { return f.model_error; })
      .boolean("fuse", "Worth fusing.", [](const F& f) { return f.fuse; })
      .text("reason", "Why not to fuse, when fuse is false.", [](const F& f) { return std::string_view(f.reason); })
      .text("risks", "What is worth knowing before fusing, \"; \"-joined.", [&](const F& f) { return std::string_view(risks[at(f)]); });
  return t.build();
}

Table ranksTable(LoadedProfile& loaded) {
  using R = analysis::RankRow;
  TableBuilder<R> t("ranks",
                    "One row per rank of a profile holding several processes (fprof merge): fprof info's and fprof "
                    "report's per-rank table. Empty for a profile of one process.",
                    loaded.report().ranks);
  t.optionalInteger("rank", schemaDoc("process", "rank"), [](const R& r) -> std::optional<int64_t> {
     if (!r.group.rank) return std::nullopt;
     return *r.group.rank;
   })
      .text("label", "\"rank 0\", or \"pid 4242 on nodeA\" for a process without a rank.",
            [](const R& r) { return std::string_view(r.group.label); })
      .text("hosts", "Distinct hosts, \", \"-joined.", [](const R& r) { return std::string_view(r.hosts); })
      .text("pids", "Process ids, \", \"-joined.", [](const R& r) { return std::string_view(r.pids); })
      .text("devices", "Distinct \"[ordinal] name\", \", \"-joined.", [](const R& r) { return std::string_view(r.devices); })
      .text("mode", "The processes' mode (trace, metrics); mixed when they differ.",
            [](const R& r) { return std::string_view(r.mode); })
      .integer("kernel_count", "Kernel launches.", [](const R& r) { return r.kernel_count; })
      .integer("total_kernel_ns", "Kernel time (own durations summed).", [](const R& r) { return r.total_kernel_ns; })
      .optionalReal("share", "Of all ranks' kernel time, 0..1.", [](const R& r) { return r.share; })
      .integer("nccl_ns", "Kernel time in NCCL kernels.", [](const R& r) { return r.nccl_ns; })
      .optionalReal("nccl_share", "nccl_ns / total_kernel_ns.", [](const R& r) { return r.nccl_share; })
      .integer("compute_ns", "Kernel time outside NCCL: the rank's own work, which names the straggler.",
               [](const R& r) { return r.computeNs(); })
      .text("top_kernel", "Demangled name of the kernel with the most time.",
            [](const R& r) { return std::string_view(r.top_kernel); })
      .integer("top_kernel_ns", "Its time.", [](const R& r) { return r.top_kernel_ns; });
  return t.build();
}

Table roofsTable(LoadedProfile& loaded) {
  using R = reports::Roof;
  TableBuilder<R> t("roofs",
                    "The roofs kernels are placed against (the profile's first device): measured ceilings where the "
                    "profile holds them (fprof ceilings), datasheet values computed from the device otherwise.",
                    loaded.report().roofs);
  t.text("name", schemaDoc("ceiling", "ceiling"), [](const R& r) { return std::string_view(r.name); })
      .text("unit", schemaDoc("ceiling", "unit"), [](const R& r) { return std::string_view(r.is_bandwidth ? "bytes_per_s" : "flops_per_s"); })
      .real("value", schemaDoc("ceiling", "value"), [](const R& r) { return r.value; })
      .text("source", schemaDoc("ceiling", "source"), [](const R& r) { return std::string_view(r.source); })
      .text("method", schemaDoc("ceiling", "method"), [](const R& r) { return std::string_view(r.method); });
  return t.build();
}

using TableFn = std::function<Table(LoadedProfile&)>;

const std::vector<std::pair<std::string, TableFn>>& tableMakers() {
  static const std::vector<std::pair<std::string, TableFn>> makers = {
      {"kernels", [](LoadedProfile& l) { return kernelsTable(l.profile()); }},
      {"kernel_groups", kernelGroupsTable},
      {"ops", opsTable},
      {"fusion", fusionTable},
      {"counters", [](LoadedProfile& l) { return countersTable(l.profile()); }},
      {"counters_missing", [](LoadedProfile& l) { return countersMissingTable(l.profile()); }},
      {"ranks", ranksTable},
      {"roofs", roofsTable},
      {"processes", [](LoadedProfile& l) { return processesTable(l.profile()); }},
      {"devices", [](LoadedProfile& l) { return devicesTable(l.profile()); }},
      {"nvtx_ranges", [](LoadedProfile& l) { return nvtxRangesTable(l.profile()); }},
  };
  return makers;
}

}  // namespace

const reports::ReportData& LoadedProfile::report() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!report_) {
    reports::BuildOptions options;
    options.max_groups = std::numeric_limits<size_t>::max();
    report_ = reports::buildReport(analysis_, options);
  }
  return *report_;
}

const reports::ReportData& LoadedProfile::pageReport() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (page_report_) return *page_report_;
  }
  const reports::BuildOptions defaults;
  if (report().group_count <= static_cast<int64_t>(defaults.max_groups)) return report();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!page_report_) page_report_ = reports::buildReport(analysis_, defaults);
  return *page_report_;
}

const analysis::RunSummary& LoadedProfile::summary() { return analysis_.summary(); }

const std::vector<std::string>& profileTableNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, fn] : tableMakers()) out.push_back(name);
    return out;
  }();
  return names;
}

Table profileTable(LoadedProfile& loaded, const std::string& name) {
  for (const auto& [n, fn] : tableMakers()) {
    if (n == name) return fn(loaded);
  }
  throw std::out_of_range(fmt::format("no table '{}'; the tables are {}", name, joined(profileTableNames(), ", ")));
}

std::string schemaDoc(std::string_view table, std::string_view column) {
  for (const core::TableDef& t : core::schemaTables()) {
    if (t.name != table) continue;
    for (const core::ColumnDef& c : t.columns) {
      if (c.name == column) return c.doc;
    }
  }
  throw std::logic_error(fmt::format("the schema has no column {}.{}", table, column));
}

std::string schemaTableDoc(std::string_view table) {
  for (const core::TableDef& t : core::schemaTables()) {
    if (t.name == table) return t.doc;
  }
  throw std::logic_error(fmt::format("the schema has no table {}", table));
}

size_t Column::size() const {
  switch (kind) {
    case ColumnKind::kFloat64: return floats.size();
    case ColumnKind::kString: return codes.size();
    default: return ints.size();
  }
}

}  // namespace fprof::python
