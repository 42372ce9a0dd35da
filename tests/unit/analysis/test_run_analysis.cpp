// The analysis pipeline (run_analysis.h): each result is the one its step computes alone, computed
// once and shared by every caller, with or without the background thread, borrowed or owned, and
// a baseline gives its own analysis and the comparison.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fprof/analysis/run_analysis.h"
#include "fprof/core/merge.h"

namespace fprof::analysis {
namespace {

const std::string kData = std::string(FPROF_SOURCE_DIR) + "/tests/data/";

core::Profile loadPath(const std::string& path) {
  auto p = core::loadProfile(path);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error());
  return std::move(*p);
}

core::Profile load(const std::string& name) { return loadPath(kData + name); }

std::vector<std::string> candidateIds(const FusionResult& r) {
  std::vector<std::string> ids;
  for (const FusionCandidate& c : r.candidates) ids.push_back(c.id);
  return ids;
}

// The same framework ops, by name and kernels, and the same links between them.
void expectSameFrameworkOps(const FrameworkOps& got, const FrameworkOps& want) {
  ASSERT_EQ(got.ops.size(), want.ops.size());
  for (size_t o = 0; o < want.ops.size(); ++o) {
    EXPECT_EQ(got.ops[o].range.name, want.ops[o].range.name) << o;
    EXPECT_EQ(got.ops[o].kernels, want.ops[o].kernels) << o;
  }
  ASSERT_EQ(got.links.size(), want.links.size());
  for (size_t l = 0; l < want.links.size(); ++l) {
    EXPECT_EQ(got.links[l].producer, want.links[l].producer) << l;
    EXPECT_EQ(got.links[l].consumer, want.links[l].consumer) << l;
    EXPECT_EQ(got.links[l].input_shape, want.links[l].input_shape) << l;
  }
  EXPECT_EQ(got.region_names, want.region_names);
}

TEST(RunAnalysis, EachResultIsWhatItsStepComputes) {
  const core::Profile p = load("torch_proof_gpt_bf16_eager_h100.fprof");
  const RunAnalysis a = RunAnalysis::of(p);
  EXPECT_EQ(&a.profile(), &p);

  const RunSummary s = summarize(p);
  EXPECT_EQ(a.summary().kernel_count, s.kernel_count);
  EXPECT_EQ(a.summary().total_kernel_ns, s.total_kernel_ns);
  ASSERT_EQ(a.summary().groups.size(), s.groups.size());

  const RooflineResult roof = analyzeRoofline(p, s);
  ASSERT_EQ(a.roofline().kernel_groups.size(), roof.kernel_groups.size());
  for (size_t g = 0; g < roof.kernel_groups.size(); ++g) {
    EXPECT_EQ(a.roofline().kernel_groups[g].label, roof.kernel_groups[g].label);
    EXPECT_EQ(a.roofline().kernel_groups[g].placement.bound, roof.kernel_groups[g].placement.bound);
  }
  EXPECT_EQ(a.roofline().ops.size(), roof.ops.size());

  const OpIndex ops = indexOps(p);
  const FusionResult fusion = analyzeFusion(p, ops, analyzeDataFlow(p));
  EXPECT_EQ(candidateIds(a.fusion()), candidateIds(fusion));
  ASSERT_FALSE(fusion.candidates.empty());
  EXPECT_EQ(a.fusion().candidates.front().total_saving_ns, fusion.candidates.front().total_saving_ns);
  EXPECT_EQ(a.dataFlow().edges.size(), analyzeDataFlow(p).edges.size());
  EXPECT_EQ(a.frameworkOps().ops.size(), indexFrameworkOps(p).ops.size());

  const OriginTotals origins = sumByOrigin(p);
  EXPECT_EQ(a.origins().launches, origins.launches);
  EXPECT_EQ(a.origins().duration_ns, origins.duration_ns);
  for (size_t i = 0; i < p.kernels.size(); i += 97) {
    EXPECT_EQ(a.origin(i), classifyOrigin(p.str(p.kernels[i].demangled_id)));
  }

  CeilingCache cache(p);
  for (size_t i = 0; i < p.kernels.size(); i += 101) {
    const Placement direct = placeKernel(p, i, cache);
    const Placement piped = a.kernelPlacement(i);
    EXPECT_EQ(piped.bound, direct.bound);
    EXPECT_EQ(piped.reason, direct.reason);
    EXPECT_EQ(piped.roof_fraction, direct.roof_fraction);
  }
  EXPECT_EQ(a.coverage().kernels, counterCoverage(p).kernels);
  EXPECT_TRUE(a.ranks().empty());  // one process
  EXPECT_EQ(a.kernelNames().size(), KernelNames::of({&p}).size());
  EXPECT_EQ(a.baseline(), nullptr);
  EXPECT_EQ(a.comparison(), nullptr);
}

TEST(RunAnalysis, KernelOpsNameFrameworkOpsWithoutTheirIds) {
  const core::Profile p = load("torch_proof_gpt_bf16_emitnvtx_h100.fprof");
  const RunAnalysis a = RunAnalysis::of(p);
  const KernelOps& ops = a.kernelOps();
  ASSERT_EQ(ops.of_kernel.size(), p.kernels.size());
  bool matmul = false;
  for (const std::string& name : ops.names) {
    EXPECT_EQ(name.find("op_id"), std::string::npos) << name;
    matmul = matmul || name == "aten::matmul" || name == "aten::linear";
  }
  EXPECT_TRUE(matmul);
}

TEST(RunAnalysis, ComputedOnceForEveryCaller) {
  const core::Profile p = load("torch_mlp_eager_h100.fprof");
  const RunAnalysis a = RunAnalysis::of(p);
  std::vector<const FusionResult*> seen(4, nullptr);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < seen.size(); ++t) threads.emplace_back([&, t] { seen[t] = &a.fusion(); });
  for (std::thread& t : threads) t.join();
  for (const FusionResult* r : seen) EXPECT_EQ(r, &a.fusion());
  EXPECT_EQ(&a.summary(), &a.summary());
  EXPECT_EQ(&a.kernelOps(), &a.kernelOps());
}

