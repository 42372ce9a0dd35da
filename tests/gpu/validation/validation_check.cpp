// The checker of the validation program: runs validation_program under `fprof run` in trace
// mode, in metrics mode (--metrics roofline) and crashing (abort, SIGSEGV, an illegal address, an
// abort in the first milliseconds, an abort in metrics mode with --metrics roofline), then
// compares every kernel, NVTX range and copy in each database with the expectations the program
// wrote. Prints one row per check (result, mode, feature, check, expected, got), then a summary
// per feature and "N passed, M failed". Exit 0 when all pass, 1 otherwise, 77 without a GPU (skipped).
//
// Each check names the fprof feature it needs, so checks of work still in progress fail visibly
// instead of being skipped: trace, metrics (what fprof does today), and coverage (counters for
// every kernel), lanes (fp16/bf16 FLOPs per instruction lane), v2-function, v2-args, v2-sass,
// v2-missing, v2-provenance (the tables and columns of schema v2), exit (how the program ended, in the metadata), crash (nothing collected lost on a crash), program (the program's own correctness
// checks), ncu (fprof against Nsight Compute). Schema v2 tables are read with SQL, so this builds
// and runs against a version-1 reader too (the checks then fail with "no such table").
//
//   validation_check run [--program P] [--fprof F] [--dso LIB] [--ptxas-dir DIR] [--dir DIR]
//                        [--modes trace,metrics,crash] [--threads T] [--repeat R]
//   validation_check check --db DB --expect TSV [--metrics 0|1] [--ptxas-dir DIR] [--fprof F]
//                                            (one database again, e.g. from validation_work.tar.gz)
//   validation_check ncu-compare --db METRICS.fprof --csv NCU.csv
//   validation_check torch --dir DIR        (the files tests/gpu/validation/run_validation.sh writes)
//   validation_check roofline-metrics        (the roofline set's metric names, comma-separated)
// Defaults: programs beside this one (bin/), ptxas logs in ../tests/gpu/validation, a new folder
// under /tmp.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fprof/core/metric_sets.h"
#include "fprof/core/sass_half.h"
#include "fprof/core/store.h"

namespace fs = std::filesystem;
using fprof::core::KernelCounters;
using fprof::core::KernelRow;
using fprof::core::Profile;

namespace {

// How far above its footprint a kernel that moves each byte once may read at the L2: four 32-byte
// sectors (the partial sectors at its buffers' ends, application replay's one a launch).
constexpr double kOnceSlack = 4 * 32;

// The ops_path tensor counters ncu reports and the kernel_counter column fprof fills for each.
const std::vector<std::pair<std::string, std::optional<double> fprof::core::KernelCounters::*>>& tensorOpsPathColumns() {
  using K = fprof::core::KernelCounters;
  static const std::vector<std::pair<std::string, std::optional<double> K::*>> columns = {
      {"sm__ops_path_tensor_src_fp16.sum", &K::flops_tensor_fp16},
      {"sm__ops_path_tensor_src_bf16_dst_fp32.sum", &K::flops_tensor_bf16},
      {"sm__ops_path_tensor_src_tf32_dst_fp32.sum", &K::flops_tensor_tf32},
      {"sm__ops_path_tensor_src_fp8.sum", &K::flops_tensor_fp8},
      {"sm__ops_path_tensor_src_fp64.sum", &K::flops_tensor_fp64},
  };
  return columns;
}


// ---- The table of checks --------------------------------------------------------------------------

struct Check {
  std::string mode, feature, what, expected, got;
  bool pass = false;
};
std::vector<Check> g_checks;
std::string g_mode = "setup";

const std::map<std::string, std::string>& featureNotes() {
  static const std::map<std::string, std::string> notes = {
      {"trace", "trace mode as it is today"},
      {"metrics", "counters and FLOPs as metrics mode gives them today"},
      {"coverage", "counters for every kernel (ranges matched to launches by identity)"},
      {"lanes", "fp16/bf16 FLOPs per instruction lane, bf16 apart from fp16"},
      {"v2-function", "schema v2 table function (registers as ptxas says)"},
      {"v2-args", "schema v2 table function_arg (argument roles)"},
      {"v2-sass", "schema v2 table function_sass_op"},
      {"v2-missing", "schema v2 kernel_counter_missing: a reason for every kernel without counters"},
      {"v2-provenance", "schema v2 kernel_counter.source and signature_varies"},
      {"exit", "metadata exit_code / exit_signal / exit_status"},
      {"crash", "a crashing program keeps everything collected"},
      {"program", "the validation program's own results and build facts"},
      {"ncu", "fprof's raw counters equal Nsight Compute's"},
      {"torch", "PyTorch training step in metrics mode"},
  };
  return notes;
}

bool record(const std::string& feature, const std::string& what, const std::string& expected, const std::string& got,
            bool pass) {
  g_checks.push_back({g_mode, feature, what, expected, got, pass});
  return pass;
}

std::string fmt(double v) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e18) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.6g", v);
  }
  return buf;
}
std::string fmt(const std::optional<double>& v) { return v ? fmt(*v) : "NULL"; }

bool eqStr(const std::string& feature, const std::string& what, const std::string& want, const std::string& got) {
  return record(feature, what, want, got, want == got);
}
bool eqNum(const std::string& feature, const std::string& what, double want, std::optional<double> got) {
  return record(feature, what, fmt(want), fmt(got), got.has_value() && *got == want);
}

void printTable() {
  std::printf("%-4s  %-16s %-11s %-78s %-22s %s\n", "", "mode", "feature", "check", "expected", "got");
  for (const Check& c : g_checks) {
    std::printf("%-4s  %-16s %-11s %-78s %-22s %s\n", c.pass ? "PASS" : "FAIL", c.mode.c_str(), c.feature.c_str(),
                c.what.c_str(), c.expected.c_str(), c.got.c_str());
  }
}

int printSummary() {
  std::map<std::string, std::pair<int, int>> by_feature;
  int passed = 0, failed = 0;
  for (const Check& c : g_checks) {
    auto& [p, f] = by_feature[c.feature];
    (c.pass ? p : f) += 1;
    (c.pass ? passed : failed) += 1;
  }
  std::printf("\n%-12s %7s %7s  %s\n", "feature", "passed", "failed", "needs");
  for (const auto& [feature, pf] : by_feature) {
    auto note = featureNotes().find(feature);
    std::printf("%-12s %7d %7d  %s\n", feature.c_str(), pf.first, pf.second,
                note == featureNotes().end() ? "" : note->second.c_str());
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

// ---- Expectations (TSV: type, then key=value fields) -------------------------------------------------

using Fields = std::map<std::string, std::string>;

Fields parseLine(const std::string& line) {
  Fields out;
  std::istringstream in(line);
  std::string token;
  bool first = true;
  while (std::getline(in, token, '\t')) {
    if (first) {
      out["type"] = token;
      first = false;
      continue;
    }
    const size_t eq = token.find('=');
    if (eq != std::string::npos) out[token.substr(0, eq)] = token.substr(eq + 1);
  }
  return out;
}

std::vector<Fields> readExpectations(const std::string& path) {
  std::vector<Fields> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(parseLine(line));
  }
  return out;
}

std::string get(const Fields& f, const std::string& key) {
  auto it = f.find(key);
  return it == f.end() ? std::string() : it->second;
}
double num(const Fields& f, const std::string& key) {
  const std::string v = get(f, key);
  return v.empty() ? 0.0 : std::strtod(v.c_str(), nullptr);
}
std::vector<int64_t> numbers(const std::string& csv) {
  std::vector<int64_t> out;
  std::istringstream in(csv);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(static_cast<int64_t>(std::stoull(item)));
  }
  return out;
}

// ---- ptxas -v logs ----------------------------------------------------------------------------------

struct PtxasInfo {
  int registers = -1;
  int64_t stack_bytes = -1;
  int64_t spill_store_bytes = -1;
};

std::map<std::string, PtxasInfo> parsePtxas(const std::string& path, std::map<std::string, PtxasInfo> out = {}) {
  std::ifstream in(path);
  std::string line, current;
  while (std::getline(in, line)) {
    const std::string props = "Function properties for ";
    if (auto p = line.find(props); p != std::string::npos) {
      current = line.substr(p + props.size());
      continue;
    }
    if (current.empty()) continue;
    long long stack = 0, spill = 0, regs = 0;
    if (std::sscanf(line.c_str(), " %lld bytes stack frame, %lld bytes spill stores", &stack, &spill) == 2) {
      out[current].stack_bytes = stack;
      out[current].spill_store_bytes = spill;
    } else if (auto u = line.find("Used "); u != std::string::npos &&
                                            std::sscanf(line.c_str() + u, "Used %lld registers", &regs) == 1) {
      out[current].registers = static_cast<int>(regs);
      current.clear();
    }
  }
  return out;
}

