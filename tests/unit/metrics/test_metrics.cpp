// Metric sets, the FLOP formulas (with values an H200 produced for kernels of known counts),
// metrics-mode settings and launch selection.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "fprof/core/metric_sets.h"
#include "fprof/core/sass_tensor.h"
#include "metrics/metrics_config.h"

namespace fprof::collector {
namespace {

TEST(MetricSets, BuiltinSetsNest) {
  auto memory = core::expandMetricSelection("memory");
  auto roofline = core::expandMetricSelection("roofline");
  auto full = core::expandMetricSelection("full");
  ASSERT_TRUE(memory.ok() && roofline.ok() && full.ok());
  EXPECT_EQ(memory->size(), 9u);
  EXPECT_EQ(roofline->size(), 23u);
  EXPECT_EQ(full->size(), 35u);
  // roofline counts local bytes with the SASS instrumentation instead of the L1 counters.
  for (const std::string& m : *memory) {
    const bool local = m == core::kLocalLoadBytesMetric || m == core::kLocalStoreBytesMetric;
    EXPECT_EQ(std::find(roofline->begin(), roofline->end(), m) != roofline->end(), !local) << m;
  }
  for (const std::string& m : *roofline) EXPECT_NE(std::find(full->begin(), full->end(), m), full->end()) << m;
}

TEST(MetricSets, CustomListsKeepOrderAndDropDuplicates) {
  auto list = core::expandMetricSelection(" dram__bytes_read.sum, gpu__time_duration.sum,dram__bytes_read.sum ");
  ASSERT_TRUE(list.ok()) << list.error();
  EXPECT_EQ(*list, (std::vector<std::string>{"dram__bytes_read.sum", "gpu__time_duration.sum"}));
}

TEST(MetricSets, TyposAreRejectedWithTheChoices) {
  auto bad = core::expandMetricSelection("rooflin");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(),
            "--metrics: 'rooflin' is neither a metric set (memory, roofline, full) nor a metric name such as "
            "dram__bytes_read.sum");
  EXPECT_FALSE(core::expandMetricSelection(",,").ok());
}

std::vector<double> valuesFor(const std::vector<std::string>& names, const std::map<std::string, double>& v) {
  std::vector<double> out;
  for (const std::string& n : names) out.push_back(v.count(n) ? v.at(n) : 0.0);
  return out;
}

// Raw values read on an H200 (git show 66625e7:bench/range_profiler_probe_h200.log), n = 2^24.
TEST(DerivedCounters, FlopsMatchAnalyticCountsExactly) {
  const auto names = *core::expandMetricSelection("roofline");
  const double n = 16777216;
  auto saxpy = core::deriveCounters(names, valuesFor(names, {{"sm__sass_thread_inst_executed_op_ffma_pred_on.sum", n}}));
  EXPECT_EQ(*saxpy.flops_fp32, 2 * n);
  EXPECT_EQ(*saxpy.flops_fp64, 0);
  auto addmul = core::deriveCounters(names, valuesFor(names, {{"sm__sass_thread_inst_executed_op_fadd_pred_on.sum", n},
                                                        {"sm__sass_thread_inst_executed_op_fmul_pred_on.sum", 2 * n}}));
  EXPECT_EQ(*addmul.flops_fp32, 3 * n);
  auto daxpy = core::deriveCounters(names, valuesFor(names, {{"sm__sass_thread_inst_executed_op_dfma_pred_on.sum", n}}));
  EXPECT_EQ(*daxpy.flops_fp64, 2 * n);
  // n HFMA2 instructions: packed (2 lanes), scalar or an immediate move; only the function's SASS
  // tells (core/sass_half.h), so the counters alone leave fp16 and bf16 FLOPs pending.
  auto haxpy2 = core::deriveCounters(names, valuesFor(names, {{"sm__sass_thread_inst_executed_op_hfma_pred_on.sum", n}}));
  EXPECT_FALSE(haxpy2.flops_fp16.has_value());
  EXPECT_FALSE(haxpy2.flops_bf16.has_value());
  EXPECT_EQ(haxpy2.half_flops_method, core::kHalfFlopsPending);
  EXPECT_EQ(*saxpy.flops_fp16, 0) << "no half instruction ran: exactly 0";
  // No tensor-pipe cycle and no DMMA: every tensor precision is exactly 0; integer ops are not in
  // the roofline set.
  EXPECT_EQ(*saxpy.flops_tensor_fp16, 0);
  EXPECT_EQ(*saxpy.flops_tensor_fp64, 0);
  EXPECT_FALSE(saxpy.ops_tensor_int8.has_value());
  EXPECT_EQ(saxpy.tensor_flops_method, "");
  // Tensor-pipe cycles: FLOPs wait for the function's SASS (core/sass_tensor.h).
  auto hgemm = core::deriveCounters(names, valuesFor(names, {{core::kTensorCyclesMetric, 786432}}));
  EXPECT_FALSE(hgemm.flops_tensor_fp16.has_value());
  EXPECT_EQ(hgemm.tensor_flops_method, core::kTensorFlopsPending);
  // cuBLAS GEMM 1024x768x512 in fp16 under `full`: the ops_path counter read 2*M*N*K, and it wins
  // over the cycles.
  const auto full = *core::expandMetricSelection("full");
  auto gemm = core::deriveCounters(
      full, valuesFor(full, {{"sm__ops_path_tensor_src_fp16.sum", 805306368}, {core::kTensorCyclesMetric, 786432}}));
  EXPECT_EQ(*gemm.flops_tensor_fp16, 2.0 * 1024 * 768 * 512);
  EXPECT_EQ(gemm.tensor_flops_method, "");
}

TEST(DerivedCounters, LocalBytesFromTheL1CounterOrTheSassSectors) {
  // localArray of tests/gpu_metrics on an H200: 4194304 load sectors, 33554432 store sectors.
  const std::vector<std::string> sass = {core::kLocalLoadSectorsSassMetric, core::kLocalStoreSectorsSassMetric};
  auto a = core::deriveCounters(sass, {4194304, 33554432});
  EXPECT_EQ(*a.local_load_bytes, 134217728);
  EXPECT_EQ(*a.local_store_bytes, 1073741824);
  const std::vector<std::string> both = {core::kLocalLoadBytesMetric, core::kLocalLoadSectorsSassMetric};
  EXPECT_EQ(*core::deriveCounters(both, {1000, 2}).local_load_bytes, 1000) << "the L1 counter where collected";
  EXPECT_FALSE(core::deriveCounters({"dram__bytes_read.sum"}, {1}).local_load_bytes.has_value());
}

TEST(DerivedCounters, L2BytesAreTheSmsSectorsWhereCollected) {
  // A streaming kernel on an H100 (bench/RESULTS.md): 196,609 sectors from the
  // SMs, 10,846,784 bytes counted by every L2 slice (the SMs' requests and one partition's forwarding
  // to the other).
  const std::vector<std::string> both = {core::kL2BytesMetric, core::kL2SmSectorsMetric};
  EXPECT_EQ(*core::deriveCounters(both, {10846784, 196609}).l2_bytes, 196609 * 32.0);
  EXPECT_EQ(*core::deriveCounters({core::kL2BytesMetric}, {10846784}).l2_bytes, 10846784)
      << "a custom list or an older recording: every request the L2 counted";
  EXPECT_FALSE(core::deriveCounters({"dram__bytes_read.sum"}, {1}).l2_bytes.has_value());
  for (const char* set : {"memory", "roofline", "full"}) {
    const auto names = *core::expandMetricSelection(set);
    EXPECT_NE(std::find(names.begin(), names.end(), core::kL2SmSectorsMetric), names.end()) << set;
    EXPECT_NE(std::find(names.begin(), names.end(), core::kL2BytesMetric), names.end()) << set;
  }
}

TEST(DerivedCounters, WhatWasNotCollectedStaysUnknown) {
  const std::vector<std::string> names = {"dram__bytes_read.sum", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
                                          "sm__warps_active.avg.pct_of_peak_sustained_active"};
  auto c = core::deriveCounters(names, {1000, 5, 62.5});
  EXPECT_EQ(*c.dram_read_bytes, 1000);
  EXPECT_FALSE(c.dram_write_bytes.has_value());
  EXPECT_EQ(*c.dramBytes(), 1000);
  EXPECT_FALSE(c.flops_fp32.has_value()) << "fadd and fmul missing: a partial sum would mislead";
  EXPECT_DOUBLE_EQ(*c.achieved_occupancy, 0.625);
  EXPECT_FALSE(c.flops_tensor_fp16.has_value());
  EXPECT_FALSE(c.gpu_time_ns.has_value());
}

EnvLookup envOf(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(MetricsConfig, OffUnlessModeIsMetrics) {
  EXPECT_FALSE(readMetricsConfig(envOf({})).enabled);
  EXPECT_FALSE(readMetricsConfig(envOf({{"FPROF_MODE", "trace"}})).enabled);
  MetricsConfig c = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}}));
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.selection, "roofline");
  EXPECT_EQ(c.metrics.size(), 23u);
  EXPECT_TRUE(c.errors.empty());
}