TEST(RunAnalysis, WithoutTheBackgroundThreadTheSameFusion) {
  const core::Profile p = load("torch_mlp_eager_h100.fprof");
  AnalysisOptions lazy;
  lazy.fusion_in_background = false;
  EXPECT_EQ(candidateIds(RunAnalysis::of(p, nullptr, lazy).fusion()), candidateIds(RunAnalysis::of(p).fusion()));
}

TEST(RunAnalysis, OwnedProfileSurvivesAMove) {
  core::Profile p = load("torch_mlp_eager_h100.fprof");
  const size_t kernels = p.kernels.size();
  const std::vector<std::string> expected = candidateIds(RunAnalysis::of(p).fusion());
  RunAnalysis owned = RunAnalysis::owning(std::move(p));
  RunAnalysis moved = std::move(owned);  // the background work reads the state, which did not move
  EXPECT_EQ(moved.profile().kernels.size(), kernels);
  EXPECT_EQ(candidateIds(moved.fusion()), expected);
}

// Released launch tables: the same data flow and fusion as from the whole profile, and the
// profiles (the baseline's too) hold no launch arguments or memory events afterwards.
TEST(RunAnalysis, ReleasedLaunchTablesGiveTheSameDataFlow) {
  const core::Profile base = load("torch_mlp_eager_h100.fprof");
  const core::Profile cur = load("torch_mlp_compile_h100.fprof");
  ASSERT_FALSE(cur.kernel_args.empty());
  ASSERT_FALSE(cur.memory_events.empty());
  const RunAnalysis whole = RunAnalysis::of(cur, &base);
  AnalysisOptions release;
  release.release_launch_tables = true;
  const RunAnalysis owned = RunAnalysis::owning(core::Profile(cur), core::Profile(base), release);
  const DataFlow& want = whole.dataFlow();
  const DataFlow& got = owned.dataFlow();
  EXPECT_TRUE(got.have_args);
  EXPECT_TRUE(got.have_allocations);
  ASSERT_EQ(got.edges.size(), want.edges.size());
  for (size_t e = 0; e < want.edges.size(); ++e) {
    EXPECT_EQ(got.edges[e].producer, want.edges[e].producer);
    EXPECT_EQ(got.edges[e].consumer, want.edges[e].consumer);
    EXPECT_EQ(got.edges[e].bytes, want.edges[e].bytes);
  }
  EXPECT_EQ(got.accesses.size(), want.accesses.size());
  EXPECT_EQ(got.allocations.size(), want.allocations.size());
  EXPECT_EQ(candidateIds(owned.fusion()), candidateIds(whole.fusion()));
  EXPECT_EQ(candidateIds(owned.baseline()->fusion()), candidateIds(whole.baseline()->fusion()));
  EXPECT_EQ(owned.comparison()->fusions.applied.size(), whole.comparison()->fusions.applied.size());
  for (const RunAnalysis* a : {&owned, owned.baseline()}) {
    EXPECT_TRUE(a->profile().kernel_args.empty());
    EXPECT_TRUE(a->profile().memory_events.empty());
  }
  // Without the option an owning analysis keeps them.
  const RunAnalysis kept = RunAnalysis::owning(core::Profile(cur));
  EXPECT_EQ(kept.profile().kernel_args.size(), cur.kernel_args.size());
  EXPECT_EQ(kept.profile().memory_events.size(), cur.memory_events.size());
}

