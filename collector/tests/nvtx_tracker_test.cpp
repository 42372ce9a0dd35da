// NVTX bookkeeping on the writer's side: one thread's push/pop stack across two domains, the
// records the store receives, interned paths, and process-wide start/end ranges.
#include <gtest/gtest.h>

#include <map>

#include "trace/nvtx_tracker.h"

namespace fprof::collector {
namespace {

const int kModelDomain = 0;
const int kIoDomain = 0;
const void* const kModel = &kModelDomain;
const void* const kIo = &kIoDomain;

std::map<uint64_t, core::NvtxRangeRecord> lastByKey(const std::vector<core::NvtxRangeRecord>& records) {
  std::map<uint64_t, core::NvtxRangeRecord> out;
  for (const auto& r : records) out[r.key] = r;  // the store keeps the last record of a key
  return out;
}

struct Stack {
  NvtxNames names;
  NvtxPathTable paths;
  NvtxPathStack stack;
  std::vector<core::NvtxRangeRecord> records;

  NvtxPathStack::Snapshot snap(const std::shared_ptr<const StartEndState>& s = nullptr) {
    return stack.snapshot(s, paths, names);
  }
  bool pop(const void* domain, int64_t ts) { return stack.pop(domain, ts, names, &records); }
};

TEST(NvtxPathStack, NestedPushPopAcrossDomains) {
  Stack s;
  s.names.registerDomain(kModel, "model");
  s.names.registerDomain(kIo, "io");
  EXPECT_EQ(s.snap().innermost_key, 0u);
  EXPECT_EQ(s.snap().path, nullptr);

  s.stack.push(1, nullptr, "step", std::nullopt, 7, 100);
  s.stack.push(2, kModel, "layer0", 42, 7, 110);
  NvtxPathStack::Snapshot snap = s.snap();
  ASSERT_NE(snap.path, nullptr);
  EXPECT_EQ(*snap.path, "step/model::layer0");
  EXPECT_EQ(snap.innermost_key, 2u);

  s.stack.push(3, kIo, "prefetch", std::nullopt, 7, 120);
  EXPECT_EQ(*s.snap().path, "step/model::layer0/io::prefetch");
  // Popping the model domain removes layer0 although io::prefetch is above it.
  EXPECT_TRUE(s.pop(kModel, 130));
  EXPECT_EQ(*s.snap().path, "step/io::prefetch");
  EXPECT_EQ(s.snap().innermost_key, 3u);
  EXPECT_TRUE(s.pop(kIo, 140));
  EXPECT_EQ(*s.snap().path, "step");
  EXPECT_FALSE(s.pop(kIo, 145));  // nothing of io left open
  EXPECT_TRUE(s.pop(nullptr, 150));
  EXPECT_EQ(s.snap().innermost_key, 0u);
  s.stack.endCollection(s.names, s.records);

  EXPECT_EQ(s.records.size(), 3u);  // opened and closed in one collection: one record each
  const auto byKey = lastByKey(s.records);
  ASSERT_EQ(byKey.size(), 3u);
  const core::NvtxRangeRecord& layer = byKey.at(2);
  EXPECT_EQ(layer.domain, "model");
  EXPECT_EQ(layer.message, "layer0");
  EXPECT_EQ(layer.payload, std::optional<uint64_t>(42));
  EXPECT_EQ(layer.depth, 1);
  EXPECT_EQ(layer.thread_id, 7u);
  EXPECT_EQ(layer.start_ns, 110);
  EXPECT_EQ(layer.end_ns, std::optional<int64_t>(130));
  EXPECT_TRUE(layer.push_pop);
  const core::NvtxRangeRecord& step = byKey.at(1);
  EXPECT_EQ(step.message, "step");
  EXPECT_EQ(step.domain, "");
  EXPECT_FALSE(step.parent_key.has_value());
  EXPECT_EQ(step.end_ns, std::optional<int64_t>(150));
  EXPECT_EQ(layer.parent_key, std::optional<uint64_t>(1));
  const core::NvtxRangeRecord& prefetch = byKey.at(3);
  EXPECT_EQ(prefetch.depth, 2);  // fixed when it opened
  EXPECT_EQ(prefetch.parent_key, std::optional<uint64_t>(2));
}

TEST(NvtxPathStack, RangesOpenAtACollectionAreRecordedWithoutEndThenClosed) {
  Stack s;
  s.stack.push(5, nullptr, "never closed", std::nullopt, 1, 5);
  s.stack.push(6, nullptr, "closed later", std::nullopt, 1, 6);
  s.stack.endCollection(s.names, s.records);
  ASSERT_EQ(s.records.size(), 2u);
  EXPECT_FALSE(s.records[0].end_ns.has_value());
  EXPECT_EQ(s.records[0].start_ns, 5);
  EXPECT_EQ(s.records[1].message, "closed later");

  s.records.clear();
  s.stack.endCollection(s.names, s.records);  // nothing new
  EXPECT_TRUE(s.records.empty());
  EXPECT_TRUE(s.pop(nullptr, 9));
  s.stack.endCollection(s.names, s.records);
  ASSERT_EQ(s.records.size(), 1u);
  EXPECT_EQ(s.records[0].key, 6u);
  EXPECT_EQ(s.records[0].message, "closed later");
  EXPECT_EQ(s.records[0].start_ns, 6);
  EXPECT_EQ(s.records[0].end_ns, std::optional<int64_t>(9));
  EXPECT_EQ(s.records[0].parent_key, std::optional<uint64_t>(5));
}

TEST(NvtxPathStack, APathIsInternedOnceAndTheSnapshotFollowsTheStack) {
  Stack s;
  s.stack.push(1, nullptr, "a", std::nullopt, 1, 1);
  const NvtxPathStack::Snapshot first = s.snap();
  s.pop(nullptr, 2);
  s.stack.push(2, nullptr, "a", std::nullopt, 1, 3);  // same path, a new range
  const NvtxPathStack::Snapshot second = s.snap();
  EXPECT_EQ(first.path, second.path);
  EXPECT_NE(first.innermost_key, second.innermost_key);
  s.stack.push(3, nullptr, "b", std::nullopt, 1, 4);
  EXPECT_EQ(*s.snap().path, "a/b");
  EXPECT_EQ(s.paths.size(), 2u);
}

TEST(NvtxPathStack, UnknownDomainAndRegisteredStrings) {
  Stack s;
  s.names.registerString(kModel, "registered message");
  EXPECT_EQ(s.names.registeredString(kModel), "registered message");
  EXPECT_EQ(s.names.registeredString(kIo), "<unregistered string>");
  s.stack.push(1, kIo, "x", std::nullopt, 1, 1);
  EXPECT_EQ(*s.snap().path, "<unknown domain>::x");
  EXPECT_TRUE(s.pop(kIo, 2));
  EXPECT_EQ(s.records.at(0).domain, "<unknown domain>");
}

TEST(StartEndRanges, OpenRangesFormTheOuterPathOldestFirst) {
  NvtxNames names;
  names.registerDomain(kIo, "io");
  StartEndRanges ranges;
  EXPECT_EQ(ranges.generation(), 0u);
  EXPECT_EQ(ranges.current().first, nullptr);
  ranges.start(1001, 10, "io", "io::epoch", "epoch", std::nullopt, 1, 10);
  const uint64_t g1 = ranges.generation();
  EXPECT_GT(g1, 0u);

  Stack main_thread, worker;
  main_thread.names.registerDomain(kIo, "io");
  main_thread.stack.push(11, nullptr, "forward", std::nullopt, 1, 20);
  auto [state, generation] = ranges.current();
  EXPECT_EQ(generation, g1);
  EXPECT_EQ(*main_thread.snap(state).path, "io::epoch/forward");
  EXPECT_EQ(main_thread.snap(state).innermost_key, 11u);  // push/pop is the innermost
  EXPECT_EQ(*worker.snap(state).path, "io::epoch");     // another thread sees the start/end range
  EXPECT_EQ(worker.snap(state).innermost_key, 10u);

  ranges.start(1002, 12, "", "eval", "eval", std::nullopt, 2, 30);
  EXPECT_EQ(*worker.snap(ranges.current().first).path, "io::epoch/eval");
  EXPECT_EQ(worker.snap(ranges.current().first).innermost_key, 12u);
  EXPECT_TRUE(ranges.end(1001, 40));
  EXPECT_EQ(*worker.snap(ranges.current().first).path, "eval");
  EXPECT_EQ(*main_thread.snap(ranges.current().first).path, "eval/forward");
  EXPECT_FALSE(ranges.end(1001, 41));  // ended twice
  EXPECT_TRUE(ranges.end(1002, 50));
  EXPECT_EQ(*main_thread.snap(ranges.current().first).path, "forward");
  EXPECT_EQ(worker.snap(ranges.current().first).path, nullptr);
  EXPECT_EQ(worker.snap(ranges.current().first).innermost_key, 0u);

  const auto byKey = lastByKey(ranges.takeRecords());
  ASSERT_EQ(byKey.size(), 2u);
  const core::NvtxRangeRecord& epoch = byKey.at(10);
  EXPECT_FALSE(epoch.push_pop);
  EXPECT_EQ(epoch.domain, "io");
  EXPECT_EQ(epoch.message, "epoch");
  EXPECT_EQ(epoch.start_ns, 10);
  EXPECT_EQ(epoch.end_ns, std::optional<int64_t>(40));
  EXPECT_EQ(byKey.at(12).thread_id, 2u);
  EXPECT_TRUE(ranges.takeRecords().empty());
}

}  // namespace
}  // namespace fprof::collector
