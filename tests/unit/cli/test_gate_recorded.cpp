// `fprof gate` on every recording in tests/data against copies of itself changed with SQLite: every
// kernel 1.5x longer fails it; the identical copy and a noise-level copy (each launch +-2% at
// random) pass it. Between two real recordings: the naive attention that replaced SDPA fails the
// whole-run checks (its time is in kernels the SDPA run did not have), and an H200 run against an
// H100 one is said to differ in devices.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace fprof {
namespace {

namespace fs = std::filesystem;

int runFprof(const std::string& args, std::string* out = nullptr) {
  const std::string cmd = std::string(FPROF_BIN) + " " + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return -1;
  std::array<char, 4096> buf{};
  std::string text;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) text.append(buf.data(), n);
  const int status = pclose(f);
  if (out) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<fs::path> recordings() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(fs::path(FPROF_SOURCE_DIR) / "tests" / "data")) {
    if (entry.path().extension() == ".fprof") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

fs::path workDir() {
  const fs::path dir = fs::path(FPROF_TEST_TMP) / "gate_recorded";
  fs::create_directories(dir);
  return dir;
}

// A copy of `src` whose kernel durations are each multiplied by scale(i) (i counts the launches):
// end_ns moves, start_ns stays, duration_ns follows.
template <typename Scale>
fs::path changedCopy(const fs::path& src, const std::string& tag, Scale scale) {
  const fs::path dst = workDir() / (src.stem().string() + "." + tag + ".fprof");
  fs::remove(dst);
  fs::copy_file(src, dst);
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(dst.c_str(), &db), SQLITE_OK);
  std::vector<std::array<int64_t, 3>> rows;  // id, start_ns, end_ns
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT id, start_ns, end_ns FROM kernel ORDER BY id", -1, &q, nullptr), SQLITE_OK);
  while (sqlite3_step(q) == SQLITE_ROW) {
    rows.push_back({sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1), sqlite3_column_int64(q, 2)});
  }
  sqlite3_finalize(q);
  EXPECT_EQ(sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_stmt* u = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, "UPDATE kernel SET end_ns = ?1, duration_ns = ?2 WHERE id = ?3", -1, &u, nullptr),
            SQLITE_OK);
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto [id, start, end] = rows[i];
    const auto duration = static_cast<int64_t>(std::llround(static_cast<double>(end - start) * scale(i)));
    sqlite3_bind_int64(u, 1, start + duration);
    sqlite3_bind_int64(u, 2, duration);
    sqlite3_bind_int64(u, 3, id);
    EXPECT_EQ(sqlite3_step(u), SQLITE_DONE);
    sqlite3_reset(u);
  }
  sqlite3_finalize(u);
  EXPECT_EQ(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  return dst;
}

nlohmann::json gateJson(const fs::path& base, const fs::path& cur, int* code) {
  const fs::path json = workDir() / (cur.stem().string() + ".gate.json");
  fs::remove(json);
  std::string out;
  *code = runFprof("gate " + base.string() + " " + cur.string() + " --quiet --json " + json.string(), &out);
  std::ifstream in(json);
  if (!in) {
    ADD_FAILURE() << "no JSON from the gate on " << cur << ": " << out;
    return {};
  }
  return nlohmann::json::parse(in);
}

// The whole-run checks of a gate's JSON: of the comparison, or of every rank.
std::vector<nlohmann::json> runChecks(const nlohmann::json& j) {
  std::vector<nlohmann::json> out;
  if (j.contains("ranks")) {
    for (const auto& r : j["ranks"]) {
      for (const auto& c : r["run_checks"]) out.push_back(c);
    }
  } else {
    for (const auto& c : j["run_checks"]) out.push_back(c);
  }
  return out;
}

const nlohmann::json* runCheck(const nlohmann::json& j, const std::string& metric) {
  if (!j.contains("run_checks")) return nullptr;
  for (const auto& c : j["run_checks"]) {
    if (c["metric"] == metric) return &c;
  }
  return nullptr;
}

bool runCheckFailed(const nlohmann::json& j, const std::string& metric) {
  for (const auto& c : runChecks(j)) {
    if (c["metric"] == metric && c["regression"].get<bool>()) return true;
  }
  return false;
}

TEST(GateRecorded, EveryKernelOneAndAHalfTimesLongerFails) {
  const auto files = recordings();
  ASSERT_GE(files.size(), 20u);
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.filename().string());
    const fs::path slow = changedCopy(f, "slow", [](size_t) { return 1.5; });
    int code = -1;
    const nlohmann::json j = gateJson(f, slow, &code);
    EXPECT_EQ(code, 1);
    EXPECT_FALSE(j.value("passed", true));
    EXPECT_GT(j.value("regressions", 0), 0);
    // The whole run's kernel time is 1.5x; it fails wherever the launches' spread does not cover
    // that (torchrun rank 1's all-reduce launches wait for rank 0, from 0.24 to 4.7 ms: there the
    // launch groups fail instead).
    if (const nlohmann::json* c = runCheck(j, "kernel_time_ns")) {
      // Within 0.2%: a programmatic launch's own time starts where its predecessor ended, which moved too.
      EXPECT_NEAR((*c)["change"].get<double>(), 0.5, 0.002);
      if (f.filename() != "torchrun_allreduce_h200x2.rank1.fprof") {
        EXPECT_TRUE((*c)["regression"].get<bool>());
      }
    }
  }
}

