// A database read as a stream (profile_stream.h) gives, row by row, what loadProfile gives whole:
// on every recorded database, and on files made to need each path of the stream (kernels whose
// ids do not follow their start times, programmatic launches, NVTX ranges out of start order and
// in a circle).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "fprof/core/dependency_wait.h"
#include "fprof/core/profile_stream.h"
#include "fprof/core/store.h"
#include "test_util.h"

namespace fprof::core {
namespace {

namespace fs = std::filesystem;
using fprof::testing::execSql;
using fprof::testing::makeKernel;
using fprof::testing::tempPath;

std::unique_ptr<ProfileStream> openStream(const std::string& path) {
  auto in = ProfileStream::open(path);
  EXPECT_TRUE(in.ok()) << in.error();
  return in ? std::move(*in) : nullptr;
}

template <class Row>
std::vector<Row> readAll(Expected<std::unique_ptr<RowStream<Row>>> rows) {
  std::vector<Row> out;
  EXPECT_TRUE(rows.ok()) << rows.error();
  if (!rows) return out;
  for (Row row;;) {
    Expected<bool> more = (*rows)->next(row);
    EXPECT_TRUE(more.ok()) << more.error();
    if (!more || !*more) return out;
    out.push_back(row);
  }
}

// The kernels by start, their waits, names and counters; the ranges by start with their parents;
// the kernel names; the first event; and, once read to the end, the same warnings.
void expectStreamAsLoaded(const std::string& path) {
  SCOPED_TRACE(path);
  auto loaded = loadProfile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  const Profile& p = *loaded;
  auto in = openStream(path);
  ASSERT_NE(in, nullptr);

  const std::vector<KernelRow> kernels = readAll(in->kernelsByStart());
  ASSERT_EQ(kernels.size(), p.kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelRow &a = kernels[i], &b = p.kernels[i];
    ASSERT_EQ(a.id, b.id) << "kernel " << i;
    EXPECT_EQ(a.start_ns, b.start_ns);
    EXPECT_EQ(a.dependency_wait_ns, b.dependency_wait_ns) << "kernel " << a.id;
    EXPECT_EQ(in->small().str(a.demangled_id), p.str(b.demangled_id));
    EXPECT_EQ(a.nvtx_path_id.has_value(), b.nvtx_path_id.has_value());
    if (a.nvtx_path_id && b.nvtx_path_id) {
      EXPECT_EQ(in->small().str(*a.nvtx_path_id), p.str(*b.nvtx_path_id));
    }
    auto counters = in->countersOf(a.id);
    ASSERT_TRUE(counters.ok()) << counters.error();
    auto it = std::find_if(p.counters.begin(), p.counters.end(), [&](const KernelCounters& c) { return c.kernel_id == a.id; });
    ASSERT_EQ(counters->has_value(), it != p.counters.end()) << "kernel " << a.id;
    if (*counters) {
      EXPECT_EQ((*counters)->dram_read_bytes, it->dram_read_bytes);
      EXPECT_EQ((*counters)->flops_fp32, it->flops_fp32);
      EXPECT_EQ((*counters)->gpu_time_ns, it->gpu_time_ns);
      EXPECT_EQ((*counters)->source, it->source);
    }
  }

  auto name_ids = in->kernelNameIds();
  ASSERT_TRUE(name_ids.ok()) << name_ids.error();
  std::set<std::string> streamed_names, loaded_names;
  for (uint32_t id : *name_ids) streamed_names.insert(in->small().str(id));
  for (const KernelRow& k : p.kernels) loaded_names.insert(p.str(k.demangled_id));
  EXPECT_EQ(streamed_names, loaded_names);
  EXPECT_EQ(streamed_names.size(), name_ids->size()) << "each name once";

  auto first = in->firstEventNs();
  ASSERT_TRUE(first.ok()) << first.error();
  std::optional<int64_t> expected_first;
  auto see = [&](int64_t t) { expected_first = std::min(expected_first.value_or(t), t); };
  for (const KernelRow& k : p.kernels) see(k.start_ns);
  for (const NvtxRangeRow& r : p.nvtx_ranges) see(r.start_ns);
  for (const MemcpyRecord& m : p.memcpys) see(m.start_ns);
  for (const MemsetRecord& m : p.memsets) see(m.start_ns);
  EXPECT_EQ(*first, expected_first);

  const std::vector<NvtxRangeRecord> ranges = readAll(in->rows<NvtxRangeRecord>());
  ASSERT_EQ(ranges.size(), p.nvtx_ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    ASSERT_EQ(ranges[i].key, p.nvtx_ranges[i].key) << "range " << i;
    EXPECT_EQ(ranges[i].parent_key, p.nvtx_ranges[i].parent_key) << "range " << ranges[i].key;
    EXPECT_EQ(ranges[i].message, p.nvtx_ranges[i].message);
  }
  (void)readAll(in->rows<KernelCounters>());
  (void)readAll(in->rows<KernelMetricRecord>());
  EXPECT_EQ(in->warnings(), p.warnings);
}

TEST(ProfileStream, EveryRecordedDatabaseStreamsAsItLoads) {
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(FPROF_SOURCE_DIR) / "tests" / "data")) {
    if (e.path().extension() != ".fprof") continue;
    expectStreamAsLoaded(e.path().string());
    ++files;
  }
  EXPECT_GE(files, 10u);
}

