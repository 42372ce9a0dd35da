// A program for `fprof run`'s CPU tests: it makes no CUDA call, so no collector runs in it, and
// does in its place what the tests need of one: writes a database at FPROF_OUTPUT (ranked as the
// collector names it), records the signals it receives, sleeps, exits with a given code.
//   fprof_fake_program [--database KERNELS] [--side-processes N] [--sleep-ms N] [--signals FILE]
//                      [--pid-file FILE] [--ignore-sigint] [--exit CODE] [--cubin-dir-file FILE]
//                      [--duplicate-counts TEXT]
// --side-processes: N child processes each write a database without kernels where the collector
// of a process whose name is taken writes (NAME.pid<PID>.fprof), as torch.compile's workers do.
// With --signals, SIGTERM and SIGHUP are recorded, the database (if asked) is written and the
// signal raised again with its default action, as a program that cleans up at a signal does;
// SIGINT is recorded and, with --ignore-sigint, the program sleeps on. --cubin-dir-file saves a
// cubin where the collector of a metrics run would and writes that folder's name to FILE.
// --duplicate-counts: as the collector of a one-run metrics run whose duplicates counted every
// profiled launch: a metrics database, and TEXT as its per-PC counts where that collector writes
// them (core::duplicatesPcFile).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "fprof/core/sass_pc.h"
#include "fprof/core/store.h"

namespace {

std::string g_signal_file;
int g_kernels = -1;  // -1: no database
bool g_ignore_sigint = false;
const char* g_duplicate_counts = nullptr;  // --duplicate-counts
volatile sig_atomic_t g_pending = 0;

std::string outputPath() {
  const char* out = std::getenv("FPROF_OUTPUT");
  if (out == nullptr || *out == '\0') return "";
  std::string path = out;
  const char* rank = std::getenv("RANK");
  if (rank != nullptr && *rank != '\0') {
    const std::string tag = std::string(".rank") + rank;
    path = path.size() > 6 && path.compare(path.size() - 6, 6, ".fprof") == 0
               ? path.substr(0, path.size() - 6) + tag + ".fprof"
               : path + tag;
  }
  return path;
}

void writeDatabaseAt(const std::string& path) {
  auto w = fprof::core::Writer::create(path, std::getenv("FPROF_FORCE") != nullptr &&
                                                 std::strcmp(std::getenv("FPROF_FORCE"), "1") == 0);
  if (!w) {
    std::fprintf(stderr, "fake program: %s\n", w.error().c_str());
    return;
  }
  fprof::core::ProcessInfo p;
  p.pid = getpid();
  p.host = "test";
  p.command_line = "fprof_fake_program";
  auto pid = (*w)->addProcess(p);
  (void)(*w)->setMetadata("mode", g_duplicate_counts ? "metrics" : "trace");
  if (g_duplicate_counts) {
    (void)(*w)->setMetadata("sass_in_first_run", "every profiled launch");
    const char* cubin_dir = std::getenv("FPROF_CUBIN_DIR");
    std::ofstream(fprof::core::duplicatesPcFile(path, cubin_dir ? cubin_dir : "")) << g_duplicate_counts;
  }
  for (int i = 0; i < g_kernels; ++i) {
    fprof::core::KernelRecord k;
    k.process_id = pid ? *pid : 1;
    k.name = k.demangled_name = "fake_kernel";
    k.correlation_id = static_cast<uint32_t>(i + 1);
    k.start_ns = 1000 * (i + 1);
    k.end_ns = k.start_ns + 500;
    k.grid_x = k.grid_y = k.grid_z = k.block_x = k.block_y = k.block_z = 1;
    (*w)->add(k);
  }
  (void)(*w)->flush();
  (void)(*w)->close();
}

void writeDatabase() {
  if (g_kernels >= 0 && !outputPath().empty()) writeDatabaseAt(outputPath());
}

void runSideProcesses(int count) {
  const std::string out = outputPath();
  const std::string stem = out.size() > 6 ? out.substr(0, out.size() - 6) : out;
  for (int i = 0; i < count; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      g_kernels = 0;
      writeDatabaseAt(stem + ".pid" + std::to_string(getpid()) + ".fprof");
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
  }
}

void record(int sig) {
  if (g_signal_file.empty()) return;
  std::ofstream(g_signal_file, std::ios::app) << sigabbrev_np(sig) << "\n";
}

void onSignal(int sig) { g_pending = sig; }

// As the collector does in metrics mode: a module's cubin saved in FPROF_CUBIN_DIR; the folder's
// name written to `file`.
void saveCubin(const std::string& file) {
  const char* dir = std::getenv("FPROF_CUBIN_DIR");
  std::ofstream(file) << (dir ? dir : "") << "\n";
  if (dir) std::ofstream(std::string(dir) + "/pid" + std::to_string(getpid()) + ".module1.cubin") << "not a cubin";
}

}  // namespace

int main(int argc, char** argv) {
  int sleep_ms = 0, exit_code = 0, side_processes = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--database") g_kernels = std::atoi(next), ++i;
    else if (a == "--side-processes") side_processes = std::atoi(next), ++i;
    else if (a == "--sleep-ms") sleep_ms = std::atoi(next), ++i;
    else if (a == "--signals") g_signal_file = next, ++i;
    else if (a == "--pid-file") std::ofstream(next) << getpid() << "\n", ++i;
    else if (a == "--ignore-sigint") g_ignore_sigint = true;
    else if (a == "--exit") exit_code = std::atoi(next), ++i;
    else if (a == "--cubin-dir-file") saveCubin(next), ++i;
    else if (a == "--duplicate-counts") g_duplicate_counts = next, ++i;
  }
  if (!outputPath().empty()) runSideProcesses(side_processes);
  if (!g_signal_file.empty()) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, onSignal);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(sleep_ms);
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (const int sig = g_pending; sig != 0) {
      g_pending = 0;
      record(sig);
      if (sig == SIGINT && g_ignore_sigint) continue;
      writeDatabase();
      signal(sig, SIG_DFL);
      raise(sig);
    }
  }
  writeDatabase();
  return exit_code;
}
