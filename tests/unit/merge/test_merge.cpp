// fprof merge at the core and analysis level: rows and ids of a merged database, analysis per rank
// equal to the unmerged inputs, merged files merged again, per-process metadata, and the refusals
// (corrupt, newer, the same file twice, the output among the inputs) that leave nothing behind.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include "fprof/analysis/ranks.h"
#include "fprof/analysis/summary.h"
#include "fprof/core/merge.h"
#include "fprof/core/schema.h"
#include "fprof/core/store.h"
#include "merge_checks.h"
#include "rank_fixture.h"

namespace fprof {
namespace {

namespace fs = std::filesystem;
using testing::expectMergeKeepsEveryRow;
using testing::expectRanksMatchInputs;

// A fresh directory per test, so "nothing left behind" can be checked by listing it.
std::string freshDir(const std::string& name) {
  const std::string dir = std::string(FPROF_TEST_TMP) + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

void execSql(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

TEST(Merge, KeepsEveryRowWithUniqueIds) {
  const std::string dir = freshDir("rows");
  const auto inputs = testing::writeThreeRanks(dir);
  ASSERT_EQ(inputs.size(), 3u);
  const std::string out = dir + "/job.fprof";
  auto r = core::mergeDatabases(inputs, out);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->processes, 3);
  EXPECT_EQ(r->kernels, 3 * 3 * testing::kKernelsPerStep);
  EXPECT_TRUE(r->notes.empty());
  expectMergeKeepsEveryRow(inputs, out);

  auto p = core::loadProfile(out);
  ASSERT_TRUE(p.ok()) << p.error();
  // The same pid and correlation ids in every input: the new process ids keep them apart.
  ASSERT_EQ(p->processes.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(p->processes[i].id, i + 1);
    EXPECT_EQ(p->processes[i].pid, 4242);
    EXPECT_EQ(p->processes[i].rank, static_cast<int>(i));
  }
  EXPECT_EQ(p->processes[2].host, "nodeB");
  EXPECT_EQ(p->processes[2].local_rank, 0);
  // Kernel ids 1..27, NVTX ids 1..N without holes: each input moved above the previous one.
  std::set<int64_t> kernel_ids;
  for (const core::KernelRow& k : p->kernels) kernel_ids.insert(k.id);
  EXPECT_EQ(*kernel_ids.begin(), 1);
  EXPECT_EQ(*kernel_ids.rbegin(), 27);
  std::set<uint64_t> range_ids;
  for (const core::NvtxRangeRow& n : p->nvtx_ranges) range_ids.insert(n.key);
  EXPECT_EQ(range_ids.size(), p->nvtx_ranges.size());
  EXPECT_EQ(*range_ids.rbegin(), p->nvtx_ranges.size());
  // Counters only on the metrics rank's kernels (not its NCCL ones), with their raw metrics.
  EXPECT_EQ(p->counters.size(), 6u);
  EXPECT_EQ(p->metrics.size(), 12u);
  for (const core::KernelCounters& c : p->counters) {
    auto k = std::find_if(p->kernels.begin(), p->kernels.end(), [&](const core::KernelRow& x) { return x.id == c.kernel_id; });
    ASSERT_NE(k, p->kernels.end());
    EXPECT_EQ(k->process_id, 3u);
  }
  // Ceilings: the two H200 ranks' identical DRAM roof once; the H100's with its device.
  ASSERT_EQ(p->ceilings.size(), 2u);
  EXPECT_EQ(p->ceilings[0].device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(p->ceilings[0].value, 3.0e12);
  EXPECT_EQ(p->ceilings[1].device_name, "NVIDIA H200");
  EXPECT_EQ(p->ceilings[1].value, 4.5e12);
  // Mode per process, honest: top level says the processes differ.
  EXPECT_EQ(p->meta("mode"), "mixed");
  EXPECT_EQ(core::processMeta(*p, 1, "mode"), "trace");
  EXPECT_EQ(core::processMeta(*p, 2, "mode"), "trace");
  EXPECT_EQ(core::processMeta(*p, 3, "mode"), "metrics");
  EXPECT_EQ(core::processMeta(*p, 3, "metric_set"), "roofline");
  EXPECT_EQ(core::processMeta(*p, 1, "merged_from"), "job.rank0.fprof");
  EXPECT_EQ(p->meta("fprof_version"), "0.1.0");  // all agree
  EXPECT_EQ(p->meta("dropped_records"), "0");
  EXPECT_EQ(p->meta("start_unix_ns"), "1780000000000000000");  // the fixture's ranks agree on it
}

TEST(Merge, GraphLaunchCountersKeepTheirProcess) {
  const std::string dir = freshDir("graph_launches");
  const auto inputs = testing::writeThreeRanks(dir);
  ASSERT_EQ(inputs.size(), 3u);
  // The metrics rank (the third input, process 1 in its own file) counted one graph launch whole.
  execSql(inputs[2],
          "INSERT INTO graph_launch_counter(process_id, correlation_id, dram_read_bytes) VALUES (1, 5, 100.0);"
          "INSERT OR IGNORE INTO string(id, value) VALUES (9999, 'dram__bytes_read.sum');"
          "INSERT INTO graph_launch_metric(process_id, correlation_id, metric_id, value) "
          "SELECT 1, 5, id, 100.0 FROM string WHERE value = 'dram__bytes_read.sum';");
  const std::string out = dir + "/job.fprof";
  auto r = core::mergeDatabases(inputs, out);
  ASSERT_TRUE(r.ok()) << r.error();
  auto p = core::loadProfile(out);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->graph_launch_counters.size(), 1u);
  EXPECT_EQ(p->graph_launch_counters[0].process_id, 3u) << "renumbered with its process";
  EXPECT_EQ(p->graph_launch_counters[0].correlation_id, 5u);
  EXPECT_EQ(p->graph_launch_counters[0].counters.dram_read_bytes, 100.0);
  ASSERT_EQ(p->graph_launch_counters[0].raw.size(), 1u);
  EXPECT_EQ(p->graph_launch_counters[0].raw[0].first, "dram__bytes_read.sum");
}

TEST(Merge, AnalysisPerRankEqualsTheInputs) {
  const std::string dir = freshDir("per_rank");
  const auto inputs = testing::writeThreeRanks(dir);
  const std::string out = dir + "/job.fprof";
  ASSERT_TRUE(core::mergeDatabases(inputs, out).ok());
  expectRanksMatchInputs(inputs, out);

  auto p = core::loadProfile(out);
  ASSERT_TRUE(p.ok());
  for (int rank = 0; rank < 3; ++rank) {
    auto one = core::selectRank(*p, rank);
    ASSERT_TRUE(one.ok()) << one.error();
    ASSERT_EQ(one->processes.size(), 1u);
    EXPECT_EQ(one->processes[0].rank, rank);
    EXPECT_EQ(one->meta("mode"), rank == 2 ? "metrics" : "trace");
    EXPECT_EQ(one->kernels.size(), 9u);
  }
  auto missing = core::selectRank(*p, 7);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), out + ": no process has rank 7; the file holds ranks 0-2");
}

TEST(Merge, AggregateGpuBusyCountsEachGpuOnce) {
  // Ranks 0 (nodeA) and 2 (nodeB) both run on device ordinal 0 at the same CUPTI times: two GPUs,
  // so the busy time of the whole job is the sum of the ranks' own.
  const std::string dir = freshDir("busy");
  const auto inputs = testing::writeThreeRanks(dir);
  const std::string out = dir + "/job.fprof";
  ASSERT_TRUE(core::mergeDatabases(inputs, out).ok());
  auto p = core::loadProfile(out);
  ASSERT_TRUE(p.ok());
  int64_t busy = 0, total = 0;
  for (const std::string& in : inputs) {
    auto one = core::loadProfile(in);
    ASSERT_TRUE(one.ok());
    const analysis::RunSummary s = analysis::summarize(*one);
    busy += s.gpu_busy_ns;
    total += s.total_kernel_ns;
  }
  const analysis::RunSummary all = analysis::summarize(*p);
  EXPECT_EQ(all.total_kernel_ns, total);
  EXPECT_EQ(all.gpu_busy_ns, busy);
}

TEST(Merge, RankBreakdown) {
  const std::string dir = freshDir("breakdown");
  const auto inputs = testing::writeThreeRanks(dir);
  const std::string out = dir + "/job.fprof";
  ASSERT_TRUE(core::mergeDatabases(inputs, out).ok());
  auto p = core::loadProfile(out);
  ASSERT_TRUE(p.ok());
  const auto rows = analysis::rankBreakdown(*p);
  ASSERT_EQ(rows.size(), 3u);
  // Per step: gemm 120 us, bias_relu 30 us, all-reduce 80 us, times the rank's slowdown; 3 steps.
  const int64_t base_ns = 3 * (120'000 + 30'000 + 80'000);
  const int64_t all_ns = base_ns + base_ns * 5 / 4 + base_ns * 3 / 2;
  for (size_t i = 0; i < 3; ++i) {
    const double slowdown = i == 0 ? 1.0 : i == 1 ? 1.25 : 1.5;
    EXPECT_EQ(rows[i].group.rank, static_cast<int>(i));
    EXPECT_EQ(rows[i].group.label, "rank " + std::to_string(i));
    EXPECT_EQ(rows[i].kernel_count, 9);
    EXPECT_EQ(rows[i].total_kernel_ns, static_cast<int64_t>(static_cast<double>(base_ns) * slowdown));
    EXPECT_DOUBLE_EQ(*rows[i].share, static_cast<double>(rows[i].total_kernel_ns) / static_cast<double>(all_ns));
    EXPECT_EQ(rows[i].top_kernel, "void gemm_kernel<128>(float const*, float const*, float*, int)");
    EXPECT_DOUBLE_EQ(*rows[i].nccl_share, 80.0 / 230.0);
    EXPECT_DOUBLE_EQ(*rows[i].topKernelShare(), 120.0 / 230.0);
    EXPECT_EQ(rows[i].pids, "4242");
  }
  EXPECT_EQ(rows[0].hosts, "nodeA");
  EXPECT_EQ(rows[2].hosts, "nodeB");
  EXPECT_EQ(rows[1].devices, "[1] NVIDIA H200");
  EXPECT_EQ(rows[2].devices, "[0] NVIDIA H100 80GB HBM3");
  EXPECT_EQ(rows[0].mode, "trace");
  EXPECT_EQ(rows[2].mode, "metrics");
  const auto imbalance = analysis::rankImbalance(rows);
  ASSERT_TRUE(imbalance);
  EXPECT_EQ(imbalance->most, 2u);
  EXPECT_EQ(imbalance->least, 0u);
  EXPECT_DOUBLE_EQ(imbalance->ratio, 1.5);
}

TEST(Merge, MergedFilesMergeAgain) {
  const std::string dir = freshDir("again");
  const auto inputs = testing::writeThreeRanks(dir);
  const std::string first = dir + "/ranks01.fprof", all = dir + "/all.fprof", direct = dir + "/direct.fprof";
  ASSERT_TRUE(core::mergeDatabases({inputs[0], inputs[1]}, first).ok());
  auto r = core::mergeDatabases({first, inputs[2]}, all);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->processes, 3);
  ASSERT_TRUE(core::mergeDatabases(inputs, direct).ok());
  expectMergeKeepsEveryRow({first, inputs[2]}, all);
  expectRanksMatchInputs(inputs, all);
  expectRanksMatchInputs({first, inputs[2]}, all);
  auto a = core::loadProfile(all), d = core::loadProfile(direct);
  ASSERT_TRUE(a.ok() && d.ok());
  EXPECT_EQ(a->metadata, d->metadata) << "merging in two steps or one gives the same facts";
  EXPECT_EQ(core::processMeta(*a, 1, "merged_from"), "job.rank0.fprof") << "the first merge's source is kept";
  // A merged file and one of its own inputs hold the same process: refused.
  auto twice = core::mergeDatabases({first, inputs[0]}, dir + "/twice.fprof");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().find("the same process twice"), std::string::npos) << twice.error();
}