TEST(MetricsConfig, ReadsEverySetting) {
  MetricsConfig c = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"},
                                             {"FPROF_METRICS", "memory"},
                                             {"FPROF_KERNEL_REGEX", "gemm|attention"},
                                             {"FPROF_NVTX_INCLUDE", "layer=3,decode"},
                                             {"FPROF_OPS", "matmul_bias_relu"},
                                             {"FPROF_LAUNCH_SKIP", "10"},
                                             {"FPROF_LAUNCH_COUNT", "5"},
                                             {"FPROF_SAMPLES_PER_LAUNCH_KIND", "0"},
                                             {"FPROF_CACHE_CONTROL", "none"},
                                             {"FPROF_CUBIN_DIR", "/tmp/run.cubins"},
                                             {"FPROF_DEBUG_RANGES", "1"}}));
  EXPECT_TRUE(c.errors.empty());
  EXPECT_EQ(c.metrics.size(), 9u);
  EXPECT_EQ(c.kernel_regex, "gemm|attention");
  EXPECT_EQ(c.nvtx_include, (std::vector<std::string>{"layer=3", "decode"}));
  EXPECT_EQ(c.ops, (std::vector<std::string>{"matmul_bias_relu"}));
  EXPECT_EQ(c.launch_skip, 10u);
  EXPECT_EQ(c.launch_count, 5u);
  EXPECT_EQ(c.samples_per_signature, 0u);
  EXPECT_EQ(c.cache_control, CacheControl::kNone);
  EXPECT_EQ(c.cubin_dir, "/tmp/run.cubins");
  EXPECT_TRUE(c.debug_ranges);
}