// ---- Running programs --------------------------------------------------------------------------------

struct RunResult {
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  double seconds = 0;
};

RunResult runProgram(const std::vector<std::string>& argv, const std::string& log_path, int timeout_s) {
  RunResult r;
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child == 0) {
    setpgid(0, 0);
    const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    for (const char* v : {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "RANK", "LOCAL_RANK",
                          "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) {
      unsetenv(v);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (true) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(timeout_s)) {
      kill(-child, SIGKILL);
      waitpid(child, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// ---- SQL for the schema v2 tables (read directly, whatever the reader knows) ----------------------

class Db {
 public:
  explicit Db(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      error_ = db_ ? sqlite3_errmsg(db_) : "cannot open";
    }
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  using Row = std::vector<std::optional<std::string>>;
  // Rows of a query, or nullopt with lastError() set (e.g. "no such table: function").
  std::optional<std::vector<Row>> query(const std::string& sql, const std::vector<std::string>& params = {}) {
    sqlite3_stmt* st = nullptr;
    if (!error_.empty()) return std::nullopt;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
      last_error_ = sqlite3_errmsg(db_);
      return std::nullopt;
    }
    for (size_t i = 0; i < params.size(); ++i) {
      sqlite3_bind_text(st, static_cast<int>(i + 1), params[i].c_str(), -1, SQLITE_TRANSIENT);
    }
    std::vector<Row> rows;
    int rc = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      Row row;
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        const unsigned char* t = sqlite3_column_text(st, c);
        row.push_back(t ? std::optional<std::string>(reinterpret_cast<const char*>(t)) : std::nullopt);
      }
      rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) last_error_ = sqlite3_errmsg(db_);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return std::nullopt;
    return rows;
  }
  const std::string& lastError() const { return error_.empty() ? last_error_ : error_; }

 private:
  sqlite3* db_ = nullptr;
  std::string error_, last_error_;
};

// ---- Comparing one database with the expectations ----------------------------------------------------

struct Group {  // one launch site in one NVTX context (lines with the same key add up)
  Fields f;
  int64_t count = 0;
  std::vector<const KernelRow*> rows;
  std::string title;
  // The 8-byte argument values of every expectation line, as many times as it launched: a site
  // that passes other values on each repetition has one line per repetition.
  std::multiset<std::string> args;
};

std::string groupKey(const std::string& name, const std::string& path, bool graph) {
  return name + '\x1f' + path + '\x1f' + (graph ? "graph" : "");
}

struct Inputs {
  std::map<std::string, PtxasInfo> ptxas;
};

struct CheckOptions {
  bool metrics = false;            // a metrics-mode run
  bool counters_required = false;  // required kernels must have counters (not after a crash)
  std::string presence_feature;    // "trace" for a normal run, "crash" for a crashing one
  std::string expected_exit_code;  // metadata exit_code ("" = the program died of a signal)
  std::string expected_signal;     // metadata exit_signal
  std::string expected_status;     // metadata exit_status
};

const std::map<std::string, std::string>& rawMetricOf() {
  static const std::map<std::string, std::string> m = {
      {"inst_ffma", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"},
      {"inst_fadd", "sm__sass_thread_inst_executed_op_fadd_pred_on.sum"},
      {"inst_fmul", "sm__sass_thread_inst_executed_op_fmul_pred_on.sum"},
      {"inst_dfma", "sm__sass_thread_inst_executed_op_dfma_pred_on.sum"},
      {"inst_dadd", "sm__sass_thread_inst_executed_op_dadd_pred_on.sum"},
      {"inst_dmul", "sm__sass_thread_inst_executed_op_dmul_pred_on.sum"},
  };
  return m;
}

// All records of a group agree with `want` on `value(row)`; one check row per group and attribute.
template <class Fn>
void allEqual(const std::string& feature, const Group& g, const std::string& attribute, const std::string& want,
              Fn value) {
  std::set<std::string> seen;
  for (const KernelRow* k : g.rows) seen.insert(value(*k));
  std::string got;
  for (const std::string& s : seen) got += (got.empty() ? "" : " | ") + s;
  record(feature, g.title + ": " + attribute, want, got, seen.size() == 1 && *seen.begin() == want);
}

// The records of a group, taken together, hold exactly the values `want` lists (with their
// multiplicity): for attributes that differ from launch to launch of one site.
template <class Fn>
void sameMultiset(const std::string& feature, const Group& g, const std::string& attribute,
                  const std::multiset<std::string>& want, Fn value) {
  std::multiset<std::string> seen;
  for (const KernelRow* k : g.rows) seen.insert(value(*k));
  auto join = [](const std::multiset<std::string>& m) {
    std::string out;
    for (auto it = m.begin(); it != m.end(); it = m.upper_bound(*it)) {
      out += (out.empty() ? "" : " | ") + *it;
      if (const size_t n = m.count(*it); n > 1) out += " (x" + std::to_string(n) + ")";
    }
    return out;
  };
  record(feature, g.title + ": " + attribute, join(want), join(seen), seen == want);
}

std::string dims(int32_t x, int32_t y, int32_t z) {
  return std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z);
}

// Graph launches counted whole (application replay): each row's bytes cover its kernels'
// footprints, and its DRAM reads stay within their bounds; under application replay at least one
// graph launch is counted (unless the program crashed before its graphs: `complete` false).
void checkGraphLaunches(const Profile& p, const std::map<std::string, Group>& groups, bool complete) {
  const bool application = p.meta("replay_mode") == "application";
  if (application && complete) {
    record("graphs", "graph launches counted whole (application replay)", ">= 1",
           std::to_string(p.graph_launch_counters.size()), !p.graph_launch_counters.empty());
  }
  for (const fprof::core::GraphLaunchCounters& gl : p.graph_launch_counters) {
    double min_bytes = 0, max_dram_read = 0;
    bool dram_bounded = true;
    int kernels = 0;
    for (const auto& [key, g] : groups) {
      for (const KernelRow* k : g.rows) {
        if (k->graph_id == 0 || k->process_id != gl.process_id || k->correlation_id != gl.correlation_id) continue;
        ++kernels;
        min_bytes += num(g.f, "min_bytes");
        if (num(g.f, "max_dram_read") < 0) dram_bounded = false;
        max_dram_read += num(g.f, "max_dram_read");
      }
    }
    const std::string t = "graph launch #" + std::to_string(gl.correlation_id) + " (" + std::to_string(kernels) + " kernels)";
    record("graphs", t + ": kernels of the launch", ">= 1", std::to_string(kernels), kernels >= 1);
    const auto& c = gl.counters;
    record("graphs", t + ": L1 bytes >= footprints", ">= " + fmt(min_bytes), fmt(c.l1_bytes),
           c.l1_bytes && *c.l1_bytes >= min_bytes);
    record("graphs", t + ": L2 bytes >= footprints", ">= " + fmt(min_bytes), fmt(c.l2_bytes),
           c.l2_bytes && *c.l2_bytes >= min_bytes);
    if (dram_bounded && kernels > 0) {
      record("graphs", t + ": DRAM read bytes <= footprints + 2%", "<= " + fmt(max_dram_read), fmt(c.dram_read_bytes),
             c.dram_read_bytes && *c.dram_read_bytes <= max_dram_read);
    }
  }
}

// Programmatic dependent launch: the launch attribute is recorded, and a kernel's own time (its
// wait for the previous kernel of its stream left out) is its own spin, however early it started.
void checkProgrammaticLaunch(const Group& g, const CheckOptions& opt) {
  allEqual("trace", g, "programmatic launch", get(g.f, "programmatic") == "1" ? "yes" : "no",
           [](const KernelRow& k) { return k.programmatic_launch ? "yes" : "no"; });
  const std::vector<int64_t> own = numbers(get(g.f, "own_ns"));
  if (own.size() != 2 || own[0] <= 0) return;
  const std::string range = std::to_string(own[0]) + ".." + std::to_string(own[1]) + " ns";
  allEqual("trace", g, "own time (dependency wait left out) in " + range, "yes", [&](const KernelRow& k) {
    const int64_t ns = k.durationNs();
    return ns >= own[0] && ns <= own[1] ? std::string("yes")
                                        : std::to_string(ns) + " ns (span " + std::to_string(k.end_ns - k.start_ns) + ")";
  });
  if (opt.metrics) return;  // counted launches run one at a time
  int64_t waited = 0;
  for (const KernelRow* k : g.rows) waited += k->dependency_wait_ns > 0;
  record("trace", g.title + ": launches that started before their predecessor ended", ">= 1",
         std::to_string(waited), waited >= 1);
}

void checkDatabase(const std::string& db_path, const std::vector<Fields>& expect, const Inputs& in,
                   const CheckOptions& opt, const std::string& fprof_cli) {
  const std::string& presence = opt.presence_feature;
  if (auto s = fprof::core::checkDatabase(db_path); !record(presence, "database is valid", "ok", s ? "ok" : s.error(), s.ok())) {
    return;
  }
  auto loaded = fprof::core::loadProfile(db_path);
  if (!record(presence, "database loads", "ok", loaded ? "ok" : loaded.error(), loaded.ok())) return;
  const Profile& p = *loaded;
  Db db(db_path);
  auto str = [&](uint32_t id) -> const std::string& { return p.str(id); };

  // Metadata.
  eqStr(presence, "metadata mode", opt.metrics ? "metrics" : "trace", p.meta("mode"));
  eqStr(presence, "metadata dropped_records", "0", p.meta("dropped_records"));
  if (opt.metrics) {
    eqStr("coverage", "metadata metrics_discarded_batches", "0", p.meta("metrics_discarded_batches", "0"));
  }
  eqStr("exit", "metadata exit_code", opt.expected_exit_code, p.meta("exit_code"));
  eqStr("exit", "metadata exit_signal", opt.expected_signal, p.meta("exit_signal"));
  eqStr("exit", "metadata exit_status", opt.expected_status, p.meta("exit_status"));

  // Group the expectations.
  std::map<std::string, Group> groups;
  std::vector<std::string> order;
  std::map<std::string, Fields> functions;  // mangled name -> a launch line (function facts)
  int64_t expected_kernels = 0;
  std::string program_tid;
  for (const Fields& f : expect) {
    if (f.at("type") == "program") program_tid = get(f, "tid");
    if (f.at("type") != "launch") continue;
    const std::string key = groupKey(get(f, "name"), get(f, "nvtx"), get(f, "graph") != "none");
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) {
      it->second.f = f;
      it->second.title = get(f, "label") + " @ " + (get(f, "nvtx").empty() ? "(no range)" : get(f, "nvtx"));
      order.push_back(key);
    }
    it->second.count += std::stoll(get(f, "count"));
    for (int64_t i = 0; i < std::stoll(get(f, "count")); ++i) it->second.args.insert(get(f, "args"));
    if (get(f, "fault") != "1") expected_kernels += std::stoll(get(f, "count"));
    functions.emplace(get(f, "name"), f);
  }
  std::map<int64_t, const KernelCounters*> counters;
  for (const KernelCounters& c : p.counters) counters[c.kernel_id] = &c;
  std::map<std::pair<int64_t, std::string>, double> raw;
  for (const auto& m : p.metrics) raw[{m.kernel_id, m.metric}] = m.value;
  std::map<uint32_t, std::vector<const fprof::core::KernelArgRecord*>> args_by_corr;
  for (const auto& a : p.kernel_args) args_by_corr[a.correlation_id].push_back(&a);
  std::map<int64_t, std::string> missing_reason;
  bool missing_table = false;
  if (opt.metrics) {
    if (auto rows = db.query("SELECT kernel_id, reason FROM kernel_counter_missing")) {
      missing_table = true;
      for (const auto& r : *rows) missing_reason[std::stoll(r[0].value_or("0"))] = r[1].value_or("");
    }
  }
  std::map<int64_t, std::string> half_method;
  std::string half_method_error;
  std::map<int64_t, std::pair<std::string, std::string>> provenance;  // source, signature_varies
  std::string provenance_error;
  if (opt.metrics) {
    if (auto rows = db.query("SELECT kernel_id, half_flops_method FROM kernel_counter")) {
      for (const auto& r : *rows) {
        if (r[1]) half_method[std::stoll(r[0].value_or("0"))] = *r[1];
      }
    } else {
      half_method_error = db.lastError();
    }
    if (auto rows = db.query("SELECT kernel_id, source, signature_varies FROM kernel_counter")) {
      for (const auto& r : *rows) provenance[std::stoll(r[0].value_or("0"))] = {r[1].value_or("NULL"), r[2].value_or("NULL")};
    } else {
      provenance_error = db.lastError();
    }
  }

  // Assign every kernel row to its group.
  std::map<std::string, int64_t> unexpected;
  int64_t fault_rows = 0;
  for (const KernelRow& k : p.kernels) {
    const std::string path = k.nvtx_path_id ? str(*k.nvtx_path_id) : std::string();
    const std::string key = groupKey(str(k.name_id), path, k.graph_id != 0);
    auto it = groups.find(key);
    if (it == groups.end()) {
      ++unexpected[str(k.demangled_id) + " @ " + (path.empty() ? "(no range)" : path) + (k.graph_id ? " (graph)" : "")];
      continue;
    }
    it->second.rows.push_back(&k);
    if (get(it->second.f, "fault") == "1") ++fault_rows;
  }
  record(presence, "kernel records (all expected launch sites)", std::to_string(expected_kernels),
         std::to_string(static_cast<int64_t>(p.kernels.size()) - fault_rows),
         static_cast<int64_t>(p.kernels.size()) - fault_rows == expected_kernels);
  for (const auto& [what, n] : unexpected) record(presence, "unexpected kernel " + what, "0", std::to_string(n), false);

  if (opt.metrics) checkGraphLaunches(p, groups, opt.counters_required);

  std::map<std::string, std::set<uint32_t>> stream_ids;
  for (const std::string& key : order) {
    const Group& g = groups.at(key);
    const Fields& f = g.f;
    if (get(f, "fault") == "1") {
      // The faulting kernel's record may or may not survive the context's death: shown, not judged.
      std::printf("info  %s: faulting kernel %s: %zu record(s)\n", g_mode.c_str(), get(f, "name").c_str(), g.rows.size());
      continue;
    }
    if (!record(presence, g.title + ": records", std::to_string(g.count), std::to_string(g.rows.size()),
                static_cast<int64_t>(g.rows.size()) == g.count)) {
      if (g.rows.empty()) continue;
    }
    const bool graph = get(f, "graph") != "none";
    allEqual("trace", g, "launch api", get(f, "api"), [&](const KernelRow& k) { return str(k.launch_api_id); });
    allEqual("trace", g, "grid", get(f, "grid"), [](const KernelRow& k) { return dims(k.grid_x, k.grid_y, k.grid_z); });
    allEqual("trace", g, "block", get(f, "block"),
             [](const KernelRow& k) { return dims(k.block_x, k.block_y, k.block_z); });
    allEqual("trace", g, "cluster", get(f, "cluster"),
             [](const KernelRow& k) { return dims(k.cluster_x, k.cluster_y, k.cluster_z); });
    allEqual("trace", g, "dynamic shared bytes", get(f, "dyn_smem"),
             [](const KernelRow& k) { return std::to_string(k.dynamic_shared_bytes); });
    allEqual("trace", g, "static shared bytes", get(f, "static_smem"),
             [](const KernelRow& k) { return std::to_string(k.static_shared_bytes); });
    allEqual("trace", g, "host thread", get(f, "tid"), [](const KernelRow& k) { return std::to_string(k.thread_id); });
    allEqual("trace", g, "graph launch", graph ? "yes" : "no",
             [](const KernelRow& k) { return k.graph_id != 0 ? "yes" : "no"; });
    allEqual("trace", g, "local bytes per thread (cudaFuncGetAttributes)", get(f, "local"),
             [](const KernelRow& k) { return std::to_string(k.local_bytes_per_thread); });
    // CUPTI reports the allocated register count, at least what the function uses.
    const int regs = std::stoi(get(f, "regs"));
    allEqual("trace", g, "registers >= used (" + get(f, "regs") + ")", "yes",
             [&](const KernelRow& k) { return k.registers_per_thread >= regs ? "yes" : std::to_string(k.registers_per_thread); });
    allEqual("trace", g, "duration > 0", "yes", [](const KernelRow& k) { return k.end_ns > k.start_ns ? "yes" : "no"; });
    checkProgrammaticLaunch(g, opt);
    for (const KernelRow* k : g.rows) stream_ids[get(f, "stream")].insert(k->stream_id);
    if (!graph) {
      sameMultiset("trace", g, "8-byte argument values", g.args, [&](const KernelRow& k) {
        std::string out;
        auto found = args_by_corr.find(k.correlation_id);
        if (found == args_by_corr.end()) return out;
        std::vector<const fprof::core::KernelArgRecord*> sorted = found->second;
        std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->index < b->index; });
        for (const auto* a : sorted) {
          if (a->size_bytes == 8) out += (out.empty() ? "" : ",") + std::to_string(a->value);
        }
        return out;
      });
    }
    if (!opt.metrics) continue;

    // Metrics mode: counters for every kernel, or a reason; exact FLOPs; bytes at least moved.
    const bool required = get(f, "counters") == "required";
    int with_counters = 0, with_reason = 0;
    for (const KernelRow* k : g.rows) {
      with_counters += counters.count(k->id) != 0;
      with_reason += counters.count(k->id) == 0 && missing_reason.count(k->id) != 0;
    }
    const std::string n_rows = std::to_string(g.rows.size());
    if (required && opt.counters_required) {
      record("coverage", g.title + ": kernels with counters", n_rows, std::to_string(with_counters),
             with_counters == static_cast<int>(g.rows.size()));
    } else {
      std::printf("info  %s: %s: counters for %d of %zu (not required: %s)\n", g_mode.c_str(), g.title.c_str(),
                  with_counters, g.rows.size(),
                  !opt.counters_required ? "after a crash" : graph ? "graph launch" : get(f, "api").c_str());
    }
    record("v2-missing", g.title + ": kernels with counters or a stored reason", n_rows,
           std::to_string(with_counters + with_reason) + (missing_table ? "" : " (no table kernel_counter_missing)"),
           with_counters + with_reason == static_cast<int>(g.rows.size()));
    for (const KernelRow* k : g.rows) {
      auto c = counters.find(k->id);
      if (c == counters.end()) continue;
      const KernelCounters& kc = *c->second;
      const std::string t = g.title + " #" + std::to_string(k->correlation_id);
      // Where the counters come from; these kernels do the same work at every launch, so a
      // signature never "varies".
      auto prov = provenance.find(k->id);
      const std::string got_prov = prov != provenance.end()
                                       ? prov->second.first + ", signature_varies " + prov->second.second
                                       : (provenance_error.empty() ? "absent" : provenance_error);
      record("v2-provenance", t + ": counter source", "profiled or same_signature, not varying", got_prov,
             prov != provenance.end() &&
                 (prov->second.first == "profiled" || prov->second.first == "same_signature") &&
                 prov->second.second != "1");
      eqNum("metrics", t + ": fp32 FLOPs", num(f, "flops_fp32"), kc.flops_fp32);
      eqNum("metrics", t + ": fp64 FLOPs", num(f, "flops_fp64"), kc.flops_fp64);
      eqNum("metrics", t + ": tensor fp16 FLOPs", num(f, "flops_tensor_fp16"), kc.flops_tensor_fp16);
      eqNum("metrics", t + ": tensor bf16 FLOPs", num(f, "flops_tensor_bf16"), kc.flops_tensor_bf16);
      auto m = half_method.find(k->id);
      // HFMA2 split by pipe (packed HFMA2.MMA beside scalar HFMA2, `roofline` and `full`): the fp16 pipe
      // counter moves in steps of 32 threads, so with a partial warp the split is off by < 32
      // HFMA2, 2 FLOPs each (core/sass_half.h); everywhere else exact.
      const bool by_pipe = m != half_method.end() && m->second.find("HFMA2 by pipe") != std::string::npos;
      if (by_pipe) {
        const double want = num(f, "flops_fp16"), slack_flops = 64;
        record("lanes", t + ": fp16 FLOPs (per lane, HFMA2 split by pipe)", fmt(want) + " +- " + fmt(slack_flops),
               fmt(kc.flops_fp16),
               kc.flops_fp16 && std::fabs(*kc.flops_fp16 - want) <= slack_flops);
      } else {
        eqNum("lanes", t + ": fp16 FLOPs (per lane)", num(f, "flops_fp16"), kc.flops_fp16);
      }
      eqNum("lanes", t + ": bf16 FLOPs (per lane)", num(f, "flops_bf16"), kc.flops_bf16);
      if (num(f, "flops_fp16") > 0 || num(f, "flops_bf16") > 0) {
        record("lanes", t + ": half_flops_method says how", "non-empty",
               m != half_method.end() ? m->second : (half_method_error.empty() ? "NULL" : half_method_error),
               m != half_method.end() && !m->second.empty());
      }
      for (const auto& [field, metric] : rawMetricOf()) {
        auto r = raw.find({k->id, metric});
        eqNum("metrics", t + ": " + metric, num(f, field),
              r == raw.end() ? std::nullopt : std::optional<double>(r->second));
      }
      const double min_bytes = num(f, "min_bytes");
      record("metrics", t + ": L2 bytes >= footprint", ">= " + fmt(min_bytes), fmt(kc.l2_bytes),
             kc.l2_bytes && *kc.l2_bytes >= min_bytes);
      // A kernel that moves each footprint byte once: the SMs' L2 sectors (fprof's L2 bytes) are the
      // footprint's, its buffers' partial sectors and application replay's one sector a launch
      // aside (an H100 read 0.8-1.4 sectors above under kernel replay, 1.8-2.4 under application
      // replay).
      if (get(f, "bytes_once") == "1") {
        const double max_bytes = min_bytes + kOnceSlack;
        record("metrics", t + ": L2 bytes = footprint to 4 sectors (each byte once)", "<= " + fmt(max_bytes),
               fmt(kc.l2_bytes), kc.l2_bytes && *kc.l2_bytes <= max_bytes);
      }
      record("metrics", t + ": L1 bytes >= footprint", ">= " + fmt(min_bytes), fmt(kc.l1_bytes),
             kc.l1_bytes && *kc.l1_bytes >= min_bytes);
      if (num(f, "max_dram_read") >= 0) {
        record("metrics", t + ": DRAM read bytes <= footprint + 2%", "<= " + fmt(num(f, "max_dram_read")),
               fmt(kc.dram_read_bytes), kc.dram_read_bytes && *kc.dram_read_bytes <= num(f, "max_dram_read"));
        record("metrics", t + ": DRAM write bytes <= footprint + one L2", "<= " + fmt(num(f, "max_dram_write")),
               fmt(kc.dram_write_bytes), kc.dram_write_bytes && *kc.dram_write_bytes <= num(f, "max_dram_write"));
      }
      const bool local = get(f, "local_memory") == "1";
      auto localBytes = [](const std::optional<double>& v, bool want_some) {
        return v.has_value() && (want_some ? *v > 0 : *v == 0);
      };
      record("metrics", t + ": local load bytes", local ? "> 0" : "0", fmt(kc.local_load_bytes),
             localBytes(kc.local_load_bytes, local));
      record("metrics", t + ": local store bytes", local ? "> 0" : "0", fmt(kc.local_store_bytes),
             localBytes(kc.local_store_bytes, local));
      record("metrics", t + ": GPU time > 0", "> 0", fmt(kc.gpu_time_ns), kc.gpu_time_ns && *kc.gpu_time_ns > 0);
    }
  }
  // Streams: one id per stream of the program, different streams different ids.
  std::map<uint32_t, std::string> owner;
  for (const auto& [label, ids] : stream_ids) {
    if (label == "legacy") continue;
    std::string got;
    for (uint32_t id : ids) got += (got.empty() ? "" : ",") + std::to_string(id);
    record("trace", "stream " + label + ": one stream id", "1", std::to_string(ids.size()) + " (" + got + ")",
           ids.size() == 1);
    for (uint32_t id : ids) {
      auto [it, fresh] = owner.emplace(id, label);
      if (!fresh) record("trace", "streams " + it->second + " and " + label + " have different ids", "different",
                         "both " + std::to_string(id), false);
    }
  }

  // NVTX ranges: each expected range once, closed ones with an end, open ones (at a crash) present.
  std::map<std::string, int64_t> want_ranges, got_ranges;
  int64_t expected_ranges = 0;
  for (const Fields& f : expect) {
    if (f.at("type") != "nvtx") continue;
    ++want_ranges[get(f, "domain") + "::" + get(f, "message") + " payload=" + get(f, "payload") + " tid=" +
                  get(f, "tid") + (get(f, "push_pop") == "1" ? " push/pop" : " start/end") +
                  (get(f, "closed") == "1" ? "" : " (open at the crash)")];
    ++expected_ranges;
  }
  for (const auto& r : p.nvtx_ranges) {
    ++got_ranges[r.domain.str() + "::" + r.message.str() + " payload=" + (r.payload ? std::to_string(*r.payload) : "") +
                 " tid=" + std::to_string(r.thread_id) + (r.push_pop ? " push/pop" : " start/end") +
                 (r.end_ns ? "" : " (open at the crash)")];
  }
  for (const auto& [what, n] : want_ranges) {
    const int64_t got = got_ranges.count(what) ? got_ranges[what] : 0;
    record(presence, "nvtx " + what, std::to_string(n), std::to_string(got), got == n);
  }
  record(presence, "nvtx range records", std::to_string(expected_ranges), std::to_string(p.nvtx_ranges.size()),
         static_cast<int64_t>(p.nvtx_ranges.size()) == expected_ranges);

  // Copies.
  std::map<std::string, int64_t> want_copies, got_copies;
  int64_t expected_copies = 0;
  for (const Fields& f : expect) {
    if (f.at("type") != "memcpy") continue;
    ++want_copies[get(f, "kind") + " " + get(f, "bytes") + " bytes"];
    ++expected_copies;
  }
  for (const auto& m : p.memcpys) ++got_copies[m.copy_kind + " " + std::to_string(m.bytes) + " bytes"];
  for (const auto& [what, n] : want_copies) {
    record(presence, "memcpy " + what, std::to_string(n), std::to_string(got_copies[what]), got_copies[what] == n);
  }
  record(presence, "memcpy records", std::to_string(expected_copies), std::to_string(p.memcpys.size()),
         static_cast<int64_t>(p.memcpys.size()) == expected_copies);

  // The program's own correctness checks (the tensor-core kernels really ran with valid operands).
  for (const Fields& f : expect) {
    if (f.at("type") != "result") continue;
    eqStr("program", get(f, "name") + ": products equal the CPU's (sum, sum of squares)", "1", get(f, "products"));
    eqStr("program", get(f, "name") + ": every element equals the CPU's", "1 (0 mismatches)",
          get(f, "elementwise") + " (" + get(f, "mismatches") + " mismatches)");
  }

  // Schema v2: function facts against ptxas and the driver.
  std::map<std::string, Db::Row> function_rows;
  std::string function_error;
  if (auto rows = db.query(
          "SELECT s.value, f.registers_per_thread, f.local_bytes_per_thread, f.static_shared_bytes, f.const_bytes, "
          "f.max_threads_per_block, f.binary_version, f.ptx_version FROM function f JOIN string s ON s.id = f.name_id")) {
    for (auto& r : *rows) function_rows[r[0].value_or("")] = r;
  } else {
    function_error = db.lastError();
  }
  for (const auto& [name, f] : functions) {
    if (get(f, "fault") == "1") continue;
    const std::string t = get(f, "label") + " (" + name + ")";
    auto it = function_rows.find(name);
    if (!record("v2-function", t + ": function row", "present", it != function_rows.end() ? "present" : (function_error.empty() ? "absent" : function_error),
                it != function_rows.end())) {
      continue;
    }
    const Db::Row& r = it->second;
    auto col = [&](size_t i) { return r[i].value_or("NULL"); };
    auto ptx = in.ptxas.find(name);
    const bool jit = get(f, "label") == "ptx_jit";  // the driver's JIT, not the toolkit's ptxas
    const std::string want_regs =
        ptx != in.ptxas.end() && !jit ? std::to_string(ptx->second.registers) : get(f, "regs");
    eqStr("v2-function", t + ": registers (" + std::string(jit ? "driver attribute" : "ptxas -v") + ")", want_regs, col(1));
    const std::string want_local =
        ptx != in.ptxas.end() && !jit ? std::to_string(ptx->second.stack_bytes) : get(f, "local");
    eqStr("v2-function", t + ": local bytes per thread (" + std::string(jit ? "driver attribute" : "ptxas stack frame") + ")",
          want_local, col(2));
    eqStr("v2-function", t + ": static shared bytes", get(f, "static_smem"), col(3));
    eqStr("v2-function", t + ": const bytes", get(f, "const_bytes"), col(4));
    eqStr("v2-function", t + ": max threads per block", get(f, "max_threads"), col(5));
    eqStr("v2-function", t + ": binary version", get(f, "binary_version"), col(6));
    eqStr("v2-function", t + ": PTX version", get(f, "ptx_version"), col(7));
  }

  // Schema v2: argument roles, judged on the trace-mode run only (the measurement
  // compares bytes around launches; metrics mode replays them).
  std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> role_rows;
  std::string role_error;
  if (auto rows = db.query("SELECT s.value, a.arg_index, a.role, a.method FROM function_arg a "
                           "JOIN string s ON s.id = a.name_id")) {
    for (auto& r : *rows) role_rows[{r[0].value_or(""), r[1].value_or("")}] = {r[2].value_or(""), r[3].value_or("")};
  } else {
    role_error = db.lastError();
  }
  for (const Fields& f : expect) {
    if (f.at("type") != "argrole" || opt.metrics || presence == "crash") continue;
    auto it = role_rows.find({get(f, "name"), get(f, "index")});
    const std::string label = functions.count(get(f, "name")) ? get(functions.at(get(f, "name")), "label") : get(f, "name");
    const std::string got = it != role_rows.end() ? it->second.first : (role_error.empty() ? "absent" : role_error);
    eqStr("v2-args", label + " argument " + get(f, "index") + ": role", get(f, "role"), got);
    if (it != role_rows.end()) {
      record("v2-args", label + " argument " + get(f, "index") + ": method named", "non-empty", it->second.second,
             !it->second.second.empty());
    }
  }

  // Schema v2: static SASS opcodes of the functions with 16-bit arithmetic.
  if (opt.metrics) {
    std::map<std::string, std::vector<std::string>> sass;
    std::string sass_error;
    if (auto rows = db.query("SELECT s.value, o.opcode, o.static_count FROM function_sass_op o "
                             "JOIN string s ON s.id = o.name_id")) {
      for (auto& r : *rows) sass[r[0].value_or("")].push_back(r[1].value_or("") + "x" + r[2].value_or(""));
    } else {
      sass_error = db.lastError();
    }
    // The SASS step reads the functions whose counters need it; a function none of whose kernels
    // has counters (launched only from CUDA graphs, which are not profiled: a reason is stored)
    // has no FLOPs to count per lane.
    std::set<std::string> counted;
    if (auto rows = db.query("SELECT DISTINCT s.value FROM kernel_counter c JOIN kernel k ON k.id = c.kernel_id "
                             "JOIN string s ON s.id = k.name_id")) {
      for (auto& r : *rows) counted.insert(r[0].value_or(""));
    }
    // A second run counted by SASS patching gives half FLOPs per instruction, without the static
    // listing: such a function's kernels all carry the per-PC method instead.
    std::set<std::string> per_pc, static_listing;
    for (const KernelRow& k : p.kernels) {
      auto m = half_method.find(k.id);
      if (m == half_method.end()) continue;
      (m->second == fprof::core::kHalfFlopsPerPcMethod ? per_pc : static_listing).insert(p.str(k.name_id));
    }
    for (const auto& [name, f] : functions) {
      if (num(f, "flops_fp16") <= 0 && num(f, "flops_bf16") <= 0) continue;
      if (per_pc.count(name) != 0 && static_listing.count(name) == 0) {
        record("v2-sass", get(f, "label") + ": 16-bit math counted per instruction (SASS patching)", "per-PC method",
               "per-PC method", true);
        continue;
      }
      if (counted.count(name) == 0) {
        std::printf("info  %s: %s has no counters (graph kernels are not profiled): no SASS step for it\n",
                    g_mode.c_str(), get(f, "label").c_str());
        continue;
      }
      std::string got;
      for (const std::string& s : sass[name]) got += (got.empty() ? "" : " ") + s;
      record("v2-sass", get(f, "label") + ": SASS opcodes of its 16-bit math", "listed",
             got.empty() ? (sass_error.empty() ? "none" : sass_error) : got, !got.empty());
    }
  }

  // Coverage line of `fprof info`.
  if (opt.metrics && !fprof_cli.empty()) {
    const std::string log = db_path + ".info.txt";
    runProgram({fprof_cli, "info", db_path}, log, 120);
    size_t with = 0;
    for (const KernelRow& k : p.kernels) with += counters.count(k.id);
    const std::string want = "counters for " + std::to_string(with) + " of " + std::to_string(p.kernels.size()) + " kernels";
    const std::string text = readFile(log);
    const size_t at = text.find("counters for ");
    record("coverage", "fprof info prints the coverage", want,
           at == std::string::npos ? "no 'counters for' line" : text.substr(at, text.find('\n', at) - at),
           text.find(want) != std::string::npos);
  }
  (void)program_tid;
}

