// Programmatic dependent launch: a kernel's own time starts where its stream predecessor ended.
#include <gtest/gtest.h>

#include <functional>

#include "fprof/core/dependency_wait.h"
#include "fprof/core/store.h"
#include "test_util.h"

namespace fprof::core {
namespace {

using fprof::testing::execSql;
using fprof::testing::makeKernel;
using fprof::testing::tempPath;

// Times are given from the trace's first kernel at kT0 (a trace timestamp is never 0).
constexpr int64_t kT0 = 1000000;

KernelRow row(int64_t start_ns, int64_t end_ns, bool programmatic, uint32_t stream = 7) {
  KernelRow k;
  k.process_id = 1;
  k.stream_id = stream;
  k.start_ns = kT0 + start_ns;
  k.end_ns = kT0 + end_ns;
  k.programmatic_launch = programmatic;
  return k;
}

// A producer running 1000-1500 ns and a programmatic consumer spanning 1400-1700 ns on its stream.
void writeProducerAndProgrammaticConsumer(const std::string& path) {
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok()) << w.error();
  (*w)->add(makeKernel("producer", 1000, 500, 11));
  KernelRecord consumer = makeKernel("consumer", 1400, 300, 12);
  consumer.programmatic_launch = true;
  (*w)->add(consumer);
  ASSERT_TRUE((*w)->close());
}

TEST(DependencyWait, AProgrammaticLaunchCountsFromItsPredecessorsEnd) {
  // A runs 0-100; B (programmatic) starts at 80 and waits for A until 100, then runs to 130;
  // C (programmatic) starts at 125, waits until 130, ends at 150.
  std::vector<KernelRow> k = {row(0, 100, false), row(80, 130, true), row(125, 150, true)};
  settleDependencyWaits(k);
  EXPECT_EQ(k[0].dependency_wait_ns, 0);
  EXPECT_EQ(k[1].dependency_wait_ns, 20);
  EXPECT_EQ(k[1].durationNs(), 30);
  EXPECT_EQ(k[1].ownStartNs(), kT0 + 100);
  EXPECT_EQ(k[2].dependency_wait_ns, 5);
  EXPECT_EQ(k[2].durationNs(), 20);
  // The stream's own times add up to its busy time.
  EXPECT_EQ(k[0].durationNs() + k[1].durationNs() + k[2].durationNs(), 150);
}

TEST(DependencyWait, OnlyProgrammaticLaunchesOfOneStreamOutsideGraphsWait) {
  std::vector<KernelRow> k = {row(0, 100, false), row(50, 150, false, 8), row(60, 160, true, 9),
                              row(90, 200, false)};
  KernelRow graph_node = row(95, 210, true);
  graph_node.graph_id = 3;
  k.push_back(graph_node);
  settleDependencyWaits(k);
  for (const KernelRow& r : k) EXPECT_EQ(r.dependency_wait_ns, 0) << r.start_ns;
  // Another process's stream of the same id is another stream.
  std::vector<KernelRow> two = {row(0, 100, false), row(50, 120, true)};
  two[1].process_id = 2;
  settleDependencyWaits(two);
  EXPECT_EQ(two[1].dependency_wait_ns, 0);
}

TEST(DependencyWait, KernelsWithoutTraceTimestampsHaveNoTimelineToWaitOn) {
  // Kernel replay: start 0, end = the measured duration.
  std::vector<KernelRow> k = {row(0, 700, true), row(0, 900, true), row(5000, 5300, true)};
  for (KernelRow& r : {std::ref(k[0]), std::ref(k[1])}) {
    r.end_ns -= r.start_ns;
    r.start_ns = 0;
  }
  settleDependencyWaits(k);
  for (const KernelRow& r : k) EXPECT_EQ(r.dependency_wait_ns, 0) << r.end_ns;
  EXPECT_EQ(k[1].durationNs(), 900) << "not counted from the first one's end";
}

TEST(DependencyWait, AKernelThatEndsBeforeItsPredecessorNeverWaited) {
  // No griddepcontrol.wait: B runs wholly inside A and keeps its whole span.
  std::vector<KernelRow> k = {row(0, 100, false), row(20, 60, true), row(90, 120, true)};
  settleDependencyWaits(k);
  EXPECT_EQ(k[1].dependency_wait_ns, 0);
  EXPECT_EQ(k[1].durationNs(), 40);
  // C's predecessor in its stream is B (ended at 60): C started after it.
  EXPECT_EQ(k[2].dependency_wait_ns, 0);
}

TEST(DependencyWait, TheFlagRoundTripsAndTheWaitIsDerivedOnLoad) {
  const std::string path = tempPath("programmatic.fprof");
  ASSERT_NO_FATAL_FAILURE(writeProducerAndProgrammaticConsumer(path));
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->kernels.size(), 2u);
  EXPECT_FALSE(p->kernels[0].programmatic_launch);
  EXPECT_TRUE(p->kernels[1].programmatic_launch);
  EXPECT_EQ(p->kernels[1].dependency_wait_ns, 100);
  EXPECT_EQ(p->kernels[1].durationNs(), 200);
  EXPECT_EQ(p->kernels[1].end_ns - p->kernels[1].start_ns, 300) << "the recorded span is kept";
}

TEST(DependencyWait, AFileOlderThanTheFlagReadsEveryLaunchAsPlain) {
  const std::string path = tempPath("programmatic_v5.fprof");
  ASSERT_NO_FATAL_FAILURE(writeProducerAndProgrammaticConsumer(path));
  ASSERT_NO_FATAL_FAILURE(execSql(path,
                                  "ALTER TABLE kernel DROP COLUMN programmatic_launch; "
                                  "UPDATE metadata SET value = '5' WHERE key = 'schema_version'"));
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->schema_version, 5);
  ASSERT_EQ(p->kernels.size(), 2u);
  EXPECT_FALSE(p->kernels[1].programmatic_launch);
  EXPECT_EQ(p->kernels[1].durationNs(), 300);
}

}  // namespace
}  // namespace fprof::core