TEST(MetricsConfig, BadSettingsAreNamed) {
  MetricsConfig c = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"},
                                             {"FPROF_KERNEL_REGEX", "(unclosed"},
                                             {"FPROF_LAUNCH_COUNT", "0"},
                                             {"FPROF_LAUNCH_SKIP", "-3"}}));
  ASSERT_EQ(c.errors.size(), 3u);
  EXPECT_EQ(c.errors[0].rfind("FPROF_KERNEL_REGEX '(unclosed' is not a valid regular expression", 0), 0u);
  EXPECT_EQ(c.errors[1], "FPROF_LAUNCH_SKIP='-3' is not an integer >= 0");
  EXPECT_EQ(c.errors[2], "FPROF_LAUNCH_COUNT='0' is not an integer >= 1");
}

TEST(MetricsConfig, ReplayIsKernelApplicationAutoOrSassPatching) {
  EXPECT_EQ(readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}})).replay, ReplayMode::kAuto);
  EXPECT_EQ(readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}, {"FPROF_REPLAY", "kernel"}})).replay,
            ReplayMode::kKernel);
  EXPECT_EQ(readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}, {"FPROF_REPLAY", "application"}})).replay,
            ReplayMode::kApplication);
  MetricsConfig bad = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}, {"FPROF_REPLAY", "user"}}));
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(bad.errors[0], "FPROF_REPLAY='user' is not kernel, application, auto or sass_patching");
}

