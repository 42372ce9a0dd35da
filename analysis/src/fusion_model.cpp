// The fused-time model of one chain instance (see fusion_model.h and docs/analysis.md, "Predicted
// fused time"). evaluate() reads top-down: stage times, intermediate bytes, the prediction
// (roofline model with counters, else trace model), then the reasons not to fuse.
#include "fprof/analysis/fusion_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "fprof/analysis/fusion_chains.h"
#include "fprof/core/occupancy.h"

namespace fprof::analysis {

std::string_view bytesSourceName(BytesSource s) {
  switch (s) {
    case BytesSource::kCounters: return "counters";
    case BytesSource::kAllocation: return "allocation size";
    case BytesSource::kNone: return "n/a";
  }
  return "n/a";
}

std::string_view predictionModelName(PredictionModel m) { return m == PredictionModel::kRoofline ? "roofline" : "trace"; }

std::optional<double> stageArgumentBytes(const DataFlow& df, const std::vector<size_t>& ks) {
  if (df.access_begin.empty()) return std::nullopt;
  double bytes = 0;
  for (size_t k : ks) {
    if (!df.args_known[k] || df.access_begin[k] == df.access_begin[k + 1]) return std::nullopt;
    for (uint32_t x = df.access_begin[k]; x < df.access_begin[k + 1]; ++x) {
      const KernelAccess& a = df.accesses[x];
      const int passes = a.unknown ? 1 : (a.read ? 1 : 0) + (a.write ? 1 : 0);
      bytes += static_cast<double>(a.tensor_bytes) * passes;
    }
  }
  return bytes;
}

namespace {

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

// Intermediate bytes per edge: counters where both sides have them (bounded by the allocation
// where known: a counter also sees other buffers), else the allocation size. The instance's total
// is known only when every edge's is.
struct EdgeBytes {
  std::vector<std::optional<double>> per_edge;
  std::optional<double> total;
  BytesSource source = BytesSource::kNone;
  bool mixed = false;  // some edges from counters, some from allocation sizes
};

EdgeBytes intermediateBytes(const core::Profile& p, const Instance& in) {
  EdgeBytes r;
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
    r.per_edge.push_back(b);
  }
  if (in.edges.empty()) return r;
  double total = 0;
  for (const auto& b : r.per_edge) {
    if (!b) return r;
    total += *b;
  }
  r.total = total;
  r.source = any_counters ? BytesSource::kCounters : BytesSource::kAllocation;
  r.mixed = any_counters && !all_counters;
  return r;
}

// Intermediate bytes each stage stops moving: the consumer's read, the producer's write unless
// the value must still be written. `direct` is the allocation size where known (what crosses L2
// and L1), else the edge's bytes; `dram_read` the consumer's DRAM figure (the edge's bytes).
struct RemovedTraffic {
  std::vector<double> dram, dram_read, read, write;
  explicit RemovedTraffic(size_t stages) : dram(stages), dram_read(stages), read(stages), write(stages) {}
};

RemovedTraffic removedTraffic(const Instance& in, const EdgeBytes& bytes) {
  RemovedTraffic r(in.stages.size());
  for (size_t e = 0; e < in.edges.size(); ++e) {
    const StageEdge& ed = in.edges[e];
    const double edge = *bytes.per_edge[e];
    const double direct = ed.allocation_bytes.value_or(edge);
    if (ed.write_removed) {
      r.dram[ed.from] += edge;
      r.write[ed.from] += direct;
    }
    r.dram[ed.to] += edge;
    r.dram_read[ed.to] += edge;
    r.read[ed.to] += direct;
  }
  return r;
}

// Roofline model (every kernel has counters, every needed roof exists). At L2 and L1 a stage stops
// writing the intermediates it produced (once each: their size) and stops reading the ones it
// consumed, which a kernel may read several times there: their share of the stage's DRAM reads,
// applied to its reads at that level (its bytes there less its DRAM writes), and at least their
// size. The fused kernel reaches its roof as well as the parts reached theirs, and not better
// than the roof itself.
std::optional<double> rooflineFusedNs(const core::Profile& p, const Instance& in, const RemovedTraffic& removed,
                                      const Ceilings& ceil, double fixed_ns, double work_sum_ns) {
  std::vector<Work> works;
  for (const auto& s : in.stages) {
    auto w = stageWork(p, s);
    if (!w) return std::nullopt;
    works.push_back(*w);
  }
  Work combined;
  double parts_roof_ns = 0;
  bool roofs = true;
  for (size_t s = 0; s < works.size(); ++s) {
    Work w = works[s];
    const auto t = rooflineTimeNs(w, ceil);
    if (!t) roofs = false;
    parts_roof_ns += t.value_or(0);
    auto& dram_bytes = w.bytes[static_cast<size_t>(MemLevel::kDram)];
    if (dram_bytes) dram_bytes = std::max(0.0, *dram_bytes - removed.dram[s]);
    const double dram_read = stageDram(p, in.stages[s], false).value_or(0);
    const double dram_write = stageDram(p, in.stages[s], true).value_or(0);
    const double read_share = dram_read > 0 ? std::min(1.0, removed.dram_read[s] / dram_read) : 1.0;
    for (const MemLevel l : {MemLevel::kL2, MemLevel::kL1}) {
      auto& b = w.bytes[static_cast<size_t>(l)];
      if (!b) continue;
      const double reads = std::max(0.0, *b - dram_write);
      b = *b - std::min(*b, removed.write[s] + std::max(read_share * reads, removed.read[s]));
    }
    if (s == 0) {
      combined = w;
    } else {
      combined += w;
    }
  }
  const auto fused_roof_ns = rooflineTimeNs(combined, ceil);
  if (!roofs || !fused_roof_ns || parts_roof_ns <= 0) return std::nullopt;
  return fixed_ns + std::max(*fused_roof_ns, *fused_roof_ns * work_sum_ns / parts_roof_ns);
}

bool stageHasMatmul(const core::Profile& p, const std::vector<size_t>& stage) {
  return std::any_of(stage.begin(), stage.end(), [&](size_t k) {
    return nodeKindFromName(p.str(p.kernels[k].demangled_id)) == NodeKind::kMatmul;
  });
}

bool stageIsCopy(const core::Profile& p, const std::vector<size_t>& stage) {
  return std::all_of(stage.begin(), stage.end(), [&](size_t k) {
    return nodeKindFromName(p.str(p.kernels[k].demangled_id)) == NodeKind::kCopy;
  });
}

// Trace model, per stage. A memory-bound stage (its arguments' bytes moved at >= the roofline's
// line of its DRAM roof) keeps its achieved bandwidth: its time shrinks with its bytes. Any other
// stage loses at most the intermediates' transfer time at the level they live in: L2 for an
// intermediate that fits in the stated share of it, else DRAM.
std::optional<std::vector<double>> traceStageNs(const core::Profile& p, const DataFlow& df, const Instance& in,
                                                const EdgeBytes& bytes, const RemovedTraffic& removed,
                                                const Ceilings& ceil, const core::DeviceInfo* dev,
                                                const FusionOptions& opt, const std::vector<double>& work_ns) {
  const auto& dram = ceil.bw(MemLevel::kDram);
  if (!dram) return std::nullopt;
  const auto& l2 = ceil.bw(MemLevel::kL2);
  const double l2_resident_bytes = dev ? opt.l2_resident_fraction * static_cast<double>(dev->l2_bytes) : 0.0;
  std::vector<double> transfer_ns(in.stages.size(), 0.0);
  for (size_t e = 0; e < in.edges.size(); ++e) {
    const StageEdge& ed = in.edges[e];
    const double b = *bytes.per_edge[e];
    const double bw = l2 && b <= l2_resident_bytes ? l2->value : dram->value;
    if (ed.write_removed) transfer_ns[ed.from] += b / bw * 1e9;
    transfer_ns[ed.to] += b / bw * 1e9;
  }
  std::vector<double> stage_ns;
  for (size_t s = 0; s < in.stages.size(); ++s) {
    const auto moved = stageArgumentBytes(df, in.stages[s]);
    const double w = work_ns[s];
    const bool memory_bound = !stageHasMatmul(p, in.stages[s]) && moved && *moved > 0 && w > 0 &&
                              (*moved / (w * 1e-9)) >= opt.roof_fraction_binds * dram->value;
    if (memory_bound) {
      const double gone = std::min(*moved, removed.read[s] + removed.write[s]);
      stage_ns.push_back(w * (1.0 - gone / *moved));
    } else {
      stage_ns.push_back(std::max(0.0, w - transfer_ns[s]));
    }
  }
  return stage_ns;
}

// How a stage would run inside a fused kernel, in trace mode (no counters).
enum class StageFlow : uint8_t {
  kMemoryBound,  // moves its argument bytes at >= the roofline's line of the DRAM roof
  kStreamable,   // below that line, but every kernel fills the device (at least one block per SM):
                 // its pace is its own launch's, not its work's
  kOther,        // too few blocks, or bytes not seen: keeps its work
};

// For a stage without a matrix multiply (the caller leaves those out) that moves `moved` bytes.
StageFlow stageFlow(const core::Profile& p, const std::vector<size_t>& stage, std::optional<double> moved,
                    double work_ns, double dram_bytes_per_s, const core::DeviceInfo* dev, const FusionOptions& opt) {
  if (!moved || *moved <= 0 || work_ns <= 0) return StageFlow::kOther;
  const double bytes_per_s = *moved / (work_ns * 1e-9);
  if (bytes_per_s >= opt.roof_fraction_binds * dram_bytes_per_s) return StageFlow::kMemoryBound;
  if (!dev || bytes_per_s < opt.streamable_roof_fraction * dram_bytes_per_s) return StageFlow::kOther;
  for (size_t k : stage) {
    const core::KernelRow& kr = p.kernels[k];
    if (int64_t{kr.grid_x} * kr.grid_y * kr.grid_z < dev->sm_count) return StageFlow::kOther;
  }
  return StageFlow::kStreamable;
}

// Bytes each stage moves across the fused kernel's boundary: its reads of inputs from outside the
// chain not read by an earlier stage (GPT-2's gelu_new reads x in three of its eight kernels), and
// its writes, less the intermediates whose write the fused kernel no longer makes.
std::vector<double> externalStageBytes(const DataFlow& df, const Instance& in, const EdgeBytes& bytes) {
  struct Range {
    uint32_t allocation;
    uint64_t begin, end;
  };
  std::vector<Range> written, read;
  auto covered = [](const std::vector<Range>& v, const KernelAccess& a) {
    return std::any_of(v.begin(), v.end(), [&](const Range& r) {
      return r.allocation == a.allocation && r.begin <= a.address &&
             a.address + static_cast<uint64_t>(a.tensor_bytes) <= r.end;
    });
  };
  std::vector<double> external(in.stages.size(), 0.0);
  for (size_t s = 0; s < in.stages.size(); ++s) {
    for (size_t k : in.stages[s]) {
      for (uint32_t x = df.access_begin[k]; x < df.access_begin[k + 1]; ++x) {
        const KernelAccess& a = df.accesses[x];
        const Range r{a.allocation, a.address, a.address + static_cast<uint64_t>(a.tensor_bytes)};
        if ((a.read || a.unknown) && !covered(written, a) && !covered(read, a)) {
          external[s] += static_cast<double>(a.tensor_bytes);
          read.push_back(r);
        }
        if (a.write || a.unknown) {
          external[s] += static_cast<double>(a.tensor_bytes);
          written.push_back(r);
        }
      }
    }
  }
  for (size_t e = 0; e < in.edges.size(); ++e) {
    if (in.edges[e].write_removed) external[in.edges[e].from] -= *bytes.per_edge[e];
  }
  for (double& b : external) b = std::max(0.0, b);
  return external;
}

// Streaming model (trace mode). Inside a fused kernel a stage without a matrix multiply that
// streams on its own (memory-bound, or streamable: a LayerNorm over short rows at 30% of the roof)
// or only moves data (a layout copy) becomes a pass over data already on chip: it costs only the
// bytes it moves across the fused kernel's boundary, streamed at the best bandwidth a memory-bound
// part of the chain reached (at most the DRAM roof; the roof itself where no part is
// memory-bound). A GEMM's bias add, broadcasting at a quarter of the roof on its own, costs its
// bias vector in the GEMM's epilogue. The other stages (GEMMs, kernels below the streamable line)
// keep their trace-model time. Needs at least one streaming stage.
std::optional<double> streamingFusedNs(const core::Profile& p, const DataFlow& df, const Instance& in,
                                       const EdgeBytes& bytes, const Ceilings& ceil, const core::DeviceInfo* dev,
                                       const FusionOptions& opt, double fixed_ns, const std::vector<double>& work_ns,
                                       const std::vector<double>& trace_ns) {
  const auto& dram = ceil.bw(MemLevel::kDram);
  if (!dram || df.access_begin.empty()) return std::nullopt;
  std::vector<bool> streams(in.stages.size(), false);
  double best_bw = 0;  // bytes per ns
  for (size_t s = 0; s < in.stages.size(); ++s) {
    if (stageHasMatmul(p, in.stages[s])) continue;
    const std::optional<double> moved = stageArgumentBytes(df, in.stages[s]);
    const StageFlow flow = stageFlow(p, in.stages[s], moved, work_ns[s], dram->value, dev, opt);
    streams[s] = flow != StageFlow::kOther || (stageIsCopy(p, in.stages[s]) && moved);
    if (flow == StageFlow::kMemoryBound) best_bw = std::max(best_bw, *moved / work_ns[s]);
  }
  if (std::none_of(streams.begin(), streams.end(), [](bool b) { return b; })) return std::nullopt;
  // A part reading what its producer just wrote finds it in L2 and may beat the DRAM roof; the
  // fused kernel's inputs come from farther away: at most the roof.
  const double roof_bw = dram->value * 1e-9;
  best_bw = best_bw > 0 ? std::min(best_bw, roof_bw) : roof_bw;
  const std::vector<double> external = externalStageBytes(df, in, bytes);
  double fused = fixed_ns;
  for (size_t s = 0; s < in.stages.size(); ++s) fused += streams[s] ? external[s] / best_bw : trace_ns[s];
  return fused;
}

}  // namespace

