// A cubin's functions and their code, and the nvdisasm child process: on the cubins of
// tests/data/sass/half_ops.cu (whose nvdisasm text the SASS tests read) and calls.cu.
#include "fprof/core/nvdisasm.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "fprof/core/sass_half.h"
#include "test_util.h"

namespace fprof::core {
namespace {

using testing::tempPath;

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

const std::string kData = std::string(FPROF_SOURCE_DIR) + "/tests/data/sass/";

TEST(CubinFunctions, ListsEveryKernelOfTheCubinWithItsSymbolIndex) {
  const std::vector<CubinFunction> functions = cubinFunctions(readBytes(kData + "half_ops_sm90.cubin"));
  std::set<std::string> names;
  std::set<uint32_t> indices;
  for (const CubinFunction& f : functions) {
    names.insert(f.name);
    indices.insert(f.symbol_index);
  }
  // The same functions nvdisasm printed for this source (half_ops_sm90.sass).
  std::ifstream in(kData + "half_ops_sm90.sass");
  std::stringstream text;
  text << in.rdbuf();
  std::set<std::string> disassembled;
  for (const auto& [name, counts] : parseNvdisasmHalfOps(text.str())) disassembled.insert(name);
  EXPECT_EQ(names, disassembled);
  EXPECT_EQ(functions.size(), 8u);
  EXPECT_EQ(indices.size(), functions.size()) << "one symbol each";
  // readelf -s: the kernels follow the 15 section and object symbols, in source order.
  EXPECT_EQ(functions.front().name, "_Z11fp32_constsPfi");
  EXPECT_EQ(functions.front().symbol_index, 15u);
  EXPECT_EQ(functions.back().name, "_Z11scalar_hfmaP6__halfi");
  EXPECT_EQ(functions.back().symbol_index, 22u);
}

TEST(CubinFunctions, EachFunctionsCodeIsItsWholeSection) {
  // calls.cu: each kernel's section holds its own copy of what it calls (the half FMA, the division's
  // slow path), and the kernel's symbol covers it (readelf: 768 and 2304 bytes).
  const std::string cubin = readBytes(kData + "calls_sm90.cubin");
  std::map<std::string, CubinFunction> by_name;
  for (const CubinFunction& f : cubinFunctions(cubin)) by_name[f.name] = f;
  ASSERT_EQ(by_name.count("_Z10calls_halfP7__half2i"), 1u);
  ASSERT_EQ(by_name.count("_Z7dividesPfPKfi"), 1u);
  EXPECT_EQ(by_name["_Z10calls_halfP7__half2i"].code_size, 768u);
  EXPECT_EQ(by_name["_Z7dividesPfPKfi"].code_size, 2304u);
  for (const auto& [name, f] : by_name) {
    EXPECT_GT(f.code_size, 0u) << name;
    EXPECT_LE(f.code_offset + f.code_size, cubin.size()) << name;
    EXPECT_EQ(f.code_size % 16, 0u) << name << ": whole 16-byte instructions";
  }
}

TEST(KernelCode, LinesOfOneRunOverSeveralFunctionsGoToTheFunctionHoldingTheirAddress) {
  // calls_half's code read as two functions: the kernel up to its callee's copy at 0x180, and the copy.
  const auto sass = parseNvdisasmHalfOpsByRange(readBytes(kData + "calls_half.raw.sass"),
                                                {{"kernel", 0, 0x180}, {"callee", 0x180, 768}, {"absent", 768, 800}});
  EXPECT_EQ(sass.at("kernel"), SassHalfCounts{});
  EXPECT_EQ(sass.at("callee"), (SassHalfCounts{{"HFMA2.MMA.f16.packed", 1}}));
  EXPECT_EQ(sass.at("absent"), SassHalfCounts{}) << "every range gets an entry";
  EXPECT_EQ(parseNvdisasmHalfOpsByRange("        /*zz*/ HFMA2 R0, R1, R2, R3 ;\n", {{"f", 0, 16}}).at("f"),
            SassHalfCounts{})
      << "a line without a readable address belongs to no function";
}

TEST(CubinFunctions, NoFunctionsFromBytesThatAreNoElfCubin) {
  const std::string cubin = readBytes(kData + "half_ops_sm90.cubin");
  EXPECT_TRUE(cubinFunctions("").empty());
  EXPECT_TRUE(cubinFunctions(".version 8.8\n.target sm_90\n.visible .entry k() { ret; }").empty()) << "PTX text";
  EXPECT_TRUE(cubinFunctions(cubin.substr(0, 200)).empty()) << "truncated: section headers cut off";
  std::string big_endian = cubin;
  big_endian[5] = 2;
  EXPECT_TRUE(cubinFunctions(big_endian).empty());
}

// A stand-in nvdisasm that prints its arguments and whether the injection variables reached it.
std::string fakeNvdisasm() {
  const std::string path = tempPath("fake_nvdisasm.sh");
  std::ofstream(path) << "#!/bin/sh\necho \"args: $*\"\necho \"preload: ${LD_PRELOAD:-none} "
                         "injection: ${CUDA_INJECTION64_PATH:-none}\"\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

TEST(Nvdisasm, DecodesRawCodeForTheArchitectureWithoutTheInjectionVariables) {
  const std::string nvdisasm = fakeNvdisasm();
  ::setenv("CUDA_INJECTION64_PATH", "/nowhere/libfprof_collector.so", 1);
  const std::string raw = disassembleRawCode(nvdisasm, "/tmp/k.code", 90);
  ::unsetenv("CUDA_INJECTION64_PATH");
  EXPECT_NE(raw.find("args: -b SM90 /tmp/k.code"), std::string::npos) << raw;
  EXPECT_NE(raw.find("preload: none injection: none"), std::string::npos) << raw;
  EXPECT_EQ(disassembleRawCode(nvdisasm, "/tmp/k.code", 0), "") << "no device architecture, no decoding";
}

TEST(Nvdisasm, FailureGivesNothing) {
  const std::string failing = tempPath("failing_nvdisasm.sh");
  std::ofstream(failing) << "#!/bin/sh\necho partial\nexit 3\n";
  ::chmod(failing.c_str(), 0755);
  EXPECT_EQ(disassembleRawCode(failing, "/tmp/k.code", 90), "");
  EXPECT_EQ(disassembleRawCode("/nonexistent/nvdisasm", "/tmp/k.code", 90), "");
  ::setenv("FPROF_NVDISASM", "/nonexistent/nvdisasm", 1);
  EXPECT_EQ(findNvdisasm(), "") << "a set FPROF_NVDISASM that is no program is not replaced by another";
  ::setenv("FPROF_NVDISASM", failing.c_str(), 1);
  EXPECT_EQ(findNvdisasm(), failing);
  ::unsetenv("FPROF_NVDISASM");
}

}  // namespace
}  // namespace fprof::core