TEST(MetricsConfig, SecondRunOfApplicationReplayIsKnown) {
  EXPECT_FALSE(readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}})).second_run);
  EXPECT_TRUE(readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}, {"FPROF_SECOND_RUN", "1"}})).second_run);
  EXPECT_FALSE(readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}, {"FPROF_SECOND_RUN", "0"}})).second_run);
  const MetricsConfig yes = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}, {"FPROF_SECOND_RUN", "yes"}}));
  ASSERT_EQ(yes.errors.size(), 1u);
  EXPECT_EQ(yes.errors[0], "FPROF_SECOND_RUN='yes' is not 0 or 1");
}

// The second run of application replay counts by SASS patching: only the counters per-PC counts
// give, and only with a file for them.
TEST(MetricsConfig, SassPatchingTakesTheSassCountersItCanDeriveAndAFile) {
  const std::string sass_part =
      "sm__sass_thread_inst_executed_op_ffma_pred_on.sum,sm__sass_l1tex_t_sectors_pipe_lsu_mem_local_op_st.sum,"
      "smsp__sass_inst_executed.sum";
  MetricsConfig ok = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"},
                                              {"FPROF_REPLAY", "sass_patching"},
                                              {"FPROF_METRICS", sass_part.c_str()},
                                              {"FPROF_SASS_PC_FILE", "/tmp/x.pcs"}}));
  EXPECT_TRUE(ok.errors.empty()) << ok.errors.front();
  EXPECT_EQ(ok.replay, ReplayMode::kSassPatching);
  EXPECT_EQ(ok.sass_pc_file, "/tmp/x.pcs");
  MetricsConfig no_file = readMetricsConfig(
      envOf({{"FPROF_MODE", "metrics"}, {"FPROF_REPLAY", "sass_patching"}, {"FPROF_METRICS", sass_part.c_str()}}));
  ASSERT_EQ(no_file.errors.size(), 1u);
  EXPECT_NE(no_file.errors[0].find("FPROF_SASS_PC_FILE"), std::string::npos);
  MetricsConfig bytes = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"},
                                                 {"FPROF_REPLAY", "sass_patching"},
                                                 {"FPROF_METRICS", "roofline"},
                                                 {"FPROF_SASS_PC_FILE", "/tmp/x.pcs"}}));
  ASSERT_EQ(bytes.errors.size(), 1u);
  EXPECT_EQ(bytes.errors[0], "FPROF_REPLAY=sass_patching cannot count dram__bytes_read.sum");
}

// Duplicates of the profiled launches in the first run of application replay: asked for by
// FPROF_SASS_DUPLICATE=1 (their per-PC counts go beside the process's own database).
TEST(MetricsConfig, DuplicatesInTheFirstRunAreAskedFor) {
  MetricsConfig on = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"},
                                              {"FPROF_REPLAY", "application"},
                                              {"FPROF_METRICS", "dram__bytes_read.sum"},
                                              {"FPROF_SASS_DUPLICATE", "1"}}));
  EXPECT_TRUE(on.errors.empty()) << on.errors.front();
  EXPECT_TRUE(on.sass_duplicate);
  EXPECT_FALSE(readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}, {"FPROF_METRICS", "dram__bytes_read.sum"}}))
                   .sass_duplicate);
}

// Application replay counts each launch with a profiler session kept open unless
// FPROF_PROFILER_SESSION=range asks for a range profiler start and stop each; other values are named.
TEST(MetricsConfig, ProfilerSessionIsToggledUnlessRangeIsAsked) {
  auto withSession = [](const char* value) {
    std::map<std::string, std::string> env{{"FPROF_MODE", "metrics"}, {"FPROF_METRICS", "dram__bytes_read.sum"}};
    if (value != nullptr) env["FPROF_PROFILER_SESSION"] = value;
    return readMetricsConfig(envOf(env));
  };
  EXPECT_TRUE(withSession(nullptr).toggled_session);
  EXPECT_TRUE(withSession("toggled").toggled_session);
  EXPECT_FALSE(withSession("range").toggled_session);
  const MetricsConfig bad = withSession("sometimes");
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_NE(bad.errors.front().find("FPROF_PROFILER_SESSION='sometimes'"), std::string::npos);
}

