// Data flow step 2: allocations and their timeline, pointer extents inside an allocation (a
// caching allocator's segment), and byte versions.
#include <gtest/gtest.h>

#include "fixture.h"
#include "fprof/analysis/buffers.h"

namespace fprof::analysis {
namespace {

using testing::DbBuilder;

constexpr uint64_t kX = 0x10000, kY = 0x20000, kZ = 0x30000;

TEST(Memory, TimelineAndPeak) {
  DbBuilder db("mem_timeline");
  db.alloc(kX, 1000, 10);
  db.alloc(kY, 2000, 20);
  db.alloc(kX, 1000, 30, false);
  db.alloc(kZ, 500, 40);
  db.alloc(0x999, 10, 50, false);  // never allocated
  const AllocationTable t = buildAllocations(db.load());
  ASSERT_EQ(t.timelines.size(), 1u);
  const auto& tl = t.timelines[0];
  const std::vector<std::pair<int64_t, int64_t>> expect = {{10, 1000}, {20, 3000}, {30, 2000}, {40, 2500}};
  EXPECT_EQ(tl.points, expect);
  EXPECT_EQ(tl.peak_allocated_bytes, 3000);
  EXPECT_EQ(tl.peak_ns, 20);
  EXPECT_EQ(t.unmatched_frees, 1);
  ASSERT_EQ(t.allocations.size(), 3u);
  EXPECT_EQ(*t.allocations[0].free_ns, 30);
  EXPECT_FALSE(t.allocations[1].free_ns);
}

TEST(Memory, LiveAllocationsFollowFreesAndReuse) {
  DbBuilder db("mem_live");
  db.alloc(kX, 4096, 10);
  db.alloc(kX, 4096, 20, false);
  db.alloc(kX, 65536, 30);  // the same address, a new allocation
  const core::Profile p = db.load();
  const AllocationTable t = buildAllocations(p);
  LiveAllocations live(p, t);
  std::vector<uint32_t> freed;
  live.advanceTo(15, [&](uint32_t a) { freed.push_back(a); });
  EXPECT_EQ(live.find(1, kX + 100), 0u);
  EXPECT_FALSE(live.find(1, kX + 8192)) << "past the first allocation's end";
  EXPECT_FALSE(live.find(2, kX)) << "another process";
  live.advanceTo(30, [&](uint32_t a) { freed.push_back(a); });
  EXPECT_EQ(freed, std::vector<uint32_t>{0});
  EXPECT_EQ(live.find(1, kX + 8192), 1u);
}

// One 2 MiB segment of a caching allocator holding three tensors; the allocator recorded only the
// segment. Each pointer covers the bytes up to the next pointer passed into the segment.
TEST(Extents, APointerCoversUpToTheNextPointerOfItsAllocation) {
  AllocationTable t;
  t.allocations.push_back({});
  t.allocations[0].address = 0x100000;
  t.allocations[0].bytes = 2 << 20;
  Extents e(t);
  for (uint64_t a : {0x100000ull, 0x180000ull, 0x100000ull, 0x140000ull}) e.addPointer(0, a);
  e.finish();
  EXPECT_EQ(e.of(0, 0x100000).bytes(), 0x40000);
  EXPECT_EQ(e.of(0, 0x140000).end, 0x180000u);
  EXPECT_EQ(e.of(0, 0x180000).end, 0x300000u) << "the last one runs to the segment's end";
  EXPECT_EQ(e.of(0, 0x150000).begin, 0x150000u);
  EXPECT_EQ(e.of(0, 0x150000).end, 0x180000u);
}

std::vector<std::pair<int32_t, int64_t>> seen(const ByteVersions& v, ByteRange r) {
  std::vector<std::pair<int32_t, int64_t>> out;
  v.forEachOverlap(0, r, [&](int32_t value, int64_t bytes) { out.emplace_back(value, bytes); });
  return out;
}

// A caching allocator's 20 MiB segment over a run. Launch 10 writes a 3 MiB tensor at its start;
// launch 11 reads it and writes the next tensor, at 3 MiB (a LayerNorm). Launch 5, before them, had
// passed a view into the qkv buffer the block held then (at 1536 B); launch 60, later, a tensor at
// 1 MiB. Run-wide, the tensor's extent ends at 1536 B; as the launches after the write say, at
// 3 MiB. A read is bounded on either side, so launch 11's ends at the view (data flow takes the
// edge's size from the write).
TEST(NearExtents, TheLaunchesAroundAPointerBoundItsTensor) {
  AllocationTable t;
  t.allocations.push_back({});
  t.allocations[0].address = 0x100000;
  t.allocations[0].bytes = 20 << 20;
  NearExtents near(t, 32);
  near.addPointer(0, 0x100000 + 1536, 5);
  near.addPointer(0, 0x100000, 10);
  near.addPointer(0, 0x100000, 11);
  near.addPointer(0, 0x100000 + (3 << 20), 11);
  near.addPointer(0, 0x100000 + (1 << 20), 60);
  near.finish();
  EXPECT_EQ(near.ofWrite(0, 0x100000, 10).bytes(), 3 << 20);
  EXPECT_EQ(near.ofRead(0, 0x100000, 11).bytes(), 1536);
  EXPECT_EQ(near.ofRead(0, 0x100000, 70).bytes(), 1 << 20) << "near launch 60 only";
  EXPECT_EQ(near.ofWrite(0, 0x100000 + (3 << 20), 200).bytes(), 17 << 20) << "nothing near: the segment's end";
}

// The same segment, sized by lifetimes. Launch 1 writes a qkv buffer at the start; launch 2 reads
// q, k and v (views at 0, 1536 and 3072 B). Launch 3 writes a tensor at 12 MiB that launch 6 reads.
// Launch 5 writes the start again (the qkv buffer is gone: a 12 MiB tensor) and launch 6 reads it.
// The views bound nothing (only read, never written); the 12 MiB tensor ends where the tensor alive
// beside it starts; the qkv buffer, with nothing written beside it while it lived, at the segment's
// end (an upper bound). Before its first write a pointer has no written size.
TEST(WrittenLifetimes, ATensorEndsWhereAnotherAliveBesideItStarts) {
  AllocationTable t;
  t.allocations.push_back({});
  const uint64_t base = 0x100000;
  t.allocations[0].address = base;
  t.allocations[0].bytes = 20 << 20;
  WrittenLifetimes life(t);
  life.add(0, base, 0, false);
  life.add(0, base, 1, true);
  for (uint64_t view : {0, 1536, 3072}) life.add(0, base + view, 2, false);
  life.add(0, base + (12 << 20), 3, true);
  life.add(0, base, 5, true);
  life.add(0, base, 6, false);
  life.add(0, base + (12 << 20), 6, false);
  life.finish();
  EXPECT_FALSE(life.sizeAt(0, base, 0)) << "read before the first write";
  EXPECT_EQ(life.sizeAt(0, base, 1), 20 << 20);
  EXPECT_EQ(life.sizeAt(0, base, 2), 20 << 20);
  EXPECT_FALSE(life.sizeAt(0, base + 1536, 2)) << "a view, never written";
  EXPECT_EQ(life.sizeAt(0, base, 5), 12 << 20);
  EXPECT_EQ(life.sizeAt(0, base, 6), 12 << 20);
  EXPECT_EQ(life.sizeAt(0, base + (12 << 20), 6), 8 << 20);
}

TEST(ByteVersions, AWriteReplacesTheBytesItCoversOnly) {
  ByteVersions v(1);
  v.write(0, {100, 200}, 1);
  v.write(0, {300, 400}, 2);
  EXPECT_EQ(seen(v, {0, 1000}), (std::vector<std::pair<int32_t, int64_t>>{{1, 100}, {2, 100}}));
  v.write(0, {150, 350}, 3);  // overwrites the end of 1 and the start of 2
  EXPECT_EQ(seen(v, {0, 1000}), (std::vector<std::pair<int32_t, int64_t>>{{1, 50}, {3, 200}, {2, 50}}));
  EXPECT_EQ(seen(v, {160, 170}), (std::vector<std::pair<int32_t, int64_t>>{{3, 10}}));
  v.write(0, {120, 130}, 4);  // splits 1 in two
  EXPECT_EQ(seen(v, {100, 150}), (std::vector<std::pair<int32_t, int64_t>>{{1, 20}, {4, 10}, {1, 20}}));
  EXPECT_TRUE(seen(v, {200, 200}).empty());
  v.clear(0);
  EXPECT_TRUE(seen(v, {0, 1000}).empty()) << "a free ends every version";
}

}  // namespace
}  // namespace fprof::analysis
