// The argument-role comparison on hand-made "device" buffers: what is read (never past an
// allocation, never into a later argument's span), aliasing, partial writes, short allocations,
// unreadable memory, the byte budget, and the failures that must measure nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "arg_roles/arg_roles.h"

namespace fprof::collector {
namespace {

// Allocations at made-up device addresses, in host vectors. Records every read so tests can check
// that none leaves its allocation.
class FakeMemory : public ProbeMemory {
 public:
  struct Allocation {
    std::vector<uint8_t> bytes;
    bool managed = false;
  };

  uint64_t add(uint64_t start, size_t bytes, bool managed = false) {
    Allocation a;
    a.bytes.resize(bytes);
    for (size_t i = 0; i < bytes; ++i) a.bytes[i] = static_cast<uint8_t>(i * 7 + start);
    a.managed = managed;
    allocations_[start] = std::move(a);
    return start;
  }
  uint8_t& at(uint64_t address) {
    auto it = find(address);
    return it->second.bytes[address - it->first];
  }
  void fill(uint64_t address, size_t bytes, uint8_t value) {
    for (size_t i = 0; i < bytes; ++i) at(address + i) = value;
  }
  void erase(uint64_t start) { allocations_.erase(start); }

  AddressInfo describe(uint64_t address) override {
    AddressInfo info;
    auto it = find(address);
    if (it == allocations_.end()) {
      info.note = "no device allocation at this address";
      return info;
    }
    info.kind = it->second.managed ? AddressInfo::Kind::kUnreadable : AddressInfo::Kind::kDevice;
    if (it->second.managed) info.note = "managed memory, not sampled";
    info.range = {it->first, it->second.bytes.size()};
    return info;
  }

  bool read(uint64_t address, uint64_t bytes, uint8_t* out, std::string& error) override {
    reads.push_back({address, bytes});
    if (fail_reads) {
      error = "injected failure";
      return false;
    }
    auto it = find(address);
    if (it == allocations_.end() || address + bytes > it->first + it->second.bytes.size()) {
      out_of_bounds = true;
      error = "out of bounds";
      return false;
    }
    std::copy_n(it->second.bytes.begin() + static_cast<std::ptrdiff_t>(address - it->first), bytes, out);
    return true;
  }

  std::vector<ByteWindow> reads;
  bool fail_reads = false;
  bool out_of_bounds = false;

