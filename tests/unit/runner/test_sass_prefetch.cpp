// SassPrefetch (runner/sass_step.h): the functions a metrics run's duplicates count, decoded while the
// program runs, from the per-PC files and saved cubins as the collector leaves them. A stand-in
// nvdisasm logs each call with the size of the code it was given, so the tests see what was decoded.
#include "fprof/runner/sass_step.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fprof/core/nvdisasm.h"
#include "fprof/core/sass_pc.h"

namespace fprof::runner {
namespace {

namespace fs = std::filesystem;

std::string readBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

const fs::path kCubin = fs::path(FPROF_SOURCE_DIR) / "tests/data/sass/half_ops_sm90.cubin";

// A run's folder as the collector leaves it: the output's folder, the run's own folder (`work`,
// FPROF_CUBIN_DIR) with one saved module, where the per-PC files go, and a stand-in nvdisasm
// (FPROF_NVDISASM) appending "<architecture> <bytes of code>" to its log.
class SassPrefetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(FPROF_TEST_TMP) / ("prefetch_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "work");
    fs::copy_file(kCubin, dir_ / "work/pid7.module1.cubin");
    log_ = dir_ / "nvdisasm.log";
    const fs::path fake = dir_ / "nvdisasm.sh";
    std::ofstream(fake) << "#!/bin/sh\necho \"$2 $(wc -c < \"$3\")\" >> '" << log_.string() << "'\necho decoded\n";
    ::chmod(fake.c_str(), 0755);
    ::setenv("FPROF_NVDISASM", fake.c_str(), 1);
  }
  // The test's function: the n-th of the cubin with code. Decoded code stays decoded for the whole
  // process (the steps after a run reuse it), so each test counts a function of its own.
  void pick(size_t n) {
    size_t seen = 0;
    for (const core::CubinFunction& f : core::cubinFunctions(readBytes(kCubin))) {
      if (f.code_size != 0 && seen++ == n) {
        name_ = f.name;
        code_bytes_ = f.code_size;
      }
    }
    ASSERT_FALSE(name_.empty()) << "the cubin has fewer than " << n + 1 << " functions";
  }
  void TearDown() override { ::unsetenv("FPROF_NVDISASM"); }

  std::string cubins() const { return (dir_ / "work").string(); }
  void markSm(int sm) const { std::ofstream(dir_ / ("work/device.sm" + std::to_string(sm))); }
  // Appends to the per-PC file of the database `database` (a name in the output's folder), where
  // the collector writes it.
  void appendPcs(const std::string& database, const std::string& text) const {
    std::ofstream(core::duplicatesPcFile((dir_ / database).string(), cubins()), std::ios::app) << text;
  }
  std::vector<std::string> calls() const {
    std::vector<std::string> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  // Waits up to 10 s for the stand-in to have been called `n` times.
  bool waitForCalls(size_t n) const {
    for (int i = 0; i < 200 && calls().size() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return calls().size() >= n;
  }
  std::string expectedCall() const { return "SM90 " + std::to_string(code_bytes_); }

  fs::path dir_, log_;
  std::string name_;
  uint64_t code_bytes_ = 0;
};

TEST_F(SassPrefetchTest, DecodesACountedFunctionWhileTheProgramRuns) {
  pick(0);
  markSm(90);
  SassPrefetch prefetch(cubins());
  appendPcs("run.fprof", "L 5 0\nF 123 " + name_ + "\n0 4 128 0\n");
  ASSERT_TRUE(waitForCalls(1)) << "nothing decoded within 10 s";
  appendPcs("run.fprof", "L 9 0\nF 123 " + name_ + "\n0 4 128 0\n");  // the same function again
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  prefetch.finish();
  EXPECT_EQ(calls(), std::vector<std::string>{expectedCall()}) << "once, for that function's code alone";
}

TEST_F(SassPrefetchTest, ReadsEveryRanksFileInTheRunsFolderAndNoneBesideTheOutput) {
  pick(1);
  markSm(90);
  SassPrefetch prefetch(cubins());
  std::ofstream(dir_ / "run.fprof.pcs") << "L 5 0\nF 123 " << name_ << "\n";
  std::ofstream(dir_ / "run.rank1.fprof.pcs") << "L 5 0\nF 123 " << name_ << "\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_TRUE(calls().empty()) << "files beside the output are not the run's";
  appendPcs("run.rank1.fprof", "L 5 0\nF 123 " + name_ + "\n");
  EXPECT_TRUE(waitForCalls(1));
  prefetch.finish();
}

TEST_F(SassPrefetchTest, LeavesALineStillBeingWritten) {
  pick(2);
  markSm(90);
  SassPrefetch prefetch(cubins());
  appendPcs("run.fprof", "L 5 0\nF 123 " + name_);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_TRUE(calls().empty()) << "a name without its end of line may be cut";
  appendPcs("run.fprof", "\n");
  EXPECT_TRUE(waitForCalls(1));
  prefetch.finish();
  EXPECT_EQ(calls(), std::vector<std::string>{expectedCall()});
}

TEST_F(SassPrefetchTest, ReadsAFileWrittenAnewFromItsStart) {
  pick(4);
  markSm(90);
  SassPrefetch prefetch(cubins());
  appendPcs("run.fprof", "L 5 0\nF 123 a_function_of_an_earlier_run_" + std::string(300, 'x') + "\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  std::ofstream(dir_ / "work/run.fprof.pcs", std::ios::trunc) << "L 5 0\nF 123 " << name_ << "\n";  // shorter than before
  EXPECT_TRUE(waitForCalls(1)) << "the new file's lines, though it is shorter than what was read of the old one";
  prefetch.finish();
}

TEST_F(SassPrefetchTest, NothingWithoutOneMarkedSmOrForUnknownNames) {
  pick(3);
  SassPrefetch unmarked(cubins());
  appendPcs("run.fprof", "L 5 0\nF 123 " + name_ + "\nF 124 no_such_function\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  unmarked.finish();
  EXPECT_TRUE(calls().empty()) << "no SM marked: nothing to decode for";

  markSm(90);
  markSm(80);
  SassPrefetch two_sms(cubins());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  two_sms.finish();
  EXPECT_TRUE(calls().empty()) << "devices of two SMs: the steps after the run decode";

  fs::remove(dir_ / "work/device.sm80");
  fs::remove(dir_ / "work/run.fprof.pcs");
  SassPrefetch unknown(cubins());
  appendPcs("run.fprof", "L 5 0\nF 124 no_such_function\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  unknown.finish();
  EXPECT_TRUE(calls().empty()) << "a name in no saved cubin";
}

}  // namespace
}  // namespace fprof::runner
