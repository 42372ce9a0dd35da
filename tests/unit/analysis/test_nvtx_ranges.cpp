// Finding NVTX ranges by key (nvtx_ranges.h) and the op index built on it (nvtx_ops.h), on
// hand-built profiles: keys unique per process only, damaged parent links, nested ops.
#include <gtest/gtest.h>

#include <utility>

#include "fprof/analysis/nvtx_ops.h"
#include "fprof/analysis/nvtx_ranges.h"

namespace fprof::analysis {
namespace {

core::NvtxRangeRecord range(uint32_t process, uint64_t key, std::optional<uint64_t> parent, std::string message,
                            std::string domain = "fprof") {
  core::NvtxRangeRecord r;
  r.process_id = process;
  r.key = key;
  r.parent_key = parent;
  r.message = std::move(message);
  r.domain = std::move(domain);
  return r;
}

core::KernelRow kernelIn(uint32_t process, std::optional<uint64_t> range_key, int64_t start_ns) {
  core::KernelRow k;
  k.process_id = process;
  k.nvtx_range_key = range_key;
  k.start_ns = start_ns;
  k.end_ns = start_ns + 10;
  return k;
}

TEST(NvtxRangeLookup, FindsARangeByProcessAndKeyInAnyOrder) {
  core::Profile p;
  p.nvtx_ranges = {range(2, 7, std::nullopt, "b"), range(1, 9, 7, "c"), range(1, 7, std::nullopt, "a"),
                   range(2, 3, 7, "d")};
  const NvtxRangeLookup lookup(p);
  EXPECT_EQ(lookup.find(1, 7), 2u);
  EXPECT_EQ(lookup.find(2, 7), 0u) << "keys are unique per process only";
  EXPECT_EQ(lookup.find(1, 3), std::nullopt);
  EXPECT_EQ(lookup.find(3, 7), std::nullopt);
  EXPECT_EQ(lookup.parent(1), 2u) << "the parent in the range's own process";
  EXPECT_EQ(lookup.parent(3), 0u);
  EXPECT_EQ(lookup.parent(0), std::nullopt);
  EXPECT_EQ(lookup.ofKernel(kernelIn(2, 3, 0)), 3u);
  EXPECT_EQ(lookup.ofKernel(kernelIn(2, std::nullopt, 0)), std::nullopt);
}

TEST(NvtxRangeLookup, DamagedLinksEndTheWalk) {
  core::Profile p;
  // A key held twice (the later range is found), a range its own parent, a parent not recorded.
  p.nvtx_ranges = {range(1, 5, std::nullopt, "first"), range(1, 5, std::nullopt, "second"), range(1, 6, 6, "self"),
                   range(1, 8, 99, "orphan")};
  const NvtxRangeLookup lookup(p);
  EXPECT_EQ(lookup.find(1, 5), 1u);
  EXPECT_EQ(lookup.parent(2), std::nullopt);
  EXPECT_EQ(lookup.parent(3), std::nullopt);
}

TEST(IndexOps, NestedOpsListTheirChildrenAndKernelsAndShareTagsOfOneMessage) {
  core::Profile p;
  const std::string outer = "op=block variant=unfused pair=b reads=x writes=y";
  p.nvtx_ranges = {range(1, 1, std::nullopt, outer), range(1, 2, 1, "op=gemm reads=x writes=h"),
                   range(1, 3, 1, "op=relu reads=h writes=y"), range(1, 4, std::nullopt, outer),
                   range(1, 5, 4, "not an op")};
  // Kernels in the stages, one directly in the outer op, one in a plain range inside the second
  // instance (its op is the nearest op above), one outside every range.
  p.kernels = {kernelIn(1, 2, 0), kernelIn(1, 3, 10), kernelIn(1, 1, 20), kernelIn(1, 5, 30), kernelIn(1, std::nullopt, 40)};
  OpIndex built = indexOps(p);
  const OpIndex idx = std::move(built);  // the lists stay valid when the index moves
  ASSERT_EQ(idx.ops.size(), 4u);
  EXPECT_EQ(idx.ops[0].children().vector(), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(idx.ops[0].kernels().vector(), (std::vector<size_t>{2}));
  EXPECT_EQ(idx.ops[0].allKernels().vector(), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(idx.ops[1].parent, 0u);
  EXPECT_EQ(idx.ops[1].allKernels().vector(), (std::vector<size_t>{0}));
  EXPECT_TRUE(idx.ops[1].children().empty());
  EXPECT_EQ(idx.ops[3].allKernels().vector(), (std::vector<size_t>{3}));
  EXPECT_EQ(idx.kernel_op, (std::vector<int32_t>{1, 2, 0, 3, -1}));
  EXPECT_EQ(idx.ops[0].tags, idx.ops[3].tags) << "one message, parsed once";
  EXPECT_EQ(idx.ops[0].tags->writes, (std::vector<std::string>{"y"}));
  EXPECT_EQ(idx.ops[2].tags->op, "relu");
}

}  // namespace
}  // namespace fprof::analysis