TEST(GateRecorded, IdenticalCopyPasses) {
  for (const fs::path& f : recordings()) {
    SCOPED_TRACE(f.filename().string());
    const fs::path same = changedCopy(f, "same", [](size_t) { return 1.0; });
    int code = -1;
    const nlohmann::json j = gateJson(f, same, &code);
    EXPECT_EQ(code, 0) << j.dump(1).substr(0, 4000);
    EXPECT_EQ(j.value("regressions", -1), 0);
    EXPECT_TRUE(j["warnings"].empty());
  }
}

// Launch-to-launch noise is no regression: each launch +-2% at random (uniform), three seeds.
TEST(GateRecorded, NoiseLevelCopyPasses) {
  for (const fs::path& f : recordings()) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      SCOPED_TRACE(f.filename().string() + " seed " + std::to_string(seed));
      std::mt19937 rng(seed);
      std::uniform_real_distribution<double> noise(-0.02, 0.02);
      const fs::path noisy = changedCopy(f, "noise" + std::to_string(seed), [&](size_t) { return 1 + noise(rng); });
      int code = -1;
      const nlohmann::json j = gateJson(f, noisy, &code);
      EXPECT_EQ(code, 0) << j.dump(1).substr(0, 4000);
    }
  }
}

TEST(GateRecorded, NaiveAttentionInsteadOfSdpaFailsTheWholeRunChecks) {
  const fs::path data = fs::path(FPROF_SOURCE_DIR) / "tests" / "data";
  int code = -1;
  const nlohmann::json j =
      gateJson(data / "torch_proof_gpt_bf16_sdpa_h100.fprof", data / "torch_proof_gpt_bf16_eager_h100.fprof", &code);
  EXPECT_EQ(code, 1);
  EXPECT_TRUE(runCheckFailed(j, "kernel_time_ns"));
  EXPECT_TRUE(runCheckFailed(j, "new_kernel_time_ns"));
  EXPECT_TRUE(runCheckFailed(j, "busy_time_ns"));
}

TEST(GateRecorded, DifferentDevicesAreSaid) {
  const fs::path data = fs::path(FPROF_SOURCE_DIR) / "tests" / "data";
  int code = -1;
  const nlohmann::json j = gateJson(data / "model_metrics_h200.fprof", data / "model_metrics_h100.fprof", &code);
  ASSERT_FALSE(j["warnings"].empty());
  EXPECT_EQ(j["warnings"][0]["what"], "devices");
  EXPECT_NE(j["warnings"][0]["base"].get<std::string>().find("H200"), std::string::npos);
  EXPECT_NE(j["warnings"][0]["current"].get<std::string>().find("H100"), std::string::npos);
  std::string md;
  runFprof("gate " + (data / "model_metrics_h200.fprof").string() + " " + (data / "model_metrics_h100.fprof").string(),
           &md);
  EXPECT_NE(md.find("**Warning:** the runs were recorded on different GPUs"), std::string::npos) << md;
  const fs::path xml = workDir() / "devices.xml";
  fs::remove(xml);
  runFprof("gate " + (data / "model_metrics_h200.fprof").string() + " " + (data / "model_metrics_h100.fprof").string() +
           " --quiet --junit " + xml.string());
  std::ifstream in(xml);
  const std::string junit((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(junit.find("<property name=\"fprof.warning\" value=\"warning: the runs were recorded on different GPUs"),
            std::string::npos)
      << junit.substr(0, 2000);
}

// Every test case of the JUnit report has a name of its own (CI report views key results by it).
TEST(GateRecorded, JunitTestNamesAreUnique) {
  const fs::path data = fs::path(FPROF_SOURCE_DIR) / "tests" / "data";
  for (const char* name : {"torch_proof_gpt_bf16_emitnvtx_h100.fprof", "model_trace_h100.fprof"}) {
    SCOPED_TRACE(name);
    const fs::path slow = changedCopy(data / name, "junit", [](size_t i) { return i % 2 ? 1.5 : 1.0; });
    const fs::path xml = workDir() / (slow.stem().string() + ".xml");
    fs::remove(xml);
    EXPECT_EQ(runFprof("gate " + (data / name).string() + " " + slow.string() + " --quiet --junit " + xml.string()), 1);
    std::ifstream in(xml);
    const std::string junit((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::set<std::string> names;
    size_t cases = 0;
    for (size_t at = junit.find("<testcase "); at != std::string::npos; at = junit.find("<testcase ", at + 1)) {
      const size_t q = junit.find(" name=\"", at) + 7;
      names.insert(junit.substr(q, junit.find('"', q) - q));
      ++cases;
    }
    EXPECT_GT(cases, 10u);
    EXPECT_EQ(names.size(), cases);
    EXPECT_NE(junit.find("tests=\"" + std::to_string(cases) + "\""), std::string::npos);
  }
}

}  // namespace
}  // namespace fprof