// The ranges go once the ops are indexed: the ops, the summary and fusion are what they are with
// the ranges kept, on a PyTorch run under emit_nvtx and on one marked with fprof's op convention.
TEST(RunAnalysis, ReleasedNvtxRangesGiveTheSameOps) {
  for (const char* file : {"torch_proof_gpt_bf16_emitnvtx_h100.fprof", "model_trace_h100.fprof"}) {
    SCOPED_TRACE(file);
    const core::Profile run = load(file);
    ASSERT_FALSE(run.nvtx_ranges.empty());
    const RunAnalysis whole = RunAnalysis::of(run);
    AnalysisOptions release;
    release.release_launch_tables = true;
    release.release_nvtx_ranges = true;
    const RunAnalysis owned = RunAnalysis::owning(core::Profile(run), std::nullopt, release);
    EXPECT_EQ(candidateIds(owned.fusion()), candidateIds(whole.fusion()));
    EXPECT_TRUE(owned.profile().nvtx_ranges.empty());
    EXPECT_EQ(owned.summary().nvtx_range_count, static_cast<int64_t>(run.nvtx_ranges.size()));
    EXPECT_EQ(owned.kernelOps().names, whole.kernelOps().names);
    EXPECT_EQ(owned.kernelOps().of_kernel, whole.kernelOps().of_kernel);
    EXPECT_EQ(owned.nvtxOps().ops.size(), whole.nvtxOps().ops.size());
    // Named, and linked, from the messages kept while the nested op ranges' went.
    expectSameFrameworkOps(owned.frameworkOps(), whole.frameworkOps());
    if (std::string_view(file).find("emitnvtx") != std::string_view::npos) {
      EXPECT_FALSE(whole.frameworkOps().links.empty());
    }
    // Asked only for the kernels' ops (the gate), without fusion: the ranges go all the same.
    AnalysisOptions ops_only = release;
    ops_only.fusion_in_background = false;
    const RunAnalysis named = RunAnalysis::owning(core::Profile(run), std::nullopt, ops_only);
    EXPECT_EQ(named.kernelOps().of_kernel, whole.kernelOps().of_kernel);
    EXPECT_EQ(named.kernelOps().names, whole.kernelOps().names);
    EXPECT_TRUE(named.profile().nvtx_ranges.empty());
    ASSERT_EQ(owned.opPlacements().size(), whole.opPlacements().size());
    for (size_t i = 0; i < whole.opPlacements().size(); ++i) {
      EXPECT_EQ(owned.opPlacements()[i].label, whole.opPlacements()[i].label);
      EXPECT_EQ(owned.opPlacements()[i].calls, whole.opPlacements()[i].calls);
    }
  }
  // With a baseline the comparison reads both runs' ranges: both are kept.
  const core::Profile base = load("torch_mlp_eager_h100.fprof");
  const core::Profile cur = load("torch_mlp_compile_h100.fprof");
  ASSERT_FALSE(base.nvtx_ranges.empty());
  ASSERT_FALSE(cur.nvtx_ranges.empty());
  AnalysisOptions release;
  release.release_nvtx_ranges = true;
  const RunAnalysis compared = RunAnalysis::owning(core::Profile(cur), core::Profile(base), release);
  ASSERT_NE(compared.comparison(), nullptr);
  EXPECT_EQ(compared.profile().nvtx_ranges.size(), cur.nvtx_ranges.size());
  EXPECT_EQ(compared.baseline()->profile().nvtx_ranges.size(), base.nvtx_ranges.size());
}

