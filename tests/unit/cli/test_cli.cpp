// The CLI as a user meets it: help text, versions, errors and exit codes, info on a database.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../core/test_util.h"
#include "neutral_paths.h"
#include "fprof/core/store.h"

namespace fprof {
namespace {

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr together
};

Result runFprof(const std::string& args) {
  const std::string cmd = std::string(FPROF_BIN) + " " + args + " 2>&1";
  Result r;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(f);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(Cli, HelpListsOnlyWorkingCommands) {
  Result r = runFprof("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* cmd : {"run", "info", "schema"}) EXPECT_NE(r.out.find(std::string("  ") + cmd + " "), std::string::npos) << cmd;
  EXPECT_NE(r.out.find("Usage: fprof [OPTIONS] SUBCOMMAND"), std::string::npos) << r.out;
}

TEST(Cli, SubcommandHelp) {
  Result r = runFprof("run --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Usage: fprof run [-o FILE] [--force] [--metrics SET ...] PROGRAM [ARGS...]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--force"), std::string::npos);
  r = runFprof("info --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--top"), std::string::npos) << r.out;
}

// The subcommands `fprof --help` lists, in its order.
std::vector<std::string> listedCommands(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream in(help);
  bool in_list = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Subcommands:", 0) == 0) {
      in_list = true;
    } else if (in_list && line.size() > 2 && line[0] == ' ' && line[1] == ' ' && line[2] != ' ') {
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
    }
  }
  return names;
}

// Every line of `fprof --help` and of each listed command's --help fits the width (cli/help_format.h).
TEST(Cli, EveryHelpLineFitsTheWidth) {
  constexpr size_t kWidth = 100;
  const Result root = runFprof("--help");
  ASSERT_EQ(root.code, 0);
  const std::vector<std::string> commands = listedCommands(root.out);
  EXPECT_GE(commands.size(), 11u) << root.out;
  std::vector<std::pair<std::string, std::string>> helps = {{"fprof --help", root.out}};
  for (const std::string& c : commands) {
    const Result r = runFprof(c + " --help");
    // `fprof job` hands everything, --help included, to the Python package; in a build without the
    // package it says so (exit 2), and there is no help to check.
    if (r.code == 2 && r.out.find("Python package, which is not installed") != std::string::npos) continue;
    EXPECT_EQ(r.code, 0) << c << ": " << r.out;
    helps.emplace_back("fprof " + c + " --help", r.out);
  }
  for (const auto& [what, text] : helps) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) EXPECT_LE(line.size(), kWidth) << what << ": " << line;
  }
}

TEST(Cli, Version) {
  Result r = runFprof("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "fprof " FPROF_VERSION_STRING "\n");
}

TEST(Cli, UnknownCommandAndOptionExit2) {
  Result r = runFprof("frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown command 'frobnicate'"), std::string::npos) << r.out;
  r = runFprof("info --frob x.fprof");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--frob"), std::string::npos) << r.out;
  r = runFprof("");
  EXPECT_EQ(r.code, 2);
}

TEST(Cli, InfoOnBadFileSaysWhy) {
  Result r = runFprof("info /nonexistent/run.fprof");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "fprof: /nonexistent/run.fprof: no such file\n");
}

TEST(Cli, RunWithoutProgram) {
  Result r = runFprof("run");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("no program given"), std::string::npos) << r.out;
}

