// GPU test of the trace collector: runs trace_test_program under the collector (through
// `fprof run` where it was built, else through the injection variables), then checks every
// recorded field against what the program and the compiler said. Also checks the environment
// contract (ranks, no clobbering), degraded modes and SIGTERM/SIGKILL. Exit 77: no GPU (skipped).
//
//   trace_check PROGRAM COLLECTOR PTXAS_LOG [FPROF_CLI]
// FPROF_GPU_TEST_DIR: scratch folder (default: a new one under /tmp).
// FPROF_GPU_TEST_KEEP: copy the main run's .fprof there (tests/data/trace_test_h100.fprof), its command
// line without this machine's paths (tests/common/neutral_paths.h).
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fprof/core/store.h"
#include "neutral_paths.h"

namespace fs = std::filesystem;
using fprof::core::Profile;

namespace {

struct Section {
  std::string name;
  int checks = 0;
  int failures = 0;
};
std::vector<Section> g_sections;

void section(const std::string& name) { g_sections.push_back({name}); }

bool check(bool ok, const std::string& what) {
  Section& s = g_sections.back();
  ++s.checks;
  if (!ok) {
    ++s.failures;
    std::fprintf(stderr, "FAIL [%s] %s\n", s.name.c_str(), what.c_str());
  }
  return ok;
}

template <class A, class B>
bool checkEq(const A& got, const B& want, const std::string& what) {
  std::ostringstream msg;
  msg << what << ": got " << got << ", want " << want;
  return check(got == want, msg.str());
}

std::map<std::string, std::string> fields(const std::string& line) {
  std::map<std::string, std::string> out;
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

std::vector<int64_t> numbers(const std::string& csv) {
  std::vector<int64_t> out;
  std::istringstream in(csv);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(static_cast<int64_t>(std::stoull(item)));
  }
  return out;
}

struct RunResult {
  int exit_code = -1;
  int signal = 0;
  pid_t pid = 0;
  std::string stderr_text;
};

// Runs argv with extra environment; optionally signals it once `ready_file` appears.
RunResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              const std::string& stderr_path, const std::string& ready_file = "", int signal_to_send = 0,
              int delay_after_ready_ms = 0) {
  RunResult result;
  const pid_t child = fork();
  if (child == 0) {
    for (const auto& [k, v] : env) {
      if (v.empty()) {
        unsetenv(k.c_str());
      } else {
        setenv(k.c_str(), v.c_str(), 1);
      }
    }
    const int fd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  result.pid = child;
  if (!ready_file.empty()) {
    for (int i = 0; i < 600 && !fs::exists(ready_file); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_after_ready_ms));
    kill(child, signal_to_send);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  std::ifstream in(stderr_path);
  result.stderr_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return result;
}

struct PtxasInfo {
  int registers = -1;
  int64_t stack_bytes = -1;
  int64_t spill_store_bytes = -1;
};

// "Function properties for NAME" / "N bytes stack frame, S bytes spill stores, ..." /
// "Used R registers" lines of nvcc -Xptxas -v.
std::map<std::string, PtxasInfo> parsePtxas(const std::string& path) {
  std::map<std::string, PtxasInfo> out;
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

std::optional<Profile> load(const std::string& path) {
  auto p = fprof::core::loadProfile(path);
  if (!check(p.ok(), "load " + path + (p.ok() ? "" : ": " + p.error()))) return std::nullopt;
  return std::move(p.value());
}

const std::string& str(const Profile& p, uint32_t id) { return p.strings.at(id); }

void checkMainRun(const Profile& p, const std::vector<std::map<std::string, std::string>>& expect,
                  const std::map<std::string, PtxasInfo>& ptxas, pid_t pid) {
  section("metadata");
  checkEq(p.meta("mode"), std::string("trace"), "mode");
  checkEq(p.meta("fprof_version"), std::string(FPROF_VERSION_STRING), "fprof_version");
  check(std::atoi(p.meta("cupti_version").c_str()) >= 130000, "cupti_version " + p.meta("cupti_version"));
  check(std::atoi(p.meta("driver_version").c_str()) >= 13000, "driver_version " + p.meta("driver_version"));
  checkEq(p.meta("dropped_records"), std::string("0"), "dropped_records");
  section("process");
  if (check(p.processes.size() == 1, "one process")) {
    checkEq(p.processes[0].pid, static_cast<int64_t>(pid), "pid");
    check(p.processes[0].command_line.find("trace_test_program full") != std::string::npos,
          "command line: " + p.processes[0].command_line);
    check(!p.processes[0].host.empty(), "host");
    check(!p.processes[0].rank.has_value(), "no rank");
  }

  std::map<std::string, std::vector<const fprof::core::KernelRow*>> by_name;
  // Graph nodes are looked up apart from direct launches of the same kernel.
  for (const auto& k : p.kernels) by_name[str(p, k.name_id) + (k.graph_id != 0 ? "#graph" : "")].push_back(&k);
  std::map<uint32_t, std::vector<const fprof::core::KernelArgRecord*>> args_by_corr;
  for (const auto& a : p.kernel_args) args_by_corr[a.correlation_id].push_back(&a);
  std::map<std::string, std::set<uint32_t>> streams;
  size_t expected_kernels = 0;
  int max_warps = 0;

  for (const auto& e : expect) {
    if (e.at("type") == "device") {
      section("device");
      if (check(p.devices.size() == 1, "one device")) {
        const auto& d = p.devices[0];
        checkEq(d.name, e.at("name"), "device name");
        checkEq(d.sm_count, std::stoi(e.at("sms")), "sm count");
        checkEq(std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor), e.at("cc"), "cc");
        checkEq(d.max_threads_per_sm, std::stoi(e.at("max_threads_per_sm")), "max threads per SM");
        checkEq(d.regs_per_sm, std::stoi(e.at("regs_per_sm")), "regs per SM");
        checkEq(d.shared_per_sm_bytes, std::stoll(e.at("smem_per_sm")), "smem per SM");
        max_warps = d.max_threads_per_sm / 32;
      }
      continue;
    }
    if (e.at("type") != "kernel") continue;
    const std::string label = e.at("label");
    section("kernel " + label);
    const int launches = std::stoi(e.at("launches"));
    expected_kernels += static_cast<size_t>(launches);
    const auto& found = by_name[e.at("name") + (e.at("graph") == "1" ? "#graph" : "")];
    if (!checkEq(found.size(), static_cast<size_t>(launches), "records of " + e.at("name"))) continue;
    const auto grid = numbers(e.at("grid")), block = numbers(e.at("block")), cluster = numbers(e.at("cluster"));
    std::set<uint64_t> graph_nodes;
    for (const auto* k : found) {
      checkEq(str(p, k->launch_api_id), e.at("api"), "launch api");
      checkEq(k->grid_x, grid[0], "grid x");
      checkEq(k->grid_y, grid[1], "grid y");
      checkEq(k->grid_z, grid[2], "grid z");
      checkEq(k->block_x, block[0], "block x");
      checkEq(k->block_y, block[1], "block y");
      checkEq(k->block_z, block[2], "block z");
      checkEq(k->cluster_x, cluster[0], "cluster x");
      checkEq(k->cluster_y, cluster[1], "cluster y");
      checkEq(k->cluster_z, cluster[2], "cluster z");
      checkEq(k->dynamic_shared_bytes, std::stoll(e.at("dyn_smem")), "dynamic smem");
      checkEq(k->static_shared_bytes, std::stoll(e.at("static_smem")), "static smem");
      // CUPTI reports at least 16 registers per thread (seen on an H200, CUDA 13.0: ptxas 10 and
      // 12 -> 16, 22 -> 22, 32 -> 32); ptxas and cudaFuncGetAttributes report the count used.
      // Both give the same occupancy: registers are allocated per warp in units of 256.
      const int used = std::stoi(e.at("regs"));
      checkEq(k->registers_per_thread, std::max(used, 16), "registers (cudaFuncGetAttributes " + e.at("regs") + ", at least 16)");
      checkEq(k->local_bytes_per_thread, std::stoll(e.at("local")), "local bytes/thread (cudaFuncGetAttributes)");
      checkEq(k->theoretical_blocks_per_sm.value_or(-1), std::stoi(e.at("blocks_per_sm")),
              "blocks/SM (cudaOccupancyMaxActiveBlocksPerMultiprocessor)");
      const int warps = static_cast<int>((block[0] * block[1] * block[2] + 31) / 32);
      if (max_warps > 0) {
        check(k->theoretical_occupancy.has_value() &&
                  std::fabs(*k->theoretical_occupancy - std::stod(e.at("blocks_per_sm")) * warps / max_warps) < 1e-12,
              "theoretical occupancy");
      }
      check(!str(p, k->occupancy_limiter_id).empty(), "occupancy limiter named");
      const std::string path = k->nvtx_path_id ? str(p, *k->nvtx_path_id) : std::string();
      checkEq(path, e.at("nvtx"), "nvtx path");
      check(k->nvtx_range_key.has_value() == !e.at("nvtx").empty(), "innermost nvtx key present iff path");
      check(k->end_ns > k->start_ns && k->start_ns > 0, "start < end");
      check(k->correlation_id != 0, "correlation id");
      check(k->thread_id != 0, "thread id");
      check(str(p, k->demangled_id).find(label == "stack" || label == "graph_stack" ? "stack_kernel"
                                         : label == "spill"                        ? "spill_kernel"
                                         : label == "smem"                         ? "smem_kernel"
                                         : label == "regs22"                       ? "regs22_kernel"
                                                                                   : "tagged<") != std::string::npos,
            "demangled name " + str(p, k->demangled_id));
      streams[e.at("stream")].insert(k->stream_id);
      if (e.at("graph") == "1") {
        check(k->graph_id != 0, "graph id set");
        graph_nodes.insert(k->graph_node_id);
      } else {
        checkEq(k->graph_id, 0u, "no graph id");
      }
      // 8-byte arguments (device pointers) in order.
      const auto want_args = numbers(e.at("args"));
      const auto& got_args = args_by_corr[k->correlation_id];
      std::vector<int64_t> pointer_args;
      for (const auto* a : got_args) {
        if (a->size_bytes == 8) pointer_args.push_back(static_cast<int64_t>(a->value));
      }
      checkEq(pointer_args.size(), want_args.size(), "8-byte argument count");
      for (size_t i = 0; i < std::min(pointer_args.size(), want_args.size()); ++i) {
        checkEq(pointer_args[i], want_args[i], "argument " + std::to_string(i));
      }
    }
    if (e.at("graph") == "1") checkEq(graph_nodes.size(), static_cast<size_t>(1), "one node id per graph kernel");
    // Registers and stack against the compiler's own report.
    if (auto it = ptxas.find(e.at("name")); it != ptxas.end() && (label == "stack" || label == "spill" || label == "regs22")) {
      checkEq(found[0]->registers_per_thread, std::max(it->second.registers, 16), "registers (ptxas -v, at least 16)");
      if (label == "regs22") checkEq(it->second.registers, 22, "ptxas used 22 registers");
      checkEq(found[0]->local_bytes_per_thread, it->second.stack_bytes, "local bytes (ptxas -v stack frame)");
      if (label == "spill") check(it->second.spill_store_bytes > 0, "ptxas reports spills");
      if (label == "stack") checkEq(it->second.stack_bytes, static_cast<int64_t>(256), "256-byte stack frame");
    } else if (label == "stack" || label == "spill" || label == "regs22") {
      check(false, "no ptxas entry for " + e.at("name"));
    }
  }
  section("kernels overall");
  checkEq(p.kernels.size(), expected_kernels, "kernel records");
  check(streams["s1"].size() == 1 && streams["s2"].size() == 1 && streams["s1"] != streams["s2"],
        "two streams, one id each");

  section("memcpy/memset/memory");
  for (const auto& e : expect) {
    if (e.at("type") == "memcpy") {
      int matches = 0;
      for (const auto& m : p.memcpys) {
        if (m.copy_kind == e.at("kind") && m.bytes == std::stoll(e.at("bytes")) && m.src_kind == e.at("src") &&
            m.dst_kind == e.at("dst") && m.end_ns > m.start_ns) {
          ++matches;
        }
      }
      checkEq(matches, 1, "memcpy " + e.at("kind") + " " + e.at("bytes"));
    } else if (e.at("type") == "memset") {
      int matches = 0;
      for (const auto& m : p.memsets) {
        if (m.bytes == std::stoll(e.at("bytes")) && m.value == std::stoul(e.at("value")) && m.end_ns > m.start_ns) ++matches;
      }
      checkEq(matches, 1, "memset " + e.at("bytes") + " value " + e.at("value"));
    } else if (e.at("type") == "alloc" || e.at("type") == "free") {
      const bool alloc = e.at("type") == "alloc";
      int matches = 0;
      for (const auto& m : p.memory_events) {
        if (m.is_alloc == alloc && m.address == std::stoull(e.at("address")) && m.bytes == std::stoll(e.at("bytes")) &&
            m.memory_kind == "device") {
          ++matches;
        }
      }
      checkEq(matches, 1, e.at("type") + " event at " + e.at("address"));
    }
  }
  checkEq(p.memcpys.size(), static_cast<size_t>(3), "memcpy records");
  checkEq(p.memsets.size(), static_cast<size_t>(3), "memset records");

  section("nvtx");
  for (const auto& e : expect) {
    if (e.at("type") != "nvtx") continue;
    int matches = 0;
    for (const auto& r : p.nvtx_ranges) {
      const std::string payload = r.payload ? std::to_string(*r.payload) : "";
      if (r.domain == e.at("domain") && r.message == e.at("message") && payload == e.at("payload") &&
          r.push_pop == (e.at("push_pop") == "1") && r.end_ns.has_value() && *r.end_ns > r.start_ns) {
        ++matches;
      }
    }
    checkEq(matches, 1, "nvtx range " + e.at("domain") + "::" + e.at("message"));
  }
  checkEq(p.nvtx_ranges.size(), static_cast<size_t>(5), "nvtx range records");
  // Innermost range keys point at real ranges, and the range brackets the launch on the host clock.
  for (const auto& k : p.kernels) {
    if (!k.nvtx_range_key) continue;
    bool found = false;
    for (const auto& r : p.nvtx_ranges) found |= r.key == *k.nvtx_range_key;
    check(found, "kernel's nvtx key " + std::to_string(*k.nvtx_range_key) + " is a recorded range");
  }
  section("collector events");
  for (const auto& ev : p.collector_events) {
    check(ev.severity != "error" && ev.severity != "warning", "event: " + ev.severity + ": " + ev.message);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s PROGRAM COLLECTOR PTXAS_LOG [FPROF_CLI]\n", argv[0]);
    return 2;
  }
  // No driver or no device: skipped (77), not passed. Looked up at run time so this test builds
  // and is listed on machines without a GPU.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    std::fprintf(stderr, "no CUDA driver (libcuda.so.1): skipped\n");
    return 77;
  }
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto cu_init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
  auto cu_count = reinterpret_cast<CountFn>(dlsym(driver, "cuDeviceGetCount"));
  int devices = 0;
  if (cu_init == nullptr || cu_count == nullptr || cu_init(0) != 0 || cu_count(&devices) != 0 || devices == 0) {
    std::fprintf(stderr, "no CUDA device: skipped\n");
    return 77;
  }
  const std::string program = fs::absolute(argv[1]).string();
  const std::string collector = fs::absolute(argv[2]).string();
  const auto ptxas = parsePtxas(argv[3]);
  const std::string cli = argc > 4 && fs::exists(argv[4]) ? fs::absolute(argv[4]).string() : "";
  std::string dir;
  if (const char* d = std::getenv("FPROF_GPU_TEST_DIR"); d && *d) {
    dir = d;
    fs::create_directories(dir);
  } else {
    char tmpl[] = "/tmp/fprof_gpu_test.XXXXXX";
    dir = mkdtemp(tmpl);
  }
  const std::map<std::string, std::string> inject = {{"CUDA_INJECTION64_PATH", collector},
                                                     {"NVTX_INJECTION64_PATH", collector},
                                                     {"FPROF_FORCE", ""},
                                                     {"RANK", ""},
                                                     {"LOCAL_RANK", ""},
                                                     {"OMPI_COMM_WORLD_RANK", ""},
                                                     {"SLURM_PROCID", ""}};
  auto with = [&](std::map<std::string, std::string> extra) {
    std::map<std::string, std::string> env = inject;
    for (auto& [k, v] : extra) env[k] = v;
    return env;
  };

  // Main run.
  section("main run");
  const std::string main_db = dir + "/main.fprof", expect_path = dir + "/expect.tsv";
  fs::remove(main_db);
  RunResult r;
  const auto t0 = std::chrono::steady_clock::now();
  if (!cli.empty()) {
    r = run({cli, "run", "-o", main_db, program, "full", expect_path}, {{"RANK", ""}, {"LOCAL_RANK", ""}},
            dir + "/main.stderr");
  } else {
    r = run({program, "full", expect_path}, with({{"FPROF_OUTPUT", main_db}}), dir + "/main.stderr");
  }
  const double main_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r.exit_code == 77) {
    std::fprintf(stderr, "no GPU: skipped\n");
    return 77;
  }
  checkEq(r.exit_code, 0, "exit code (stderr: " + r.stderr_text + ")");
  check(r.stderr_text.find("[fprof] warning") == std::string::npos, "no collector warnings: " + r.stderr_text);
  std::vector<std::map<std::string, std::string>> expect;
  {
    std::ifstream in(expect_path);
    std::string line;
    while (std::getline(in, line)) expect.push_back(fields(line));
  }
  pid_t program_pid = 0;
  for (const auto& e : expect) {
    if (e.at("type") == "process") program_pid = std::stoi(e.at("pid"));
  }
  if (auto p = load(main_db)) {
    checkMainRun(*p, expect, ptxas, program_pid);
    if (const char* keep = std::getenv("FPROF_GPU_TEST_KEEP"); keep && *keep) {
      // Kept for tests/data: without this machine's paths in the command line.
      const std::string error = fprof::testing::copyWithNeutralCommandLines(main_db, keep);
      check(error.empty(), "kept the database as " + std::string(keep) + (error.empty() ? "" : ": " + error));
    }
  }

  // Ranks go into the file name; a second process never clobbers the first's file.
  section("ranks and no clobbering");
  const std::string ranked = dir + "/ranked.fprof";
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("ranked.", 0) == 0) fs::remove(e.path());
  }
  r = run({program, "quick"}, with({{"FPROF_OUTPUT", ranked}, {"RANK", "3"}, {"LOCAL_RANK", "1"}}), dir + "/r1.stderr");
  checkEq(r.exit_code, 0, "exit code");
  const pid_t first_pid = r.pid;
  if (check(fs::exists(dir + "/ranked.rank3.fprof"), "ranked.rank3.fprof written")) {
    if (auto p = load(dir + "/ranked.rank3.fprof")) {
      checkEq(p->kernels.size(), static_cast<size_t>(50), "kernels");
      if (check(p->processes.size() == 1, "one process")) {
        checkEq(p->processes[0].rank.value_or(-1), 3, "rank");
        checkEq(p->processes[0].local_rank.value_or(-1), 1, "local rank");
      }
    }
  }
  r = run({program, "quick"}, with({{"FPROF_OUTPUT", ranked}, {"RANK", "3"}, {"LOCAL_RANK", "1"}}), dir + "/r2.stderr");
  checkEq(r.exit_code, 0, "exit code");
  const std::string pid_path = dir + "/ranked.rank3.pid" + std::to_string(r.pid) + ".fprof";
  if (check(fs::exists(pid_path), pid_path + " written")) {
    if (auto p = load(pid_path)) checkEq(p->kernels.size(), static_cast<size_t>(50), "kernels in pid file");
  }
  if (auto p = load(dir + "/ranked.rank3.fprof")) {
    checkEq(p->processes.at(0).pid, static_cast<int64_t>(first_pid), "first file still holds the first process");
  }

  // Degraded: unwritable output, and another CUPTI client.
  section("degraded modes");
  r = run({program, "quick"}, with({{"FPROF_OUTPUT", "/nonexistent_dir/x.fprof"}}), dir + "/unwritable.stderr");
  checkEq(r.exit_code, 0, "target exit code with unwritable output");
  check(r.stderr_text.find("[fprof] warning: cannot create /nonexistent_dir/x.fprof") != std::string::npos,
        "one clear warning: " + r.stderr_text);
  r = run({program, "quick"}, with({{"FPROF_OUTPUT", ""}}), dir + "/nooutput.stderr");
  checkEq(r.exit_code, 0, "target exit code without FPROF_OUTPUT");
  check(r.stderr_text.find("[fprof] warning: FPROF_OUTPUT is not set") != std::string::npos,
        "warning without FPROF_OUTPUT: " + r.stderr_text);
  const std::string foreign_db = dir + "/foreign.fprof";
  fs::remove(foreign_db);
  r = run({program, "foreign-subscriber"}, with({{"FPROF_OUTPUT", foreign_db}}), dir + "/foreign.stderr");
  checkEq(r.exit_code, 0, "target exit code with another CUPTI client");
  check(r.stderr_text.find("[fprof] warning: another CUPTI client is already active") != std::string::npos,
        "warning names the other client: " + r.stderr_text);
  if (auto p = load(foreign_db)) {
    checkEq(p->kernels.size(), static_cast<size_t>(0), "no kernels");
    bool said = false;
    for (const auto& ev : p->collector_events) said |= ev.severity == "error";
    check(said, "collector_event says why");
  }

  // Signals: SIGTERM flushes and closes, then the target dies of the signal; SIGKILL loses at
  // most the last flush period.
  section("signals");
  for (int sig : {SIGTERM, SIGKILL}) {
    const std::string db = dir + (sig == SIGTERM ? "/sigterm.fprof" : "/sigkill.fprof");
    const std::string ready = db + ".ready";
    fs::remove(db);
    fs::remove(ready);
    r = run({program, "sleep", ready}, with({{"FPROF_OUTPUT", db}, {"FPROF_FLUSH_MS", "100"}}), db + ".stderr", ready,
            sig, sig == SIGKILL ? 1000 : 100);
    checkEq(r.signal, sig, std::string("died of ") + strsignal(sig));
    if (auto p = load(db)) checkEq(p->kernels.size(), static_cast<size_t>(50), std::string("kernels after ") + strsignal(sig));
    if (sig == SIGTERM) check(!fs::exists(db + "-wal") || fs::file_size(db + "-wal") == 0, "closed cleanly after SIGTERM");
  }

  std::printf("\ntrace collector GPU test (%s, main run %.2f s, via %s)\n", dir.c_str(), main_s,
              cli.empty() ? "CUDA_INJECTION64_PATH" : "fprof run");
  std::printf("%-28s %7s %9s\n", "section", "checks", "failures");
  int failures = 0;
  for (const auto& s : g_sections) {
    std::printf("%-28s %7d %9d\n", s.name.c_str(), s.checks, s.failures);
    failures += s.failures;
  }
  std::printf("%s\n", failures == 0 ? "PASS" : "FAIL");
  return failures == 0 ? 0 : 1;
}
