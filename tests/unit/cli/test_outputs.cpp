// Every file fprof writes for its user, by every writer, against what can go wrong with the path
// (docs/outputs.md): a file already there, the command's own input (by name, hard link and
// symlink), a directory, a read-only folder, a full file system, another writer racing for it.
// The bytes of what was there are checked before and after. The writers are fed the recorded
// databases of tests/data.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fprof/core/store.h"

namespace fprof {
namespace {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr together
};

Result shell(const std::string& command) {
  Result r;
  FILE* f = popen((command + " 2>&1").c_str(), "r");
  if (!f) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(f);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeBytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string data(const std::string& name) { return std::string(FPROF_SOURCE_DIR) + "/tests/data/" + name; }

// One writer: its command line with {in} (the first input), {in2} (a second one) and {out} (the
// output under test); what a complete output is; whether it writes only once a window has
// rendered (fprof view: the cases that need a written file run in tests/gui).
enum class Written {
  kSameBytes,  // the same bytes on every run
  kHtml,       // a report: a fresh script nonce on every run, so complete rather than equal
  kDatabase,   // a database that opens, with no side files
};

struct WriterCase {
  std::string name;
  std::string command;
  std::string in;
  std::string in2;
  Written written = Written::kSameBytes;
  bool needs_window = false;
};

void PrintTo(const WriterCase& w, std::ostream* os) { *os << w.name; }

std::vector<WriterCase> writers() {
  const std::string trace = data("trace_test_h200.fprof"), model = data("model_trace_h200.fprof");
  const std::string rank0 = data("torchrun_allreduce_h200x2.rank0.fprof");
  const std::string rank1 = data("torchrun_allreduce_h200x2.rank1.fprof");
  const std::string ceilings = data("ceilings_h200.json");
  return {
      {"report_html", "report {in} -o {out} -q", trace, "", Written::kHtml},
      {"report_markdown", "report {in} --format md -o {out} -q", trace, ""},
      {"report_baseline", "report {in} --baseline {in2} -o {out} -q", trace, trace, Written::kHtml},
      {"export_csv", "export {in} --format csv -o {out}", trace, ""},
      {"export_json", "export {in} --format json -o {out}", trace, ""},
      {"export_chrome_trace", "export {in} --format chrome-trace -o {out}", model, ""},
      {"gate_json", "gate {in} {in2} --json {out} -q", trace, trace},
      {"gate_markdown", "gate {in} {in2} --markdown {out} -q", trace, trace},
      {"gate_junit", "gate {in} {in2} --junit {out} -q", trace, trace},
      {"merge", "merge {in} {in2} -o {out} -q", rank0, rank1, Written::kDatabase},
      {"ceilings_database", "ceilings --from-json {in} -o {out} -q", ceilings, "", Written::kDatabase},
      {"ceilings_save_json", "ceilings --from-json {in} -o {out}.db.fprof --save-json {out} -q", ceilings, ""},
      {"view_screenshot", "view {in} --screenshot {out}", trace, "", Written::kSameBytes, /*needs_window=*/true},
  };
}

// A tmpfs of its own, for the read-only folder (as root, whom permissions do not stop) and the
// full file system; unmounted whatever the test's outcome.
class Mount {
 public:
  static std::optional<Mount> tmpfs(const std::string& dir, unsigned long flags) {
    fs::create_directories(dir);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", flags, "size=64k") != 0) return std::nullopt;
    return Mount(dir);
  }
  Mount(Mount&& o) noexcept : dir_(std::exchange(o.dir_, "")) {}
  Mount& operator=(Mount&&) = delete;
  ~Mount() {
    if (!dir_.empty()) ::umount2(dir_.c_str(), MNT_DETACH);
  }

 private:
  explicit Mount(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// Fills a file system to the last byte.
void fill(const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  const std::string block(4096, 'f');
  for (int i = 0; i < 4096 && f; ++i) f.write(block.data(), static_cast<std::streamsize>(block.size())) << std::flush;
  std::ofstream tail(path + ".tail", std::ios::binary);
  for (int i = 0; i < 4096 && tail; ++i) tail.put('t') << std::flush;
}

// fprof view writes its files once a window has rendered: those cases run in tests/gui.
#define SKIP_WHERE_A_WINDOW_IS_NEEDED()                                                           \
  if (GetParam().needs_window) GTEST_SKIP() << "written once a window has rendered: tests/gui/screenshot_test.sh"

class Writers : public ::testing::TestWithParam<WriterCase> {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string test = info->name();
    test = test.substr(0, test.find('/'));
    dir_ = std::string(FPROF_TEST_TMP) + "/outputs/" + GetParam().name + "/" + test;
    ::umount2((dir_ + "/mnt").c_str(), MNT_DETACH);  // a mount an interrupted run left
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/in");
    in_ = dir_ + "/in/" + fs::path(GetParam().in).filename().string();
    fs::copy_file(GetParam().in, in_);
    if (!GetParam().in2.empty()) {
      in2_ = dir_ + "/in/second-" + fs::path(GetParam().in2).filename().string();
      fs::copy_file(GetParam().in2, in2_);
    }
    in_bytes_ = readBytes(in_);
  }
  void TearDown() override {
    EXPECT_EQ(readBytes(in_), in_bytes_) << "an input changed";
  }

  std::string command(const std::string& out, bool force = false) const {
    std::string c = GetParam().command;
    auto put = [&](const std::string& key, const std::string& value) {
      for (size_t at = c.find(key); at != std::string::npos; at = c.find(key, at + value.size())) {
        c.replace(at, key.size(), "'" + value + "'");
      }
    };
    put("{in}", in_);
    put("{in2}", in2_);
    put("{out}", out);
    return std::string(FPROF_BIN) + " " + c + (force ? " --force" : "");
  }
  Result run(const std::string& out, bool force = false) const { return shell(command(out, force)); }

  // What the writer writes to a fresh path: the bytes a successful run must leave.
  std::string expected() const {
    const std::string fresh = dir_ + "/expected/output";
    fs::create_directories(dir_ + "/expected");
    const Result r = run(fresh);
    EXPECT_EQ(r.code, 0) << r.out;
    return readBytes(fresh);
  }
  void expectComplete(const std::string& path, const std::string& want) const {
    const std::string bytes = readBytes(path);
    switch (GetParam().written) {
      case Written::kSameBytes:
        EXPECT_EQ(bytes, want);
        break;
      case Written::kHtml:
        EXPECT_EQ(bytes.rfind("<!DOCTYPE html>", 0), 0u);
        EXPECT_EQ(bytes.size() - bytes.rfind("</html>\n"), 8u) << "a report cut short";
        EXPECT_EQ(bytes.size(), want.size());  // the nonces have a fixed length
        break;
      case Written::kDatabase:
        EXPECT_TRUE(core::checkDatabase(path).ok()) << core::checkDatabase(path).error();
        EXPECT_FALSE(fs::exists(path + "-wal") || fs::exists(path + "-shm")) << "side files left beside " << path;
        break;
    }
  }

  std::string dir_, in_, in2_, in_bytes_;
};

constexpr const char* kPrecious = "precious bytes the user keeps\n";

TEST_P(Writers, KeepAFileThatExistsUnlessForced) {
  const std::string out = dir_ + "/out";
  writeBytes(out, kPrecious);
  const auto before = listDir(dir_);
  const Result r = run(out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(out + ": file exists; choose another name or overwrite it with --force"), std::string::npos)
      << r.out;
  EXPECT_EQ(readBytes(out), kPrecious);
  EXPECT_EQ(listDir(dir_), before) << "a refusal leaves nothing behind";
  if (GetParam().needs_window) return;
  const std::string want = expected();
  const Result forced = run(out, /*force=*/true);
  EXPECT_EQ(forced.code, 0) << forced.out;
  expectComplete(out, want);
}

TEST_P(Writers, NeverWriteOverTheirOwnInput) {
  ASSERT_EQ(::link(in_.c_str(), (dir_ + "/hard-link").c_str()), 0);
  fs::create_symlink(in_, dir_ + "/symlink");
  const auto before = listDir(dir_);
  for (const std::string& out : {in_, dir_ + "/hard-link", dir_ + "/symlink"}) {
    for (const bool force : {false, true}) {
      const Result r = run(out, force);
      EXPECT_EQ(r.code, 2) << out << (force ? " --force: " : ": ") << r.out;
      EXPECT_TRUE(r.out.find(" is an input of this command") != std::string::npos ||
                  r.out.find(" is the same file as the input ") != std::string::npos)
          << r.out;
      EXPECT_EQ(readBytes(in_), in_bytes_) << out;
    }
  }
  EXPECT_EQ(listDir(dir_), before);
  EXPECT_TRUE(fs::is_symlink(dir_ + "/symlink"));
}

TEST_P(Writers, RefuseADirectory) {
  fs::create_directories(dir_ + "/folder");
  for (const bool force : {false, true}) {
    const Result r = run(dir_ + "/folder", force);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find(dir_ + "/folder: is a directory"), std::string::npos) << r.out;
    EXPECT_TRUE(listDir(dir_ + "/folder").empty());
  }
}

TEST_P(Writers, SayWhyAReadOnlyFolderCannotBeWritten) {
  SKIP_WHERE_A_WINDOW_IS_NEEDED();
  const std::string folder = dir_ + "/mnt";
  std::optional<Mount> mount = ::geteuid() == 0 ? Mount::tmpfs(folder, MS_RDONLY) : std::nullopt;
  if (::geteuid() == 0) {
    if (!mount) GTEST_SKIP() << "root, but cannot mount a read-only tmpfs here: the read-only folder case is not run";
  } else {
    fs::create_directories(folder);
    fs::permissions(folder, fs::perms::owner_read | fs::perms::owner_exec);
  }
  const Result r = run(folder + "/out");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(r.out.find("read-only file system") != std::string::npos ||
              r.out.find("permission denied") != std::string::npos)
      << r.out;
  EXPECT_TRUE(listDir(folder).empty());
  if (!mount) fs::permissions(folder, fs::perms::owner_all);
}

TEST_P(Writers, LeaveNothingHalfWrittenOnAFullFileSystem) {
  SKIP_WHERE_A_WINDOW_IS_NEEDED();
  const std::string folder = dir_ + "/mnt";
  std::optional<Mount> mount = Mount::tmpfs(folder, 0);
  if (!mount) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): the full file system case is not run";
  const std::string out = folder + "/out";
  writeBytes(out, kPrecious);
  fill(folder + "/filler");
  const auto before = listDir(folder);
  const Result r = run(out, /*force=*/true);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no space left on device"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(".tmp"), std::string::npos) << "the message names the temporary file: " << r.out;
  EXPECT_EQ(readBytes(out), kPrecious);
  EXPECT_EQ(listDir(folder), before) << "a failed write leaves nothing behind";
}

TEST_P(Writers, LetExactlyOneOfTwoRacingWritersWin) {
  SKIP_WHERE_A_WINDOW_IS_NEEDED();
  const std::string want = expected();
  for (int round = 0; round < 3; ++round) {
    const std::string out = dir_ + "/race" + std::to_string(round);
    const std::string cmd = command(out);
    std::array<pid_t, 2> children{};
    for (pid_t& child : children) {
      child = ::fork();
      if (child == 0) {
        ::execl("/bin/sh", "sh", "-c", (cmd + " >/dev/null 2>&1").c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
      }
    }
    int wins = 0, losses = 0;
    for (pid_t child : children) {
      int status = 0;
      ASSERT_EQ(::waitpid(child, &status, 0), child);
      ASSERT_TRUE(WIFEXITED(status));
      if (WEXITSTATUS(status) == 0) ++wins;
      if (WEXITSTATUS(status) == 2) ++losses;
    }
    EXPECT_EQ(wins, 1) << "round " << round;
    EXPECT_EQ(losses, 1) << "round " << round;
    expectComplete(out, want);
  }
  std::vector<std::string> left = listDir(dir_);
  for (const std::string& name : left) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
}

// "-" is standard output where a writer writes text; a database or a viewer's file cannot go
// there, and "-" is refused rather than made a file of that name in the current folder.
bool dashIsStandardOutput(const WriterCase& w) { return w.written != Written::kDatabase && !w.needs_window; }

TEST_P(Writers, TakeADashAsStandardOutputOrRefuseIt) {
  const std::string cwd = dir_ + "/cwd";
  fs::create_directories(cwd);
  const Result r = shell("cd '" + cwd + "' && " + command("-"));
  EXPECT_FALSE(fs::exists(cwd + "/-")) << "a file named '-' was written";
  if (!dashIsStandardOutput(GetParam())) {
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("cannot be written to standard output; name a file (./- for a file named '-')"),
              std::string::npos)
        << r.out;
    return;
  }
  EXPECT_EQ(r.code, 0) << r.out;
  const std::string want = expected();
  if (GetParam().written == Written::kHtml) {
    EXPECT_EQ(r.out.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_EQ(r.out.size(), want.size());
  } else {
    EXPECT_EQ(r.out, want) << "standard output carries the output alone";
  }
}

INSTANTIATE_TEST_SUITE_P(EveryWriter, Writers, ::testing::ValuesIn(writers()),
                         [](const ::testing::TestParamInfo<WriterCase>& p) { return p.param.name; });

// Standard output is an output too: a write that fails there is an error.
TEST(StandardOutput, AFailedWriteExits2WithTheCause) {
  const std::string trace = data("trace_test_h200.fprof");
  std::vector<std::string> commands = {"info " + trace,
                                       "export " + data("model_trace_h200.fprof") + " --format json",
                                       "report " + trace + " --format md",
                                       "diff " + trace + " " + trace,
                                       "gate " + trace + " " + trace,
                                       "schema",
                                       "schema --markdown",
                                       "run --explain true",
                                       "--help"};
  // The counter sets are listed by a tool beside fprof, built where CUPTI is; fprof prints its text.
  if (fs::exists(fs::path(FPROF_BIN).parent_path() / "fprof-metrics-host")) commands.push_back("metrics list");
  for (const std::string& args : commands) {
    const Result r = shell("(" + std::string(FPROF_BIN) + " " + args + " >/dev/full)");
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(r.out, "fprof: standard output: no space left on device\n") << args;
  }
  const Result dev = shell(std::string(FPROF_BIN) + " export " + data("trace_test_h200.fprof") +
                           " --format csv -o /dev/full");
  EXPECT_EQ(dev.code, 2);
  EXPECT_EQ(dev.out, "fprof: /dev/full: cannot write the export: no space left on device\n");
  const Result null = shell(std::string(FPROF_BIN) + " export " + data("trace_test_h200.fprof") +
                            " --format csv -o /dev/null");
  EXPECT_EQ(null.code, 0) << null.out;
}

// A database whose kernels the collector wrote out of start order (as a merged file holds its
// ranks), too many for SQLite to sort in memory.
void writeKernelsOutOfOrder(const std::string& path, int kernels) {
  auto w = core::Writer::create(path);
  ASSERT_TRUE(w.ok()) << w.error();
  for (int i = 0; i < kernels; ++i) {
    core::KernelRecord k;
    k.process_id = 1;
    k.name = k.demangled_name = "kernel_" + std::to_string(i % 7);
    k.correlation_id = static_cast<uint32_t>(i + 1);
    k.start_ns = 1'000'000'000 - int64_t{1000} * i;
    k.end_ns = k.start_ns + 500;
    (*w)->add(k);
  }
  ASSERT_TRUE((*w)->close());
}

// The streamed exports leave the sorting of a table not in time order to SQLite, which spills to
// its temporary folder: a full one is said as such, not as a damaged file, and nothing is written.
TEST(StreamedExports, SayWhenSQLitesTemporaryFolderHasNoRoom) {
  const std::string dir = std::string(FPROF_TEST_TMP) + "/outputs/sort-room";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = dir + "/unordered.fprof";
  ASSERT_NO_FATAL_FAILURE(writeKernelsOutOfOrder(db, 40000));
  const std::string tmp = dir + "/tmp";
  std::optional<Mount> mount = Mount::tmpfs(tmp, 0);
  if (!mount) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): the full temporary folder is not tried";
  fill(tmp + "/filler");
  for (const char* format : {"csv", "chrome-trace"}) {
    const Result r = shell("SQLITE_TMPDIR='" + tmp + "' " + FPROF_BIN + " export " + db + " --format " + format +
                           " -o " + dir + "/out");
    EXPECT_EQ(r.code, 2) << format << ": " << r.out;
    EXPECT_EQ(r.out, "fprof: " + db + ": no room for SQLite's temporary files, where it sorts the rows (no space left "
                     "on device); point SQLITE_TMPDIR at a folder with room\n")
        << format;
    EXPECT_FALSE(fs::exists(dir + "/out")) << format;
  }
  const Result roomy = shell(std::string(FPROF_BIN) + " export " + db + " --format csv -o " + dir + "/out");
  EXPECT_EQ(roomy.code, 0) << roomy.out;
  const std::string csv = readBytes(dir + "/out");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 40001) << "a header and a row per kernel";
}