// How the program should have ended, from its own last record: "end" (exit 0) or "crash".
CheckOptions optionsFor(const std::vector<Fields>& expect, bool metrics) {
  CheckOptions co;
  co.metrics = metrics;
  co.presence_feature = "trace";
  co.expected_exit_code = "0";
  co.expected_status = "exited with 0";
  for (const Fields& f : expect) {
    if (f.at("type") != "crash") continue;
    co.presence_feature = "crash";
    if (get(f, "kind") == "illegal-address") {
      co.expected_exit_code = get(f, "exit_code");
      co.expected_status = "exited with " + get(f, "exit_code");
    } else {
      co.expected_exit_code.clear();
      co.expected_signal = get(f, "exit_signal");
      co.expected_status = "killed by " + get(f, "exit_signal");
    }
  }
  co.counters_required = metrics && co.presence_feature != "crash";
  return co;
}

// What the compiler said agrees with what the driver says, and the resource kernels are what they
// claim (a spilling kernel spills, the local array has its 256-byte frame). Build facts, checked once.
void checkBuildFacts(const std::vector<Fields>& expect, const Inputs& in) {
  std::set<std::string> seen;
  for (const Fields& f : expect) {
    if (f.at("type") != "launch" || !seen.insert(get(f, "name")).second || get(f, "label") == "ptx_jit") continue;
    auto it = in.ptxas.find(get(f, "name"));
    const std::string t = get(f, "label") + " (" + get(f, "name") + ")";
    if (!record("program", t + ": in a ptxas log", "yes", it != in.ptxas.end() ? "yes" : "no", it != in.ptxas.end())) {
      continue;
    }
    eqStr("program", t + ": ptxas registers = driver's", get(f, "regs"), std::to_string(it->second.registers));
    eqStr("program", t + ": ptxas stack frame = driver's local bytes", get(f, "local"),
          std::to_string(it->second.stack_bytes));
    if (get(f, "label") == "spill") {
      record("program", t + ": ptxas reports spill stores", "> 0", std::to_string(it->second.spill_store_bytes),
             it->second.spill_store_bytes > 0);
    }
    if (get(f, "label") == "local_array") {
      eqStr("program", t + ": 256-byte stack frame", "256", std::to_string(it->second.stack_bytes));
    }
  }
}