 private:
  std::map<uint64_t, Allocation>::iterator find(uint64_t address) {
    auto it = allocations_.upper_bound(address);
    if (it == allocations_.begin()) return allocations_.end();
    --it;
    return address < it->first + it->second.bytes.size() ? it : allocations_.end();
  }
  std::map<uint64_t, Allocation> allocations_;
};

LaunchArg arg(int32_t index, uint64_t value) { return LaunchArg{index, index * 8, 8, value}; }

// before -> (the "kernel" runs: `kernel`) -> after.
template <typename Kernel>
std::vector<ArgRoleResult> measure(FakeMemory& memory, const LaunchArgs& args, Kernel kernel,
                                   const SamplePolicy& policy = {}) {
  std::string why;
  std::optional<ArgSample> sample = ArgSample::plan(memory, args, policy, why);
  EXPECT_TRUE(sample.has_value()) << why;
  if (!sample) return {};
  EXPECT_TRUE(sample->readBefore(memory, why)) << why;
  kernel();
  std::optional<std::vector<ArgRoleResult>> roles = sample->after(memory, why);
  EXPECT_TRUE(roles.has_value()) << why;
  return roles.value_or(std::vector<ArgRoleResult>{});
}

TEST(ArgRoles, RoleNamesAreTheSchemaValues) {
  EXPECT_EQ(argRoleName(ArgRole::kWrite), "write");
  EXPECT_EQ(argRoleName(ArgRole::kRead), "read");
  EXPECT_EQ(argRoleName(ArgRole::kNotPointer), "not_pointer");
}

// A launch's parameters as a kernel would take them: int n; float* out; Array<char*, 3> data;
// struct {int a, b, c;} shape (4-aligned, 12 bytes).
struct Params {
  int32_t n = 5;
  uint64_t out = 0x200000;
  uint64_t data[3] = {0x300000, 0x300100, 0x400000};
  int32_t shape[3] = {1, 2, 3};
};
const std::vector<ParamLayout> kLayout = {{0, 0, 4}, {1, 8, 8}, {2, 16, 24}, {3, 40, 12}};

TEST(ReadParamWords, EveryAlignedWordOfEveryParameter) {
  Params p;
  void* kernel_params[] = {&p.n, &p.out, &p.data, &p.shape};
  LaunchArgs words;
  readParamWords(kLayout, kernel_params, nullptr, 0, 64, words);
  ASSERT_EQ(words.size(), 5u);  // out, data[0..2], shape's first 8 bytes; n is too small
  EXPECT_EQ(words[0].index, 1);
  EXPECT_EQ(words[0].offset_bytes, 8);
  EXPECT_EQ(words[0].size_bytes, 8);
  EXPECT_EQ(words[0].value, 0x200000u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(words[1 + i].index, 2);
    EXPECT_EQ(words[1 + i].offset_bytes, static_cast<int32_t>(16 + 8 * i));
    EXPECT_EQ(words[1 + i].size_bytes, 24);
    EXPECT_EQ(words[1 + i].value, p.data[i]);
  }
  EXPECT_EQ(words[4].index, 3);
  EXPECT_EQ(words[4].offset_bytes, 40);
  EXPECT_EQ(words[4].value, (uint64_t{2} << 32) | 1u);

  // The same launch through a packed parameter buffer gives the same words.
  uint8_t buffer[56] = {};
  std::memcpy(buffer + 0, &p.n, 4);
  std::memcpy(buffer + 8, &p.out, 8);
  std::memcpy(buffer + 16, p.data, 24);
  std::memcpy(buffer + 40, p.shape, 12);
  LaunchArgs packed;
  readParamWords(kLayout, nullptr, buffer, sizeof buffer, 64, packed);
  ASSERT_EQ(packed.size(), words.size());
  for (size_t i = 0; i < packed.size(); ++i) {
    EXPECT_EQ(packed[i].value, words[i].value);
    EXPECT_EQ(packed[i].offset_bytes, words[i].offset_bytes);
  }
}

TEST(ReadParamWords, StopsAtTheWordLimitAndTheBufferEnd) {
  Params p;
  void* kernel_params[] = {&p.n, &p.out, &p.data, &p.shape};
  LaunchArgs words;
  readParamWords(kLayout, kernel_params, nullptr, 0, 2, words);
  EXPECT_EQ(words.size(), 2u);
  uint8_t buffer[32] = {};
  LaunchArgs cut;
  readParamWords(kLayout, nullptr, buffer, sizeof buffer, 64, cut);
  EXPECT_EQ(cut.size(), 3u);  // out and data[0..1]: data[2] lies past the 32 bytes given
}

TEST(ArgSample, PointersInsideAStructParameterGetRolesItsOtherWordsNone) {
  FakeMemory m;
  const uint64_t out = m.add(0x200000, 256), in = m.add(0x300000, 512), other = m.add(0x400000, 64);
  Params p;
  void* kernel_params[] = {&p.n, &p.out, &p.data, &p.shape};
  LaunchArgs words;
  readParamWords(kLayout, kernel_params, nullptr, 0, 64, words);
  const auto roles = measure(m, words, [&] { m.at(in + 0x100 + 3) ^= 1; });  // writes through data[1]
  ASSERT_EQ(roles.size(), 4u) << "shape's word is no pointer and gets no row";
  EXPECT_EQ(roles[0].role, ArgRole::kRead);   // out
  EXPECT_EQ(roles[1].role, ArgRole::kRead);   // data[0]: its span ends where data[1] starts
  EXPECT_EQ(roles[1].sampled_bytes, 0x100);
  EXPECT_EQ(roles[2].role, ArgRole::kWrite);  // data[1]
  EXPECT_EQ(roles[2].offset_bytes, 24);
  EXPECT_EQ(roles[3].role, ArgRole::kRead);   // data[2]
  (void)out;
  (void)other;
}

TEST(PlanWindows, ShortSpanIsReadWhole) {
  const SamplePolicy p;  // 16 KiB head + 8 x 2 KiB
  const auto w = planWindows(0x1000, 0x1000 + 100, p);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].address, 0x1000u);
  EXPECT_EQ(w[0].bytes, 100u);
  const auto exact = planWindows(0x1000, 0x1000 + 32 * 1024, p);
  ASSERT_EQ(exact.size(), 1u);
  EXPECT_EQ(exact[0].bytes, 32u * 1024);
  EXPECT_TRUE(planWindows(0x1000, 0x1000, p).empty());
  EXPECT_TRUE(planWindows(0x1000, 0x800, p).empty());
}