TEST(Merge, DuplicateRankIsKeptWithANote) {
  const std::string dir = freshDir("restart");
  testing::RankFixture first, restarted;
  restarted.pid = 5151;
  restarted.start_unix_ns = first.start_unix_ns + 60'000'000'000;
  ASSERT_TRUE(testing::writeRankDatabase(dir + "/job.rank0.fprof", first).ok());
  ASSERT_TRUE(testing::writeRankDatabase(dir + "/job.rank0.pid5151.fprof", restarted).ok());
  auto r = core::mergeDatabases({dir + "/job.rank0.fprof", dir + "/job.rank0.pid5151.fprof"}, dir + "/job.fprof");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("rank 0 appears twice"), std::string::npos) << r->notes[0];
  auto p = core::loadProfile(dir + "/job.fprof");
  ASSERT_TRUE(p.ok());
  const auto groups = core::rankGroups(*p);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].process_ids, (std::vector<uint32_t>{1, 2}));
  auto rank0 = core::selectRank(*p, 0);
  ASSERT_TRUE(rank0.ok());
  EXPECT_EQ(rank0->kernels.size(), 18u);
}

TEST(Merge, DifferingCeilingsKeepTheFirstAndSaySo) {
  const std::string dir = freshDir("ceilings");
  testing::RankFixture a, b;
  b.rank = 1;
  b.host = "nodeB";
  b.measured_dram_bytes_per_s = 4.4e12;
  ASSERT_TRUE(testing::writeRankDatabase(dir + "/a.fprof", a).ok());
  ASSERT_TRUE(testing::writeRankDatabase(dir + "/b.fprof", b).ok());
  auto r = core::mergeDatabases({dir + "/a.fprof", dir + "/b.fprof"}, dir + "/m.fprof");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_EQ(r->notes[0], "the measured dram ceiling of NVIDIA H200 differs: kept 4.5e+12 bytes_per_s from " + dir +
                             "/a.fprof, left out 4.4e+12 bytes_per_s from " + dir + "/b.fprof");
  auto p = core::loadProfile(dir + "/m.fprof");
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->ceilings.size(), 1u);
  EXPECT_EQ(p->ceilings[0].value, 4.5e12);
}