// ---- run: every mode ------------------------------------------------------------------------------------

std::string besideMe(const std::string& name) {
  return (fs::read_symlink("/proc/self/exe").parent_path() / name).string();
}

bool haveGpu() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return false;
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto cu_init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
  auto cu_count = reinterpret_cast<CountFn>(dlsym(driver, "cuDeviceGetCount"));
  int devices = 0;
  return cu_init != nullptr && cu_count != nullptr && cu_init(0) == 0 && cu_count(&devices) == 0 && devices > 0;
}

struct RunOptions {
  std::string program, fprof, dso, ptxas_dir, dir;
  std::set<std::string> modes = {"trace", "metrics", "crash"};
  int threads = 4, repeat = 2;
};

struct Mode {
  std::string name;
  bool metrics = false;
  std::vector<std::string> crash_args;  // e.g. {"--crash-after", "5"}
  int expected_fprof_exit = 0;          // fprof run passes the program's status through (128 + signal)
  std::vector<std::string> run_args = {};  // fprof run options
  std::string metric_set = "roofline";     // --metrics, where metrics
  std::vector<std::string> program_args = {};  // more options of the program
};

Inputs readInputs(const std::string& ptxas_dir) {
  Inputs in;
  g_mode = "setup";
  for (const char* log : {"validation_program.ptxas.txt", "validation_dso.ptxas.txt", "validation_jit.ptxas.txt"}) {
    const std::string path = ptxas_dir + "/" + log;
    record("program", std::string("ptxas log ") + log, "present", fs::exists(path) ? "present" : "missing: " + path,
           fs::exists(path));
    in.ptxas = parsePtxas(path, in.ptxas);
  }
  return in;
}

