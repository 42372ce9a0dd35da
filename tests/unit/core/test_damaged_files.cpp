// Damaged files that can still be read: the reader cleans every text, repairs what would make a
// walk endless or a name empty, and says so once per kind of damage (Profile::warnings).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "fprof/core/profile_stream.h"
#include "fprof/core/store.h"
#include "fprof/core/text.h"
#include "test_util.h"

namespace fprof::core {
namespace {

using fprof::testing::execSql;
using fprof::testing::makeKernel;
using fprof::testing::tempPath;

NvtxRangeRecord range(uint64_t key, std::optional<uint64_t> parent, int64_t start_ns) {
  NvtxRangeRecord r;
  r.key = key;
  r.process_id = 1;
  r.parent_key = parent;
  r.domain = "app";
  r.message = "range " + std::to_string(key);
  r.start_ns = start_ns;
  r.end_ns = start_ns + 1000;
  return r;
}

// Four kernels (ids 1..4) inside a chain of four ranges (keys 1..4, each the parent of the next).
std::string writeRun(const std::string& name) {
  const std::string path = tempPath(name);
  auto w = Writer::create(path);
  EXPECT_TRUE(w.ok());
  for (uint64_t key = 1; key <= 4; ++key) {
    (*w)->add(range(key, key > 1 ? std::optional<uint64_t>(key - 1) : std::nullopt, static_cast<int64_t>(key) * 10));
    KernelRecord k = makeKernel("kernel_" + std::to_string(key), static_cast<int64_t>(key) * 100, 50,
                                static_cast<uint32_t>(key));
    k.nvtx_range_key = key;
    k.nvtx_path = "app::range " + std::to_string(key);
    KernelCounters c;
    c.kernel_id = (*w)->nextKernelId();
    c.flops_fp32 = 1e6;
    c.dram_read_bytes = 1e5;
    (*w)->add(c);
    (*w)->add(k);
  }
  EXPECT_TRUE((*w)->close());
  return path;
}

const NvtxRangeRow& rangeOf(const Profile& p, uint64_t key) {
  for (const NvtxRangeRow& r : p.nvtx_ranges) {
    if (r.key == key) return r;
  }
  throw std::runtime_error("no range " + std::to_string(key));
}

TEST(DamagedFiles, AWellFormedFileHasNoWarnings) {
  auto p = loadProfile(writeRun("damage_none.fprof"));
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_TRUE(p->warnings.empty()) << p->warnings.front();
  EXPECT_EQ(rangeOf(*p, 4).parent_key, std::optional<uint64_t>(3));
}

TEST(DamagedFiles, MissingNameStringsAreNamedUnknownAndWarnedOnce) {
  const std::string path = writeRun("damage_names.fprof");
  execSql(path,
          "UPDATE kernel SET name_id = 99999, demangled_id = 99999 WHERE id IN (2, 3);"
          "UPDATE kernel SET nvtx_path_id = 88888 WHERE id = 4;");
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->kernels.size(), 4u);
  EXPECT_EQ(p->str(p->kernels[0].demangled_id), "kernel_1");
  EXPECT_EQ(p->str(p->kernels[1].demangled_id), "<unknown name #99999>");
  EXPECT_EQ(p->str(p->kernels[2].name_id), "<unknown name #99999>");
  ASSERT_TRUE(p->kernels[3].nvtx_path_id.has_value());
  EXPECT_EQ(p->str(*p->kernels[3].nvtx_path_id), "<unknown NVTX path #88888>");
  ASSERT_EQ(p->warnings.size(), 2u);
  EXPECT_EQ(p->warnings[0], path + ": 2 kernels name a string id missing from the string table (first: kernel 2, "
                                   "string #99999); shown as <unknown name #ID>");
  EXPECT_NE(p->warnings[1].find("1 kernel names an NVTX path string id missing"), std::string::npos) << p->warnings[1];
}

TEST(DamagedFiles, ARangeItsOwnParentIsCutAndNamed) {
  const std::string path = writeRun("damage_self.fprof");
  execSql(path, "UPDATE nvtx_range SET parent_id = 3 WHERE id = 3;");
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_FALSE(rangeOf(*p, 3).parent_key.has_value());
  EXPECT_EQ(rangeOf(*p, 4).parent_key, std::optional<uint64_t>(3));  // the rest of the chain stays
  ASSERT_EQ(p->warnings.size(), 1u);
  EXPECT_EQ(p->warnings[0], path + ": 1 NVTX parent chain runs in a circle (range 3 is its own parent); the parent "
                                   "link that closes each circle is ignored");
}

TEST(DamagedFiles, TwoRangesEachOthersParentLoseOneLink) {
  const std::string path = writeRun("damage_pair.fprof");
  execSql(path, "UPDATE nvtx_range SET parent_id = 2 WHERE id = 1;");  // 2's parent is 1 already
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  // Exactly one of the two links is cut: each range now has a finite way up.
  EXPECT_EQ(rangeOf(*p, 1).parent_key.has_value() + rangeOf(*p, 2).parent_key.has_value(), 1);
  ASSERT_EQ(p->warnings.size(), 1u);
  EXPECT_NE(p->warnings[0].find("is its own ancestor (1 -> 2 -> 1)"), std::string::npos) << p->warnings[0];
}

TEST(DamagedFiles, ADeepChainIsNoCircle) {
  const std::string path = tempPath("damage_deep.fprof");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok());
  constexpr uint64_t kDepth = 200'000;
  // Keys that run against the nesting (parents above their children) take the full check.
  for (uint64_t level = 0; level < kDepth; ++level) {
    const uint64_t key = kDepth - level;
    (*w)->add(range(key, level > 0 ? std::optional<uint64_t>(key + 1) : std::nullopt, static_cast<int64_t>(level)));
  }
  ASSERT_TRUE((*w)->close());
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_TRUE(p->warnings.empty());
  EXPECT_EQ(rangeOf(*p, 1).parent_key, std::optional<uint64_t>(2));
}