// A run loaded without its launch tables and NVTX messages, the analysis reading them from the
// file in its own time (the export and the report), gives the ops, links and fusion of a run
// loaded whole; on PyTorch runs under emit_nvtx (a training step among them), one with fprof's
// op convention and a compiled one.
TEST(RunAnalysis, MessagesAndTablesReadLaterGiveTheSameAnalysis) {
  for (const char* file : {"torch_proof_gpt_bf16_emitnvtx_h100.fprof", "model_trace_h100.fprof",
                           "torch_transformer_compile_h100.fprof", "torch_hfgpt2_train_step_nvtx_h100.fprof"}) {
    SCOPED_TRACE(file);
    const core::Profile run = load(file);
    const RunAnalysis whole = RunAnalysis::of(run);
    auto bare = core::loadProfile(kData + file, {.launch_tables = false, .nvtx_messages = false});
    ASSERT_TRUE(bare.ok()) << bare.error();
    AnalysisOptions release;
    release.release_launch_tables = true;
    release.release_nvtx_ranges = true;
    auto later = RunAnalysis::owningThenLoadingLaunchTables(std::move(*bare), release);
    ASSERT_TRUE(later.ok()) << later.error();
    const RunAnalysis& owned = *later;
    EXPECT_EQ(owned.kernelOps().names, whole.kernelOps().names);
    EXPECT_EQ(owned.kernelOps().of_kernel, whole.kernelOps().of_kernel);
    ASSERT_EQ(owned.nvtxOps().ops.size(), whole.nvtxOps().ops.size());
    expectSameFrameworkOps(owned.frameworkOps(), whole.frameworkOps());
    EXPECT_EQ(owned.summary().nvtx_range_count, whole.summary().nvtx_range_count);
    EXPECT_EQ(owned.dataFlow().edges.size(), whole.dataFlow().edges.size());
    EXPECT_EQ(candidateIds(owned.fusion()), candidateIds(whole.fusion()));
    ASSERT_EQ(owned.opPlacements().size(), whole.opPlacements().size());
    for (size_t i = 0; i < whole.opPlacements().size(); ++i) {
      EXPECT_EQ(owned.opPlacements()[i].label, whole.opPlacements()[i].label);
    }
    // Indexed without the launch tables (the gate): the same ops.
    auto bare_again = core::loadProfile(kData + file, {.launch_tables = false, .nvtx_messages = false});
    ASSERT_TRUE(bare_again.ok()) << bare_again.error();
    AnalysisOptions ops_only;
    ops_only.fusion_in_background = false;
    auto indexed = RunAnalysis::owningIndexed(std::move(*bare_again), ops_only);
    ASSERT_TRUE(indexed.ok()) << indexed.error();
    EXPECT_TRUE(indexed->profile().nvtx_ranges.empty());
    EXPECT_EQ(indexed->kernelOps().names, whole.kernelOps().names);
    EXPECT_EQ(indexed->kernelOps().of_kernel, whole.kernelOps().of_kernel);
  }
}