TEST(PlanWindows, LongSpanHeadThenStridedChunksEndingAtTheEnd) {
  const SamplePolicy p;
  const uint64_t start = 0x10000, end = start + (1u << 20) + 13;  // odd size on purpose
  const auto w = planWindows(start, end, p);
  ASSERT_EQ(w.size(), 9u);
  EXPECT_EQ(w[0].address, start);
  EXPECT_EQ(w[0].bytes, p.head_bytes);
  uint64_t total = 0, previous_end = start;
  for (const ByteWindow& x : w) {
    EXPECT_GE(x.address, previous_end) << "windows overlap or go backwards";
    previous_end = x.address + x.bytes;
    total += x.bytes;
  }
  EXPECT_EQ(previous_end, end) << "the last chunk ends at the span's end";
  EXPECT_EQ(total, p.head_bytes + 8 * p.chunk_bytes);
  // Spread evenly: chunk ends are ~ (span - head) / 8 apart.
  const uint64_t stride = (end - start - p.head_bytes) / 8;
  for (size_t i = 2; i < w.size(); ++i) {
    const uint64_t gap = (w[i].address + w[i].bytes) - (w[i - 1].address + w[i - 1].bytes);
    EXPECT_NEAR(static_cast<double>(gap), static_cast<double>(stride), 1.0);
  }
}

TEST(PlanWindows, JustOverHeadPlusChunksStaysDisjoint) {
  SamplePolicy p;
  p.head_bytes = 64;
  p.strided_chunks = 4;
  p.chunk_bytes = 16;
  const auto w = planWindows(0, 64 + 4 * 16 + 1, p);
  ASSERT_EQ(w.size(), 5u);
  for (size_t i = 1; i < w.size(); ++i) EXPECT_GE(w[i].address, w[i - 1].address + w[i - 1].bytes);
  EXPECT_EQ(w.back().address + w.back().bytes, 129u);
}

TEST(PlanWindows, NoChunksReadsTheHeadOnly) {
  SamplePolicy p;
  p.strided_chunks = 0;
  const auto w = planWindows(0, 1 << 20, p);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].bytes, p.head_bytes);
}

TEST(SpanEnds, NextArgumentInTheSameAllocationEndsTheSpan) {
  const DeviceRange qkv{0x1000, 0x3000}, other{0x9000, 0x100};
  // q, k, v views into one allocation (given out of order), a separate buffer, a scalar, and v again.
  const std::vector<uint64_t> pointers = {0x2000, 0x1000, 0x3000, 0x9000, 42, 0x3000};
  const std::vector<std::optional<DeviceRange>> allocations = {qkv, qkv, qkv, other, std::nullopt, qkv};
  const auto ends = spanEnds(pointers, allocations);
  EXPECT_EQ(ends[0], 0x3000u);
  EXPECT_EQ(ends[1], 0x2000u);
  EXPECT_EQ(ends[2], 0x4000u);
  EXPECT_EQ(ends[3], 0x9100u);
  EXPECT_EQ(ends[4], 0u);
  EXPECT_EQ(ends[5], 0x4000u);
}

