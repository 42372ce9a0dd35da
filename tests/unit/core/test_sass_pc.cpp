// Per-PC instruction counts (SASS patching) turned into the SASS counters kernel replay gives
// (core/sass_pc.h): the collector's text, nvdisasm's instructions by offset, opcodes to counters.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "fprof/core/metric_sets.h"
#include "fprof/core/sass_pc.h"

namespace fprof::core {
namespace {

const std::string kData = std::string(FPROF_SOURCE_DIR) + "/tests/data/sass/";

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

double valueOf(const RawCounters& raw, const std::string& name) {
  for (const auto& [n, v] : raw) {
    if (n == name) return v;
  }
  ADD_FAILURE() << name << " missing";
  return -1;
}

TEST(SassPcText, WhatTheCollectorWritesReadsBack) {
  SassPcLaunch a{7, 8, {{"_Z1fv", 123, {{0, 4, 128, 0}, {16, 4, 100, 2}}}, {"_Z1gv", 9, {{32, 1, 1, 0}}}}};
  SassPcLaunch b{9, 0, {}};
  auto read = parseSassPcText(sassPcLaunchText(a) + sassPcLaunchText(b));
  ASSERT_TRUE(read.ok()) << read.error();
  ASSERT_EQ(read->size(), 2u);
  const SassPcLaunch& r = (*read)[0];
  EXPECT_EQ(r.correlation_id, 7u);
  EXPECT_EQ(r.nested_correlation_id, 8u);
  ASSERT_EQ(r.functions.size(), 2u);
  EXPECT_EQ(r.functions[0].name, "_Z1fv");
  EXPECT_EQ(r.functions[0].cubin_crc, 123u);
  ASSERT_EQ(r.functions[0].pcs.size(), 2u);
  EXPECT_EQ(r.functions[0].pcs[1].pc, 16u);
  EXPECT_EQ(r.functions[0].pcs[1].thread_inst, 100u);
  EXPECT_EQ(r.functions[0].pcs[1].local_sectors, 2u);
  EXPECT_EQ(r.functions[1].pcs[0].warp_inst, 1u);
  EXPECT_TRUE((*read)[1].functions.empty());
}

TEST(SassPcText, ALineThatIsNoRecordIsAnError) {
  EXPECT_FALSE(parseSassPcText("0 1 2 3\n").ok()) << "counts before any launch and function";
  EXPECT_FALSE(parseSassPcText("L 1 0\nF 5 _Z1fv\n0 1 2\n").ok()) << "three numbers";
  EXPECT_FALSE(parseSassPcText("L x y\n").ok());
  auto empty = parseSassPcText("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(SassPcText, ProgressNamesTheLastCountedLaunch) {
  SassPcLaunch a{7, 0, {{"_Z1fv", 123, {{0, 4, 128, 0}}}}};
  SassPcLaunch b{41, 0, {{"_Z4axpyifPKfPf", 5, {{0, 1, 32, 0}}}}};
  EXPECT_EQ(sassPcProgressText(""), "no launch counted");
  EXPECT_EQ(sassPcProgressText(sassPcLaunchText(a)), "1 launch counted, the last correlation 7 (_Z1fv)");
  EXPECT_EQ(sassPcProgressText(sassPcLaunchText(a) + sassPcLaunchText(b)),
            "2 launches counted, the last correlation 41 (_Z4axpyifPKfPf)");
  EXPECT_NE(sassPcProgressText("L 1 0\nF 5 _Z1fv\n0 1 2\n").find("unreadable"), std::string::npos);
}

TEST(SassInstructions, EachRangeHoldsItsInstructionsAtOffsetsFromItsStart) {
  // calls_half's code read as two functions: the kernel, and its callee's copy from 0x180.
  const auto code =
      parseNvdisasmInstructionsByRange(readText(kData + "calls_half.raw.sass"), {{"kernel", 0, 0x180}, {"callee", 0x180, 768}});
  ASSERT_EQ(code.at("kernel").count(0x110), 1u);
  EXPECT_EQ(code.at("kernel").at(0x110), "STL [R1+0x4], R0");
  EXPECT_EQ(code.at("kernel").count(0x180), 0u);
  EXPECT_EQ(code.at("callee").at(0x70), "HFMA2.MMA R0, R0, R3, R0") << "0x1f0 in the run's addresses";
  EXPECT_EQ(code.at("callee").at(0x30), "LDL R0, [R8]");
}

TEST(SassInstructions, OpcodesGoToNcusFlopCounters) {
  EXPECT_STREQ(flopMetricOfInstruction("FFMA R0, R1, R2, R3"), "sm__sass_thread_inst_executed_op_ffma_pred_on.sum");
  EXPECT_STREQ(flopMetricOfInstruction("@!P0 FFMA.FTZ R0, R1, R2, R3"),
               "sm__sass_thread_inst_executed_op_ffma_pred_on.sum")
      << "guard and modifiers do not change the opcode";
  EXPECT_STREQ(flopMetricOfInstruction("FFMA32I R0, R1, 0.5, R0"), "sm__sass_thread_inst_executed_op_ffma_pred_on.sum");
  EXPECT_STREQ(flopMetricOfInstruction("FMUL R0, R1, R2"), "sm__sass_thread_inst_executed_op_fmul_pred_on.sum");
  EXPECT_STREQ(flopMetricOfInstruction("DADD R0, R2, R4"), "sm__sass_thread_inst_executed_op_dadd_pred_on.sum");
  EXPECT_STREQ(flopMetricOfInstruction("HFMA2.MMA R5, -RZ, RZ, 1.984375, 0"), kHfmaMetric)
      << "an immediate move counts as hfma (its lanes are 0)";
  EXPECT_STREQ(flopMetricOfInstruction("HADD2.F32 R0, -RZ, R2.H0_H0"), kHaddMetric);
  EXPECT_EQ(flopMetricOfInstruction("FMNMX R0, R1, R2, !PT"), nullptr);
  EXPECT_EQ(flopMetricOfInstruction("FSETP.GT.AND P0, PT, R1, R2, PT"), nullptr);
  EXPECT_EQ(flopMetricOfInstruction("FFMA2 R0, R2, R4, R6"), nullptr) << "not an sm_90 opcode: not guessed";
}

// A function of five instructions: FFMA, packed HFMA2, lane-broadcast bf16 HFMA2, LDL, STL.
const SassInstructions kCode = {{0x00, "FFMA R0, R1, R2, R3"},
                                {0x10, "HFMA2 R4, R4, R5, R6"},
                                {0x20, "HFMA2.BF16_V2 R0, R0.H0_H0, R0.H0_H0, R0.H0_H0"},
                                {0x30, "LDL R0, [R1]"},
                                {0x40, "STL [R1], R0"}};

SassCodeLookup codeOf(const std::string& name, uint32_t crc) {
  return [name, crc](const std::string& n, uint32_t c) -> const SassInstructions* {
    return n == name && c == crc ? &kCode : nullptr;
  };
}

TEST(SassCountersOfLaunch, ThreadCountsSumByOpcodeAndHalfFlopsByLane) {
  const SassPcLaunch launch{1, 0, {{"_Z1fv", 5, {{0x00, 4, 100, 0}, {0x10, 4, 128, 0}, {0x20, 4, 50, 0},
                                                   {0x30, 2, 64, 8}, {0x40, 2, 64, 16}}}}};
  std::string why;
  const auto raw = sassCountersOfLaunch(launch, codeOf("_Z1fv", 5), why);
  ASSERT_TRUE(raw.has_value()) << why;
  EXPECT_EQ(valueOf(*raw, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"), 100);
  EXPECT_EQ(valueOf(*raw, "sm__sass_thread_inst_executed_op_fadd_pred_on.sum"), 0) << "every counter, 0 where none ran";
  EXPECT_EQ(valueOf(*raw, kHfmaMetric), 178);
  EXPECT_EQ(valueOf(*raw, kLocalLoadSectorsSassMetric), 8);
  EXPECT_EQ(valueOf(*raw, kLocalStoreSectorsSassMetric), 16);
  EXPECT_EQ(valueOf(*raw, kInstructionsSassMetric), 16);
  EXPECT_EQ(valueOf(*raw, kHalfFlopsFp16PerPcMetric), 128 * 4) << "packed HFMA2: 2 lanes x 2 FLOPs";
  EXPECT_EQ(valueOf(*raw, kHalfFlopsBf16PerPcMetric), 50 * 2) << "lane-broadcast: 1 lane x 2 FLOPs";
  const auto derived = [&] {
    std::vector<std::string> names;
    std::vector<double> values;
    for (const auto& [n, v] : *raw) {
      names.push_back(n);
      values.push_back(v);
    }
    return deriveCounters(names, values);
  }();
  EXPECT_EQ(derived.flops_fp32, 200);
  EXPECT_EQ(derived.flops_fp16, 512);
  EXPECT_EQ(derived.flops_bf16, 100) << "mixed forms, one exact count: no bounds";
  EXPECT_EQ(derived.half_flops_method, kHalfFlopsPerPcMethod);
  EXPECT_EQ(derived.local_load_bytes, 8 * 32);
}

TEST(SassCountersOfLaunch, NoCountersWhereACountedInstructionHasNoCode) {
  std::string why;
  EXPECT_FALSE(sassCountersOfLaunch({1, 0, {{"_Z1fv", 6, {{0x00, 4, 100, 0}}}}}, codeOf("_Z1fv", 5), why));
  EXPECT_NE(why.find("not found"), std::string::npos) << why;
  EXPECT_FALSE(sassCountersOfLaunch({1, 0, {{"_Z1fv", 5, {{0x50, 4, 100, 0}}}}}, codeOf("_Z1fv", 5), why));
  EXPECT_NE(why.find("offset 80"), std::string::npos) << why;
  const auto idle = sassCountersOfLaunch({1, 0, {{"_Z1gv", 6, {{0x00, 0, 0, 0}}}}}, codeOf("_Z1fv", 5), why);
  ASSERT_TRUE(idle.has_value()) << "a PC that never ran needs no code";
  EXPECT_EQ(valueOf(*idle, kInstructionsSassMetric), 0);
}

// Each database's own file in the run's folder, its rank's or process's name kept; beside the
// database where no folder was given.
TEST(DuplicatesPcFile, IsNamedAfterTheDatabaseInTheRunsFolder) {
  EXPECT_EQ(duplicatesPcFile("/runs/job.rank3.fprof", "/runs/.job.fprof.work-a1/cubins"),
            "/runs/.job.fprof.work-a1/cubins/job.rank3.fprof.pcs");
  EXPECT_EQ(duplicatesPcFile("job.pid812.fprof", "work"), "work/job.pid812.fprof.pcs");
  EXPECT_EQ(duplicatesPcFile("/runs/job.fprof", ""), "/runs/job.fprof.pcs");
}

}  // namespace
}  // namespace fprof::core