int runAll(const RunOptions& o) {
  const Inputs in = readInputs(o.ptxas_dir);
  std::vector<Mode> modes;
  if (o.modes.count("trace")) modes.push_back({"trace", false, {}, 0});
  // The default set, `roofline`, under kernel replay (compared with ncu --cache-control none): its
  // fp16 pipe counter splits HFMA2 by pipe, which mixed_half's FLOPs need (sass_half.h).
  if (o.modes.count("metrics")) {
    modes.push_back({"metrics", true, {}, 0, {"--replay", "kernel"}, "roofline"});
    // The same set under application replay, the default: two runs of the program (hardware counters
    // in its own run, SASS counters in the second by SASS patching), joined launch by launch;
    // every kernel must come out with the same checks passing.
    modes.push_back({"metrics-application", true, {}, 0, {"--replay", "application"}, "roofline",
                     {"--expect-first-run"}});
  }
  if (o.modes.count("crash")) {
    modes.push_back({"crash-abort", false, {"--crash-after", "5"}, 128 + SIGABRT});
    modes.push_back({"crash-early", false, {"--crash-after", "1"}, 128 + SIGABRT});
    modes.push_back({"crash-segv", false, {"--segv-after", "12"}, 128 + SIGSEGV});
    // An illegal address kills the context and CUPTI's device-side timestamp buffers with it: the
    // kernels before it keep their times with pinned host buffers.
    modes.push_back({"crash-illegal", false, {"--illegal-address-after", "20"}, 3, {"--gpu-fault-safe"}});
    // Under the default, application replay: the second run crashes the same way, and its counts of
    // the launches before the crash are joined.
    modes.push_back({"crash-metrics", true, {"--crash-after", "5"}, 128 + SIGABRT, {}, "roofline", {"--expect-first-run"}});
  }
  for (const Mode& m : modes) {
    g_mode = m.name;
    const std::string db = o.dir + "/" + m.name + ".fprof", expect = o.dir + "/" + m.name + ".expect.tsv",
                      log = o.dir + "/" + m.name + ".log";
    fs::remove(expect);
    std::vector<std::string> argv = {o.fprof, "run", "--force", "-o", db};
    if (m.metrics) argv.insert(argv.end(), {"--metrics", m.metric_set});
    argv.insert(argv.end(), m.run_args.begin(), m.run_args.end());
    argv.insert(argv.end(), {o.program, "--expect", expect, "--threads", std::to_string(o.threads), "--repeat",
                             std::to_string(o.repeat), "--dso", o.dso});
    argv.insert(argv.end(), m.crash_args.begin(), m.crash_args.end());
    argv.insert(argv.end(), m.program_args.begin(), m.program_args.end());
    const RunResult r = runProgram(argv, log, 300);
    std::printf("ran %s: %.1f s, exit %d%s (log %s)\n", m.name.c_str(), r.seconds, r.exit_code,
                r.timed_out ? ", TIMED OUT" : "", log.c_str());
    if (r.exit_code == 77) {
      std::fprintf(stderr, "validation_check: the program found no usable GPU: skipped\n");
      return 77;
    }
    const bool crash = !m.crash_args.empty();
    record(crash ? "crash" : "trace", "fprof run finished in time", "yes", r.timed_out ? "timed out" : "yes", !r.timed_out);
    record("trace", "fprof run exit code (the program's status)", std::to_string(m.expected_fprof_exit),
           std::to_string(r.exit_code), r.exit_code == m.expected_fprof_exit);
    const auto expectations = readExpectations(expect);
    bool ended = false;
    for (const Fields& f : expectations) {
      if (f.at("type") == "end" && !crash) ended = true;
      if (f.at("type") == "crash" && crash) ended = true;
    }
    if (!record("program", "the program wrote its expectations to the end", "yes", ended ? "yes" : "no (see " + log + ")",
                ended)) {
      continue;
    }
    if (m.name == "trace") checkBuildFacts(expectations, in);
    checkDatabase(db, expectations, in, optionsFor(expectations, m.metrics), o.fprof);
  }
  printTable();
  return printSummary();
}