// Standard output redirected onto an input (`>> run.fprof`, or onto a hard link of it) would write
// into the database being read: every command that writes there refuses, and the input is kept.
TEST(StandardOutput, RedirectedOntoAnInputIsRefused) {
  const std::string dir = std::string(FPROF_TEST_TMP) + "/outputs/stdout-input";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string run = dir + "/run.fprof", link = dir + "/link.fprof", ceilings = dir + "/ceilings.json";
  fs::copy_file(data("trace_test_h200.fprof"), run);
  ASSERT_EQ(::link(run.c_str(), link.c_str()), 0);
  fs::copy_file(data("ceilings_h200.json"), ceilings);
  const std::string run_bytes = readBytes(run), ceilings_bytes = readBytes(ceilings);
  const std::string other = data("model_trace_h200.fprof");
  struct Case {
    std::string args, onto, what;
  };
  for (const Case& c : std::vector<Case>{{"info " + run, run, "the summary"},
                                         {"export " + run + " --format csv", link, "the export"},
                                         {"export " + run + " --format json", run, "the export"},
                                         {"export " + run + " --format chrome-trace -o -", run, "the export"},
                                         {"report " + other + " --baseline " + run + " --format md", link, "the summary"},
                                         {"report " + run + " -o -", run, "the report"},
                                         {"diff " + other + " " + run, run, "the comparison"},
                                         {"gate " + run + " " + other, link, "the summary"},
                                         {"gate " + other + " " + run + " -q --junit -", run, "the JUnit report"},
                                         {"ceilings --from-json " + ceilings + " -o " + dir + "/c.fprof", ceilings,
                                          "the table"}}) {
    const Result r = shell("(" + std::string(FPROF_BIN) + " " + c.args + " >> " + c.onto + ")");
    EXPECT_EQ(r.code, 2) << c.args;
    const std::string input = c.onto == ceilings ? ceilings : run;
    EXPECT_EQ(r.out, "fprof: standard output is the input " + input + " (redirected onto it); write " + c.what +
                         " to another file\n")
        << c.args;
    EXPECT_TRUE(readBytes(run) == run_bytes) << "the database changed: " << c.args;
    EXPECT_TRUE(readBytes(ceilings) == ceilings_bytes) << "the measurement changed: " << c.args;
  }
  EXPECT_FALSE(fs::exists(dir + "/c.fprof"));
  const Result elsewhere = shell("(" + std::string(FPROF_BIN) + " info " + run + " >> " + dir + "/info.txt)");
  EXPECT_EQ(elsewhere.code, 0) << elsewhere.out;
}

