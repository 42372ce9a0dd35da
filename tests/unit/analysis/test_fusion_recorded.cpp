// The fusion payoff model on the reference model recorded on an H200 (tests/data): every declared
// pair whose fused variant also ran gets a prediction, the median |error| stays under the bound
// reported in docs/analysis.md and bench/RESULTS.md, and the ranking follows the measured savings
// wherever those differ clearly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "fprof/analysis/fusion.h"

namespace fprof::analysis {
namespace {

const std::string kData = std::string(FPROF_SOURCE_DIR) + "/tests/data/";

// The measured ceilings of a tests/data/ceilings_*.json as `fprof ceilings --from-json` stores
// them (cli/cmd_ceilings.cpp): one measured row per roof, reference figures (ref_*) left out, and
// DRAM the best of the read, write and copy kernels and cudaMemcpy.
std::vector<core::CeilingRecord> measuredCeilings(const std::string& json) {
  std::ifstream in(kData + json);
  const nlohmann::json doc = nlohmann::json::parse(in);
  const std::string device = doc.at("device").at("name").get<std::string>();
  std::vector<core::CeilingRecord> rows;
  double dram = 0;
  for (const auto& m : doc.at("measurements")) {
    const std::string name = m.at("ceiling").get<std::string>();
    const double best = m.at("best").get<double>();
    if (name == "dram_read" || name == "dram_write" || name == "dram" || name == "ref_cudaMemcpy_d2d") {
      dram = std::max(dram, best);
    }
    if (name.rfind("ref_", 0) == 0) continue;
    rows.push_back({device, name, m.at("unit").get<std::string>(), best, "measured", "tests/data/" + json});
  }
  for (auto& r : rows) {
    if (r.ceiling == "dram") r.value = dram;
  }
  return rows;
}

// Prints predicted vs measured per pair: the figures of docs/analysis.md and bench/RESULTS.md.
void print(const std::string& file, const FusionResult& r) {
  std::printf("%s: median |error| %.1f%% over %lld pairs\n", file.c_str(), r.median_abs_error.value_or(0) * 100,
              static_cast<long long>(r.measured_pairs));
  for (const auto& c : r.candidates) {
    if (!c.measured_fused_ns) continue;
    std::printf("  %-20s unfused %9.2f us  predicted %9.2f us  measured %9.2f us  error %+6.1f%%\n", c.id.c_str(),
                c.unfused_ns / 1e3, c.predicted_fused_ns.value_or(0) / 1e3, *c.measured_fused_ns / 1e3,
                c.prediction_error.value_or(0) * 100);
  }
}

// `ceilings`: the file holds no ceilings; attach those of this tests/data JSON. "own": the file has
// its own; "datasheet": none, as `fprof report` on a machine that never ran `fprof ceilings`.
FusionResult analyzeRecorded(const std::string& file, const std::string& ceilings = "ceilings_h200.json") {
  auto p = core::loadProfile(kData + file);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error());
  core::Profile profile = std::move(*p);
  if (ceilings == "datasheet") {
    EXPECT_TRUE(profile.ceilings.empty()) << file;
  } else if (ceilings != "own") {
    EXPECT_TRUE(profile.ceilings.empty()) << file << " now holds ceilings: attach them no more here";
    profile.ceilings = measuredCeilings(ceilings);
  } else {
    EXPECT_FALSE(profile.ceilings.empty()) << file;
  }
  const OpIndex ops = indexOps(profile);
  const DataFlow df = analyzeDataFlow(profile);
  FusionResult r = analyzeFusion(profile, ops, df);
  print(file, r);
  return r;
}

const FusionCandidate* find(const FusionResult& r, const std::string& id) {
  for (const auto& c : r.candidates) {
    if (c.source == PairSource::kNvtx && c.id == id) return &c;
  }
  return nullptr;
}

// Pairs the data orders clearly (one measured total saving at least twice the other, both
// positive) must be ranked in that order, except where `known_misses` names one of them.
void expectRankingFollowsMeasurement(const FusionResult& r, const std::set<std::string>& known_misses) {
  std::vector<const FusionCandidate*> measured;
  for (const auto& c : r.candidates) {
    if (c.measured_saving_ns && c.total_saving_ns && *c.measured_saving_ns > 0) measured.push_back(&c);
  }
  ASSERT_GE(measured.size(), 10u);
  int compared = 0;
  for (const FusionCandidate* a : measured) {
    for (const FusionCandidate* b : measured) {
      const double ma = *a->measured_saving_ns * static_cast<double>(a->instances);
      const double mb = *b->measured_saving_ns * static_cast<double>(b->instances);
      if (mb < 2 * ma) continue;
      if (known_misses.count(a->id) || known_misses.count(b->id)) continue;
      ++compared;
      EXPECT_GT(*b->total_saving_ns, *a->total_saving_ns)
          << b->id << " saved " << mb << " ns measured, " << a->id << " " << ma << " ns; predicted "
          << *b->total_saving_ns << " and " << *a->total_saving_ns;
    }
  }
  EXPECT_GE(compared, 50);
}

// Trace mode: 27 declared pairs measured both ways (10 op benchmarks, the attention pairs, the
// transformer's 14 per-layer pairs and its sampling), every one predicted: median |error| 5.7%.
TEST(FusionRecorded, TraceRunMedianErrorAndRanking) {
  const FusionResult r = analyzeRecorded("model_trace_h200.fprof");
  EXPECT_TRUE(r.nvtx_convention);
  EXPECT_EQ(r.measured_pairs, 27);
  ASSERT_TRUE(r.median_abs_error);
  EXPECT_LT(*r.median_abs_error, 0.065);  // 5.7%
  for (const char* id : {"elementwise_chain", "residual_layernorm", "residual_rmsnorm", "matmul_relu", "matmul_bias",
                         "matmul_bias_relu", "matmul_bias_gelu", "matmul_bias_silu", "attention", "attention_causal",
                         "softmax_topk", "conv_bn_relu", "l0.qkv", "l0.attn", "l1.fc1", "sample"}) {
    const FusionCandidate* c = find(r, id);
    ASSERT_TRUE(c) << id;
    EXPECT_TRUE(c->fuse) << id << ": " << c->reason;
    ASSERT_TRUE(c->predicted_fused_ns) << id;
    EXPECT_EQ(*c->model, PredictionModel::kTrace) << id;
    ASSERT_TRUE(c->prediction_error) << id;
  }
  // Fixed cost and one intermediate read: the transformer's small pairs within 11%.
  for (const char* id : {"l0.res1", "l0.res2", "l1.res1", "l1.res2", "l0.qkv", "l1.qkv", "l0.fc1", "l1.fc1",
                         "l0.fc2", "l1.fc2", "l0.out_proj", "l1.out_proj"}) {
    EXPECT_LT(std::abs(*find(r, id)->prediction_error), 0.11) << id;
  }
  // Latency-bound stages (softmax statistics, top-k) keep their time in the trace model; the
  // fused kernels do them in one block's registers, so these pairs pay more than predicted.
  expectRankingFollowsMeasurement(r, {"softmax_topk", "sample"});
}

// Metrics mode: 16 pairs, every kernel with counters, the roofline model. 46.2% before.
TEST(FusionRecorded, MetricsRunMedianErrorAndRanking) {
  const FusionResult r = analyzeRecorded("model_metrics_h200.fprof");
  EXPECT_EQ(r.measured_pairs, 16);
  ASSERT_TRUE(r.median_abs_error);
  EXPECT_LT(*r.median_abs_error, 0.065);  // 4.6% on 2026-11-22
  for (const auto& c : r.candidates) {
    if (!c.measured_fused_ns) continue;
    EXPECT_EQ(c.model, PredictionModel::kRoofline) << c.id;
    EXPECT_LT(std::abs(*c.prediction_error), 0.25) << c.id;
  }
  expectRankingFollowsMeasurement(r, {});
}

// Held out: the same metrics-mode command on an H100 (its measured ceilings inside the file),
// recorded after the model's terms were chosen on the H200 files: 19 pairs, median 9.8%. The one
// ranking miss: matmul_bias_gelu is predicted to save 163 us and
// saved 83 us measured, so it ranks above residual_layernorm (149 us predicted, 176 us measured).
TEST(FusionRecorded, HeldOutH100MetricsRun) {
  const FusionResult r = analyzeRecorded("model_metrics_h100.fprof", "own");
  EXPECT_EQ(r.measured_pairs, 19);
  ASSERT_TRUE(r.median_abs_error);
  EXPECT_LT(*r.median_abs_error, 0.11);
  expectRankingFollowsMeasurement(r, {"matmul_bias_gelu"});
}

// The H100 pair (tests/data/README.md): trace mode and metrics mode (every launch signature
// profiled once, one-run application replay), each with the measured H100 ceilings of
// ceilings_h100.json and with the datasheet roofs `fprof report` uses where `fprof ceilings` never
// ran. Medians over 27 pairs: trace 2.3% / 2.5% (measured / datasheet), metrics 6.2% / 4.6%. As on
// the H200, the sampling pair's latency-bound stages pay more than the trace model predicts, so it
// ranks below the attention-layer pairs it out-saves.
TEST(FusionRecorded, H100TraceRun) {
  for (const char* ceilings : {"ceilings_h100.json", "datasheet"}) {
    const FusionResult r = analyzeRecorded("model_trace_h100.fprof", ceilings);
    EXPECT_EQ(r.measured_pairs, 27) << ceilings;
    ASSERT_TRUE(r.median_abs_error);
    EXPECT_LT(*r.median_abs_error, 0.04) << ceilings;
    expectRankingFollowsMeasurement(r, {"sample"});
  }
}

// The metrics recording (one-run application replay: hardware counters in the program's own run
// with the L2 emptied before each profiled launch, durations from that run's timeline): with the
// measured roofs the small transformer's GEMM-epilogue and attention-layer pairs (2-5 us kernels)
// come within 14%, median 6.2%; with the datasheet roofs 4.6%. The model's misses on it, named
// here: the fused softmax + top-k (8.42 us measured over its runs against 13.98 predicted with the
// datasheet roofs, 29.49 with the measured ones: a latency-bound kernel the roofline does not
// describe), the sampling pair (+44%), and with the datasheet roofs the two attentions (+58%,
// +64%: the fused wgmma attention runs faster than its roof share).
TEST(FusionRecorded, H100SampledMetricsRun) {
  const FusionResult measured_roofs = analyzeRecorded("model_metrics_sampled_h100.fprof", "ceilings_h100.json");
  EXPECT_EQ(measured_roofs.measured_pairs, 27);
  ASSERT_TRUE(measured_roofs.median_abs_error);
  EXPECT_LT(*measured_roofs.median_abs_error, 0.065);  // 6.2% on the recording of 2026-11-28
  const FusionResult datasheet = analyzeRecorded("model_metrics_sampled_h100.fprof", "datasheet");
  EXPECT_EQ(datasheet.measured_pairs, 27);
  ASSERT_TRUE(datasheet.median_abs_error);
  EXPECT_LT(*datasheet.median_abs_error, 0.065);  // 4.6% on the recording of 2026-11-28
  expectRankingFollowsMeasurement(datasheet, {"sample"});
}

}  // namespace
}  // namespace fprof::analysis