TEST(DamagedFiles, InfiniteCountersReadAsNotCollected) {
  const std::string path = writeRun("damage_inf.fprof");
  execSql(path,
          "UPDATE kernel_counter SET flops_fp32 = 9e999, dram_read_bytes = -9e999 WHERE kernel_id = 2;"
          "UPDATE kernel SET theoretical_occupancy = 9e999 WHERE id = 3;"
          "UPDATE kernel SET end_ns = start_ns - 10 WHERE id = 4;");
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->counters.size(), 4u);
  EXPECT_FALSE(p->counters[1].flops_fp32.has_value());
  EXPECT_FALSE(p->counters[1].dram_read_bytes.has_value());
  EXPECT_EQ(p->counters[0].flops_fp32, std::optional<double>(1e6));
  EXPECT_FALSE(p->kernels[2].theoretical_occupancy.has_value());
  ASSERT_EQ(p->warnings.size(), 2u);
  EXPECT_NE(p->warnings[0].find("1 kernel ends before it starts (first: kernel 4)"), std::string::npos) << p->warnings[0];
  EXPECT_NE(p->warnings[1].find("2 kernel_counter values are infinite (first: kernel 2)"), std::string::npos)
      << p->warnings[1];
}

TEST(DamagedFiles, EveryTextIsCleanedOnLoad) {
  const std::string path = tempPath("damage_text.fprof");
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok());
  ProcessInfo proc;
  proc.host = "node\x1B[31m1";
  proc.command_line = std::string("./a\0b", 5);
  ASSERT_TRUE((*w)->addProcess(proc).ok());
  KernelRecord k = makeKernel("k\xFF\r\n", 0, 10, 1);
  k.launch_api = "launch\x07";
  (*w)->add(k);
  NvtxRangeRecord r = range(1, std::nullopt, 0);
  r.message = "msg\xC2\x9B" "31m";
  (*w)->add(r);
  ASSERT_TRUE((*w)->setMetadata("mode", "trace\x1B]0;t\x07").ok());
  ASSERT_TRUE((*w)->close());
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->processes.at(0).host, "node\xE2\x90\x9B[31m1");
  EXPECT_EQ(p->processes.at(0).command_line, "./a\xE2\x90\x80" "b");
  EXPECT_EQ(p->str(p->kernels.at(0).demangled_id), "k\xEF\xBF\xBD\xE2\x90\x8D\xE2\x90\x8A");
  EXPECT_EQ(p->str(p->kernels.at(0).launch_api_id), "launch\xE2\x90\x87");
  EXPECT_EQ(p->nvtx_ranges.at(0).message, "msg\xEF\xBF\xBD" "31m");
  EXPECT_EQ(p->meta("mode"), "trace\xE2\x90\x9B]0;t\xE2\x90\x87");
  for (const std::string& s : p->strings) EXPECT_TRUE(isCleanText(s)) << s;
}