// Two outputs of one command naming one file is refused before anything is read.
TEST(OutputOptions, TwoOptionsNamingOneFileAreRefused) {
  const std::string dir = std::string(FPROF_TEST_TMP) + "/outputs/two-options";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string trace = data("trace_test_h200.fprof");
  const Result r = shell(std::string(FPROF_BIN) + " gate " + trace + " " + trace + " --json " + dir + "/g --junit " +
                         dir + "/./g");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "fprof: --json and --junit name the same file (" + dir + "/./g); give each output its own\n");
  EXPECT_TRUE(listDir(dir).empty());
}

// The gate prints its summary unless an output goes to standard output, which then carries that
// output alone; two outputs cannot share it.
TEST(OutputOptions, GateSendsOneOutputToStandardOutputInsteadOfItsSummary) {
  const std::string dir = std::string(FPROF_TEST_TMP) + "/outputs/gate-dash";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string gate = std::string(FPROF_BIN) + " gate " + data("trace_test_h200.fprof") + " " +
                           data("model_trace_h200.fprof");
  const Result to_file = shell(gate + " --json " + dir + "/findings.json");
  ASSERT_EQ(to_file.code, 1) << to_file.out;  // the model run is slower than the trace test
  EXPECT_NE(to_file.out.find("## "), std::string::npos) << "the summary is printed: " << to_file.out;
  const Result to_stdout = shell("cd '" + dir + "' && " + gate + " --json -");
  EXPECT_EQ(to_stdout.code, 1) << to_stdout.out;
  EXPECT_EQ(to_stdout.out, readBytes(dir + "/findings.json"));
  const Result two = shell("cd '" + dir + "' && " + gate + " --json - --junit -");
  EXPECT_EQ(two.code, 2);
  EXPECT_EQ(two.out, "fprof: --json and --junit both name standard output (-); give each output its own\n");
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"findings.json"});
}