// ---- ncu-compare: fprof's raw counters against Nsight Compute's ---------------------------------------

std::vector<std::string> csvFields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        cur += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

struct NcuKernel {
  std::string name;
  std::map<std::string, double> metrics;
};

// ncu --csv (details page): one row per (kernel, metric), "ID" is the launch index.
std::map<int, NcuKernel> readNcuCsv(const std::string& path) {
  std::map<int, NcuKernel> out;
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> header;
  auto column = [&](const char* name) -> int {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return static_cast<int>(i);
    }
    return -1;
  };
  int c_id = -1, c_name = -1, c_metric = -1, c_unit = -1, c_value = -1;
  while (std::getline(in, line)) {
    if (header.empty()) {
      if (line.rfind("\"ID\"", 0) != 0) continue;
      header = csvFields(line);
      c_id = column("ID"), c_name = column("Kernel Name"), c_metric = column("Metric Name");
      c_unit = column("Metric Unit"), c_value = column("Metric Value");
      continue;
    }
    const auto f = csvFields(line);
    const int need = std::max({c_id, c_name, c_metric, c_unit, c_value});
    if (need < 0 || static_cast<int>(f.size()) <= need) continue;
    std::string v = f[static_cast<size_t>(c_value)];
    v.erase(std::remove(v.begin(), v.end(), ','), v.end());
    char* end = nullptr;
    const double value = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0') continue;
    const std::string unit = f[static_cast<size_t>(c_unit)];
    const double scale = unit == "Kbyte" ? 1e3 : unit == "Mbyte" ? 1e6 : unit == "Gbyte" ? 1e9 : unit == "Kibyte" ? 1024.0
                         : unit == "Mibyte"                                                  ? 1048576.0
                                                                                             : 1.0;
    NcuKernel& k = out[std::stoi(f[static_cast<size_t>(c_id)])];
    k.name = f[static_cast<size_t>(c_name)];
    k.metrics[f[static_cast<size_t>(c_metric)]] = value * scale;
  }
  return out;
}