TEST(ArgSample, OutputWrittenInputRead) {
  FakeMemory m;
  const uint64_t in = m.add(0x100000, 4096), out = m.add(0x200000, 4096);
  LaunchArgs args{arg(0, in), arg(1, out), arg(2, 4096)};
  const auto roles = measure(m, args, [&] { m.fill(out, 4096, 0xAB); });
  ASSERT_EQ(roles.size(), 3u);
  EXPECT_EQ(roles[0].arg_index, 0);
  EXPECT_EQ(roles[0].role, ArgRole::kRead);
  EXPECT_EQ(roles[0].sampled_bytes, 4096);
  EXPECT_EQ(roles[1].role, ArgRole::kWrite);
  EXPECT_EQ(roles[1].offset_bytes, 8);
  EXPECT_NE(roles[1].method.find("4096 of 4096 bytes"), std::string::npos) << roles[1].method;
  EXPECT_EQ(roles[2].role, ArgRole::kNotPointer);
  EXPECT_EQ(roles[2].sampled_bytes, 0);
  EXPECT_FALSE(m.out_of_bounds);
}

TEST(ArgSample, OneChangedByteInAStridedChunkIsAWrite) {
  FakeMemory m;
  const uint64_t big = m.add(0x1000000, 8 << 20);
  const SamplePolicy p;
  const auto windows = planWindows(big, big + (8 << 20), p);
  const ByteWindow middle = windows[4];  // a chunk in the middle of the allocation
  LaunchArgs args{arg(0, big)};
  const auto roles = measure(m, args, [&] { m.at(middle.address + middle.bytes / 2) ^= 0xFF; });
  ASSERT_EQ(roles.size(), 1u);
  EXPECT_EQ(roles[0].role, ArgRole::kWrite);
  EXPECT_EQ(roles[0].sampled_bytes, static_cast<int64_t>(p.head_bytes + 8 * p.chunk_bytes));
  EXPECT_NE(roles[0].method.find("1 changed"), std::string::npos) << roles[0].method;
  EXPECT_FALSE(m.out_of_bounds);
}

TEST(ArgSample, AWriteBetweenTheSampledChunksIsMissed) {
  // The documented limit: bytes outside the sample are not compared.
  FakeMemory m;
  const uint64_t big = m.add(0x1000000, 8 << 20);
  const auto windows = planWindows(big, big + (8 << 20), SamplePolicy{});
  const uint64_t gap = windows[3].address + windows[3].bytes + 100;
  ASSERT_LT(gap, windows[4].address);
  LaunchArgs args{arg(0, big)};
  const auto roles = measure(m, args, [&] { m.at(gap) ^= 0xFF; });
  ASSERT_EQ(roles.size(), 1u);
  EXPECT_EQ(roles[0].role, ArgRole::kRead);
}

TEST(ArgSample, EqualValuesWrittenLookLikeARead) {
  FakeMemory m;
  const uint64_t out = m.add(0x100000, 256);
  m.fill(out, 256, 0);
  LaunchArgs args{arg(0, out)};
  const auto roles = measure(m, args, [&] { m.fill(out, 256, 0); });  // zeros over zeros
  ASSERT_EQ(roles.size(), 1u);
  EXPECT_EQ(roles[0].role, ArgRole::kRead);
  EXPECT_NE(roles[0].method.find("none changed"), std::string::npos);
}

TEST(ArgSample, ShortAllocationAndPointerNearItsEndAreNeverReadPast) {
  FakeMemory m;
  const uint64_t small = m.add(0x100000, 24);
  const uint64_t big = m.add(0x200000, 1 << 20);
  const uint64_t tail = big + (1 << 20) - 40;  // 40 bytes before the end
  LaunchArgs args{arg(0, small), arg(1, tail)};
  const auto roles = measure(m, args, [&] { m.at(tail + 39) ^= 0x5A; });
  ASSERT_EQ(roles.size(), 2u);
  EXPECT_EQ(roles[0].sampled_bytes, 24);
  EXPECT_EQ(roles[0].role, ArgRole::kRead);
  EXPECT_EQ(roles[1].sampled_bytes, 40);
  EXPECT_EQ(roles[1].role, ArgRole::kWrite);
  EXPECT_FALSE(m.out_of_bounds);
  for (const ByteWindow& r : m.reads) {
    const bool in_small = r.address >= small && r.address + r.bytes <= small + 24;
    const bool in_big = r.address >= big && r.address + r.bytes <= big + (1 << 20);
    EXPECT_TRUE(in_small || in_big);
  }
}