TEST(Cli, RunRefusesWhenAnotherInjectorIsActive) {
  const std::string cmd = std::string("CUDA_INJECTION64_PATH=/opt/other/libinject.so ") + FPROF_BIN +
                          " run -o /tmp/never.fprof true 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::array<char, 4096> buf{};
  std::string out(buf.data(), fread(buf.data(), 1, buf.size(), f));
  const int status = pclose(f);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(out.find("CUDA_INJECTION64_PATH is already set (/opt/other/libinject.so)"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists("/tmp/never.fprof"));
}

// --replay chooses how --metrics counts; alone, or with a value it does not know, it is refused.
TEST(Cli, RunReplayNeedsMetricsAndAKnownMode) {
  Result alone = runFprof("run --replay application true");
  EXPECT_EQ(alone.code, 2);
  EXPECT_NE(alone.out.find("--replay and --second-run choose what --metrics profiles"), std::string::npos)
      << alone.out;
  Result second = runFprof("run --second-run kernel true");
  EXPECT_EQ(second.code, 2) << "--second-run is for metrics runs too";
  Result kernel = runFprof("run --metrics roofline --replay kernel --second-run patching true");
  EXPECT_EQ(kernel.code, 2);
  EXPECT_NE(kernel.out.find("--second-run says how application replay's second run counts; add --replay application"),
            std::string::npos)
      << kernel.out;
  Result other = runFprof("run --metrics roofline --replay application --second-run user true");
  EXPECT_EQ(other.code, 2) << "patching or kernel only";
  Result unknown = runFprof("run --metrics memory --replay user true");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.out.find("--replay"), std::string::npos) << unknown.out;
}

TEST(Cli, RunRefusesToOverwrite) {
  const std::string path = testing::tempPath("taken.fprof");
  { std::ofstream(path) << "x"; }
  Result r = runFprof("run -o " + path + " true");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(path + " exists; choose another name with -o or overwrite it with --force"), std::string::npos)
      << r.out;
}

// A folder at the output path is refused before the program starts, --force or not: the run
// could never be put there.
TEST(Cli, RunRefusesAFolderEvenWithForce) {
  const std::string folder = testing::tempPath("folder.fprof");
  std::filesystem::create_directories(folder);
  const std::string marker = testing::tempPath("folder-run-started");
  std::filesystem::remove(marker);
  for (const char* force : {"", " --force"}) {
    Result r = runFprof(std::string("run -o ") + folder + force + " touch " + marker);
    EXPECT_EQ(r.code, 2) << force;
    EXPECT_EQ(r.out, "fprof: run: " + folder + ": is a directory; name a file for the run's database\n") << force;
    EXPECT_FALSE(std::filesystem::exists(marker)) << "the program was started";
  }
  EXPECT_TRUE(std::filesystem::is_directory(folder));
}

TEST(Cli, RunWritesNoDatabaseNamedDash) {
  Result r = runFprof("run -o - true");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "fprof: run: -: the run's database cannot be written to standard output; name a file (./- for a file "
                   "named '-')\n");
}

TEST(Cli, SchemaMarkdownIsTheDoc) {
  Result r = runFprof("schema --markdown");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("# The .fprof database schema", 0), 0u);
}

TEST(Cli, InfoShowsTopKernels) {
  const std::string path = testing::tempPath("info.fprof");
  {
    auto w = core::Writer::create(path);
    ASSERT_TRUE(w.ok());
    core::ProcessInfo pr;
    pr.pid = 77;
    pr.host = "h";
    pr.command_line = "./app --x";
    ASSERT_TRUE((*w)->addProcess(pr).ok());
    core::DeviceInfo d;
    d.process_id = 1;
    d.name = "Test GPU";
    d.compute_major = 9;
    d.sm_count = 132;
    ASSERT_TRUE((*w)->addDevice(d));
    for (int i = 0; i < 3; ++i) (*w)->add(testing::makeKernel("big_kernel", i * 10000, 3000, 0));
    (*w)->add(testing::makeKernel("small_kernel", 50000, 1000, 0));
    ASSERT_TRUE((*w)->close());
  }
  Result r = runFprof("info " + path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("command : ./app --x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("device  : [0] Test GPU, sm_90, 132 SMs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernels : 4 launches of 2 distinct kernel shapes; kernel time 10.00 us"), std::string::npos)
      << r.out;
  const auto big = r.out.find("big_kernel");
  const auto small = r.out.find("small_kernel");
  ASSERT_NE(big, std::string::npos);
  ASSERT_NE(small, std::string::npos);
  EXPECT_LT(big, small) << "kernels must be ordered by total time";
  EXPECT_NE(r.out.find("1  9.00 us  90.0%      3  3.00 us   128    256    32"), std::string::npos) << r.out;
  r = runFprof("info --top 1 " + path);
  EXPECT_EQ(r.out.find("small_kernel"), std::string::npos);
}

}  // namespace
}  // namespace fprof