// The ranks of one run (torchrun, mpirun, srun) write their per-PC counts apart, named as `fprof
// run` pairs them with each rank's database.
TEST(MetricsConfig, EachRankWritesItsOwnPcFile) {
  const std::string sass_part = "smsp__sass_inst_executed.sum";
  auto pcFileWith = [&](std::map<std::string, std::string> env) {
    env.insert({{"FPROF_MODE", "metrics"},
                {"FPROF_REPLAY", "sass_patching"},
                {"FPROF_METRICS", sass_part},
                {"FPROF_SASS_PC_FILE", "/tmp/x.pcs"}});
    return readMetricsConfig(envOf(env)).sass_pc_file;
  };
  EXPECT_EQ(pcFileWith({}), "/tmp/x.pcs");
  EXPECT_EQ(pcFileWith({{"RANK", "3"}}), "/tmp/x.pcs.rank3");
  EXPECT_EQ(pcFileWith({{"OMPI_COMM_WORLD_RANK", "1"}}), "/tmp/x.pcs.rank1");
  EXPECT_EQ(sassPcFileOfRank("a.pcs", std::nullopt), "a.pcs");
}

// Application replay counts the program's own run: one pass, and no SASS-instrumented counter
// (they read 0 or too little without kernel replay: docs/metrics.md).
TEST(MetricsConfig, ApplicationReplayOnlyWhereOnePassWithoutSassCounters) {
  const std::vector<std::string> memory = *fprof::core::expandMetricSelection("memory");
  const std::vector<std::string> roofline = *fprof::core::expandMetricSelection("roofline");
  std::string error;
  EXPECT_EQ(chooseReplay(ReplayMode::kAuto, memory, 1, error), ReplayMode::kApplication);
  EXPECT_EQ(chooseReplay(ReplayMode::kAuto, roofline, 2, error), ReplayMode::kKernel);
  EXPECT_EQ(chooseReplay(ReplayMode::kAuto, memory, 2, error), ReplayMode::kKernel);
  EXPECT_EQ(chooseReplay(ReplayMode::kKernel, memory, 1, error), ReplayMode::kKernel);
  EXPECT_TRUE(error.empty());
  EXPECT_EQ(chooseReplay(ReplayMode::kApplication, roofline, 1, error), std::nullopt);
  EXPECT_NE(error.find("cannot count sm__sass_"), std::string::npos) << error;
  error.clear();
  EXPECT_EQ(chooseReplay(ReplayMode::kApplication, memory, 3, error), std::nullopt);
  EXPECT_NE(error.find("these metrics take 3"), std::string::npos) << error;
  EXPECT_TRUE(fprof::core::isSassInstrumented("smsp__sass_inst_executed.sum"));
  EXPECT_FALSE(fprof::core::isSassInstrumented("smsp__inst_executed.sum"));
}

LaunchFacts facts(const std::string& name, const std::string* path = nullptr) {
  LaunchFacts f;
  f.demangled_name = name;
  f.nvtx_path = path;
  return f;
}

LaunchDecision kindOf(LaunchSelector& s, const LaunchFacts& f) { return s.decide(f).kind; }

