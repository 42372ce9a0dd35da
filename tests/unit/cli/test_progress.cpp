// The progress line: drawn in place, cleared at the end, silent when disabled; and through the
// fprof binary, shown on a terminal only (script(1) gives it one), never in a pipe or with -q.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "progress.h"

namespace fprof::cli {
namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
  return out;
}

TEST(Progress, DrawsStepsInPlaceAndClearsTheLine) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p(true, f, std::chrono::milliseconds(5));
    p.step("reading run.fprof");
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // a few redraws
    p.step("analysing 12 kernels");
    p.done();
    p.done();  // idempotent
  }
  const std::string s = contents(f);
  std::fclose(f);
  EXPECT_EQ(s.rfind("\rfprof: reading run.fprof ... 0 s", 0), 0u) << s;
  EXPECT_NE(s.find("\rfprof: analysing 12 kernels ... 0 s"), std::string::npos) << s;
  EXPECT_EQ(s.find('\n'), std::string::npos) << "one line, never a new one";
  // The end: the line blanked and the cursor back at its start.
  const std::string longest = "fprof: analysing 12 kernels ... 0 s";
  EXPECT_EQ(s.substr(s.size() - longest.size() - 2), "\r" + std::string(longest.size(), ' ') + "\r");
}

TEST(Progress, DisabledWritesNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p(false, f);
    p.step("reading run.fprof");
    p.done();
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

TEST(Progress, NotWantedWithoutATerminalOrWhenQuiet) {
  // ctest runs the tests with stderr on a pipe or a file; by hand it may be a terminal.
  EXPECT_EQ(Progress::wanted(false), isatty(STDERR_FILENO) == 1);
  EXPECT_FALSE(Progress::wanted(true));
  // A small database: no line even on a terminal.
  EXPECT_FALSE(Progress::wantedForFiles(false, {FPROF_SOURCE_DIR "/tests/data/model_trace_h200.fprof"}));
}

struct ShellResult {
  int code = -1;
  std::string out;
};

ShellResult shell(const std::string& cmd) {
  ShellResult r;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.out.append(buf.data(), n);
  r.code = pclose(f);
  return r;
}

// `fprof merge` always shows its line on a terminal; script(1) runs it with one.
TEST(Progress, FprofMergeOnATerminalOnly) {
  if (shell("command -v script >/dev/null 2>&1").code != 0) GTEST_SKIP() << "no script(1) here";
  const std::string dir = FPROF_TEST_TMP "/progress";
  std::filesystem::create_directories(dir);
  const std::string inputs = std::string(FPROF_SOURCE_DIR) + "/tests/data/torchrun_allreduce_h200x2.rank0.fprof " +
                             FPROF_SOURCE_DIR + "/tests/data/torchrun_allreduce_h200x2.rank1.fprof";
  auto merge = [&](const std::string& name, const std::string& flags, bool terminal) {
    const std::string out = dir + "/" + name;
    std::filesystem::remove(out);
    const std::string cmd = std::string(FPROF_BIN) + " merge " + inputs + " -o " + out + flags;
    return terminal ? shell("script -qec '" + cmd + "' /dev/null 2>&1") : shell(cmd + " 2>&1");
  };
  const ShellResult tty = merge("tty.fprof", "", true);
  EXPECT_NE(tty.out.find("\rfprof: merging 2 files into "), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("[fprof] merged 2 files"), std::string::npos) << tty.out;
  const ShellResult pipe = merge("pipe.fprof", "", false);
  EXPECT_EQ(pipe.out.find("fprof: merging"), std::string::npos) << pipe.out;
  EXPECT_EQ(pipe.out.find('\r'), std::string::npos) << pipe.out;
  const ShellResult quiet = merge("quiet.fprof", " -q", true);
  EXPECT_EQ(quiet.out.find("fprof: merging"), std::string::npos) << quiet.out;
}

}  // namespace
}  // namespace fprof::cli
