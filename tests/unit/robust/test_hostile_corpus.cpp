// Every subcommand over every database of the hostile corpus (corpus.h): each run ends within a
// bound (a hang fails here, it does not block CI), exits 0 (1 for a gate finding) or 2 with a
// one-line error, never 3; writes valid output (the JSON parses, the CSV has a constant width per
// RFC 4180, the HTML holds no live markup, the Markdown tables keep their columns); and nothing
// it prints for a terminal carries a control character. Damage is warned about once per file read.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "checks.h"
#include "corpus.h"
#include "fprof/analysis/kernel_names.h"
#include "fprof/core/text.h"

namespace fprof::testing {
namespace {

namespace fs = std::filesystem;

// A command that runs longer has hung: the largest corpus file takes about a second per command
// (two on a loaded machine).
constexpr auto kCommandLimit = std::chrono::seconds(30);

struct CommandRun {
  std::string command;
  int code = -1;  // exit code; -1 when killed
  bool timed_out = false;
  double seconds = 0;
  std::string out, err;
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs fprof with its output in files, killing it at the limit.
CommandRun runFprof(const std::vector<std::string>& args, const std::string& dir) {
  CommandRun r;
  for (const std::string& a : args) r.command += (r.command.empty() ? "fprof " : " ") + a;
  const std::string out_path = dir + "/stdout.txt", err_path = dir + "/stderr.txt";
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child == 0) {
    if (!freopen(out_path.c_str(), "w", stdout) || !freopen(err_path.c_str(), "w", stderr)) _exit(126);
    std::vector<char*> argv;
    std::string bin = FPROF_BIN;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (std::chrono::steady_clock::now() - t0 > kCommandLimit) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.timed_out && WIFEXITED(status)) r.code = WEXITSTATUS(status);
  r.out = readFile(out_path);
  r.err = readFile(err_path);
  return r;
}

}  // namespace

// Test names and failure messages show the case by name.
void PrintTo(const CorpusCase& c, std::ostream* os) { *os << c.name; }

namespace {

class HostileCorpus : public ::testing::TestWithParam<CorpusCase> {
 protected:
  void SetUp() override {
    dir_ = std::string(FPROF_TEST_TMP) + "/hostile/" + GetParam().name;
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    file_ = dir_ + "/" + GetParam().name + ".fprof";
    clean_ = dir_ + "/clean.fprof";
    ASSERT_EQ(writeCorpusDatabase(GetParam().name, file_).error(), "");
    ASSERT_EQ(writeCorpusDatabase("clean", clean_).error(), "");
  }
  // A failed case keeps its files to look at; FPROF_KEEP_CORPUS=1 keeps every case's.
  void TearDown() override {
    if (!HasFailure() && !std::getenv("FPROF_KEEP_CORPUS")) fs::remove_all(dir_);
  }

  // Runs a command and checks what every command owes: it ended, its exit code is one of
  // `codes` (or 2 with a one-line error), stderr is clean lines, and the file's damage is warned
  // about exactly `reads` times.
  CommandRun check(const std::vector<std::string>& args, std::set<int> codes, int reads) {
    CommandRun r = runFprof(args, dir_);
    SCOPED_TRACE(r.command);
    EXPECT_FALSE(r.timed_out) << "did not finish within " << kCommandLimit.count() << " s";
    EXPECT_NE(r.code, 3) << "internal error: " << r.err;
    EXPECT_TRUE(codes.count(r.code) || r.code == 2) << "exit " << r.code << "\n" << r.err;
    EXPECT_EQ(terminalProblem(r.err), "") << r.err.substr(0, 2000);
    if (r.code == 2) {
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "not a one-line error:\n" << r.err.substr(0, 2000);
      EXPECT_EQ(r.err.rfind("fprof: ", 0), 0u) << r.err.substr(0, 2000);
    }
    for (std::istringstream lines(r.err); std::getline(lines, line_);) {
      EXPECT_TRUE(line_.rfind("fprof: ", 0) == 0 || line_.rfind("[fprof] ", 0) == 0) << line_.substr(0, 300);
      EXPECT_LT(line_.size(), size_t{4 * 1024 * 1024}) << "an unbounded line";
    }
    const std::string& warning = GetParam().warning;
    if (!warning.empty() && r.code != 2) {
      size_t said = 0;
      for (size_t at = 0; (at = r.err.find(warning, at)) != std::string::npos; at += warning.size()) ++said;
      EXPECT_EQ(said, static_cast<size_t>(reads)) << "the warning '" << warning << "' once per read:\n"
                                                  << r.err.substr(0, 3000);
    }
    if (warning.empty() && GetParam().name != "nan_inf") {
      EXPECT_EQ(r.err.find("warning"), std::string::npos) << "a warning for an undamaged file:\n" << r.err.substr(0, 2000);
    }
    seconds_ += r.seconds;
    return r;
  }