TEST(LaunchSelector, RegexSkipAndCount) {
  MetricsConfig c = readMetricsConfig(envOf(
      {{"FPROF_MODE", "metrics"}, {"FPROF_KERNEL_REGEX", "gemm"}, {"FPROF_LAUNCH_SKIP", "1"}, {"FPROF_LAUNCH_COUNT", "2"}}));
  LaunchSelector s(c);
  Decision d = s.decide(facts("relu_kernel(float*)"));
  EXPECT_EQ(d.kind, LaunchDecision::kSkipFiltered);
  EXPECT_EQ(d.reason, "not selected (--kernel-regex)");
  d = s.decide(facts("sgemm_128x64(float const*)"));  // skipped: 1st match
  EXPECT_EQ(d.kind, LaunchDecision::kSkipFiltered);
  EXPECT_EQ(d.reason, "not selected (--launch-skip)");
  EXPECT_EQ(kindOf(s, facts("sgemm_128x64(float const*)")), LaunchDecision::kProfile);
  EXPECT_EQ(kindOf(s, facts("relu_kernel(float*)")), LaunchDecision::kSkipFiltered);
  EXPECT_EQ(kindOf(s, facts("hgemm(half*)")), LaunchDecision::kProfile);
  EXPECT_TRUE(s.exhausted());
  d = s.decide(facts("hgemm(half*)"));
  EXPECT_EQ(d.kind, LaunchDecision::kSkipFiltered);
  EXPECT_EQ(d.reason, "not selected (--launch-count reached)");
  EXPECT_EQ(s.profiled(), 2u);
}

TEST(LaunchSelector, OpsMatchWholeTokens) {
  MetricsConfig c = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}, {"FPROF_OPS", "matmul"}}));
  LaunchSelector s(c);
  const std::string exact = "fprof::op=matmul_bias variant=unfused/fprof::op=matmul variant=unfused";
  const std::string prefix_only = "fprof::op=matmul_bias variant=fused pair=p";
  const std::string none;
  EXPECT_EQ(kindOf(s, facts("k", &exact)), LaunchDecision::kProfile);
  EXPECT_EQ(kindOf(s, facts("k", &prefix_only)), LaunchDecision::kSkipFiltered);
  EXPECT_EQ(kindOf(s, facts("k", &none)), LaunchDecision::kSkipFiltered);
  EXPECT_EQ(s.decide(facts("k")).reason, "not selected (--ops)");
}

TEST(LaunchSelector, NvtxIncludeIsAnySubstring) {
  MetricsConfig c = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}, {"FPROF_NVTX_INCLUDE", "decode,layer=3"}}));
  LaunchSelector s(c);
  const std::string a = "fprof::op=prefill/fprof::op=layer layer=3";
  const std::string b = "fprof::op=prefill/fprof::op=layer layer=4";
  EXPECT_EQ(kindOf(s, facts("k", &a)), LaunchDecision::kProfile);
  EXPECT_EQ(s.decide(facts("k", &b)).reason, "not selected (--nvtx-include)");
}

TEST(LaunchSelector, NvtxIncludeOpenOnAnotherThreadSelectsUnderProcessScope) {
  MetricsConfig c = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}, {"FPROF_NVTX_INCLUDE", "train_step"}}));
  EXPECT_TRUE(c.nvtx_process_scope);  // the default
  const std::string none;
  LaunchFacts backward = facts("k", &none);  // autograd's thread: no range of its own
  backward.selected_elsewhere = true;        // the main thread is inside "train_step i=3"
  LaunchSelector process(c);
  EXPECT_EQ(kindOf(process, backward), LaunchDecision::kProfile);
  backward.selected_elsewhere = false;
  EXPECT_EQ(process.decide(backward).reason, "not selected (--nvtx-include)");

  MetricsConfig t = readMetricsConfig(
      envOf({{"FPROF_MODE", "metrics"}, {"FPROF_NVTX_INCLUDE", "train_step"}, {"FPROF_NVTX_SCOPE", "thread"}}));
  EXPECT_TRUE(t.errors.empty());
  EXPECT_FALSE(t.nvtx_process_scope);
  LaunchSelector thread(t);
  backward.selected_elsewhere = true;
  EXPECT_EQ(thread.decide(backward).reason, "not selected (--nvtx-include)");
}

TEST(MetricsConfig, NvtxScopeIsProcessOrThread) {
  MetricsConfig c = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}, {"FPROF_NVTX_SCOPE", "global"}}));
  ASSERT_EQ(c.errors.size(), 1u);
  EXPECT_EQ(c.errors[0], "FPROF_NVTX_SCOPE='global' is not process or thread");
  EXPECT_TRUE(nvtxPathIncluded(c, "anything"));  // no --nvtx-include: every path
}

