// The own checkpoint's maps (collector/src/cupti/own_checkpoint_map.h): allocations followed through
// frees, unmappings and a refusal, and a cubin's writable variables and outside calls, read from
// tests/data/sass/writes_sm90.cubin (see writes.cu).
#include "cupti/own_checkpoint_map.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace fprof::collector {
namespace {

const void* const kContextA = reinterpret_cast<const void*>(0x1000);
const void* const kContextB = reinterpret_cast<const void*>(0x2000);

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string writesCubin() { return readBytes(std::string(FPROF_SOURCE_DIR) + "/tests/data/sass/writes_sm90.cubin"); }

TEST(AllocationMap, HoldsTheContextsDeviceMemoryAndEveryHostAllocation) {
  AllocationMap map;
  map.addDevice(kContextA, 0x7000'0000, 4096);
  map.addDevice(kContextA, 0x7100'0000, 256);
  map.addDevice(kContextB, 0x7200'0000, 512);
  map.addHost(0x5000'0000, 64);
  std::vector<MemoryRange> ranges;
  ASSERT_TRUE(map.rangesOf(kContextA, ranges));
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].base, 0x7000'0000u);
  EXPECT_EQ(ranges[0].bytes, 4096u);
  EXPECT_EQ(ranges[1].base, 0x7100'0000u);
  EXPECT_FALSE(ranges[1].host);
  EXPECT_EQ(ranges[2].base, 0x5000'0000u);
  EXPECT_TRUE(ranges[2].host);
  EXPECT_TRUE(map.contains(kContextA, 0x7000'0fff));
  EXPECT_FALSE(map.contains(kContextA, 0x7000'1000)) << "one past the allocation";
  EXPECT_FALSE(map.contains(kContextA, 0x7200'0000)) << "another context's";
  EXPECT_TRUE(map.contains(kContextB, 0x5000'0010)) << "host memory is every context's";
}

TEST(AllocationMap, FreesAndUnmappingsEndAllocationsInAnyContext) {
  AllocationMap map;
  map.addDevice(kContextA, 0x7000'0000, 4096);
  map.addDevice(kContextA, 0x7000'2000, 4096);
  map.addDevice(kContextA, 0x7000'4000, 4096);
  map.addHost(0x5000'0000, 64);
  map.removeDevice(0x7000'0000);  // freed with context B current: unified addresses are unique
  map.removeDeviceWithin(0x7000'1000, 0x2000);  // unmaps the mapping at 0x7000'2000 only
  map.removeHost(0x5000'0000);
  std::vector<MemoryRange> ranges;
  ASSERT_TRUE(map.rangesOf(kContextA, ranges));
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0].base, 0x7000'4000u);
}

TEST(AllocationMap, ARefusalIsKeptAndTrustsNoContextAgain) {
  AllocationMap map;
  map.addDevice(kContextA, 0x7000'0000, 4096);
  map.refuse("the program allocates managed memory");
  map.refuse("a later reason");
  std::vector<MemoryRange> ranges;
  EXPECT_FALSE(map.rangesOf(kContextA, ranges));
  EXPECT_TRUE(ranges.empty());
  EXPECT_EQ(map.refused(), "the program allocates managed memory");
}

TEST(ModuleWrites, NamesTheWritableVariablesAndTheCallsOutsideTheModule) {
  const ModuleWrites w = moduleWrites(writesCubin());
  const std::vector<std::string> variables = {"counter", "table", "managed_value",
                                              "_ZN36_INTERNAL_8c3eae6c_9_writes_cu_table6scoped6hiddenE"};
  EXPECT_EQ(std::set<std::string>(w.variables.begin(), w.variables.end()),
            std::set<std::string>(variables.begin(), variables.end()))
      << "the __constant__ coeffs, shared memory and the string literals are not among them";
  EXPECT_EQ(w.outside_calls, (std::vector<std::string>{"free", "malloc", "vprintf"})) << "__assertfail is not one";
}

TEST(ModuleWrites, NothingFromBytesThatAreNoCubin) {
  const ModuleWrites w = moduleWrites("not an ELF file");
  EXPECT_TRUE(w.variables.empty());
  EXPECT_TRUE(w.outside_calls.empty());
}

TEST(ModuleWritesIndex, FindsAModuleByAnyOfItsFunctions) {
  ModuleWritesIndex index;
  index.addCubin(writesCubin());
  ModuleWrites w;
  ASSERT_TRUE(index.lookup("_Z4bumpPf", w));
  EXPECT_EQ(w.variables.size(), 4u);
  ASSERT_TRUE(index.lookup("_Z7checkedPKiPi", w));
  EXPECT_EQ(w.outside_calls.size(), 3u) << "what one function of the module calls counts for all of them";
  EXPECT_FALSE(index.lookup("_Z5otherv", w)) << "a function of no loaded module";
  EXPECT_FALSE(index.lookup("counter", w)) << "a variable is no function";
}

TEST(ModuleWritesIndex, AFunctionInTwoModulesGetsTheWritesOfBoth) {
  ModuleWritesIndex index;
  index.addCubin(writesCubin());
  index.addCubin(writesCubin());
  ModuleWrites w;
  ASSERT_TRUE(index.lookup("_Z4bumpPf", w));
  EXPECT_EQ(w.variables.size(), 4u) << "each name once";
}

}  // namespace
}  // namespace fprof::collector