// The two-rank torchrun all-reduce recorded on two H200s (tests/data/README.md): the same program
// in both ranks, so the same correlation ids; rank 1 waited in NCCL for rank 0.
TEST(MergeRecorded, TorchrunAllReduce) {
  const std::string data = std::string(FPROF_SOURCE_DIR) + "/tests/data/torchrun_allreduce_h200x2.rank";
  const std::vector<std::string> inputs = {data + "0.fprof", data + "1.fprof"};
  const std::string out = freshDir("recorded") + "/torchrun_allreduce.fprof";
  auto r = core::mergeDatabases(inputs, out);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->notes.empty());
  EXPECT_EQ(r->processes, 2);
  expectMergeKeepsEveryRow(inputs, out);
  expectRanksMatchInputs(inputs, out);
  auto p = core::loadProfile(out);
  ASSERT_TRUE(p.ok());
  const auto rows = analysis::rankBreakdown(*p);
  ASSERT_EQ(rows.size(), 2u);
  for (const analysis::RankRow& row : rows) {
    EXPECT_EQ(row.top_kernel.rfind("ncclDevKernel_AllReduce", 0), 0u) << row.top_kernel;
    EXPECT_GT(*row.nccl_share, 0.8) << row.group.label;
    EXPECT_EQ(row.mode, "trace");
  }
  EXPECT_GT(rows[1].total_kernel_ns, 2 * rows[0].total_kernel_ns) << "rank 1 spent its wait inside NCCL";
  const auto imbalance = analysis::rankImbalance(rows);
  ASSERT_TRUE(imbalance);
  EXPECT_LT(imbalance->ratio, 1.05) << "outside NCCL both ranks did the same work";
}