TEST(LaunchSelector, UnsafeKernelsAreNeverReplayedAndSayWhy) {
  MetricsConfig c = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}}));
  LaunchSelector s(c);
  Decision d = s.decide(facts("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_EQ(d.kind, LaunchDecision::kSkipUnsafe);
  EXPECT_EQ(d.reason, "NCCL kernel: not replayed (it waits on other ranks)");
  LaunchFacts graph = facts("");
  graph.graph_launch = true;
  EXPECT_EQ(s.decide(graph).kind, LaunchDecision::kSkipUnsafe);
  EXPECT_EQ(s.profiled(), 0u);
  // Kernel replay re-runs a cooperative kernel's grid.sync correctly (one range each, checked on an
  // H100 with bench/probes, in git at commit 66625e7), so cooperative launches are profiled.
  LaunchFacts coop = facts("grid_sync_kernel()");
  coop.cooperative = true;
  EXPECT_EQ(s.decide(coop).kind, LaunchDecision::kProfile);
}

TEST(LaunchSelector, GraphLaunchesPassTheRangeFiltersAndCountNothing) {
  MetricsConfig c = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"},
                                            {"FPROF_KERNEL_REGEX", "gemm"},
                                            {"FPROF_NVTX_INCLUDE", "step"},
                                            {"FPROF_LAUNCH_COUNT", "1"}}));
  LaunchSelector s(c);
  const std::string inside = "train step=3", outside = "warmup";
  LaunchFacts graph = facts("", &inside);  // a graph launch names no kernel: the regex is for its sources
  graph.graph_launch = true;
  Decision d = s.decideGraphLaunch(graph);
  EXPECT_EQ(d.kind, LaunchDecision::kGraph);
  EXPECT_EQ(d.reason, kGraphKernelReason);
  graph.nvtx_path = &outside;
  d = s.decideGraphLaunch(graph);
  EXPECT_EQ(d.kind, LaunchDecision::kSkipFiltered);
  EXPECT_EQ(d.reason, "not selected (--nvtx-include)");
  EXPECT_FALSE(s.exhausted()) << "graph launches are not selected launches";
  EXPECT_EQ(kindOf(s, facts("sgemm", &inside)), LaunchDecision::kProfile);
  EXPECT_TRUE(s.exhausted());
}

LaunchFacts signed_facts(const std::string& name, uint64_t signature) {
  LaunchFacts f = facts(name);
  f.signature = signature;
  return f;
}

TEST(LaunchSelector, EachSignatureIsProfiledOnceThenCopied) {
  MetricsConfig c = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}}));
  ASSERT_EQ(c.samples_per_signature, 1u);
  LaunchSelector s(c);
  EXPECT_EQ(kindOf(s, signed_facts("axpy", 1)), LaunchDecision::kProfile);  // index 0
  EXPECT_EQ(kindOf(s, signed_facts("relu", 2)), LaunchDecision::kProfile);  // index 1
  Decision d = s.decide(signed_facts("axpy", 1));                            // index 2
  EXPECT_EQ(d.kind, LaunchDecision::kCopy);
  EXPECT_EQ(d.source_index, 0u);
  EXPECT_EQ(d.launch_index, 2u);
  d = s.decide(signed_facts("relu", 2));
  EXPECT_EQ(d.kind, LaunchDecision::kCopy);
  EXPECT_EQ(d.source_index, 1u);
  EXPECT_EQ(kindOf(s, facts("unknown signature")), LaunchDecision::kProfile) << "no signature: always profiled";
  EXPECT_EQ(kindOf(s, facts("unknown signature")), LaunchDecision::kProfile);
  EXPECT_EQ(s.profiled(), 4u);
  EXPECT_EQ(s.copied(), 2u);
}

LaunchFacts loose_facts(uint64_t signature, uint64_t loose) {
  LaunchFacts f = signed_facts("vectorized_elementwise_kernel", signature);
  f.loose_signature = loose;
  return f;
}