int ncuCompare(const std::string& db_path, const std::string& csv_path) {
  g_mode = "ncu";
  auto loaded = fprof::core::loadProfile(db_path);
  if (!record("ncu", "fprof database loads", "ok", loaded ? "ok" : loaded.error(), loaded.ok())) {
    printTable();
    return printSummary();
  }
  const Profile& p = *loaded;
  const auto ncu = readNcuCsv(csv_path);
  record("ncu", "ncu profiled kernels", "> 0", std::to_string(ncu.size()), !ncu.empty());
  record("ncu", "kernels: fprof records as many as ncu profiled", std::to_string(ncu.size()),
         std::to_string(p.kernels.size()), ncu.size() == p.kernels.size());
  // Pair the n-th launch of a function in ncu with its n-th launch in fprof (launch order:
  // correlation ids). Functions launched from several threads have the same work per launch.
  std::map<std::string, std::vector<const NcuKernel*>> ncu_by_name;
  for (const auto& [id, k] : ncu) ncu_by_name[k.name].push_back(&k);
  std::map<std::string, std::vector<const KernelRow*>> fprof_by_name;
  std::vector<const KernelRow*> rows;
  for (const KernelRow& k : p.kernels) rows.push_back(&k);
  std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->correlation_id < b->correlation_id; });
  for (const KernelRow* k : rows) fprof_by_name[p.str(k->name_id)].push_back(k);
  std::map<std::pair<int64_t, std::string>, double> raw;
  for (const auto& m : p.metrics) raw[{m.kernel_id, m.metric}] = m.value;
  std::set<int64_t> with_counters;
  for (const auto& c : p.counters) with_counters.insert(c.kernel_id);
  // Tensor FLOPs fprof derived (tensor pipe cycles x the SASS's rate) stand where it has no ops_path value.
  // So do the instructions counted by the SASS instrumentation (the roofline set) against ncu's hardware
  // counter: the two counts of the same warp instructions must be equal.
  for (const auto& c : p.counters) {
    for (const auto& [metric, column] : tensorOpsPathColumns()) {
      if (const auto v = c.*column; v && !raw.count({c.kernel_id, metric})) raw[{c.kernel_id, metric}] = *v;
    }
    if (c.instructions && !raw.count({c.kernel_id, fprof::core::kInstructionsMetric})) {
      raw[{c.kernel_id, fprof::core::kInstructionsMetric}] = *c.instructions;
    }
  }

  int compared = 0, not_profiled = 0;
  for (const auto& [name, nk] : ncu_by_name) {
    const auto& fk = fprof_by_name[name];
    const std::string short_name = name.substr(0, 90);
    // The programmatic-launch pair spins 200 and 20 us and stores 4 bytes a block: its instruction
    // counts follow the spins, and the L2 traffic both tools count over them (1.4-1.6 MB) is not
    // compared. The grid barrier spins too.
    const bool pdl = name.find("pdl_") != std::string::npos;
    const bool spins = pdl || name.find("cooperative_kernel") != std::string::npos;
    record("ncu", short_name + ": launches", std::to_string(nk.size()), std::to_string(fk.size()), nk.size() == fk.size());
    for (size_t i = 0; i < std::min(nk.size(), fk.size()); ++i) {
      const KernelRow* k = fk[i];
      if (!with_counters.count(k->id)) {
        ++not_profiled;
        continue;
      }
      ++compared;
      for (const auto& [metric, ncu_value] : nk[i]->metrics) {
        const bool exact = metric.rfind("sm__sass_thread_inst_executed_op_", 0) == 0 ||
                           metric.rfind("sm__ops_path_tensor_", 0) == 0 ||
                           ((metric == fprof::core::kInstructionsMetric ||
                             metric == fprof::core::kInstructionsSassMetric) &&
                            !spins);
        const bool bytes = metric.find("bytes") != std::string::npos && !pdl;
        // The fp16 pipe counter moves in steps of 32 threads, so two runs of a kernel with a partial
        // warp differ by 32 (5 of 65 kernels on an H200).
        const bool fp16_pipe = metric == fprof::core::kFp16PipeMetric;
        if (!exact && !bytes && !fp16_pipe) continue;  // time and occupancy vary from run to run
        auto r = raw.find({k->id, metric});
        const std::string t = short_name + " #" + std::to_string(i) + ": " + metric;
        if (r == raw.end() && metric == "sm__ops_path_tensor_src_int8.sum") continue;  // not in the roofline set
        if (r == raw.end()) {
          record("ncu", t, fmt(ncu_value), "not in kernel_metric", false);
          continue;
        }
        const double got = r->second;
        if (exact) {
          record("ncu", t + " (exact)", fmt(ncu_value), fmt(got), got == ncu_value);
        } else if (fp16_pipe) {
          record("ncu", t + " (64 threads)", fmt(ncu_value), fmt(got), std::fabs(got - ncu_value) <= 64);
        } else {
          // Within 2% (or 32 KiB: sector-level noise of kernels that move almost nothing).
          const double tolerance = std::max(0.02 * ncu_value, 32768.0);
          record("ncu", t + " (2%)", fmt(ncu_value), fmt(got), std::fabs(got - ncu_value) <= tolerance);
        }
      }
    }
  }
  for (const auto& [name, fk] : fprof_by_name) {
    if (!ncu_by_name.count(name)) record("ncu", name.substr(0, 90) + ": launches (ncu saw none)", "0", std::to_string(fk.size()), false);
  }
  std::printf("info  ncu: %d kernel launches compared, %d without fprof counters (not compared)\n", compared,
              not_profiled);
  printTable();
  return printSummary();
}

// ---- torch: a PyTorch training step whose backward runs on autograd's own thread -----------------------

// torch_train.py marks each step with a begin and an end marker kernel, launched on the main thread
// after a synchronize and outside any step range: the kernels of step i are those whose
// correlation ids (launch order, all threads) lie between its markers, whoever launched them.
std::map<int, std::vector<const KernelRow*>> kernelsBySteps(const Profile& p) {
  const std::string marker = "fprof_validation_marker ";
  std::vector<const KernelRow*> rows;
  for (const KernelRow& k : p.kernels) rows.push_back(&k);
  std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->correlation_id < b->correlation_id; });
  std::map<int, std::vector<const KernelRow*>> out;
  int current = -1;
  for (const KernelRow* k : rows) {
    const std::string path = k->nvtx_path_id ? p.str(*k->nvtx_path_id) : "";
    if (const size_t at = path.find(marker); at != std::string::npos) {
      int step = -1;
      current = std::sscanf(path.c_str() + at + marker.size(), "begin=%d", &step) == 1 ? step : -1;
      continue;
    }
    if (current >= 0) out[current].push_back(k);
  }
  return out;
}

struct TorchRun {
  Fields facts;  // the "torch" line the script wrote
  std::optional<Profile> profile;
  std::map<int, std::vector<const KernelRow*>> steps;
};

std::optional<TorchRun> loadTorchRun(const std::string& dir, const std::string& stem) {
  TorchRun run;
  for (const Fields& f : readExpectations(dir + "/" + stem + ".expect.tsv")) {
    if (f.at("type") == "torch") run.facts = f;
  }
  if (!record("torch", stem + ": torch_train.py wrote its facts", "yes", run.facts.empty() ? "no" : "yes",
              !run.facts.empty())) {
    return std::nullopt;
  }
  auto loaded = fprof::core::loadProfile(dir + "/" + stem + ".fprof");
  if (!record("torch", stem + ": database loads", "ok", loaded ? "ok" : loaded.error(), loaded.ok())) {
    return std::nullopt;
  }
  run.profile = std::move(loaded.value());
  run.steps = kernelsBySteps(*run.profile);
  const std::string main_tid = get(run.facts, "main_tid"), autograd_tid = get(run.facts, "autograd_tid");
  record("torch", stem + ": backward ran on another thread than the step", "not " + main_tid, autograd_tid,
         !autograd_tid.empty() && autograd_tid != main_tid);
  record("torch", stem + ": steps found between markers", get(run.facts, "steps"), std::to_string(run.steps.size()),
         std::to_string(run.steps.size()) == get(run.facts, "steps"));
  return run;
}