FusionModel::FusionModel(const core::Profile& p, const DataFlow& df, const FusionOptions& opt)
    : p_(p), df_(df), opt_(opt), cache_(p) {
  double* last = nullptr;
  uint64_t last_key = ~uint64_t{0};
  for (const core::KernelRow& k : p.kernels) {
    // The fixed cost of a kernel (ramp-up, drain, the timer's own overhead) is at most the
    // shortest kernel the device ran, and at most the stated cap (docs/analysis.md).
    const uint64_t key = uint64_t{k.process_id} << 32 | k.device_id;
    const double d = static_cast<double>(std::min<int64_t>(k.durationNs(), opt.max_kernel_fixed_ns));
    if (key != last_key) {
      last = &fixed_ns_.try_emplace(key, d).first->second;  // map nodes stay put
      last_key = key;
    }
    *last = std::min(*last, d);
  }
}

double FusionModel::fixedNs(uint32_t process, uint32_t device) const {
  auto it = fixed_ns_.find(uint64_t{process} << 32 | device);
  return it == fixed_ns_.end() ? 0.0 : it->second;
}

namespace {

// The fused kernel keeps the registers and block of its hungriest part and the shared memory of
// its largest part (stages run one after another in a block, so staging buffers are reused).
void checkPressure(const core::Profile& p, const Instance& in, const core::DeviceInfo* dev, double min_occupancy,
                   InstanceResult& r) {
  core::OccupancyInput occ;
  int64_t smem_max = 0;
  std::optional<double> min_part_occ;
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
  if (!dev) return;
  const auto o = core::theoreticalOccupancy(*dev, occ);
  if (!o) return;
  r.fused_occupancy = o->occupancy;
  if (o->occupancy < min_occupancy && (!min_part_occ || o->occupancy < *min_part_occ)) {
    r.no_fuse = fmt::format(
        "register/shared-memory pressure: the fused kernel ({} registers/thread, {} B shared, {} threads) "
        "would reach {:.0f}% occupancy (< {:.0f}%){}",
        occ.registers_per_thread, smem_max, occ.threads_per_block, o->occupancy * 100, min_occupancy * 100,
        o->blocks_per_sm == 0 ? ": it would not fit on an SM" : "");
  }
}

// Independent stages that ran at the same time would be serialized by fusing them.
void checkIndependentStages(const core::Profile& p, const Instance& in, InstanceResult& r) {
  std::vector<bool> connected(in.stages.size(), false);
  for (const StageEdge& e : in.edges) connected[e.from] = connected[e.to] = true;
  for (size_t a = 0; a < in.stages.size(); ++a) {
    if (connected[a]) continue;
    for (size_t b = 0; b < in.stages.size(); ++b) {
      if (a == b) continue;
      for (size_t ka : in.stages[a]) {
        for (size_t kb : in.stages[b]) {
          const core::KernelRow &x = p.kernels[ka], &y = p.kernels[kb];
          // From the own starts: a programmatic launch's wait for its predecessor is no concurrency.
          const int64_t overlap = std::min(x.end_ns, y.end_ns) - std::max(x.ownStartNs(), y.ownStartNs());
          if (overlap > 0) {
            r.no_fuse = fmt::format(
                "independent: stage {} shares no data with the others and ran concurrently with stage {} "
                "({} ns overlap); fusing would serialize them",
                a + 1, b + 1, overlap);
            return;
          }
        }
      }
    }
  }
}

}  // namespace