// Each refusal names the problem and leaves the directory as it was: no output, no temporary file.
class MergeRefuses : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = freshDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    inputs_ = testing::writeThreeRanks(dir_);
    ASSERT_EQ(inputs_.size(), 3u);
    before_ = listDir(dir_);
  }
  void expectRefused(const std::vector<std::string>& inputs, const std::string& output, const std::string& message,
                     const core::MergeOptions& o = {}) {
    auto r = core::mergeDatabases(inputs, output, o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error(), message);
    EXPECT_EQ(listDir(dir_), before_) << "a refused merge leaves nothing behind";
  }
  std::string dir_;
  std::vector<std::string> inputs_;
  std::vector<std::string> before_;
};

TEST_F(MergeRefuses, CorruptInput) {
  const std::string bad = dir_ + "/job.rank3.fprof";
  std::ofstream(bad) << "this is not a database";
  before_ = listDir(dir_);
  expectRefused({inputs_[0], bad}, dir_ + "/job.fprof", bad + ": not an fprof database (not a SQLite file)");
  // Cut short while copying: the header says more pages than there are.
  const std::string cut = dir_ + "/cut.fprof";
  fs::copy_file(inputs_[1], cut);
  fs::resize_file(cut, fs::file_size(cut) / 2);
  before_ = listDir(dir_);
  auto r = core::mergeDatabases({inputs_[0], cut}, dir_ + "/job.fprof");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find(cut + ": truncated"), std::string::npos) << r.error();
  EXPECT_EQ(listDir(dir_), before_);
}

