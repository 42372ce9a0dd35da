// The NVTX message format the analyzer parses (docs/nvtx-convention.md), exactly.
// Tags are built by aggregate initialization: GCC 12 at -O3 reports a false -Wrestrict on
// assigning string literals to std::string members.
#include "range_tags.hpp"

#include <gtest/gtest.h>

namespace fprof::refk {
namespace {

TEST(RangeTags, OuterAndStageRangesOfAnUnfusedChain) {
  const RangeTags outer{"matmul_bias_relu", "unfused", "matmul_bias_relu", "x,w,b", "y", -1};
  EXPECT_EQ(outer.message(), "op=matmul_bias_relu variant=unfused pair=matmul_bias_relu reads=x,w,b writes=y");
  const RangeTags stage{"matmul", "unfused", "matmul_bias_relu", "x,w", "t0", -1};
  EXPECT_EQ(stage.message(), "op=matmul variant=unfused pair=matmul_bias_relu reads=x,w writes=t0");
  const RangeTags vendor{"matmul_bias_relu", "vendor", "matmul_bias_relu", "x,w,b", "y", -1};
  EXPECT_EQ(vendor.message(), "op=matmul_bias_relu variant=vendor pair=matmul_bias_relu reads=x,w,b writes=y");
}

TEST(RangeTags, LayerKeyComesLastAndEmptyKeysAreLeftOut) {
  const RangeTags t{"attention_causal", "fused", "l3.attn", "l3.q,l3.k_cache,l3.v_cache", "l3.attn_o", 3};
  EXPECT_EQ(t.message(),
            "op=attention_causal variant=fused pair=l3.attn reads=l3.q,l3.k_cache,l3.v_cache writes=l3.attn_o layer=3");
  EXPECT_EQ((RangeTags{"layer", "", "", "", "", 0}.message()), "op=layer layer=0");
  EXPECT_EQ((RangeTags{"prefill", "", "", "", "", -1}.message()), "op=prefill");
  EXPECT_EQ((RangeTags{"embedding", "fused", "", "tokens,wte,wpe", "x0", -1}.message()),
            "op=embedding variant=fused reads=tokens,wte,wpe writes=x0");
}

}  // namespace
}  // namespace fprof::refk