TEST(ArgSample, SameAddressTwiceIsSampledOnceAndSharesTheRole) {
  // An in-place kernel gets one buffer as input and output.
  FakeMemory m;
  const uint64_t x = m.add(0x100000, 1024);
  LaunchArgs args{arg(0, x), arg(1, x)};
  const auto roles = measure(m, args, [&] { m.fill(x + 100, 10, 0xEE); });
  ASSERT_EQ(roles.size(), 2u);
  EXPECT_EQ(roles[0].role, ArgRole::kWrite);
  EXPECT_EQ(roles[1].role, ArgRole::kWrite);
  EXPECT_EQ(roles[1].sampled_bytes, 1024);
  EXPECT_NE(roles[1].method.find("same address as argument 0"), std::string::npos) << roles[1].method;
  uint64_t read_bytes = 0;
  for (const ByteWindow& r : m.reads) read_bytes += r.bytes;
  EXPECT_EQ(read_bytes, 2u * 1024) << "one sample before and one after, not one per argument";
}

TEST(ArgSample, ViewsIntoOneAllocationKeepTheirOwnSpans) {
  // q, k, v point into one qkv buffer; the kernel writes only through o, which is the fourth
  // quarter. Without spans, q's sample would run into o's bytes and call q written.
  FakeMemory m;
  const uint64_t base = m.add(0x100000, 4 * 4096);
  const uint64_t q = base, k = base + 4096, v = base + 8192, o = base + 12288;
  LaunchArgs args{arg(0, q), arg(1, k), arg(2, v), arg(3, o)};
  const auto roles = measure(m, args, [&] { m.fill(o + 4000, 96, 0x11); });
  ASSERT_EQ(roles.size(), 4u);
  EXPECT_EQ(roles[0].role, ArgRole::kRead);
  EXPECT_EQ(roles[1].role, ArgRole::kRead);
  EXPECT_EQ(roles[2].role, ArgRole::kRead);
  EXPECT_EQ(roles[3].role, ArgRole::kWrite);
  for (const ArgRoleResult& r : roles) EXPECT_EQ(r.sampled_bytes, 4096);
}

TEST(ArgSample, NullScalarsAndUnknownAddressesAreNotPointers) {
  FakeMemory m;
  const uint64_t out = m.add(0x100000, 64);
  LaunchArgs args{arg(0, 0), arg(1, 0x3f800000), arg(2, out), arg(3, 0x7fff00001234)};
  const auto roles = measure(m, args, [&] { m.at(out) ^= 1; });
  ASSERT_EQ(roles.size(), 4u);
  EXPECT_EQ(roles[0].role, ArgRole::kNotPointer);
  EXPECT_EQ(roles[0].method, "null");
  EXPECT_EQ(roles[1].role, ArgRole::kNotPointer);
  EXPECT_EQ(roles[2].role, ArgRole::kWrite);
  EXPECT_EQ(roles[3].role, ArgRole::kNotPointer);
  EXPECT_EQ(roles[3].method, "no device allocation at this address");
}

TEST(ArgSample, ManagedMemoryGetsNoRoleAndANote) {
  FakeMemory m;
  const uint64_t managed = m.add(0x100000, 64, /*managed=*/true);
  const uint64_t out = m.add(0x200000, 64);
  LaunchArgs args{arg(0, managed), arg(1, out)};
  std::string why;
  auto sample = ArgSample::plan(m, args, SamplePolicy{}, why);
  ASSERT_TRUE(sample.has_value()) << why;
  ASSERT_EQ(sample->notes().size(), 1u);
  EXPECT_NE(sample->notes()[0].find("argument 0 (offset 0): managed memory"), std::string::npos);
  ASSERT_TRUE(sample->readBefore(m, why));
  auto roles = sample->after(m, why);
  ASSERT_TRUE(roles.has_value());
  ASSERT_EQ(roles->size(), 1u);
  EXPECT_EQ((*roles)[0].arg_index, 1);
  for (const ByteWindow& r : m.reads) EXPECT_GE(r.address, out) << "managed memory must not be read";
}

