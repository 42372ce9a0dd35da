// NVTX bookkeeping: per-thread push/pop stacks across two domains, process-wide start/end
// ranges, the launch snapshot and the records the store receives.
#include <gtest/gtest.h>

#include <map>

#include "nvtx_tracker.h"

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

TEST(NvtxTracker, NestedPushPopAcrossDomains) {
  NvtxTracker t;
  t.registerDomain(kModel, "model");
  t.registerDomain(kIo, "io");
  NvtxThreadStack s;
  EXPECT_EQ(t.snapshot(s).innermost_key, 0u);
  EXPECT_EQ(t.snapshot(s).path, nullptr);

  t.push(s, nullptr, "step", std::nullopt, 7, 100);
  t.push(s, kModel, "layer0", 42, 7, 110);
  NvtxSnapshot snap = t.snapshot(s);
  ASSERT_NE(snap.path, nullptr);
  EXPECT_EQ(*snap.path, "step/model::layer0");
  const uint64_t layer_key = snap.innermost_key;

  t.push(s, kIo, "prefetch", std::nullopt, 7, 120);
  EXPECT_EQ(*t.snapshot(s).path, "step/model::layer0/io::prefetch");
  // Popping the model domain removes layer0 although io::prefetch is above it.
  EXPECT_TRUE(t.pop(s, kModel, 130));
  EXPECT_EQ(*t.snapshot(s).path, "step/io::prefetch");
  EXPECT_TRUE(t.pop(s, kIo, 140));
  EXPECT_EQ(*t.snapshot(s).path, "step");
  EXPECT_FALSE(t.pop(s, kIo, 145));  // nothing of io left open
  EXPECT_EQ(t.unmatchedPops(), 1u);
  EXPECT_TRUE(t.pop(s, nullptr, 150));
  EXPECT_EQ(t.snapshot(s).innermost_key, 0u);

  const auto records = t.takeRecords();
  EXPECT_EQ(records.size(), 6u);  // three ranges, each when opened and when closed
  const auto byKey = lastByKey(records);
  ASSERT_EQ(byKey.size(), 3u);
  const core::NvtxRangeRecord& layer = byKey.at(layer_key);
  EXPECT_EQ(layer.domain, "model");
  EXPECT_EQ(layer.message, "layer0");
  EXPECT_EQ(layer.payload, std::optional<uint64_t>(42));
  EXPECT_EQ(layer.depth, 1);
  EXPECT_EQ(layer.thread_id, 7u);
  EXPECT_EQ(layer.start_ns, 110);
  EXPECT_EQ(layer.end_ns, std::optional<int64_t>(130));
  EXPECT_TRUE(layer.push_pop);
  const core::NvtxRangeRecord& step = byKey.begin()->second;
  EXPECT_EQ(step.message, "step");
  EXPECT_EQ(step.domain, "");
  EXPECT_FALSE(step.parent_key.has_value());
  EXPECT_EQ(layer.parent_key, std::optional<uint64_t>(step.key));
  EXPECT_TRUE(t.takeRecords().empty());
}

TEST(NvtxTracker, OpenRangesAreRecordedWithoutEnd) {
  NvtxTracker t;
  NvtxThreadStack s;
  t.push(s, nullptr, "never closed", std::nullopt, 1, 5);
  const auto records = t.takeRecords();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].end_ns.has_value());
  EXPECT_EQ(records[0].start_ns, 5);
}

TEST(NvtxTracker, StartEndRangesAreProcessWideAndOutermost) {
  NvtxTracker t;
  t.registerDomain(kIo, "io");
  NvtxThreadStack main_thread, worker;
  t.start(1001, kIo, "epoch", std::nullopt, 1, 10);
  t.push(main_thread, nullptr, "forward", std::nullopt, 1, 20);

  const NvtxSnapshot on_main = t.snapshot(main_thread);
  EXPECT_EQ(*on_main.path, "io::epoch/forward");
  const NvtxSnapshot on_worker = t.snapshot(worker);  // another thread sees the start/end range
  ASSERT_NE(on_worker.path, nullptr);
  EXPECT_EQ(*on_worker.path, "io::epoch");
  EXPECT_NE(on_worker.innermost_key, 0u);
  EXPECT_NE(on_main.innermost_key, on_worker.innermost_key);  // push/pop is the innermost on main

  t.start(1002, nullptr, "eval", std::nullopt, 2, 30);
  EXPECT_EQ(*t.snapshot(worker).path, "io::epoch/eval");
  EXPECT_TRUE(t.end(1001, 40));
  EXPECT_EQ(*t.snapshot(worker).path, "eval");
  EXPECT_EQ(*t.snapshot(main_thread).path, "eval/forward");
  EXPECT_FALSE(t.end(1001, 41));  // ended twice
  EXPECT_TRUE(t.end(1002, 50));
  EXPECT_EQ(*t.snapshot(main_thread).path, "forward");
  EXPECT_EQ(t.snapshot(worker).path, nullptr);

  const auto byKey = lastByKey(t.takeRecords());
  int start_end = 0;
  for (const auto& [key, r] : byKey) {
    if (r.push_pop) continue;
    ++start_end;
    EXPECT_TRUE(r.end_ns.has_value());
    if (r.message == "epoch") {
      EXPECT_EQ(r.domain, "io");
      EXPECT_EQ(r.start_ns, 10);
      EXPECT_EQ(r.end_ns, std::optional<int64_t>(40));
    }
  }
  EXPECT_EQ(start_end, 2);
}

TEST(NvtxTracker, SnapshotCacheFollowsTheStack) {
  NvtxTracker t;
  NvtxThreadStack s;
  t.push(s, nullptr, "a", std::nullopt, 1, 1);
  const NvtxSnapshot first = t.snapshot(s);
  t.pop(s, nullptr, 2);
  t.push(s, nullptr, "a", std::nullopt, 1, 3);  // same path, a new range
  const NvtxSnapshot second = t.snapshot(s);
  EXPECT_EQ(first.path, second.path);  // interned once
  EXPECT_NE(first.innermost_key, second.innermost_key);
}

TEST(NvtxTracker, UnknownDomainAndRegisteredStrings) {
  NvtxTracker t;
  NvtxThreadStack s;
  t.registerString(kModel, "registered message");
  EXPECT_EQ(t.registeredString(kModel), "registered message");
  EXPECT_EQ(t.registeredString(kIo), "<unregistered string>");
  t.push(s, kIo, "x", std::nullopt, 1, 1);
  EXPECT_EQ(*t.snapshot(s).path, "<unknown domain>::x");
}

}  // namespace
}  // namespace fprof::collector
