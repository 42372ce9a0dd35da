// The cache-sweep cubins built ahead by ptxas (collector/src/cupti/sweep_cubins.h): one pair per numeric
// CUDA architecture of the build (FPROF_SWEEP_SMS, "" where the build had no ptxas), found for a
// device of the same major and a minor at or above theirs, and holding the kernels as built.
#include "cupti/sweep_cubins.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace fprof::collector {
namespace {

std::vector<int> builtSms() {
  std::vector<int> out;
  std::istringstream in(std::string(FPROF_SWEEP_SMS));
  for (std::string item; std::getline(in, item, ';');) {
    if (!item.empty()) out.push_back(std::stoi(item));
  }
  return out;
}

std::string_view bytes(const unsigned char* data, size_t n) { return {reinterpret_cast<const char*>(data), n}; }

TEST(SweepCubins, EachBuiltArchitectureHasItsKernelsAsElfCubins) {
  for (int sm : builtSms()) {
    const SweepCubins* c = sweepCubinsFor(sm / 10, sm % 10);
    ASSERT_NE(c, nullptr) << "sm_" << sm;
    EXPECT_EQ(c->sm, sm);
    const std::string_view l2 = bytes(c->l2, c->l2_bytes), code = bytes(c->code, c->code_bytes);
    EXPECT_EQ(l2.substr(0, 4), "\x7f" "ELF");
    EXPECT_EQ(code.substr(0, 4), "\x7f" "ELF");
    EXPECT_NE(l2.find("fprof_l2_sweep"), std::string_view::npos);
    EXPECT_NE(code.find("fprof_code_sweep"), std::string_view::npos);
    EXPECT_GT(c->code_bytes, size_t{32768} * 16) << "the code sweep's 32,768 FMAs, 16 bytes of SASS each";
  }
}

TEST(SweepCubins, FoundForTheSameMajorAtOrAboveTheirMinorOnly) {
  const std::vector<int> sms = builtSms();
  if (sms.empty()) {
    EXPECT_EQ(sweepCubinsFor(9, 0), nullptr) << "no cubins built: every device JIT-compiles the PTX";
    return;
  }
  for (int sm : sms) {
    const SweepCubins* later_minor = sweepCubinsFor(sm / 10, 9);
    ASSERT_NE(later_minor, nullptr);
    EXPECT_GE(later_minor->sm, sm);
    EXPECT_EQ(later_minor->sm / 10, sm / 10);
    if (sm % 10 > 0 && sweepCubinsFor(sm / 10, sm % 10 - 1) != nullptr) {
      EXPECT_LT(sweepCubinsFor(sm / 10, sm % 10 - 1)->sm, sm) << "a cubin never runs below its minor";
    }
  }
  EXPECT_EQ(sweepCubinsFor(99, 0), nullptr) << "another major gets the PTX";
}

}  // namespace
}  // namespace fprof::collector