namespace fprof {
namespace {

TEST(CliCeilings, StoresAMeasurementWithDatasheetValues) {
  const std::string out = testing::tempPath("ceilings.fprof");
  Result r = runFprof("ceilings --from-json " FPROF_SOURCE_DIR "/tests/data/ceilings_h200.json -o " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(": NVIDIA H200 (sm_90, 132 SMs)"), std::string::npos) << r.out;
  // DRAM roof = best of read/write/copy/cudaMemcpy = the read kernel's 4.58 TB/s; the datasheet is
  // 2 * 3201 MHz * 6016 bit / 8 = 4815 GB/s.
  const auto dram = r.out.find("\ndram ");
  ASSERT_NE(dram, std::string::npos) << r.out;
  const std::string dram_line = r.out.substr(dram + 1, r.out.find('\n', dram + 1) - dram - 1);
  EXPECT_NE(dram_line.find("4580 GB/s"), std::string::npos) << dram_line;
  EXPECT_NE(dram_line.find("4814 GB/s"), std::string::npos) << dram_line;
  EXPECT_NE(dram_line.find("95.1%"), std::string::npos) << dram_line;
  EXPECT_NE(r.out.find("reference cudaMemcpy_d2d: 4216 GB/s"), std::string::npos) << r.out;
  auto p = core::loadProfile(out);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->meta("mode"), "ceilings");
  int measured = 0, datasheet = 0;
  for (const core::CeilingRecord& c : p->ceilings) {
    EXPECT_EQ(c.device_name, "NVIDIA H200");
    measured += c.source == "measured";
    datasheet += c.source == "datasheet";
    if (c.ceiling == "fp32" && c.source == "measured") {
      EXPECT_DOUBLE_EQ(c.value, 6.513777e13);
    }
    if (c.ceiling == "dram" && c.source == "datasheet") {
      EXPECT_NEAR(c.value, 2 * 3201e6 * 6016 / 8, 1e6);
    }
  }
  EXPECT_EQ(measured, 16);  // 17 measurements, the cudaMemcpy reference kept as metadata
  EXPECT_GE(datasheet, 5);
  EXPECT_EQ(p->meta("reference.cudaMemcpy_d2d.bytes_per_s"), "4.216441e+12");
  // A second store to the same named file needs --force.
  r = runFprof("ceilings --from-json " FPROF_SOURCE_DIR "/tests/data/ceilings_h200.json -o " + out);
  EXPECT_EQ(r.code, 2);
}

TEST(CliCeilings, RejectsWhatIsNotAMeasurement) {
  const std::string bad = testing::tempPath("bad.json");
  { std::ofstream(bad) << "{\"device\": {\"name\": \"x\"}}"; }
  Result r = runFprof("ceilings --from-json " + bad + " -o " + testing::tempPath("never.fprof"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(bad + " is not a ceilings measurement"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fprof

namespace fprof {
namespace {

// Golden: `fprof info` on profiles recorded on an H200 (tests/data/README.md says how they were
// made), copied with their command lines' absolute paths cut to file names (neutral_paths.h).
// Regenerate with FPROF_GOLDEN_UPDATE=1 build/bin/cli_tests --gtest_filter='CliGolden.*'.
void checkInfoGolden(const std::string& data, const std::string& expected) {
  const std::string dir = std::string(FPROF_TEST_TMP) + "/golden-" + expected;  // one per test: they run at once
  ASSERT_EQ(testing::copyWithNeutralCommandLines(std::string(FPROF_SOURCE_DIR) + "/" + data, dir + "/" + data), "");
  const std::string cmd = "cd " + dir + " && " + FPROF_BIN + " info " + data + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
  ASSERT_EQ(pclose(f), 0) << out;
  const std::string path = std::string(FPROF_SOURCE_DIR) + "/tests/golden/info/" + expected;
  if (std::getenv("FPROF_GOLDEN_UPDATE")) std::ofstream(path) << out;
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path << " missing; regenerate with FPROF_GOLDEN_UPDATE=1";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(out, want.str()) << "regenerate with FPROF_GOLDEN_UPDATE=1 if the change is intended";
}

TEST(CliGolden, InfoOnTheCollectorTestProgram) { checkInfoGolden("tests/data/trace_test_h200.fprof", "trace_test_h200.txt"); }
TEST(CliGolden, InfoOnTheReferenceModel) { checkInfoGolden("tests/data/model_trace_h200.fprof", "model_trace_h200.txt"); }
TEST(CliGolden, InfoOnTheReferenceModelWithCounters) {
  checkInfoGolden("tests/data/model_metrics_h200.fprof", "model_metrics_h200.txt");
}
// The profile `make run` analyses without a GPU (scripts/demo), recorded with schema 2 on an H100.
TEST(CliGolden, InfoOnTheBundledProfile) {
  checkInfoGolden("tests/data/model_metrics_sampled_h100.fprof", "model_metrics_sampled_h100.txt");
}

// First impressions: the bundled profile reads without a warning and places every kernel.
TEST(CliBundled, InfoHasNoWarningAndFullCoverage) {
  const std::string cmd = std::string(FPROF_BIN) + " info " + FPROF_SOURCE_DIR +
                          "/tests/data/model_metrics_sampled_h100.fprof 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
  ASSERT_EQ(pclose(f), 0) << out;
  EXPECT_EQ(out.find("warning"), std::string::npos) << out;
  EXPECT_NE(out.find("coverage: counters for 882 of 882 kernels (100.0% of kernel time)"), std::string::npos) << out;
  EXPECT_NE(out.find("fusion  : attention, 3 kernels (qk -> softmax -> pv): "), std::string::npos) << out;
}

// Every recording in tests/data exports whole: a written-once buffer whose one reader passed it
// with an unknown role has no known reader (null), not a crash.
TEST(CliExport, EveryRecordingExportsAsJson) {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(FPROF_SOURCE_DIR) + "/tests/data")) {
    if (entry.path().extension() != ".fprof") continue;
    const Result r = runFprof("export " + entry.path().string() + " --format json");
    EXPECT_EQ(r.code, 0) << entry.path();
    EXPECT_TRUE(r.out.size() > 2 && r.out.compare(r.out.size() - 2, 2, "}\n") == 0) << entry.path();
  }
}

// A copy of a recording with its kernel rows repeated `copies` more times, each repetition after
// the previous one in time, with ids and correlation ids of its own and outside every NVTX range.
std::string withKernelsRepeated(const std::string& src, const std::string& name, int copies) {
  const std::string dst = testing::tempPath(name);
  std::filesystem::copy_file(src, dst);
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(dst.c_str(), &db), SQLITE_OK);
  auto scalar = [&](const char* sql) {
    sqlite3_stmt* q = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &q, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(q), SQLITE_ROW);
    const int64_t v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
  };
  const int64_t last_id = scalar("SELECT max(id) FROM kernel");
  const int64_t span = scalar("SELECT max(end_ns) - min(start_ns) + 1000 FROM kernel");
  std::string columns, values;
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info('kernel')", -1, &q, nullptr), SQLITE_OK);
  while (sqlite3_step(q) == SQLITE_ROW) {
    const std::string c = reinterpret_cast<const char*>(sqlite3_column_text(q, 0));
    std::string v = c;
    if (c == "id") v = "id + copy.k * " + std::to_string(last_id);
    if (c == "correlation_id") v = "correlation_id + copy.k * 1000000";
    if (c == "start_ns" || c == "end_ns") v = c + " + copy.k * " + std::to_string(span);
    if (c == "nvtx_range_id" || c == "nvtx_path_id") v = "NULL";
    columns += (columns.empty() ? "" : ", ") + c;
    values += (values.empty() ? "" : ", ") + v;
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  testing::execSql(dst, "WITH RECURSIVE copy(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM copy WHERE k < " +
                          std::to_string(copies) + ") INSERT INTO kernel (" + columns + ") SELECT " + values +
                          " FROM kernel, copy WHERE kernel.id <= " + std::to_string(last_id));
  return dst;
}

// More launches than the export makes texts for on its threads in one round (2048 a block, up to
// eight blocks): every launch once, in start order, and the document laid out as nlohmann lays
// out the whole of it.
TEST(CliExport, ManyLaunchesExportInStartOrderAsOneDocument) {
  const std::string big = withKernelsRepeated(std::string(FPROF_SOURCE_DIR) + "/tests/data/model_trace_h200.fprof",
                                              "many_launches.fprof", 23);
  const std::string out = testing::tempPath("many_launches.json");
  const Result r = runFprof("export " + big + " --format json -o " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const nlohmann::json doc = nlohmann::json::parse(text);
  EXPECT_EQ(text, doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  const nlohmann::json& kernels = doc.at("kernels");
  ASSERT_EQ(kernels.size(), 1600u * 24);
  std::set<int64_t> ids;
  for (size_t i = 0; i < kernels.size(); ++i) {
    ids.insert(kernels[i].at("id").get<int64_t>());
    if (i > 0) {
      ASSERT_LE(kernels[i - 1].at("start_ns").get<int64_t>(), kernels[i].at("start_ns").get<int64_t>()) << i;
    }
  }
  EXPECT_EQ(ids.size(), kernels.size());
  // The repetitions are the first launches again, later.
  EXPECT_EQ(kernels[1600 * 7 + 5].at("name"), kernels[5].at("name"));
}

// The launch tables the JSON export and a report read after the rest of the run (their analysis
// reads them once the NVTX ranges are let go): damage found there is said, as a whole load says it.
TEST(CliExport, DamageInTheLaunchTablesReadLaterIsSaid) {
  const std::string path = testing::tempPath("wrong_type_arg.fprof");
  std::filesystem::copy_file(std::string(FPROF_SOURCE_DIR) + "/tests/data/torch_mlp_eager_h100.fprof", path,
                             std::filesystem::copy_options::overwrite_existing);
  testing::execSql(path, "UPDATE kernel_arg SET value = 'a pointer' WHERE rowid IN (1, 2)");
  const std::string said = "fprof: warning: " + path +
                           ": 2 rows of kernel_arg hold a value of the wrong type in a number column (first: value "
                           "holds text, read as the number it begins with, else 0)\n";
  for (const std::string& command :
       {"export " + path + " --format json --force -o " + testing::tempPath("wrong_type.json"),
        "report " + path + " -q --force -o " + testing::tempPath("wrong_type.html"), "info " + path}) {
    const Result r = runFprof(command);
    ASSERT_EQ(r.code, 0) << command << "\n" << r.out;
    EXPECT_NE(r.out.find(said), std::string::npos) << command << "\n" << r.out;
  }
}

// A graph launch counted whole under application replay (tests/data/README.md): info says so with
// the launch's sums, and every kernel still has counters (the graph's copied from eager twins).
TEST(CliRecorded, InfoShowsGraphLaunchesCountedWhole) {
  const Result r = runFprof(std::string("info ") + FPROF_SOURCE_DIR + "/tests/data/torch_graphs_app_replay_h100.fprof");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(schema 5,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("coverage: counters for 49 of 49 kernels (100.0% of kernel time)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("graphs  : 1 CUDA graph launch counted whole, one range each (5 kernels, 21.54 us of kernel "
                       "time): DRAM read 16.2 MiB, written 3.8 MiB, L2 39.8 MiB (sums; table graph_launch_counter)"),
            std::string::npos)
      << r.out;
}

TEST(CliRecorded, ExportCarriesGraphLaunchesCountedWhole) {
  const Result r =
      runFprof(std::string("export --format json ") + FPROF_SOURCE_DIR + "/tests/data/torch_graphs_app_replay_h100.fprof");
  ASSERT_EQ(r.code, 0) << r.out;
  const size_t at = r.out.find("\"graph_launches\"");
  ASSERT_NE(at, std::string::npos) << r.out.substr(0, 2000);
  const std::string launch = r.out.substr(at, 600);
  EXPECT_NE(launch.find("\"correlation_id\": 50"), std::string::npos) << launch;
  EXPECT_NE(launch.find("\"l1_bytes\": 3870880.0"), std::string::npos) << launch;
  EXPECT_NE(launch.find("29"), std::string::npos) << "the five kernel ids, 25 to 29: " << launch;
}

TEST(CliRecorded, ReportShowsGraphLaunchesCountedWhole) {
  const Result r =
      runFprof(std::string("report --format md ") + FPROF_SOURCE_DIR + "/tests/data/torch_graphs_app_replay_h100.fprof");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("- graph launches: 1 CUDA graph launch counted whole, one range each (5 kernels"),
            std::string::npos)
      << r.out;
}

// fprof diff says what differs in how the runs were recorded, one warning line each, as the gate
// does: the GPUs (an H200 run against an H100 one), the mode (trace against metrics).
TEST(CliRecorded, DiffWarnsWhenTheRunsWereRecordedDifferently) {
  const std::string data = std::string(FPROF_SOURCE_DIR) + "/tests/data/";
  auto warnings = [](const std::string& out) {
    std::vector<std::string> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("warning: ", 0) == 0) lines.push_back(line);
    }
    return lines;
  };
  Result r = runFprof("diff " + data + "model_trace_h200.fprof " + data + "model_trace_h100.fprof --top 1");
  ASSERT_EQ(r.code, 0) << r.out;
  std::vector<std::string> w = warnings(r.out);
  ASSERT_EQ(w.size(), 1u) << r.out;
  EXPECT_EQ(w[0], "warning: the runs were recorded on different GPUs (base: NVIDIA H200 (sm_90); current: NVIDIA H100 "
                  "80GB HBM3 (sm_90)): times and counters are not those of one machine");
  // Before the kernel table: said before any number is read.
  EXPECT_LT(r.out.find(w[0]), r.out.find("Kernels ("));
  r = runFprof("diff " + data + "model_trace_h100.fprof " + data + "model_metrics_sampled_h100.fprof --top 1");
  ASSERT_EQ(r.code, 0) << r.out;
  w = warnings(r.out);
  ASSERT_EQ(w.size(), 1u) << r.out;
  EXPECT_EQ(w[0].rfind("warning: the runs were recorded in different modes (base: trace; current: metrics)", 0), 0u)
      << w[0];
  r = runFprof("diff " + data + "model_trace_h100.fprof " + data + "model_trace_h100.fprof --top 1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(warnings(r.out).empty()) << r.out;
}

// The applied fusions of a recorded pair as fprof diff prints them (one candidate ran as before).
TEST(CliRecorded, DiffPrintsTheAppliedFusions) {
  const std::string data = std::string(FPROF_SOURCE_DIR) + "/tests/data/";
  const Result r = runFprof("diff " + data + "torch_proof_mlp_bf16_eager_h200.fprof " + data +
                            "torch_proof_mlp_bf16_bias_gelu_h200.fprof --top 1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Fusions applied (1 of the baseline's 3 candidates run fused; compared over 5 top NVTX ranges "
                       "both runs hold as often (\"step\")):\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("neighbours         10  30 -> 10  612.95 us  569.60 us  +7.6%  GEMM + epilogue, 3 kernels "
                       "(matmul -> add -> gelu)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n1 candidate ran as before, 0 changed without fewer launches\n"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fprof