TEST(DamagedFiles, HugeAndNegativeStringIdsStillResolve) {
  const std::string path = writeRun("damage_ids.fprof");
  execSql(path,
          "UPDATE string SET id = id + 1000000000000 WHERE id > 0;"
          "UPDATE kernel SET name_id = name_id + 1000000000000, demangled_id = demangled_id + 1000000000000, "
          "nvtx_path_id = nvtx_path_id + 1000000000000;"
          "UPDATE kernel SET id = 1099511627776 WHERE id = 4;"
          "UPDATE kernel_counter SET kernel_id = 1099511627776 WHERE kernel_id = 4;");
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_TRUE(p->warnings.empty());
  EXPECT_EQ(p->str(p->kernels.at(3).demangled_id), "kernel_4");
  EXPECT_EQ(p->kernels.at(3).id, 1099511627776);
  EXPECT_EQ(p->str(*p->kernels.at(3).nvtx_path_id), "app::range 4");
}

// A value SQLite kept in a number column as it came (text that is no number, a blob, a fraction in
// an INTEGER column) is read as SQLite converts it, never silently: each table says how many of its
// rows hold one, and the first.
TEST(DamagedFiles, NumbersOfTheWrongTypeAreReadAsConvertedAndSaidPerTable) {
  const std::string path = writeRun("damage_types.fprof");
  execSql(path,
          "UPDATE kernel SET grid_x = 2.5 WHERE id = 2;"
          "UPDATE kernel SET block_x = '128 threads' WHERE id = 3;"
          "UPDATE nvtx_range SET depth = 'deep' WHERE id = 1;"
          "UPDATE nvtx_range SET depth = x'07' WHERE id = 2;"
          "UPDATE kernel_counter SET flops_fp32 = 'many' WHERE kernel_id = 4;");
  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->kernels.at(1).grid_x, 2);
  EXPECT_EQ(p->kernels.at(2).block_x, 128);
  EXPECT_EQ(rangeOf(*p, 1).depth, 0);
  EXPECT_EQ(p->counters.at(3).flops_fp32, std::optional<double>(0.0));
  const std::vector<std::string> said{
      path + ": 2 rows of kernel hold a value of the wrong type in a number column (first: grid_x holds a fraction, "
             "read cut to its integer part)",
      path + ": 1 row of kernel_counter holds a value of the wrong type in a number column (first: flops_fp32 holds "
             "text, read as the number it begins with, else 0)",
      path + ": 2 rows of nvtx_range hold a value of the wrong type in a number column (first: depth holds text, "
             "read as the number it begins with, else 0)"};
  EXPECT_EQ(p->warnings, said);
}

// The same damage in the tables a stream reads, and in the launch tables read after the rest.
TEST(DamagedFiles, NumbersOfTheWrongTypeAreSaidByAStreamAndByTheLaunchTables) {
  const std::string path = writeRun("damage_types_later.fprof");
  execSql(path,
          "INSERT INTO kernel_arg(process_id, correlation_id, arg_index, offset_bytes, size_bytes, value) "
          "SELECT process_id, correlation_id, 0, 0, 8, 'a pointer' FROM kernel WHERE id = 1;"
          "UPDATE kernel SET stream_id = x'01' WHERE id = 4;");
  const std::string args_said = path + ": 1 row of kernel_arg holds a value of the wrong type in a number column "
                                       "(first: value holds text, read as the number it begins with, else 0)";
  const std::string kernels_said = path + ": 1 row of kernel holds a value of the wrong type in a number column "
                                          "(first: stream_id holds a blob, read as the number its bytes begin with, "
                                          "else 0)";
  auto whole = loadProfile(path);
  ASSERT_TRUE(whole.ok()) << whole.error();
  EXPECT_EQ(whole->warnings, (std::vector<std::string>{kernels_said, args_said}));

  auto without = loadProfile(path, {.launch_tables = false});
  ASSERT_TRUE(without.ok()) << without.error();
  EXPECT_EQ(without->warnings, std::vector<std::string>{kernels_said});
  auto later = loadLaunchTables(*without);
  ASSERT_TRUE(later.ok()) << later.error();
  ASSERT_EQ(later->kernel_args.size(), 1u);
  EXPECT_EQ(later->kernel_args[0].value, 0u);
  EXPECT_EQ(later->warnings, std::vector<std::string>{args_said});

  auto in = ProfileStream::open(path);
  ASSERT_TRUE(in.ok()) << in.error();
  auto kernels = (*in)->kernelsByStart();
  ASSERT_TRUE(kernels.ok()) << kernels.error();
  KernelRow k;
  for (;;) {
    Expected<bool> more = (*kernels)->next(k);
    ASSERT_TRUE(more.ok()) << more.error();
    if (!*more) break;
  }
  EXPECT_EQ((*in)->warnings(), std::vector<std::string>{kernels_said});
}

}  // namespace
}  // namespace fprof::core