TEST_F(MergeRefuses, DamagedTableFoundOnlyWhileMerging) {
  // The header is fine, so the up-front check passes; the kernel table is gone, which only loading
  // finds, after the first input was written to the temporary file: it must go too.
  execSql(inputs_[2], "DROP VIEW kernel_view; DROP VIEW kernel_summary; DROP TABLE kernel;");
  before_ = listDir(dir_);
  auto r = core::mergeDatabases(inputs_, dir_ + "/job.fprof");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), inputs_[2] + ": damaged database (no such table: kernel)");
  EXPECT_EQ(listDir(dir_), before_);
}

TEST_F(MergeRefuses, CountersOfAMissingKernel) {
  execSql(inputs_[2], "INSERT INTO kernel_counter(kernel_id, dram_read_bytes) VALUES (999, 1.0)");
  expectRefused(inputs_, dir_ + "/job.fprof",
                inputs_[2] + ": damaged database (kernel_counter row for kernel 999, which is not in the kernel table); "
                             "it cannot be merged");
}

TEST_F(MergeRefuses, NewerSchema) {
  execSql(inputs_[1], "UPDATE metadata SET value = '99' WHERE key = 'schema_version'");
  expectRefused(inputs_, dir_ + "/job.fprof",
                inputs_[1] + ": schema version 99 is newer than this fprof (" + std::to_string(core::kSchemaVersion) + "); upgrade fprof to read it");
}

TEST_F(MergeRefuses, TheSameFileTwice) {
  expectRefused({inputs_[0], inputs_[1], inputs_[0]}, dir_ + "/job.fprof",
                inputs_[0] + " is given twice; name each database once");
  const std::string other_spelling = dir_ + "/./job.rank1.fprof";
  expectRefused({inputs_[1], other_spelling}, dir_ + "/job.fprof",
                inputs_[1] + " and " + other_spelling + " are the same file; name each database once");
}