TEST(ArgSample, NoDevicePointerMeansNothingToMeasure) {
  FakeMemory m;
  m.add(0x100000, 64, /*managed=*/true);
  LaunchArgs args{arg(0, 7), arg(1, 0), arg(2, 0x100000)};
  std::string why;
  EXPECT_FALSE(ArgSample::plan(m, args, SamplePolicy{}, why).has_value());
  EXPECT_EQ(why, "no argument is a readable device pointer");
  EXPECT_TRUE(m.reads.empty());
}

TEST(ArgSample, BudgetLeavesLaterArgumentsWithoutARole) {
  FakeMemory m;
  const uint64_t a = m.add(0x100000, 1000), b = m.add(0x200000, 1000), c = m.add(0x300000, 1000);
  SamplePolicy p;
  p.max_bytes_per_launch = 2000;
  LaunchArgs args{arg(0, a), arg(1, b), arg(2, c), arg(3, c)};
  std::string why;
  auto sample = ArgSample::plan(m, args, p, why);
  ASSERT_TRUE(sample.has_value());
  EXPECT_EQ(sample->sampledBytes(), 2000u);
  ASSERT_EQ(sample->notes().size(), 2u);  // c over the budget, and its alias with it
  EXPECT_NE(sample->notes()[0].find("over the sample budget"), std::string::npos);
  EXPECT_NE(sample->notes()[1].find("aliases an argument that was not sampled"), std::string::npos);
  ASSERT_TRUE(sample->readBefore(m, why));
  auto roles = sample->after(m, why);
  ASSERT_TRUE(roles.has_value());
  ASSERT_EQ(roles->size(), 2u);
  EXPECT_EQ((*roles)[1].arg_index, 1);
}

TEST(ArgSample, AllocationFreedDuringTheLaunchMeasuresNothing) {
  FakeMemory m;
  const uint64_t x = m.add(0x100000, 64);
  LaunchArgs args{arg(0, x)};
  std::string why;
  auto sample = ArgSample::plan(m, args, SamplePolicy{}, why);
  ASSERT_TRUE(sample.has_value());
  ASSERT_TRUE(sample->readBefore(m, why));
  m.erase(x);
  m.add(0x100000, 32);  // handed out again, smaller
  const size_t reads_before = m.reads.size();
  EXPECT_FALSE(sample->after(m, why).has_value());
  EXPECT_NE(why.find("changed during the launch"), std::string::npos) << why;
  EXPECT_EQ(m.reads.size(), reads_before) << "nothing is read from a buffer that changed";
}

TEST(ArgSample, ReadFailuresMeasureNothing) {
  FakeMemory m;
  const uint64_t x = m.add(0x100000, 64);
  LaunchArgs args{arg(0, x)};
  std::string why;
  auto sample = ArgSample::plan(m, args, SamplePolicy{}, why);
  ASSERT_TRUE(sample.has_value());
  m.fail_reads = true;
  EXPECT_FALSE(sample->readBefore(m, why));
  EXPECT_NE(why.find("before the launch failed: injected failure"), std::string::npos) << why;
  m.fail_reads = false;
  ASSERT_TRUE(sample->readBefore(m, why));
  m.fail_reads = true;
  EXPECT_FALSE(sample->after(m, why).has_value());
  EXPECT_NE(why.find("after the launch failed"), std::string::npos) << why;
}

TEST(ArgSample, ArgumentsBeyondTheInlineEightKeepTheirIndex) {
  FakeMemory m;
  LaunchArgs args;
  std::vector<uint64_t> buffers;
  for (int i = 0; i < 12; ++i) buffers.push_back(m.add(0x100000 * (i + 1), 128));
  for (int i = 0; i < 12; ++i) args.push_back(arg(i, buffers[static_cast<size_t>(i)]));
  const auto roles = measure(m, args, [&] { m.at(buffers[10] + 5) ^= 1; });
  ASSERT_EQ(roles.size(), 12u);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(roles[static_cast<size_t>(i)].arg_index, i);
    EXPECT_EQ(roles[static_cast<size_t>(i)].role, i == 10 ? ArgRole::kWrite : ArgRole::kRead) << i;
  }
}

}  // namespace
}  // namespace fprof::collector
