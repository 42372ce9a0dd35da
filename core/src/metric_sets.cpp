// Metric sets and derived counters (see metric_sets.h).
#include "fprof/core/metric_sets.h"

#include <algorithm>
#include <map>
#include <optional>

#include "fprof/core/sass_half.h"
#include "fprof/core/sass_tensor.h"

namespace fprof::core {
namespace {

std::vector<std::string> concatOf(std::initializer_list<const std::vector<std::string>*> parts) {
  std::vector<std::string> out;
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

const std::vector<std::string> kBytesAndTime = {
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    kL2BytesMetric,
    kL2SmSectorsMetric,
    "l1tex__t_bytes.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "gpu__time_duration.sum",
};

// Local-memory (spill, stack) bytes through L1: the hardware counters, one pass with the memory
// counters but about 16-20 ms more a profiled launch under kernel replay (docs/metrics.md)...
const std::vector<std::string> kLocalBytes = {kLocalLoadBytesMetric, kLocalStoreBytesMetric};
// ...and the same sectors counted by the SASS instrumentation the FLOP counters use, which costs
// nothing beside them: 32 x these equalled the counters above on 225 of 225 kernels on an H200.
const std::vector<std::string> kLocalSectorsSass = {kLocalLoadSectorsSassMetric, kLocalStoreSectorsSassMetric};

const std::vector<std::string> kMemory = concatOf({&kBytesAndTime, &kLocalBytes});

const std::vector<std::string> kFlops = {
    "sm__sass_thread_inst_executed_op_dadd_pred_on.sum", "sm__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "sm__sass_thread_inst_executed_op_dfma_pred_on.sum", "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hadd_pred_on.sum", "sm__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum",
};

const std::vector<std::string> kTensor = {
    "sm__ops_path_tensor_src_fp16.sum",          "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum", "sm__ops_path_tensor_src_fp8.sum",
    "sm__ops_path_tensor_src_fp64.sum",          "sm__ops_path_tensor_src_int8.sum",
};

// The roofline set's tensor counters: the tensor pipe's active cycles (HMMA/HGMMA/QGMMA) and DMMA
// instructions fit in the two passes the memory and SASS counters take, where the six ops_path
// counters above take five more on GH100; the SASS step turns them into FLOPs (sass_tensor.h).
const std::vector<std::string> kTensorCycles = {kTensorCyclesMetric, kDmmaInstMetric, kHfma2MmaInstMetric};

const std::vector<std::string> kInstructions = {kInstructionsMetric};
// The same warp instructions counted by the SASS instrumentation: the hardware counter above and
// the FMA pipe's fp16 counter below do not share the memory counters' pass on GH100 (3 passes with
// both), this one rides in the FLOP counters' pass, so the roofline set keeps two passes.
const std::vector<std::string> kInstructionsSass = {kInstructionsSassMetric};

// Cheap extras only: the *.pct_of_peak_sustained_elapsed throughput metrics would take the
// full set's GH100 passes from 9 to about 18.
const std::vector<std::string> kExtra = {
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sector_hit_rate.pct",
    "sm__cycles_elapsed.avg.per_second",
};

// 16-bit instructions on the FMA pipe (HFMA2.MMA runs on the MMA pipe and is not counted): splits
// a function's HFMA2 by pipe where the SASS holds packed and scalar forms (sass_half.h). It shares
// the memory counters' pass on GH100 once the instructions come from the SASS pass.
const std::vector<std::string> kHalfPipe = {kFp16PipeMetric};

// Local bytes from the L1 counter where collected, else 32 bytes a sector the SASS counted.
std::optional<double> localBytes(std::optional<double> l1tex_bytes, std::optional<double> sass_sectors) {
  if (l1tex_bytes) return l1tex_bytes;
  if (sass_sectors) return *sass_sectors * kBytesPerSector;
  return std::nullopt;
}

// L2 bytes from the SMs' sectors where collected (the sets), else every request the L2 counted
// (custom lists, recordings of versions that did not collect the sectors).
std::optional<double> l2Bytes(std::optional<double> sm_sectors, std::optional<double> all_bytes) {
  if (sm_sectors) return *sm_sectors * kBytesPerSector;
  return all_bytes;
}

}  // namespace

const std::vector<MetricSet>& builtinMetricSets() {
  static const std::vector<MetricSet> sets = {
      {"memory", "DRAM/L2/L1 bytes, local (spill) traffic, achieved occupancy, GPU time", kMemory},
      {"roofline",
       "memory + FLOPs per precision (FP64/FP32/FP16 instructions, fp16 by pipe) + tensor-core FLOPs (tensor pipe "
       "cycles x the SASS's ops a cycle) + instructions",
       concatOf({&kBytesAndTime, &kFlops, &kLocalSectorsSass, &kTensorCycles, &kHalfPipe, &kInstructionsSass})},
      {"full",
       "memory + FLOPs + tensor-core ops from the ops_path counters (integer ops too) + instructions + L2 and L1 hit "
       "rates, the SM clock and the FMA pipe's fp16 instructions",
       concatOf({&kBytesAndTime, &kFlops, &kLocalSectorsSass, &kTensorCycles, &kLocalBytes, &kTensor, &kInstructions,
                 &kInstructionsSass, &kExtra, &kHalfPipe})},
  };
  return sets;
}

Expected<std::vector<std::string>> expandMetricSelection(const std::string& selection) {
  for (const MetricSet& s : builtinMetricSets()) {
    if (s.name == selection) return s.metrics;
  }
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= selection.size()) {
    const size_t comma = selection.find(',', pos);
    std::string m = selection.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    m.erase(0, m.find_first_not_of(" \t"));
    m.erase(m.find_last_not_of(" \t") + 1);
    if (!m.empty() && std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (out.empty()) return makeError("--metrics: empty metric list");
  for (const std::string& m : out) {
    // Raw names carry a rollup suffix (.sum, .avg, .max, .pct, ...); a bare word is a typo of a set.
    if (m.find('.') == std::string::npos || m.find("__") == std::string::npos) {
      return makeError("--metrics: '" + m +
                             "' is neither a metric set (memory, roofline, full) nor a metric name such as "
                             "dram__bytes_read.sum");
    }
  }
  return out;
}

bool isSassInstrumented(const std::string& metric) { return metric.find("__sass_") != std::string::npos; }

KernelCounters deriveCounters(const std::vector<std::string>& names, const std::vector<double>& values) {
  std::map<std::string, double> v;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) v[names[i]] = values[i];
  auto get = [&](const char* name) -> std::optional<double> {
    auto it = v.find(name);
    return it == v.end() ? std::nullopt : std::optional<double>(it->second);
  };
  // add + mul + 2 * fma, only when all three were collected (a partial sum would mislead).
  auto flops = [&](const char* add, const char* mul, const char* fma, double lanes) -> std::optional<double> {
    auto a = get(add), m = get(mul), f = get(fma);
    if (!a || !m || !f) return std::nullopt;
    return lanes * (*a + *m + kFlopsPerFma * *f);
  };
  KernelCounters c;
  c.dram_read_bytes = get("dram__bytes_read.sum");
  c.dram_write_bytes = get("dram__bytes_write.sum");
  c.l2_bytes = l2Bytes(get(kL2SmSectorsMetric), get(kL2BytesMetric));
  c.l1_bytes = get("l1tex__t_bytes.sum");
  c.local_load_bytes = localBytes(get(kLocalLoadBytesMetric), get(kLocalLoadSectorsSassMetric));
  c.local_store_bytes = localBytes(get(kLocalStoreBytesMetric), get(kLocalStoreSectorsSassMetric));
  if (auto occ = get("sm__warps_active.avg.pct_of_peak_sustained_active")) c.achieved_occupancy = *occ / 100.0;
  c.gpu_time_ns = get("gpu__time_duration.sum");
  c.instructions = get(kInstructionsMetric);
  if (!c.instructions) c.instructions = get(kInstructionsSassMetric);
  c.flops_fp64 = flops("sm__sass_thread_inst_executed_op_dadd_pred_on.sum",
                       "sm__sass_thread_inst_executed_op_dmul_pred_on.sum",
                       "sm__sass_thread_inst_executed_op_dfma_pred_on.sum", 1.0);
  c.flops_fp32 = flops("sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
                       "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
                       "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", 1.0);
  // The h* counters count instructions of FP16 and BF16 alike, packed (2 lanes), scalar (1) and
  // immediate moves (0): the FLOPs come from the function's SASS once `fprof run` has read it
  // (sass_half.h). With none executed, both are exactly 0.
  const auto hadd = get("sm__sass_thread_inst_executed_op_hadd_pred_on.sum");
  const auto hmul = get("sm__sass_thread_inst_executed_op_hmul_pred_on.sum");
  const auto hfma = get("sm__sass_thread_inst_executed_op_hfma_pred_on.sum");
  if (hadd && hmul && hfma) {
    if (*hadd == 0 && *hmul == 0 && *hfma == 0) {
      c.flops_fp16 = 0;
      c.flops_bf16 = 0;
    } else if (auto fp16 = get(kHalfFlopsFp16PerPcMetric), bf16 = get(kHalfFlopsBf16PerPcMetric); fp16 && bf16) {
      c.flops_fp16 = fp16;
      c.flops_bf16 = bf16;
      c.half_flops_method = kHalfFlopsPerPcMethod;
    } else {
      c.half_flops_method = kHalfFlopsPending;
    }
  }
  auto tensor = [&](const char* name) -> std::optional<double> {
    auto o = get(name);
    return o ? std::optional<double>(*o * kTensorFlopsPerOp) : std::nullopt;
  };
  c.flops_tensor_fp16 = tensor("sm__ops_path_tensor_src_fp16.sum");
  c.flops_tensor_bf16 = tensor("sm__ops_path_tensor_src_bf16_dst_fp32.sum");
  c.flops_tensor_tf32 = tensor("sm__ops_path_tensor_src_tf32_dst_fp32.sum");
  c.flops_tensor_fp8 = tensor("sm__ops_path_tensor_src_fp8.sum");
  c.flops_tensor_fp64 = tensor("sm__ops_path_tensor_src_fp64.sum");
  c.ops_tensor_int8 = tensor("sm__ops_path_tensor_src_int8.sum");
  // Without ops_path counters, from the tensor pipe's cycles and DMMA instructions: none ran (0
  // exactly), or FLOPs wait for the function's SASS (sass_tensor.h). Integer ops stay uncollected.
  const auto cycles = get(kTensorCyclesMetric);
  const auto dmma = get(kDmmaInstMetric);
  if (!c.flops_tensor_fp16 && cycles && dmma) {
    if (*cycles == 0 && *dmma == 0) {
      c.flops_tensor_fp16 = c.flops_tensor_bf16 = c.flops_tensor_tf32 = c.flops_tensor_fp8 = c.flops_tensor_fp64 = 0;
    } else {
      c.tensor_flops_method = kTensorFlopsPending;
    }
  }
  return c;
}

}  // namespace fprof::core