int torchCheck(const std::string& dir) {
  // Trace mode: how many kernels a steady step launches, and that some come from autograd's thread.
  g_mode = "torch-trace";
  size_t per_step = 0;
  int steady_from = 1;
  if (auto run = loadTorchRun(dir, "torch_trace")) {
    steady_from = std::stoi(get(run->facts, "steady_from").empty() ? "1" : get(run->facts, "steady_from"));
    std::set<size_t> sizes;
    for (const auto& [i, rows] : run->steps) {
      if (i >= steady_from) sizes.insert(rows.size());
      size_t from_autograd = 0;
      for (const KernelRow* k : rows) from_autograd += std::to_string(k->thread_id) == get(run->facts, "autograd_tid");
      record("torch", "step " + std::to_string(i) + ": kernels from the autograd thread", "> 0",
             std::to_string(from_autograd), from_autograd > 0);
    }
    std::string got;
    for (size_t n : sizes) got += (got.empty() ? "" : ",") + std::to_string(n);
    record("torch", "steady steps launch the same number of kernels", "one count", got, sizes.size() == 1);
    per_step = sizes.empty() ? 0 : *sizes.rbegin();
  }

  // Metrics mode, steps chosen with --nvtx-include: counters for every kernel of the selected steps,
  // from either thread, none for the others. The step range is a push/pop range on the main thread
  // (as `with torch.cuda.nvtx.range(...)` makes it) or a process-wide start/end range.
  for (const std::string stem : {"torch_metrics_pushpop", "torch_metrics_startend"}) {
    g_mode = stem.substr(6);
    auto run = loadTorchRun(dir, stem);
    if (!run) continue;
    const Profile& p = *run->profile;
    std::map<int64_t, const KernelCounters*> counters;
    for (const auto& c : p.counters) counters[c.kernel_id] = &c;
    std::set<int> selected;
    for (const int64_t s : numbers(get(run->facts, "selected"))) selected.insert(static_cast<int>(s));
    const std::string autograd_tid = get(run->facts, "autograd_tid");
    const double want_tensor = num(run->facts, "tensor_flops_per_step");
    for (const auto& [i, rows] : run->steps) {
      const bool sel = selected.count(i) != 0;
      size_t with = 0, autograd_with = 0, autograd_all = 0;
      double tensor = 0;
      for (const KernelRow* k : rows) {
        const bool from_autograd = std::to_string(k->thread_id) == autograd_tid;
        autograd_all += from_autograd;
        auto c = counters.find(k->id);
        if (c == counters.end()) continue;
        ++with;
        autograd_with += from_autograd;
        tensor += c->second->flops_tensor_fp16.value_or(0) + c->second->flops_tensor_bf16.value_or(0);
      }
      const std::string step = "step " + std::to_string(i) + (sel ? " (selected)" : " (not selected)");
      if (i >= steady_from && per_step > 0) {
        record("torch", step + ": kernels (as in trace mode)", std::to_string(per_step), std::to_string(rows.size()),
               rows.size() == per_step);
      }
      if (sel) {
        record("torch", step + ": kernels with counters", std::to_string(rows.size()), std::to_string(with),
               with == rows.size() && !rows.empty());
        record("torch", step + ": autograd-thread kernels with counters", std::to_string(autograd_all),
               std::to_string(autograd_with), autograd_with == autograd_all && autograd_all > 0);
        record("torch", step + ": tensor FLOPs, forward and backward GEMMs (2MNK each, 1%)", fmt(want_tensor),
               fmt(tensor), std::fabs(tensor - want_tensor) <= 0.01 * want_tensor);
      } else {
        record("torch", step + ": kernels with counters", "0", std::to_string(with), with == 0);
      }
    }
    Db db(dir + "/" + stem + ".fprof");
    std::set<int64_t> with_reason;
    std::string reason_error;
    if (auto rows = db.query("SELECT kernel_id FROM kernel_counter_missing")) {
      for (const auto& r : *rows) with_reason.insert(std::stoll(r[0].value_or("0")));
    } else {
      reason_error = " (" + db.lastError() + ")";
    }
    size_t without = 0, explained = 0;
    for (const KernelRow& k : p.kernels) {
      if (counters.count(k.id)) continue;
      ++without;
      explained += with_reason.count(k.id);
    }
    record("v2-missing", "every kernel without counters has a stored reason", std::to_string(without),
           std::to_string(explained) + reason_error, explained == without);
  }
  printTable();
  return printSummary();
}

// ---- main -------------------------------------------------------------------------------------------------

int usage() {
  std::fprintf(stderr,
               "usage: validation_check run [--program P] [--fprof F] [--dso LIB] [--ptxas-dir DIR] [--dir DIR]\n"
               "                            [--modes trace,metrics,crash] [--threads T] [--repeat R]\n"
               "       validation_check check --db DB --expect TSV [--metrics 0|1] [--ptxas-dir DIR] [--fprof F]\n"
               "       validation_check ncu-compare --db METRICS.fprof --csv NCU.csv\n"
               "       validation_check torch --dir DIR\n"
               "       validation_check roofline-metrics\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string cmd = argv[1];
  std::map<std::string, std::string> opt;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strncmp(argv[i], "--", 2) != 0) return usage();
    opt[argv[i] + 2] = argv[i + 1];
  }
  if ((argc - 2) % 2 != 0) return usage();
  auto option = [&](const char* name, const std::string& fallback) {
    auto it = opt.find(name);
    return it == opt.end() ? fallback : it->second;
  };
  if (cmd == "roofline-metrics") {
    for (const auto& set : fprof::core::builtinMetricSets()) {
      if (set.name != "roofline") continue;
      // ncu also counts the ops_path tensor counters: the values fprof derives from the tensor pipe's
      // cycles and the SASS (flops_tensor_*) are compared with them.
      std::string out;
      for (const std::string& m : set.metrics) out += (out.empty() ? "" : ",") + m;
      for (const auto& [metric, column] : tensorOpsPathColumns()) out += std::string(",") + metric;
      // ...and the hardware instruction counter, against fprof's SASS-counted instructions.
      out += std::string(",") + fprof::core::kInstructionsMetric;
      std::printf("%s\n", out.c_str());
      return 0;
    }
    return 1;
  }
  if (cmd == "ncu-compare") {
    if (!opt.count("db") || !opt.count("csv")) return usage();
    return ncuCompare(opt["db"], opt["csv"]);
  }
  if (cmd == "torch") {
    if (!opt.count("dir")) return usage();
    return torchCheck(opt["dir"]);
  }
  if (cmd == "check") {
    // One database against the expectations its run wrote (no GPU needed).
    if (!opt.count("db") || !opt.count("expect")) return usage();
    const Inputs in = readInputs(option("ptxas-dir", besideMe("../tests/gpu/validation")));
    g_mode = option("mode-name", "check");
    const auto expect = readExpectations(opt["expect"]);
    record("program", "expectations read", "> 0 records", std::to_string(expect.size()), !expect.empty());
    checkDatabase(opt["db"], expect, in, optionsFor(expect, option("metrics", "0") == "1"), option("fprof", ""));
    printTable();
    return printSummary();
  }
  if (cmd != "run") return usage();
  if (!haveGpu()) {
    std::fprintf(stderr, "validation_check: no CUDA device: skipped\n");
    return 77;
  }
  RunOptions o;
  o.program = fs::absolute(option("program", besideMe("validation_program"))).string();
  o.fprof = fs::absolute(option("fprof", besideMe("fprof"))).string();
  o.dso = fs::absolute(option("dso", besideMe("../lib/libfprof_validation_dso.so"))).string();
  o.ptxas_dir = option("ptxas-dir", besideMe("../tests/gpu/validation"));
  o.threads = std::stoi(option("threads", "4"));
  o.repeat = std::stoi(option("repeat", "2"));
  if (opt.count("modes")) {
    o.modes.clear();
    std::istringstream in(opt["modes"]);
    std::string m;
    while (std::getline(in, m, ',')) o.modes.insert(m);
  }
  if (opt.count("dir")) {
    o.dir = opt["dir"];
    fs::create_directories(o.dir);
  } else {
    char tmpl[] = "/tmp/fprof_validation.XXXXXX";
    const char* made = mkdtemp(tmpl);
    if (made == nullptr) {
      std::perror("mkdtemp");
      return 1;
    }
    o.dir = made;
  }
  o.dir = fs::absolute(o.dir).string();
  std::printf("validation_check: work folder %s\n", o.dir.c_str());
  return runAll(o);
}