  std::string out(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_, file_, clean_, line_;
  double seconds_ = 0;
};

TEST_P(HostileCorpus, EverySubcommandEndsWithValidOutput) {
  const CorpusCase& c = GetParam();
  const bool long_strings = c.name == "long_strings";

  for (const char* full : {"", "--full-names"}) {
    std::vector<std::string> args = {"info", file_};
    if (*full) args.push_back(full);
    const CommandRun r = check(args, {0}, 1);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(terminalProblem(r.out), "") << r.command;
    if (!c.shown.empty()) {
      EXPECT_NE(r.out.find(c.shown), std::string::npos) << r.out;
    }
    if (long_strings && !*full) {
      EXPECT_LT(r.out.size(), size_t{64 * 1024}) << "info does not cut 1 MB strings";
    }
  }

  for (const bool with_baseline : {false, true}) {
    std::vector<std::string> args = {"report", file_, "-o", out("report.html"), "--force"};
    if (with_baseline) args.insert(args.end(), {"--baseline", clean_});
    const CommandRun r = check(args, {0}, 1);
    EXPECT_EQ(r.code, 0) << r.err;
    const std::string html = readFile(out("report.html"));
    EXPECT_EQ(htmlProblem(html), "") << r.command;
    if (!c.warning.empty()) {
      EXPECT_NE(html.find(c.warning), std::string::npos) << "the report names the damage";
    }
    // The tooltips' data names kernel groups by short name too: clean and short.
    const nlohmann::json data = htmlEmbeddedJson(html);
    ASSERT_TRUE(data.is_object()) << "no embedded JSON in " << r.command;
    for (const auto& g : data["groups"]) EXPECT_EQ(shortNameProblem(g["short_name"].get<std::string>()), "") << r.command;
    if (long_strings) {
      EXPECT_LT(html.size(), size_t{2 * 1024 * 1024}) << "the report does not cut 1 MB strings";
    }
  }
  {
    const CommandRun r = check({"report", file_, "--format", "md"}, {0}, 1);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(markdownProblem(r.out), "") << r.command;
    if (long_strings) {
      EXPECT_LT(r.out.size(), size_t{256 * 1024}) << "the Markdown does not cut 1 MB strings";
    }
  }

  {
    const CommandRun r = check({"export", file_, "--format", "csv", "-o", out("export.csv")}, {0}, 1);
    EXPECT_EQ(r.code, 0) << r.err;
    const std::string csv = readFile(out("export.csv"));
    EXPECT_EQ(csvProblem(csv), "") << r.command;
    if (long_strings) {
      EXPECT_GT(csv.size(), size_t{1 << 20}) << "an export keeps whole names";
    }
    std::vector<std::vector<std::string>> rows;
    ASSERT_EQ(parseCsv(csv, rows), "");
    const auto column = std::find(rows.at(0).begin(), rows.at(0).end(), "short_name");
    ASSERT_NE(column, rows.at(0).end()) << "no short_name column";
    const auto at = static_cast<size_t>(column - rows.at(0).begin());
    for (size_t k = 1; k < rows.size(); ++k) EXPECT_EQ(shortNameProblem(rows[k].at(at)), "") << "CSV row " << k;
  }
  {
    const CommandRun r = check({"export", file_, "--format", "json", "-o", out("export.json")}, {0}, 1);
    EXPECT_EQ(r.code, 0) << r.err;
    nlohmann::json j;
    const std::string text = readFile(out("export.json"));
    EXPECT_EQ(jsonProblem(text, &j), "") << r.command;
    if (long_strings) {
      EXPECT_GT(text.size(), size_t{1 << 20}) << "an export keeps whole names";
    }
    if (j.contains("kernels")) {
      // Short names are those of the cleaned full names (the reader's), never of the raw bytes:
      // the same table built here from the exported names gives the same short names.
      std::vector<std::string> full_names;
      for (const auto& k : j["kernels"]) full_names.push_back(k["name"].get<std::string>());
      const analysis::KernelNames names(full_names);
      for (const auto& k : j["kernels"]) {
        const std::string name = k["name"].get<std::string>(), short_name = k["short_name"].get<std::string>();
        EXPECT_FALSE(name.empty()) << "an empty kernel name";
        EXPECT_EQ(shortNameProblem(short_name), "") << name.substr(0, 300);
        EXPECT_EQ(short_name, names.shortName(name)) << name.substr(0, 300);
      }
      for (const auto& g : j["kernel_groups"]) EXPECT_EQ(shortNameProblem(g["short_name"].get<std::string>()), "");
    }
  }
  {
    const CommandRun r = check({"export", file_, "--format", "chrome-trace", "-o", out("trace.json")}, {0}, 1);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(jsonProblem(readFile(out("trace.json"))), "") << r.command;
  }

  for (const auto& [base, reads] : {std::pair<std::string, int>{clean_, 1}, {file_, 2}}) {
    const CommandRun r = check({"diff", base, file_}, {0}, reads);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(terminalProblem(r.out), "") << r.command;
    if (long_strings) {
      EXPECT_LT(r.out.size(), size_t{64 * 1024}) << "diff does not cut 1 MB strings";
    }
  }

  {
    const CommandRun r = check({"gate", clean_, file_, "--json", out("gate.json"), "--junit", out("gate.xml"), "--markdown",
                         out("gate.md")},
                        {0, 1}, 1);
    EXPECT_EQ(terminalProblem(r.out), "") << r.command;
    EXPECT_EQ(markdownProblem(r.out), "") << r.command;
    if (r.code != 2) {
      nlohmann::json gate;
      EXPECT_EQ(jsonProblem(readFile(out("gate.json")), &gate), "") << r.command;
      for (const auto& f : gate.value("findings", nlohmann::json::array())) {
        if (!f["kernel"].get<std::string>().empty()) {
          EXPECT_EQ(shortNameProblem(f["short_name"].get<std::string>()), "") << r.command;
        }
      }
      EXPECT_EQ(junitProblem(readFile(out("gate.xml"))), "") << r.command;
      EXPECT_EQ(markdownProblem(readFile(out("gate.md"))), "") << r.command;
    }
    const CommandRun self = check({"gate", file_, file_}, {0}, 2);
    EXPECT_EQ(self.code, 0) << "a run compared with itself passes:\n" << self.out.substr(0, 3000);
    EXPECT_EQ(markdownProblem(self.out), "") << self.command;
  }

  {
    const CommandRun r = check({"merge", file_, clean_, "-o", out("merged.fprof"), "--force"}, {0}, 1);
    if (r.code == 0) {
      const CommandRun info = check({"info", out("merged.fprof")}, {0}, 0);
      EXPECT_EQ(info.code, 0) << info.err;
      EXPECT_EQ(terminalProblem(info.out), "") << info.command;
    }
  }
  RecordProperty("fprof_seconds", std::to_string(seconds_));
}

INSTANTIATE_TEST_SUITE_P(Corpus, HostileCorpus, ::testing::ValuesIn(corpusCases()),
                         [](const ::testing::TestParamInfo<CorpusCase>& param) { return param.param.name; });

}  // namespace
}  // namespace fprof::testing