// Kernels written out of start order (as a merged file holds its ranks), a programmatic launch
// among them, counters on some: the stream sorts them as loadProfile does and settles the wait.
TEST(ProfileStream, KernelsWhoseIdsDoNotFollowTheirStartsComeByStart) {
  const std::string path = tempPath("stream_kernels.fprof");
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.ok()) << w.error();
    (*w)->add(makeKernel("late", 5000, 100, 1));
    (*w)->add(makeKernel("producer", 1000, 500, 2));
    KernelRecord consumer = makeKernel("consumer", 1400, 300, 3);
    consumer.programmatic_launch = true;
    (*w)->add(consumer);
    KernelRecord tie = makeKernel("tie", 1000, 50, 4);
    tie.stream_id = 8;  // another stream: the producer stays the consumer's predecessor
    (*w)->add(tie);
    ASSERT_TRUE((*w)->flush());
    KernelCounters c;
    c.dram_read_bytes = 4096;
    c.flops_fp32 = 1e6;
    (*w)->addCountersForLaunch(1, 3, 0, c, {});
    ASSERT_TRUE((*w)->close());
  }
  auto in = openStream(path);
  ASSERT_NE(in, nullptr);
  const std::vector<KernelRow> kernels = readAll(in->kernelsByStart());
  std::vector<std::string> names;
  for (const KernelRow& k : kernels) names.push_back(in->small().str(k.demangled_id));
  EXPECT_EQ(names, (std::vector<std::string>{"producer", "tie", "consumer", "late"})) << "ties by id";
  ASSERT_EQ(kernels.size(), 4u);
  EXPECT_EQ(kernels[2].dependency_wait_ns, 100) << "the consumer waited for the producer until 1500";
  auto counters = in->countersOf(kernels[2].id);
  ASSERT_TRUE(counters.ok()) << counters.error();
  ASSERT_TRUE(counters->has_value());
  EXPECT_EQ((*counters)->dram_read_bytes, 4096);
  auto none = in->countersOf(kernels[0].id);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  expectStreamAsLoaded(path);
}

// Ranges out of start order (a parent written after its children, as the collector writes them
// at their end) and parents that run in a circle: the stream cuts the links loadProfile cuts, and
// says the same.
TEST(ProfileStream, NvtxRangesOutOfOrderAndInACircleStreamAsTheyLoad) {
  const std::string path = tempPath("stream_nvtx.fprof");
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.ok()) << w.error();
    auto range = [](uint64_t key, std::optional<uint64_t> parent, int64_t start_ns, const char* message) {
      NvtxRangeRecord r;
      r.key = key;
      r.process_id = 1;
      r.parent_key = parent;
      r.message = message;
      r.start_ns = start_ns;
      r.end_ns = start_ns + 1000;
      return r;
    };
    (*w)->add(range(2, 1, 200, "child"));
    (*w)->add(range(1, std::nullopt, 100, "parent"));
    (*w)->add(range(3, 4, 300, "circle a"));
    (*w)->add(range(4, 3, 300, "circle b"));
    (*w)->add(makeKernel("k", 250, 10, 1));
    ASSERT_TRUE((*w)->close());
  }
  auto loaded = loadProfile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  ASSERT_EQ(loaded->warnings.size(), 1u);
  EXPECT_NE(loaded->warnings[0].find("in a circle"), std::string::npos) << loaded->warnings[0];
  expectStreamAsLoaded(path);
  // Linked downwards only, in start order: nothing to cut, and the same rows.
  ASSERT_NO_FATAL_FAILURE(execSql(path, "DELETE FROM nvtx_range WHERE id IN (3, 4)"));
  expectStreamAsLoaded(path);
}

}  // namespace
}  // namespace fprof::core