// Every command with an output option says the rules in its --help.
TEST(OutputOptions, EveryWriterHelpSaysTheRules) {
  for (const char* command : {"report", "export", "gate", "merge", "ceilings", "view"}) {
    const Result r = shell(std::string(FPROF_BIN) + " " + command + " --help");
    EXPECT_EQ(r.code, 0) << command;
    EXPECT_NE(r.out.find("--force"), std::string::npos) << command;
    EXPECT_NE(r.out.find("Output files: an existing file is replaced only with --force"), std::string::npos) << command;
  }
}

// The default RUN.html replaces an earlier fprof report, and nothing else.
TEST(OutputOptions, TheReportsDefaultNameReplacesOnlyAReport) {
  const std::string dir = std::string(FPROF_TEST_TMP) + "/outputs/report-default";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(data("trace_test_h200.fprof"), dir + "/run.fprof");
  const std::string cd = "cd '" + dir + "' && " + FPROF_BIN + " report run.fprof -q";
  EXPECT_EQ(shell(cd).code, 0);
  const std::string report = readBytes(dir + "/run.html");
  ASSERT_FALSE(report.empty());
  const Result again = shell(cd);
  EXPECT_EQ(again.code, 0) << again.out;
  const std::string replaced = readBytes(dir + "/run.html");
  EXPECT_NE(replaced, report) << "a new report (a new script nonce)";
  EXPECT_EQ(replaced.size(), report.size());
  writeBytes(dir + "/run.html", kPrecious);
  const Result kept = shell(cd);
  EXPECT_EQ(kept.code, 2);
  EXPECT_EQ(kept.out, "fprof: run.html: file exists; choose another name or overwrite it with --force\n");
  EXPECT_EQ(readBytes(dir + "/run.html"), kPrecious);
}

}  // namespace
}  // namespace fprof
