// Ops as frameworks mark them: PyTorch emit_nvtx ranges (names without their op_id/seq/sizes
// suffixes, the outermost op owns its kernels, input_op_ids link ops through views), user ranges,
// XLA thunks.
#include <gtest/gtest.h>

#include "fixture.h"
#include "fprof/analysis/framework_ops.h"
#include "fprof/analysis/run_analysis.h"

namespace fprof::analysis {
namespace {

using testing::DbBuilder;
using Kind = FrameworkRangeKind;

TEST(FrameworkRange, EmitNvtxMessages) {
  const FrameworkRange mm = parseFrameworkRange(
      "", "aten::mm, seq = 12, op_id = 724, sizes = [[4, 256], [256, 1024]], input_op_ids = [(723,0), (0,0)]");
  EXPECT_EQ(mm.kind, Kind::kTorchOp);
  EXPECT_EQ(mm.name, "aten::mm");
  EXPECT_EQ(mm.seq, 12);
  EXPECT_EQ(mm.op_id, 724u);
  EXPECT_EQ(mm.sizes, (std::vector<std::vector<int64_t>>{{4, 256}, {256, 1024}}));
  EXPECT_EQ(mm.input_ops, (std::vector<std::pair<uint64_t, int32_t>>{{723, 0}, {0, 0}}));
  // Without record_shapes; a scalar input has an empty shape.
  const FrameworkRange add = parseFrameworkRange("", "aten::add, seq = 3, op_id = 9, sizes = [[8], []]");
  EXPECT_EQ(add.name, "aten::add");
  EXPECT_EQ(add.sizes, (std::vector<std::vector<int64_t>>{{8}, {}}));
  EXPECT_TRUE(add.input_ops.empty());
  const FrameworkRange bw =
      parseFrameworkRange("", "autograd::engine::evaluate_function: MmBackward0, seq = 12, op_id = 800");
  EXPECT_EQ(bw.kind, Kind::kTorchOp);
  EXPECT_EQ(bw.name, "MmBackward0");
  // record_function scopes under emit_nvtx carry the suffixes too, but are regions.
  const FrameworkRange scope = parseFrameworkRange("", "attention_block, op_id = 5");
  EXPECT_EQ(scope.kind, Kind::kUserRange);
  EXPECT_EQ(scope.name, "attention_block");
}

TEST(FrameworkRange, EachValueRunsToTheNextKeyWhereAKeyRepeats) {
  // A key written twice (a region named with emit_nvtx's own words): each value still ends at the
  // next key, and the first occurrence of a key is the one read.
  const FrameworkRange twice = parseFrameworkRange("", "aten::add, seq = 4, op_id = 9, seq = 5");
  EXPECT_EQ(twice.kind, Kind::kTorchOp);
  EXPECT_EQ(twice.name, "aten::add");
  EXPECT_EQ(twice.seq, 4);
  EXPECT_EQ(twice.op_id, 9u);
  // Keys out of emit_nvtx's order, each once: the same rule.
  const FrameworkRange shuffled = parseFrameworkRange("", "aten::mul, op_id = 31, sizes = [[2, 3]], seq = 8");
  EXPECT_EQ(shuffled.seq, 8);
  EXPECT_EQ(shuffled.op_id, 31u);
  EXPECT_EQ(shuffled.sizes, (std::vector<std::vector<int64_t>>{{2, 3}}));
  // A comma inside the name is no key.
  const FrameworkRange comma = parseFrameworkRange("", "step,2, op_id = 3");
  EXPECT_EQ(comma.kind, Kind::kUserRange);
  EXPECT_EQ(comma.name, "step,2");
  EXPECT_EQ(comma.op_id, 3u);
}

TEST(FrameworkRange, UserRangesXlaAndTheFprofConvention) {
  const FrameworkRange module = parseFrameworkRange("", "model.layers.0.self_attn");
  EXPECT_EQ(module.kind, Kind::kUserRange);
  EXPECT_EQ(module.name, "model.layers.0.self_attn");
  const FrameworkRange thunk =
      parseFrameworkRange("TSL", "Thunk:#name=jit(step)/dot_general,hlo_op=gemm_fusion_dot.3,unique_hlo_op_id=42#");
  EXPECT_EQ(thunk.kind, Kind::kXlaOp);
  EXPECT_EQ(thunk.name, "gemm_fusion_dot.3");
  EXPECT_EQ(thunk.op_id, 42u);
  const FrameworkRange old = parseFrameworkRange("TSL", "Thunk:#hlo_op=fusion.7#");
  EXPECT_EQ(old.name, "fusion.7");
  const FrameworkRange program = parseFrameworkRange("TSL", "XlaModule:#hlo_module=jit_step,program_id=3#");
  EXPECT_EQ(program.kind, Kind::kXlaModule);
  EXPECT_EQ(program.name, "jit_step");
  EXPECT_EQ(parseFrameworkRange("", "op=step").kind, Kind::kNone);
  EXPECT_EQ(parseFrameworkRange("fprof", "op=matmul variant=fused").kind, Kind::kNone);
}

// A recorded path as the viewer's table shows it: each framework range by its op, the others as
// recorded (an XLA thunk's JAX scope holds a '/' of its own).
TEST(FrameworkRange, PathsNamedByTheirOps) {
  EXPECT_EQ(nvtxPathOpNames("aten::linear, seq = 3, op_id = 12, sizes = [[4, 768], [3072, 768], [3072]], "
                            "input_op_ids = [(11,0), (0,-1), (0,-1)]/aten::addmm, op_id = 14, sizes = [[3072], "
                            "[4, 768], [768, 3072]]"),
            "aten::linear/aten::addmm");
  EXPECT_EQ(nvtxPathOpNames("step/autograd::engine::evaluate_function: MmBackward0, seq = 12, op_id = 800"),
            "step/MmBackward0");
  EXPECT_EQ(nvtxPathOpNames("block, op_id = 5/aten::softmax, op_id = 6"), "block/aten::softmax");
  EXPECT_EQ(nvtxPathOpNames("TSL::XlaModule:#hlo_module=jit_step,program_id=3#/TSL::Thunk:#name=jit(step)/"
                            "dot_general,hlo_op=gemm_fusion_dot.3,unique_hlo_op_id=42#"),
            "jit_step/gemm_fusion_dot.3");
  EXPECT_EQ(nvtxPathOpNames("fprof::op=matmul_bias_relu variant=unfused pair=mbr/op=bias_relu"),
            "fprof::op=matmul_bias_relu variant=unfused pair=mbr/op=bias_relu");
  EXPECT_EQ(nvtxPathOpNames("train/epoch 1"), "train/epoch 1");
  EXPECT_EQ(nvtxPathOpNames(""), "");
}

// One GPT-2 MLP under emit_nvtx(record_shapes=True): linear (t + addmm) -> gelu -> view -> linear.
// The views own no kernel, so the second linear's input is linked through them to gelu.
// With `parents_last` the keys run the other way (a range's key below its parent's), as a file
// written otherwise than by fprof's collector may hold them.
std::string mlpDatabase(const std::string& name, bool parents_last = false) {
  DbBuilder db(name);
  struct Keyed {
    DbBuilder& db;
    bool reversed;
    uint64_t key(uint64_t k) const { return reversed ? 9 - k : k; }
    void range(uint64_t k, std::optional<uint64_t> parent, const std::string& message, int64_t start_ns, int64_t end_ns,
               uint64_t payload, const std::string& domain) {
      db.range(key(k), parent ? std::optional<uint64_t>(key(*parent)) : std::nullopt, message, start_ns, end_ns, payload,
               domain);
    }
  } keyed{db, parents_last};
  const std::string half_gemm = "nvjet_sm90_hsh_64x64_64x13_1x2_h_bz_bias_TNT";
  keyed.range(1, std::nullopt, "model.mlp", 0, 100000, 0, "");
  keyed.range(2, 1, "aten::linear, seq = 1, op_id = 10, sizes = [[512, 256], [1024, 256], [1024]], input_op_ids = [(0,0), (0,0), (0,0)]",
           0, 20000, 0, "");
  keyed.range(3, 2, "aten::t, seq = 2, op_id = 11, sizes = [[1024, 256]], input_op_ids = [(0,0)]", 0, 100, 0, "");
  keyed.range(4, 2, "aten::addmm, seq = 3, op_id = 12, sizes = [[1024], [512, 256], [256, 1024]], input_op_ids = [(0,0), (0,0), (11,0)]",
           100, 20000, 0, "");
  keyed.range(5, 1, "aten::gelu, seq = 4, op_id = 13, sizes = [[512, 1024]], input_op_ids = [(10,0)]", 20000, 40000, 0, "");
  keyed.range(6, 1, "aten::view, seq = 5, op_id = 14, sizes = [[512, 1024], []], input_op_ids = [(13,0), (0,0)]", 40000, 40100,
           0, "");
  keyed.range(7, 1, "aten::linear, seq = 6, op_id = 15, sizes = [[512, 1024], [256, 1024], [256]], input_op_ids = [(14,0), (0,0), (0,0)]",
           40100, 80000, 0, "");
  keyed.range(8, 7, "aten::addmm, seq = 7, op_id = 16, sizes = [[256], [512, 1024], [1024, 256]], input_op_ids = [(0,0), (14,0), (0,0)]",
           40200, 80000, 0, "");
  auto k1 = db.kernel(half_gemm, 1000, 10000);
  k1.nvtx_range_key = keyed.key(4);
  auto k2 = db.kernel(
      "void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
      "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#3}::operator()() const::{lambda(c10::Half)#1}, "
      "std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
      "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#3}::operator()() const::{lambda(c10::Half)#1}, "
      "std::array<char*, 2ul>)",
      21000, 5000);
  k2.nvtx_range_key = keyed.key(5);
  auto k3 = db.kernel(half_gemm, 41000, 10000);
  k3.nvtx_range_key = keyed.key(8);
  auto k4 = db.kernel("loose_kernel", 90000, 1000);
  k4.nvtx_range_key = keyed.key(1);
  for (auto* k : {&k1, &k2, &k3, &k4}) db.add(*k);
  EXPECT_TRUE(db.writer().close().ok());
  return db.path();
}

core::Profile mlpProfile(const std::string& name) {
  auto p = core::loadProfile(mlpDatabase(name));
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error());
  return std::move(*p);
}

// Read from the file for a run loaded without them, the messages give every range the kind a
// whole load gives it, and the ones held are all but those of PyTorch ops nested in another; where
// a range's parent comes after it in the file, its nesting is not known as it is read, and its
// message is held all the same. The ops indexed from them are a whole load's either way.
TEST(FrameworkOps, MessagesReadFromTheFileGiveTheWholeLoadsOps) {
  for (const bool parents_last : {false, true}) {
    SCOPED_TRACE(parents_last ? "parents last" : "parents first");
    const std::string path = mlpDatabase(parents_last ? "fw_read_parents_last" : "fw_read_parents_first", parents_last);
    auto whole = core::loadProfile(path);
    ASSERT_TRUE(whole.ok()) << whole.error();
    auto bare = core::loadProfile(path, {.launch_tables = false, .nvtx_messages = false});
    ASSERT_TRUE(bare.ok()) << bare.error();
    auto kinds = readNvtxMessages(*bare);
    ASSERT_TRUE(kinds.ok()) << kinds.error();
    EXPECT_TRUE(bare->nvtx_messages_loaded);
    EXPECT_TRUE(kinds->pytorch);
    EXPECT_TRUE(kinds->op_graph);
    const FrameworkOps want = indexFrameworkOps(*whole);
    std::vector<std::string> held;
    for (size_t i = 0; i < bare->nvtx_ranges.size(); ++i) {
      const std::string_view m = bare->nvtx_ranges[i].message.view();
      EXPECT_TRUE(m.empty() || m == whole->nvtx_ranges[i].message.view()) << i;
      if (!m.empty()) held.push_back(std::string(m.substr(0, m.find(','))));
    }
    std::sort(held.begin(), held.end());
    if (parents_last) {
      EXPECT_EQ(held.size(), bare->nvtx_ranges.size()) << "no parent read before its range: every message held";
    } else {
      EXPECT_EQ(held, (std::vector<std::string>{"aten::gelu", "aten::linear", "aten::linear", "aten::view", "model.mlp"}))
          << "the addmm and t inside the linears left in the file";
    }
    AnalysisOptions ops_only;
    ops_only.fusion_in_background = false;
    auto again = core::loadProfile(path, {.launch_tables = false, .nvtx_messages = false});
    ASSERT_TRUE(again.ok()) << again.error();
    auto indexed = RunAnalysis::owningIndexed(std::move(*again), ops_only);
    ASSERT_TRUE(indexed.ok()) << indexed.error();
    const FrameworkOps& got = indexed->frameworkOps();
    ASSERT_EQ(got.ops.size(), want.ops.size());
    for (size_t o = 0; o < want.ops.size(); ++o) EXPECT_EQ(got.ops[o].range.name, want.ops[o].range.name) << o;
    EXPECT_EQ(got.kernel_op, want.kernel_op);
    ASSERT_EQ(got.links.size(), want.links.size());
    for (size_t l = 0; l < want.links.size(); ++l) {
      EXPECT_EQ(got.links[l].producer, want.links[l].producer) << l;
      EXPECT_EQ(got.links[l].consumer, want.links[l].consumer) << l;
    }
  }
}

TEST(FrameworkOps, TheOutermostPytorchOpOwnsItsKernels) {
  const core::Profile p = mlpProfile("fw_owners");
  const FrameworkOps ops = indexFrameworkOps(p);
  EXPECT_TRUE(ops.pytorch);
  EXPECT_TRUE(ops.op_graph);
  ASSERT_EQ(ops.ops.size(), 3u);
  EXPECT_EQ(ops.kernel_op, (std::vector<int32_t>{0, 1, 2, -1}));
  EXPECT_EQ(ops.ops[0].range.name, "aten::linear") << "not the aten::addmm inside it";
  EXPECT_EQ(ops.ops[1].range.name, "aten::gelu");
  EXPECT_EQ(frameworkOpName(p, ops, 2), "aten::linear");
  EXPECT_EQ(frameworkOpName(p, ops, 3), "model.mlp") << "a kernel in no op: the region it ran in";
}

TEST(FrameworkOps, InputOpIdsLinkOpsThroughViews) {
  const core::Profile p = mlpProfile("fw_links");
  const FrameworkOps ops = indexFrameworkOps(p);
  ASSERT_EQ(ops.links.size(), 2u);
  EXPECT_EQ(ops.links[0].producer, 0u);  // linear -> gelu
  EXPECT_EQ(ops.links[0].consumer, 1u);
  EXPECT_EQ(ops.links[0].input, 0);
  EXPECT_EQ(ops.links[0].readers, 1);
  EXPECT_EQ(ops.links[1].producer, 1u);  // gelu -> (view) -> linear
  EXPECT_EQ(ops.links[1].consumer, 2u);
  EXPECT_EQ(ops.links[1].readers, 1);
}

TEST(FrameworkOps, ElementSizeFromKernelNames) {
  EXPECT_EQ(elementBytesFromKernelName("nvjet_sm90_hsh_64x64_64x13_1x2_h_bz_bias_TNT"), 2);
  EXPECT_EQ(elementBytesFromKernelName("nvjet_sm90_tst_128x128_64x4_2x1_v_bz_TNN"), 4);
  EXPECT_EQ(elementBytesFromKernelName("void at::native::vectorized_layer_norm_kernel<c10::Half, float, false>(int)"), 2);
  EXPECT_EQ(elementBytesFromKernelName("void softmax_warp_forward<float, float, float, 7, false>(float*)"), 4);
  EXPECT_EQ(elementBytesFromKernelName("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7"), 2);
  EXPECT_FALSE(elementBytesFromKernelName("triton_poi_fused_add_0"));
}

}  // namespace
}  // namespace fprof::analysis
