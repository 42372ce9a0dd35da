// Fusion payoff per op pair or chain (see fusion.h; the model is documented in docs/analysis.md).
#include "fprof/analysis/fusion.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "fprof/analysis/roofline.h"
#include "fprof/analysis/stats.h"
#include "fprof/core/occupancy.h"

namespace fprof::analysis {

std::string_view pairSourceName(PairSource s) { return s == PairSource::kNvtx ? "nvtx" : "dataflow"; }
std::string_view bytesSourceName(BytesSource s) {
  switch (s) {
    case BytesSource::kCounters: return "counters";
    case BytesSource::kAllocation: return "allocation size";
    case BytesSource::kNone: return "n/a";
  }
  return "n/a";
}
std::string_view predictionModelName(PredictionModel m) { return m == PredictionModel::kRoofline ? "roofline" : "trace"; }

namespace {

// One stage-to-stage edge of an instance: the intermediate it passes.
struct StageEdge {
  size_t from = 0, to = 0;  // stage indices
  std::string name;
  std::optional<double> allocation_bytes;
  // False when the value must still be written by the fused kernel: other kernels read it too, or
  // the op itself lists it among its outputs (residual_layernorm's h).
  bool write_removed = true;
};

struct Instance {
  std::vector<std::vector<size_t>> stages;  // kernel indices per stage
  std::vector<StageEdge> edges;
};

struct InstanceResult {
  double unfused_ns = 0;
  std::vector<double> stage_ns;
  std::optional<double> intermediate_bytes;
  BytesSource bytes_source = BytesSource::kNone;
  std::optional<double> fused_ns;
  std::optional<PredictionModel> model;
  std::optional<double> fused_occupancy;
  std::string no_fuse;
  std::vector<std::string> risks;
};

double kernelNs(const core::Profile& p, const std::vector<size_t>& ks) {
  double t = 0;
  for (size_t k : ks) t += static_cast<double>(p.kernels[k].durationNs());
  return t;
}

// DRAM bytes read / written by a stage, if every kernel has the counter.
std::optional<double> stageDram(const core::Profile& p, const std::vector<size_t>& ks, bool write) {
  double sum = 0;
  for (size_t k : ks) {
    const core::KernelCounters* c = countersFor(p, p.kernels[k].id);
    const std::optional<double>& v = c ? (write ? c->dram_write_bytes : c->dram_read_bytes) : std::nullopt;
    if (!v) return std::nullopt;
    sum += *v;
  }
  return sum;
}

std::optional<Work> stageWork(const core::Profile& p, const std::vector<size_t>& ks) {
  std::optional<Work> w;
  for (size_t k : ks) {
    const core::KernelCounters* c = countersFor(p, p.kernels[k].id);
    if (!c) return std::nullopt;
    if (!w) {
      w = Work::fromCounters(*c);
    } else {
      *w += Work::fromCounters(*c);
    }
  }
  return w;
}

// Bytes a stage moves by its pointer arguments' allocations (size x (read + written)); none when
// a kernel's arguments are unknown or resolve to nothing (cuBLAS passes its pointers in a struct).
std::optional<double> stageAllocationBytes(const DataFlow& df, const std::vector<size_t>& ks) {
  if (df.access_begin.empty()) return std::nullopt;
  double bytes = 0;
  for (size_t k : ks) {
    if (!df.args_known[k] || df.access_begin[k] == df.access_begin[k + 1]) return std::nullopt;
    for (uint32_t x = df.access_begin[k]; x < df.access_begin[k + 1]; ++x) {
      const KernelAccess& a = df.accesses[x];
      bytes += static_cast<double>(df.allocations[a.allocation].bytes) * ((a.read ? 1 : 0) + (a.write ? 1 : 0));
    }
  }
  return bytes;
}

// What every instance's evaluation needs: the run, its data flow, roofs, options, and the fixed
// cost of one kernel per (process, device) (docs/analysis.md, "Predicted fused time").
struct ModelContext {
  const core::Profile& p;
  const DataFlow& df;
  CeilingCache& cache;
  const FusionOptions& opt;
  std::map<uint64_t, double> fixed_ns;  // by process << 32 | device
  double fixedNs(uint32_t process, uint32_t device) const {
    auto it = fixed_ns.find(uint64_t{process} << 32 | device);
    return it == fixed_ns.end() ? 0.0 : it->second;
  }
};

InstanceResult evaluate(const Instance& in, ModelContext& ctx) {
  const core::Profile& p = ctx.p;
  InstanceResult r;
  std::vector<double>& stage_ns = r.stage_ns;
  for (const auto& s : in.stages) {
    stage_ns.push_back(kernelNs(p, s));
    r.unfused_ns += stage_ns.back();
  }
  const core::KernelRow& first = p.kernels[in.stages.front().front()];
  const Ceilings& ceil = ctx.cache.get(first.process_id, first.device_id);
  const core::DeviceInfo* dev = ctx.cache.device(first.process_id, first.device_id);

  // Intermediate bytes per edge: counters where every kernel has them (bounded by the allocation
  // where known: a counter also sees other buffers), else the allocation size.
  std::vector<std::optional<double>> edge_bytes;
  bool all_counters = true, any_counters = false;
  for (const StageEdge& e : in.edges) {
    const auto w = stageDram(p, in.stages[e.from], true);
    const auto rd = stageDram(p, in.stages[e.to], false);
    std::optional<double> b;
    if (w && rd) {
      any_counters = true;
      b = std::min(*w, *rd);
      if (e.allocation_bytes) b = std::min(*b, *e.allocation_bytes);
    } else {
      all_counters = false;
      b = e.allocation_bytes;
    }
    edge_bytes.push_back(b);
  }
  bool bytes_complete = !in.edges.empty();
  double total = 0;
  for (const auto& b : edge_bytes) {
    if (!b) bytes_complete = false;
    total += b.value_or(0);
  }
  if (bytes_complete) {
    r.intermediate_bytes = total;
    r.bytes_source = all_counters ? BytesSource::kCounters : any_counters ? BytesSource::kCounters : BytesSource::kAllocation;
    if (any_counters && !all_counters) r.risks.push_back("intermediate bytes mix counters and allocation sizes");
  }

  // Predicted fused time (docs/analysis.md, "Predicted fused time"). Every kernel pays a fixed
  // cost; the fused kernel pays it once, and each stage's remaining work loses the traffic of the
  // intermediates it no longer writes or reads.
  const double fixed_ns = ctx.fixedNs(first.process_id, first.device_id);
  std::vector<double> work_ns;
  double work_sum_ns = 0;
  for (size_t s = 0; s < in.stages.size(); ++s) {
    work_ns.push_back(std::max(0.0, stage_ns[s] - static_cast<double>(in.stages[s].size()) * fixed_ns));
    work_sum_ns += work_ns.back();
  }
  // Intermediate bytes each stage stops moving: the consumer's read, the producer's write unless
  // the value must still be written. `direct` is the allocation size where known (what crosses L2
  // and L1), else the edge's bytes; `dram_read` the consumer's DRAM figure (the edge's bytes).
  const size_t n = in.stages.size();
  std::vector<double> removed_dram(n, 0.0), removed_dram_read(n, 0.0), removed_direct(n, 0.0),
      removed_read(n, 0.0), removed_write(n, 0.0);
  if (bytes_complete) {
    for (size_t e = 0; e < in.edges.size(); ++e) {
      const StageEdge& ed = in.edges[e];
      const double direct = ed.allocation_bytes.value_or(*edge_bytes[e]);
      if (ed.write_removed) {
        removed_dram[ed.from] += *edge_bytes[e];
        removed_direct[ed.from] += direct;
        removed_write[ed.from] += direct;
      }
      removed_dram[ed.to] += *edge_bytes[e];
      removed_dram_read[ed.to] += *edge_bytes[e];
      removed_direct[ed.to] += direct;
      removed_read[ed.to] += direct;
    }
    std::vector<std::optional<Work>> works;
    bool have_work = true;
    for (const auto& s : in.stages) {
      works.push_back(stageWork(p, s));
      if (!works.back()) have_work = false;
    }
    if (have_work) {
      // Roofline model. At L2 and L1 a stage stops writing the intermediates it produced (once
      // each: their size) and stops reading the ones it consumed, which a kernel may read several
      // times there (a multi-pass softmax, a GEMM re-reading its operand tile by tile): their share
      // of the stage's DRAM reads, applied to its reads at that level (its bytes there less its
      // DRAM writes, which cross every level once), and at least their size.
      Work combined;
      double parts_roof_ns = 0;
      bool roofs = true;
      for (size_t s = 0; s < works.size(); ++s) {
        Work w = *works[s];
        const auto t = rooflineTimeNs(w, ceil);
        if (!t) roofs = false;
        parts_roof_ns += t.value_or(0);
        auto& dram_bytes = w.bytes[static_cast<size_t>(MemLevel::kDram)];
        if (dram_bytes) dram_bytes = std::max(0.0, *dram_bytes - removed_dram[s]);
        const double dram_read = stageDram(p, in.stages[s], false).value_or(0);
        const double dram_write = stageDram(p, in.stages[s], true).value_or(0);
        const double read_share = dram_read > 0 ? std::min(1.0, removed_dram_read[s] / dram_read) : 1.0;
        for (const MemLevel l : {MemLevel::kL2, MemLevel::kL1}) {
          auto& b = w.bytes[static_cast<size_t>(l)];
          if (!b) continue;
          const double reads = std::max(0.0, *b - dram_write);
          b = *b - std::min(*b, removed_write[s] + std::max(read_share * reads, removed_read[s]));
        }
        if (s == 0) {
          combined = w;
        } else {
          combined += w;
        }
      }
      const auto fused_roof_ns = rooflineTimeNs(combined, ceil);
      if (roofs && fused_roof_ns && parts_roof_ns > 0) {
        // The fused kernel reaches its roof as well as the parts reached theirs, and not better
        // than the roof itself.
        r.fused_ns = fixed_ns + std::max(*fused_roof_ns, *fused_roof_ns * work_sum_ns / parts_roof_ns);
        r.model = PredictionModel::kRoofline;
      }
    }
    const auto& dram = ceil.bw(MemLevel::kDram);
    if (!r.model && dram) {
      // Trace model. A memory-bound stage (its allocations' bytes moved at >= the roofline's line
      // of its DRAM roof) keeps its achieved bandwidth: its time shrinks with its bytes. Any other
      // stage loses at most the intermediates' transfer time at the level they live in: L2 for an
      // intermediate that fits in the stated share of it, else DRAM.
      const auto& l2 = ceil.bw(MemLevel::kL2);
      const double l2_resident_bytes = dev ? ctx.opt.l2_resident_fraction * static_cast<double>(dev->l2_bytes) : 0.0;
      std::vector<double> transfer_ns(in.stages.size(), 0.0);
      for (size_t e = 0; e < in.edges.size(); ++e) {
        const StageEdge& ed = in.edges[e];
        const double bytes = *edge_bytes[e];
        const double bw = l2 && bytes <= l2_resident_bytes ? l2->value : dram->value;
        if (ed.write_removed) transfer_ns[ed.from] += bytes / bw * 1e9;
        transfer_ns[ed.to] += bytes / bw * 1e9;
      }
      double fused = fixed_ns;
      for (size_t s = 0; s < in.stages.size(); ++s) {
        const auto moved = stageAllocationBytes(ctx.df, in.stages[s]);
        const bool memory_bound =
            moved && work_ns[s] > 0 && *moved / (work_ns[s] * 1e-9) >= ctx.opt.roof_fraction_binds * dram->value;
        if (memory_bound) {
          fused += work_ns[s] * std::max(0.0, 1.0 - removed_direct[s] / *moved);
        } else {
          fused += std::max(0.0, work_ns[s] - transfer_ns[s]);
        }
      }
      r.fused_ns = fused;
      r.model = PredictionModel::kTrace;
    }
  }

  // Register / shared-memory / occupancy risk of the fused kernel: the registers and block of
  // its hungriest part, and the shared memory of the largest part. The stages of a fused kernel
  // run one after another inside a block, so their staging buffers are reused (the reference's
  // fused attention uses 36 KB where its cuBLAS parts were given 208 and 160 KB), and its block
  // shape is chosen for the hungriest part (the widest block of another part would not be kept).
  core::OccupancyInput occ;
  std::optional<double> min_part_occ;
  int64_t smem_max = 0;
  for (const auto& s : in.stages) {
    for (size_t k : s) {
      const core::KernelRow& kr = p.kernels[k];
      const int threads = static_cast<int>(kr.threadsPerBlock());
      if (kr.registers_per_thread > occ.registers_per_thread ||
          (kr.registers_per_thread == occ.registers_per_thread && threads > occ.threads_per_block)) {
        occ.registers_per_thread = kr.registers_per_thread;
        occ.threads_per_block = threads;
      }
      smem_max = std::max<int64_t>(smem_max, int64_t{kr.static_shared_bytes} + kr.dynamic_shared_bytes);
      if (kr.theoretical_occupancy) min_part_occ = std::min(min_part_occ.value_or(1.0), *kr.theoretical_occupancy);
      if (kr.local_bytes_per_thread > 0) {
        r.risks.push_back(fmt::format("{} already uses {} B of local memory per thread (stack or spills)",
                                      p.str(kr.demangled_id), kr.local_bytes_per_thread));
      }
    }
  }
  occ.static_shared_bytes = smem_max;
  if (dev) {
    if (auto o = core::theoreticalOccupancy(*dev, occ)) {
      r.fused_occupancy = o->occupancy;
      if (o->occupancy < ctx.opt.min_occupancy && (!min_part_occ || o->occupancy < *min_part_occ)) {
        r.no_fuse = fmt::format(
            "register/shared-memory pressure: the fused kernel ({} registers/thread, {} B shared, {} threads) "
            "would reach {:.0f}% occupancy (< {:.0f}%){}",
            occ.registers_per_thread, smem_max, occ.threads_per_block, o->occupancy * 100, ctx.opt.min_occupancy * 100,
            o->blocks_per_sm == 0 ? ": it would not fit on an SM" : "");
      }
    }
  }

  // Independent stages that ran at the same time would be serialized by fusing them.
  std::vector<bool> connected(in.stages.size(), false);
  for (const StageEdge& e : in.edges) connected[e.from] = connected[e.to] = true;
  for (size_t a = 0; a < in.stages.size() && r.no_fuse.empty(); ++a) {
    if (connected[a]) continue;
    for (size_t b = 0; b < in.stages.size() && r.no_fuse.empty(); ++b) {
      if (a == b) continue;
      for (size_t ka : in.stages[a]) {
        for (size_t kb : in.stages[b]) {
          const core::KernelRow &x = p.kernels[ka], &y = p.kernels[kb];
          const int64_t overlap = std::min(x.end_ns, y.end_ns) - std::max(x.start_ns, y.start_ns);
          if (overlap > 0 && r.no_fuse.empty()) {
            r.no_fuse = fmt::format(
                "independent: stage {} shares no data with the others and ran concurrently with stage {} "
                "({} ns overlap); fusing would serialize them",
                a + 1, b + 1, overlap);
          }
        }
      }
    }
  }
  return r;
}

struct Aggregate {
  FusionCandidate c;
  std::vector<double> unfused, fused, bytes, occupancy;
  std::vector<std::vector<double>> stages;  // per stage index, one time per instance
  double saving_sum = 0;
  bool all_predicted = true;
  std::set<std::string> risks;
};

void addInstance(Aggregate& a, const InstanceResult& r) {
  a.unfused.push_back(r.unfused_ns);
  if (a.stages.size() < r.stage_ns.size()) a.stages.resize(r.stage_ns.size());
  for (size_t i = 0; i < r.stage_ns.size(); ++i) a.stages[i].push_back(r.stage_ns[i]);
  if (r.fused_ns) {
    a.fused.push_back(*r.fused_ns);
    a.saving_sum += r.unfused_ns - *r.fused_ns;
    a.c.model = r.model;
  } else {
    a.all_predicted = false;
  }
  if (r.intermediate_bytes) {
    a.bytes.push_back(*r.intermediate_bytes);
    a.c.bytes_source = r.bytes_source;
  }
  if (r.fused_occupancy) a.occupancy.push_back(*r.fused_occupancy);
  if (!r.no_fuse.empty() && a.c.fuse) {
    a.c.fuse = false;
    a.c.reason = r.no_fuse;
  }
  for (const auto& s : r.risks) a.risks.insert(s);
  ++a.c.instances;
}

FusionCandidate finish(Aggregate& a, int64_t program_ns) {
  FusionCandidate c = std::move(a.c);
  c.unfused_ns = median(a.unfused).value_or(0);
  for (const auto& st : a.stages) c.stage_ns.push_back(median(st).value_or(0));
  if (a.all_predicted && !a.fused.empty()) {
    c.predicted_fused_ns = median(a.fused);
    c.predicted_saving_ns = c.unfused_ns - *c.predicted_fused_ns;
    c.total_saving_ns = a.saving_sum;
    if (program_ns > 0) c.program_share = a.saving_sum / static_cast<double>(program_ns);
  } else {
    c.model.reset();
  }
  if (a.bytes.size() == a.unfused.size() && !a.bytes.empty()) {
    c.intermediate_bytes = median(a.bytes);
  } else {
    c.bytes_source = BytesSource::kNone;
  }
  if (!a.occupancy.empty()) c.fused_occupancy = *std::min_element(a.occupancy.begin(), a.occupancy.end());
  c.risks.assign(a.risks.begin(), a.risks.end());
  return c;
}

// Allocations written by any kernel of `from` and read by any kernel of `to`.
std::optional<double> sharedAllocationBytes(const DataFlow& df, const std::vector<size_t>& from,
                                            const std::vector<size_t>& to, std::vector<uint32_t>* which = nullptr) {
  if (df.access_begin.empty()) return std::nullopt;
  std::set<uint32_t> written, both;
  for (size_t k : from) {
    for (uint32_t x = df.access_begin[k]; x < df.access_begin[k + 1]; ++x) {
      if (df.accesses[x].write) written.insert(df.accesses[x].allocation);
    }
  }
  for (size_t k : to) {
    for (uint32_t x = df.access_begin[k]; x < df.access_begin[k + 1]; ++x) {
      if (df.accesses[x].read && written.count(df.accesses[x].allocation)) both.insert(df.accesses[x].allocation);
    }
  }
  if (both.empty()) return std::nullopt;
  double bytes = 0;
  for (uint32_t a : both) bytes += static_cast<double>(df.allocations[a].bytes);
  if (which) which->assign(both.begin(), both.end());
  return bytes;
}

// The allocation of a stage's declared buffer `name`, matched by position: the i-th name of the
// stage's `reads` (`writes`) is the i-th allocation its kernel reads (writes), used only when the
// counts agree. For edges whose other side cannot be resolved: cuBLAS passes its pointers in a
// struct, so a GEMM stage's output or input is only seen from the kernel on the other side.
std::optional<double> declaredAllocationBytes(const DataFlow& df, const std::vector<size_t>& stage,
                                              const std::vector<std::string>& names, const std::string& name,
                                              bool write) {
  if (df.access_begin.empty() || stage.size() != 1 || !df.args_known[stage.front()]) return std::nullopt;
  const size_t k = stage.front();
  std::vector<uint32_t> seen;
  for (uint32_t x = df.access_begin[k]; x < df.access_begin[k + 1]; ++x) {
    if (write ? df.accesses[x].write : df.accesses[x].read) seen.push_back(df.accesses[x].allocation);
  }
  if (seen.size() != names.size()) return std::nullopt;
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return std::nullopt;
  return static_cast<double>(df.allocations[seen[static_cast<size_t>(it - names.begin())]].bytes);
}

// Bytes of the intermediate `name` passed from stage `from` to stage `to`.
std::optional<double> edgeAllocationBytes(const DataFlow& df, const Instance& in, const OpTags& from_tags,
                                          const OpTags& to_tags, size_t from, size_t to, const std::string& name) {
  if (auto b = sharedAllocationBytes(df, in.stages[from], in.stages[to])) return b;
  if (auto b = declaredAllocationBytes(df, in.stages[from], from_tags.writes, name, true)) return b;
  return declaredAllocationBytes(df, in.stages[to], to_tags.reads, name, false);
}


}  // namespace

FusionResult analyzeFusion(const core::Profile& p, const OpIndex& ops, const DataFlow& df, const FusionOptions& opt) {
  FusionResult res;
  CeilingCache cache(p);
  ModelContext ctx{p, df, cache, opt, {}};
  for (const core::KernelRow& k : p.kernels) {
    res.program_gpu_ns += k.durationNs();
    // The fixed cost of a kernel (ramp-up, drain, the timer's own overhead) is at most the
    // shortest kernel the device ran, and at most the stated cap (docs/analysis.md).
    const uint64_t key = uint64_t{k.process_id} << 32 | k.device_id;
    const double d = static_cast<double>(std::min<int64_t>(k.durationNs(), opt.max_kernel_fixed_ns));
    auto [it, inserted] = ctx.fixed_ns.emplace(key, d);
    if (!inserted) it->second = std::min(it->second, d);
  }

  // Kernels that belong to a declared pair (any variant): data flow leaves them to the NVTX pairs.
  std::vector<uint8_t> in_declared(p.kernels.size(), 0);
  std::map<std::string, Aggregate> nvtx_pairs;  // by pair id
  std::map<std::string, std::vector<double>> fused_ns, vendor_ns;
  for (size_t i = 0; i < ops.ops.size(); ++i) {
    const OpInstance& op = ops.ops[i];
    if (op.tags.pair.empty() || op.tags.variant.empty()) continue;
    // Stage ranges of an unfused chain repeat the chain's variant and pair: not a chain of their own.
    if (op.parent && ops.ops[*op.parent].tags.pair == op.tags.pair) continue;
    res.nvtx_convention = true;
    for (size_t k : op.all_kernels) in_declared[k] = 1;
    if (op.all_kernels.empty()) continue;
    if (op.tags.variant == "fused") {
      fused_ns[op.tags.pair].push_back(kernelNs(p, op.all_kernels));
      continue;
    }
    if (op.tags.variant == "vendor") {
      vendor_ns[op.tags.pair].push_back(kernelNs(p, op.all_kernels));
      continue;
    }
    if (op.tags.variant != "unfused") continue;
    Instance in;
    std::vector<const OpTags*> stage_tags;
    std::vector<std::string> stage_names;
    if (!op.children.empty()) {
      for (size_t ch : op.children) {
        if (ops.ops[ch].all_kernels.empty()) continue;
        in.stages.push_back(ops.ops[ch].all_kernels);
        stage_tags.push_back(&ops.ops[ch].tags);
        stage_names.push_back(ops.ops[ch].tags.op);
      }
      // Kernels directly in the op range, outside any stage, form their own stages.
      for (size_t k : op.kernels) {
        in.stages.push_back({k});
        stage_tags.push_back(nullptr);
        stage_names.push_back(p.str(p.kernels[k].demangled_id));
      }
      // Declared edges: a stage reads a buffer the latest earlier stage wrote.
      for (size_t j = 0; j < in.stages.size(); ++j) {
        if (!stage_tags[j]) continue;
        for (const std::string& b : stage_tags[j]->reads) {
          for (size_t s = j; s-- > 0;) {
            if (!stage_tags[s]) continue;
            const auto& w = stage_tags[s]->writes;
            if (std::find(w.begin(), w.end(), b) != w.end()) {
              // An intermediate the whole op also lists as its output is still written when fused.
              const bool op_output = std::find(op.tags.writes.begin(), op.tags.writes.end(), b) != op.tags.writes.end();
              in.edges.push_back({s, j, b, edgeAllocationBytes(df, in, *stage_tags[s], *stage_tags[j], s, j, b),
                                  !op_output});
              break;
            }
          }
        }
      }
    } else {
      // No stage ranges: the op's kernels in launch order are its stages, consecutive ones chained.
      for (size_t k : op.kernels) {
        in.stages.push_back({k});
        stage_names.push_back(p.str(p.kernels[k].demangled_id));
      }
      for (size_t s = 1; s < in.stages.size(); ++s) {
        in.edges.push_back({s - 1, s, "?", sharedAllocationBytes(df, in.stages[s - 1], in.stages[s]), true});
      }
    }
    if (in.stages.size() < 2) continue;
    Aggregate& a = nvtx_pairs[op.tags.pair];
    if (a.c.instances == 0) {
      a.c.source = PairSource::kNvtx;
      a.c.id = op.tags.pair;
      a.c.op = op.tags.op;
      a.c.stages = stage_names;
      for (const auto& e : in.edges) a.c.intermediates.push_back(e.name);
      a.c.launches_per_instance = static_cast<int64_t>(op.all_kernels.size());
      a.c.launches_removed = a.c.launches_per_instance - 1;
    }
    addInstance(a, evaluate(in, ctx));
  }
  for (auto& [id, a] : nvtx_pairs) {
    FusionCandidate c = finish(a, res.program_gpu_ns);
    if (c.intermediates.empty() && c.fuse) {
      c.fuse = false;
      c.reason = "the stages declare no buffer passed between them: nothing would stay on chip";
    }
    if (auto it = fused_ns.find(id); it != fused_ns.end()) {
      c.measured_fused_ns = median(it->second);
      c.measured_fused_instances = static_cast<int64_t>(it->second.size());
      c.measured_saving_ns = c.unfused_ns - *c.measured_fused_ns;
      if (c.predicted_fused_ns && *c.measured_fused_ns > 0) {
        c.prediction_error = (*c.predicted_fused_ns - *c.measured_fused_ns) / *c.measured_fused_ns;
      }
    }
    if (auto it = vendor_ns.find(id); it != vendor_ns.end()) c.vendor_ns = median(it->second);
    res.candidates.push_back(std::move(c));
  }

  // Data-flow pairs and chains among the kernels the program did not declare.
  if (!df.have_args) {
    res.notes.push_back("no launch arguments recorded: pairs can only come from NVTX op ranges");
  } else if (!df.have_allocations) {
    res.notes.push_back("no allocation records: pointer arguments cannot be matched to buffers");
  }
  {
    // Single-reader links per kernel: how many go out and come in, and the edge when there is one
    // (flat arrays: a million kernels must not mean a million small vectors).
    constexpr int32_t kNone = -1;
    std::vector<int32_t> out_edge(p.kernels.size(), kNone), in_edge(p.kernels.size(), kNone);
    std::vector<uint8_t> out_count(p.kernels.size(), 0), in_count(p.kernels.size(), 0);
    std::vector<const DataEdge*> multi;
    for (size_t i = 0; i < df.edges.size(); ++i) {
      const DataEdge& e = df.edges[i];
      if (in_declared[e.producer] || in_declared[e.consumer]) continue;
      if (e.readers_of_value == 1) {
        out_edge[e.producer] = static_cast<int32_t>(i);
        in_edge[e.consumer] = static_cast<int32_t>(i);
        if (out_count[e.producer] < 2) ++out_count[e.producer];
        if (in_count[e.consumer] < 2) ++in_count[e.consumer];
      } else {
        multi.push_back(&e);
      }
    }
    std::map<std::string, Aggregate> flow;
    auto addChain = [&](const std::vector<const DataEdge*>& chain, bool write_removed) {
      Instance in;
      in.stages.push_back({chain.front()->producer});
      for (const DataEdge* e : chain) in.stages.push_back({e->consumer});
      for (size_t s = 0; s < chain.size(); ++s) {
        const Allocation& al = df.allocations[chain[s]->allocation];
        in.edges.push_back({s, s + 1, "", static_cast<double>(al.bytes), write_removed});
      }
      // Same kernels (name and launch shape) in the same order = the same candidate. The key is
      // binary: this runs once per chain instance, a million times in a large run.
      std::string key(write_removed ? "c" : "m");
      for (const auto& st : in.stages) {
        const core::KernelRow& k = p.kernels[st.front()];
        const int32_t fields[] = {static_cast<int32_t>(k.demangled_id), k.grid_x, k.grid_y, k.grid_z,
                                  k.block_x, k.block_y, k.block_z};
        key.append(reinterpret_cast<const char*>(fields), sizeof(fields));
      }
      Aggregate& a = flow[key];
      if (a.c.instances == 0) {
        a.c.source = PairSource::kDataFlow;
        for (const auto& st : in.stages) a.c.stages.push_back(p.str(p.kernels[st.front()].demangled_id));
        for (const auto& n : a.c.stages) a.c.id += (a.c.id.empty() ? "" : " -> ") + n;
        for (const DataEdge* e : chain) {
          const Allocation& al = df.allocations[e->allocation];
          a.c.intermediates.push_back(fmt::format("{} B at 0x{:x}", al.bytes, al.address));
        }
        a.c.launches_per_instance = static_cast<int64_t>(in.stages.size());
        a.c.launches_removed = a.c.launches_per_instance - 1;
        if (!write_removed) {
          a.c.fuse = false;
          a.c.reason = fmt::format("the intermediate is also read by {} other kernel(s): it would still be written",
                                   chain.front()->readers_of_value - 1);
        }
      }
      addInstance(a, evaluate(in, ctx));
    };
    // Chains: follow links where the producer's value has one reader and the consumer one producer.
    auto linkNext = [&](size_t k) -> const DataEdge* {
      if (out_count[k] != 1) return nullptr;
      const DataEdge* e = &df.edges[static_cast<size_t>(out_edge[k])];
      return in_count[e->consumer] == 1 ? e : nullptr;
    };
    for (size_t k = 0; k < p.kernels.size(); ++k) {
      const DataEdge* e = linkNext(k);
      if (!e) continue;
      const bool has_prev = in_count[k] == 1 && linkNext(df.edges[static_cast<size_t>(in_edge[k])].producer) ==
                                                    &df.edges[static_cast<size_t>(in_edge[k])];
      if (has_prev) continue;
      std::vector<const DataEdge*> chain;
      for (; e; e = linkNext(e->consumer)) chain.push_back(e);
      addChain(chain, true);
    }
    // A consumer with several single-reader producers: each edge is its own pair.
    for (const DataEdge& e : df.edges) {
      if (e.readers_of_value == 1 && in_count[e.consumer] > 1 && !in_declared[e.producer] && !in_declared[e.consumer]) {
        addChain({&e}, true);
      }
    }
    for (const DataEdge* e : multi) addChain({e}, false);
    for (auto& [key, a] : flow) res.candidates.push_back(finish(a, res.program_gpu_ns));
  }

  // Rank: fusable by total saving (unknown saving last), then the ones not to fuse.
  std::stable_sort(res.candidates.begin(), res.candidates.end(), [](const FusionCandidate& a, const FusionCandidate& b) {
    if (a.fuse != b.fuse) return a.fuse;
    const double sa = a.total_saving_ns.value_or(-1e300), sb = b.total_saving_ns.value_or(-1e300);
    if (sa != sb) return sa > sb;
    return a.id < b.id;
  });
  std::vector<double> errors;
  for (const FusionCandidate& c : res.candidates) {
    if (c.prediction_error) errors.push_back(std::abs(*c.prediction_error));
  }
  res.measured_pairs = static_cast<int64_t>(errors.size());
  res.median_abs_error = median(errors);
  return res;
}

}  // namespace fprof::analysis