InstanceResult FusionModel::evaluate(const Instance& in) {
  InstanceResult r;
  for (const auto& s : in.stages) {
    r.stage_ns.push_back(kernelNs(p_, s));
    r.unfused_ns += r.stage_ns.back();
  }
  const core::KernelRow& first = p_.kernels[in.stages.front().front()];
  const Ceilings& ceil = cache_.get(first.process_id, first.device_id);
  const core::DeviceInfo* dev = cache_.device(first.process_id, first.device_id);

  const EdgeBytes bytes = intermediateBytes(p_, in);
  if (bytes.total) {
    r.intermediate_bytes = bytes.total;
    r.bytes_source = bytes.source;
    if (bytes.mixed) r.risks.push_back("intermediate bytes mix counters and allocation sizes");
    // Every kernel pays a fixed cost; the fused kernel pays it once, and each stage's remaining
    // work loses the traffic of the intermediates it no longer writes or reads.
    const double fixed_ns = fixedNs(first.process_id, first.device_id);
    std::vector<double> work_ns;
    double work_sum_ns = 0;
    for (size_t s = 0; s < in.stages.size(); ++s) {
      work_ns.push_back(std::max(0.0, r.stage_ns[s] - static_cast<double>(in.stages[s].size()) * fixed_ns));
      work_sum_ns += work_ns.back();
    }
    const RemovedTraffic removed = removedTraffic(in, bytes);
    if (auto t = rooflineFusedNs(p_, in, removed, ceil, fixed_ns, work_sum_ns)) {
      r.fused_ns = t;
      r.model = PredictionModel::kRoofline;
    } else if (auto trace_ns = traceStageNs(p_, df_, in, bytes, removed, ceil, dev, opt_, work_ns)) {
      const double traced = std::accumulate(trace_ns->begin(), trace_ns->end(), fixed_ns);
      // Stages that stream may do better as passes of one streaming kernel than at their own pace.
      const auto st = streamingFusedNs(p_, df_, in, bytes, ceil, dev, opt_, fixed_ns, work_ns, *trace_ns);
      r.fused_ns = st ? std::min(traced, *st) : traced;
      r.model = PredictionModel::kTrace;
    }
  }
  checkPressure(p_, in, dev, opt_.min_occupancy, r);
  if (r.no_fuse.empty()) checkIndependentStages(p_, in, r);
  return r;
}

}  // namespace fprof::analysis