// The messages are read from the run's file: replaced after the load, the analysis is an error
// naming the cause, not another run's ops.
TEST(RunAnalysis, MessagesOfAReplacedFileAreAnError) {
  const std::string dir = std::string(FPROF_TEST_TMP) + "/run_analysis_messages";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/run.fprof";
  std::filesystem::copy_file(kData + "torch_mlp_eager_h100.fprof", path, std::filesystem::copy_options::overwrite_existing);
  auto bare = core::loadProfile(path, {.launch_tables = false, .nvtx_messages = false});
  ASSERT_TRUE(bare.ok()) << bare.error();
  auto bare_indexed = core::loadProfile(path, {.launch_tables = false, .nvtx_messages = false});
  ASSERT_TRUE(bare_indexed.ok()) << bare_indexed.error();
  std::filesystem::copy_file(kData + "torch_mlp_compile_h100.fprof", dir + "/other.fprof",
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::rename(dir + "/other.fprof", path);
  AnalysisOptions release;
  release.release_launch_tables = true;
  release.release_nvtx_ranges = true;
  auto later = RunAnalysis::owningThenLoadingLaunchTables(std::move(*bare), release);
  ASSERT_FALSE(later.ok());
  EXPECT_NE(later.error().find("changed while fprof was reading it"), std::string::npos) << later.error();
  // Without the launch tables to read, the messages alone find it out.
  auto indexed = RunAnalysis::owningIndexed(std::move(*bare_indexed));
  ASSERT_FALSE(indexed.ok());
  EXPECT_NE(indexed.error().find("changed while fprof was reading it"), std::string::npos) << indexed.error();
}

TEST(RunAnalysis, BaselineGivesItsAnalysisAndTheComparison) {
  const core::Profile base = load("torch_mlp_eager_h100.fprof");
  const core::Profile cur = load("torch_mlp_compile_h100.fprof");
  const RunAnalysis a = RunAnalysis::of(cur, &base);
  ASSERT_NE(a.baseline(), nullptr);
  EXPECT_EQ(&a.baseline()->profile(), &base);
  ASSERT_NE(a.comparison(), nullptr);
  const RunDiff d = diffProfiles(base, cur);
  ASSERT_EQ(a.comparison()->diff.kernels.size(), d.kernels.size());
  for (size_t i = 0; i < d.kernels.size(); ++i) EXPECT_EQ(a.comparison()->diff.kernels[i].name, d.kernels[i].name);
  EXPECT_EQ(a.comparison()->diff.base_total_ns, d.base_total_ns);
  // Names of both runs, shortened together.
  EXPECT_EQ(a.kernelNames().size(), KernelNames::of({&base, &cur}).size());
  EXPECT_EQ(a.comparison()->names.size(), KernelNames::of({&base, &cur}).size());
}

TEST(RunAnalysis, MergedJobHasARowPerRank) {
  const std::string dir = std::string(FPROF_TEST_TMP) + "/run_analysis";
  std::filesystem::create_directories(dir);
  const std::string merged = dir + "/allreduce_merged.fprof";
  std::filesystem::remove(merged);
  auto m = core::mergeDatabases(
      {kData + "torchrun_allreduce_h200x2.rank0.fprof", kData + "torchrun_allreduce_h200x2.rank1.fprof"}, merged);
  ASSERT_TRUE(m.ok()) << (m.ok() ? "" : m.error());
  const core::Profile p = loadPath(merged);
  const RunAnalysis a = RunAnalysis::of(p);
  ASSERT_EQ(a.ranks().size(), 2u);
  EXPECT_EQ(a.ranks()[0].total_kernel_ns, rankBreakdown(p)[0].total_kernel_ns);
}

}  // namespace
}  // namespace fprof::analysis