TEST_F(MergeRefuses, ACopyOfAFile) {
  const std::string copy = dir_ + "/copy.fprof";
  fs::copy_file(inputs_[0], copy);
  before_ = listDir(dir_);
  auto r = core::mergeDatabases({inputs_[0], copy}, dir_ + "/job.fprof");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), inputs_[0] + " and " + copy +
                           " both hold pid 4242 on nodeA (rank 0), started at the same time: the same process twice "
                           "(a copy, or a file already merged into the other); leave one out");
  EXPECT_EQ(listDir(dir_), before_);
}

TEST_F(MergeRefuses, OutputIsAnInput) {
  expectRefused(inputs_, inputs_[2], inputs_[2] + " is an input of this command; write the merged database to another file");
  core::MergeOptions force;
  force.overwrite = true;
  expectRefused(inputs_, inputs_[2], inputs_[2] + " is an input of this command; write the merged database to another file",
                force);
  auto still = core::loadProfile(inputs_[2]);
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->kernels.size(), 9u) << "the input is untouched";
}

TEST_F(MergeRefuses, ExistingOutputWithoutForce) {
  const std::string out = dir_ + "/job.fprof";
  std::ofstream(out) << "precious";
  before_ = listDir(dir_);
  expectRefused(inputs_, out, out + ": file exists; choose another name or overwrite it with --force");
  std::ifstream in(out);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "precious");
  core::MergeOptions force;
  force.overwrite = true;
  auto r = core::mergeDatabases(inputs_, out, force);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(core::loadProfile(out).ok());
}

TEST_F(MergeRefuses, MissingInputOrDirectory) {
  expectRefused({inputs_[0], dir_ + "/nope.fprof"}, dir_ + "/job.fprof", dir_ + "/nope.fprof: no such file");
  expectRefused(inputs_, dir_ + "/no/such/dir/job.fprof",
                dir_ + "/no/such/dir/job.fprof: the directory " + dir_ + "/no/such/dir does not exist");
  expectRefused({}, dir_ + "/job.fprof", "merge: no databases given; name the per-rank .fprof files to join");
}

TEST(MergeMetadata, CombineRules) {
  const auto top = core::combineProcessMetadata({{{"mode", "trace"}, {"fprof_version", "0.1.0"}, {"dropped_records", "3"},
                                                  {"start_unix_ns", "1"}, {"chip", "gh100"}},
                                                 {{"mode", "metrics"}, {"fprof_version", "0.1.0"},
                                                  {"dropped_records", "4"}, {"start_unix_ns", "2"}}});
  EXPECT_EQ(top, (std::map<std::string, std::string>{{"mode", "mixed"}, {"fprof_version", "0.1.0"}, {"dropped_records", "7"}}));
}

TEST(MergeMetadata, DescribeRanks) {
  core::Profile p;
  p.processes = {{1, 10, "a", 0, 0, "", 0}, {2, 11, "a", 1, 1, "", 0}, {3, 12, "b", 2, 0, "", 0}};
  EXPECT_EQ(core::describeRanks(core::rankGroups(p)), "ranks 0-2");
  p.processes.push_back({4, 13, "b", 5, 1, "", 0});
  p.processes.push_back({5, 14, "c", std::nullopt, std::nullopt, "", 0});
  const auto groups = core::rankGroups(p);
  EXPECT_EQ(core::describeRanks(groups), "ranks 0, 1, 2, 5, 1 process without a rank");
  EXPECT_EQ(groups.back().label, "pid 14 on c");
  p.processes = {{1, 10, "a", std::nullopt, std::nullopt, "", 0}};
  EXPECT_EQ(core::describeRanks(core::rankGroups(p)), "1 process without a rank");
  auto none = core::selectRank(p, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error(), ": no process has rank 0; the file holds 1 process without a rank");
}

}  // namespace
}  // namespace fprof