TEST(LaunchSelector, OneByteParametersAreCheckedOnceThenIgnoredOrKept) {
  MetricsConfig c = readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}}));
  LaunchSelector s(c);
  // PyTorch's capture-less lambda: same launch, another stack byte in its 1-byte parameter.
  Decision d = s.decide(loose_facts(10, 100));
  EXPECT_EQ(d.kind, LaunchDecision::kProfile);
  EXPECT_FALSE(d.loose_check);
  const uint64_t first = d.launch_index;
  d = s.decide(loose_facts(11, 100));
  EXPECT_EQ(d.kind, LaunchDecision::kProfile) << "the check";
  ASSERT_TRUE(d.loose_check);
  EXPECT_EQ(*d.loose_check, 100u);
  EXPECT_EQ(d.loose_first_signature, 10u);
  d = s.decide(loose_facts(12, 100));
  EXPECT_EQ(d.kind, LaunchDecision::kProfile) << "no answer yet: the full signature decides";
  EXPECT_FALSE(d.loose_check) << "one check per loose signature";
  EXPECT_FALSE(s.looseSame(100));
  s.looseChecked(100, true);
  EXPECT_TRUE(s.looseSame(100));
  d = s.decide(loose_facts(13, 100));
  EXPECT_EQ(d.kind, LaunchDecision::kCopy);
  EXPECT_EQ(d.source_index, first);

  // A 1-byte parameter that changes the work (a bool flag): the check says so, full signatures rule.
  d = s.decide(loose_facts(20, 200));
  d = s.decide(loose_facts(21, 200));
  ASSERT_TRUE(d.loose_check);
  s.looseChecked(200, false);
  d = s.decide(loose_facts(22, 200));
  EXPECT_EQ(d.kind, LaunchDecision::kProfile);
  EXPECT_FALSE(d.loose_check);
  const uint64_t own = d.launch_index;
  d = s.decide(loose_facts(22, 200));
  EXPECT_EQ(d.kind, LaunchDecision::kCopy);
  EXPECT_EQ(d.source_index, own);

  // No 1-byte parameters: the loose signature is the signature, nothing to check.
  d = s.decide(loose_facts(30, 30));
  d = s.decide(loose_facts(31, 31));
  EXPECT_EQ(d.kind, LaunchDecision::kProfile);
  EXPECT_FALSE(d.loose_check);
}

TEST(LaunchSelector, SamplesPerSignatureAndEveryLaunch) {
  LaunchSelector two(readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}, {"FPROF_SAMPLES_PER_LAUNCH_KIND", "2"}})));
  EXPECT_EQ(kindOf(two, signed_facts("k", 7)), LaunchDecision::kProfile);
  EXPECT_EQ(kindOf(two, signed_facts("k", 7)), LaunchDecision::kProfile);
  Decision d = two.decide(signed_facts("k", 7));
  EXPECT_EQ(d.kind, LaunchDecision::kCopy);
  EXPECT_EQ(d.source_index, 0u) << "copies come from the first sample";
  LaunchSelector every(readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}, {"FPROF_SAMPLES_PER_LAUNCH_KIND", "0"}})));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(kindOf(every, signed_facts("k", 7)), LaunchDecision::kProfile);
}

TEST(LaunchSelector, LaunchCountCountsCopiedLaunchesToo) {
  LaunchSelector s(readMetricsConfig(envOf({{"FPROF_MODE", "metrics"}, {"FPROF_LAUNCH_COUNT", "3"}})));
  EXPECT_EQ(kindOf(s, signed_facts("k", 7)), LaunchDecision::kProfile);
  EXPECT_EQ(kindOf(s, signed_facts("k", 7)), LaunchDecision::kCopy);
  EXPECT_EQ(kindOf(s, signed_facts("k", 7)), LaunchDecision::kCopy);
  EXPECT_EQ(kindOf(s, signed_facts("k", 7)), LaunchDecision::kSkipFiltered);
}

}  // namespace
}  // namespace fprof::collector
