// CPU test of validation_check's comparisons (no GPU): a database built to match a small set of
// expectations exactly, schema v2 tables included, passes every check; copies of it damaged one
// way each fail the check that should catch the damage. So every kind of check can both pass and
// fail before the GPU run that uses them.
//
//   validation_check_selftest VALIDATION_CHECK
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fprof/core/store.h"

namespace fs = std::filesystem;

namespace {

std::string g_checker;

const char* kExpectations =
    "program\tpid=42\ttid=1000\tthreads=1\trepeat=1\tcrash=none\tcrash_after=-1\n"
    "device\tname=Fake GPU\tsms=132\tcc=9.0\n"
    "memcpy\tkind=HtoD\tbytes=4096\n"
    "launch\tlabel=chevron\tname=_Z4fakev\tapi=cudaLaunchKernel\tgrid=10,1,1\tblock=256,1,1\tcluster=0,0,0\t"
    "dyn_smem=0\ttid=1000\tstream=main\tnvtx=fprof_validation::launch_apis\tcount=1\tgraph=none\tcounters=required\t"
    "fault=0\tregs=16\tlocal=0\tstatic_smem=0\tconst_bytes=0\tmax_threads=1024\tbinary_version=90\tptx_version=90\t"
    "flops_fp32=8000\tflops_fp64=0\tflops_fp16=0\tflops_bf16=0\tflops_tensor_fp16=0\tflops_tensor_bf16=0\t"
    "inst_ffma=2000\tinst_fadd=1000\tinst_fmul=3000\tinst_dfma=0\tinst_dadd=0\tinst_dmul=0\tmin_bytes=8000\t"
    "max_dram_read=-1\tmax_dram_write=-1\tlocal_memory=0\tbytes_once=1\targs=1234,5678\n"
    "launch\tlabel=graph_half\tname=_Z5halfv\tapi=cudaGraphLaunch\tgrid=4,1,1\tblock=128,1,1\tcluster=0,0,0\t"
    "dyn_smem=0\ttid=1000\tstream=main\tnvtx=fprof_validation::graphs/captured\tcount=3\tgraph=captured\t"
    "counters=optional\tfault=0\tregs=10\tlocal=0\tstatic_smem=0\tconst_bytes=0\tmax_threads=1024\t"
    "binary_version=90\tptx_version=90\tflops_fp32=0\tflops_fp64=0\tflops_fp16=400\tflops_bf16=0\t"
    "flops_tensor_fp16=0\tflops_tensor_bf16=0\tinst_ffma=0\tinst_fadd=0\tinst_fmul=0\tinst_dfma=0\tinst_dadd=0\t"
    "inst_dmul=0\tmin_bytes=100\tmax_dram_read=-1\tmax_dram_write=-1\tlocal_memory=0\targs=\n"
    // One site, two repetitions that pass different values (one line each).
    "launch\tlabel=worker\tname=_Z6workerv\tapi=cuLaunchKernel\tgrid=2,1,1\tblock=64,1,1\tcluster=0,0,0\t"
    "dyn_smem=0\ttid=1001\tstream=worker0\tnvtx=threads_span/fprof_validation::worker 0/iter\tcount=1\tgraph=none\t"
    "counters=required\tfault=0\tregs=32\tlocal=256\tstatic_smem=0\tconst_bytes=0\tmax_threads=1024\t"
    "binary_version=90\tptx_version=90\tflops_fp32=0\tflops_fp64=0\tflops_fp16=0\tflops_bf16=100\t"
    "flops_tensor_fp16=0\tflops_tensor_bf16=0\tinst_ffma=0\tinst_fadd=0\tinst_fmul=0\tinst_dfma=0\tinst_dadd=0\t"
    "inst_dmul=0\tmin_bytes=512\tmax_dram_read=-1\tmax_dram_write=-1\tlocal_memory=1\targs=99,100\n"
    "launch\tlabel=worker\tname=_Z6workerv\tapi=cuLaunchKernel\tgrid=2,1,1\tblock=64,1,1\tcluster=0,0,0\t"
    "dyn_smem=0\ttid=1001\tstream=worker0\tnvtx=threads_span/fprof_validation::worker 0/iter\tcount=1\tgraph=none\t"
    "counters=required\tfault=0\tregs=32\tlocal=256\tstatic_smem=0\tconst_bytes=0\tmax_threads=1024\t"
    "binary_version=90\tptx_version=90\tflops_fp32=0\tflops_fp64=0\tflops_fp16=0\tflops_bf16=100\t"
    "flops_tensor_fp16=0\tflops_tensor_bf16=0\tinst_ffma=0\tinst_fadd=0\tinst_fmul=0\tinst_dfma=0\tinst_dadd=0\t"
    "inst_dmul=0\tmin_bytes=512\tmax_dram_read=-1\tmax_dram_write=-1\tlocal_memory=1\targs=99,101\n"
    "argrole\tname=_Z4fakev\tindex=0\trole=write\n"
    "argrole\tname=_Z4fakev\tindex=1\trole=read\n"
    "nvtx\tdomain=fprof_validation\tmessage=launch_apis\tpayload=\ttid=1000\tpush_pop=1\tclosed=1\n"
    "nvtx\tdomain=\tmessage=threads_span\tpayload=\ttid=1000\tpush_pop=0\tclosed=1\n"
    "result\tname=mma_sync\tproducts=1\telementwise=1\tmismatches=0\tof=8192\n"
    "end\tkernels=6\texit_code=0\n";

const char* kPtxas =
    "ptxas info    : Function properties for _Z4fakev\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 16 registers, used 0 barriers\n"
    "ptxas info    : Function properties for _Z6workerv\n"
    "    256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 32 registers, used 0 barriers\n";

fs::path dir() {
  static const fs::path d = [] {
    fs::path p = fs::temp_directory_path() / ("validation_check_selftest." + std::to_string(getpid()));
    fs::create_directories(p);
    return p;
  }();
  return d;
}

void writeText(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

void sql(const fs::path& db, const std::string& statements) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(h, statements.c_str(), nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(h);
  ASSERT_EQ(rc, SQLITE_OK) << message << " in: " << statements;
}

fprof::core::KernelRecord kernel(uint32_t corr, const std::string& name, const std::string& api,
                                 const std::string& path, uint32_t tid, uint32_t stream, int grid, int block) {
  fprof::core::KernelRecord k;
  k.process_id = 1;
  k.correlation_id = corr;
  k.thread_id = tid;
  k.stream_id = stream;
  k.start_ns = 1000 + corr * 100;
  k.end_ns = k.start_ns + 50;
  k.grid_x = grid;
  k.grid_y = k.grid_z = 1;
  k.block_x = block;
  k.block_y = k.block_z = 1;
  k.registers_per_thread = 32;
  k.name = name;
  k.demangled_name = name;
  k.launch_api = api;
  k.nvtx_path = path;
  return k;
}

// The database a perfect fprof would write for kExpectations, schema v2 included; in trace mode it
// would hold no counters, which the trace-mode checks do not look at.
fs::path idealDatabase(const std::string& mode = "metrics") {
  const fs::path db = dir() / ("ideal_" + mode + ".fprof");
  fs::remove(db);
  auto w = fprof::core::Writer::create(db.string());
  EXPECT_TRUE(w.ok());
  auto& writer = **w;
  for (auto [k, v] : {std::pair{"dropped_records", "0"}, {"exit_code", "0"}, {"exit_status", "exited with 0"}}) {
    EXPECT_TRUE(writer.setMetadata(k, v).ok());
  }
  EXPECT_TRUE(writer.setMetadata("mode", mode).ok());
  fprof::core::ProcessInfo proc;
  proc.pid = 42;
  EXPECT_TRUE(writer.addProcess(proc).ok());
  auto add_counters = [&](uint32_t corr, double fp32, double fp16, double bf16, double ffma, double fadd, double fmul,
                          double bytes, bool local) {
    fprof::core::KernelCounters c;
    c.flops_fp32 = fp32;
    c.flops_fp64 = 0;
    c.flops_fp16 = fp16;
    c.flops_bf16 = bf16;
    c.flops_tensor_fp16 = 0;
    c.flops_tensor_bf16 = 0;
    c.l2_bytes = bytes;
    c.l1_bytes = bytes;
    c.local_load_bytes = local ? 512 : 0;
    c.local_store_bytes = local ? 512 : 0;
    c.gpu_time_ns = 50;
    writer.addCountersForLaunch(1, corr, 0, c,
                                {{"sm__sass_thread_inst_executed_op_ffma_pred_on.sum", ffma},
                                 {"sm__sass_thread_inst_executed_op_fadd_pred_on.sum", fadd},
                                 {"sm__sass_thread_inst_executed_op_fmul_pred_on.sum", fmul},
                                 {"sm__sass_thread_inst_executed_op_dfma_pred_on.sum", 0},
                                 {"sm__sass_thread_inst_executed_op_dadd_pred_on.sum", 0},
                                 {"sm__sass_thread_inst_executed_op_dmul_pred_on.sum", 0}});
  };
  writer.add(kernel(10, "_Z4fakev", "cudaLaunchKernel", "fprof_validation::launch_apis", 1000, 7, 10, 256));
  for (auto [index, value] : {std::pair{0, 1234}, {1, 5678}}) {
    fprof::core::KernelArgRecord a;
    a.process_id = 1;
    a.correlation_id = 10;
    a.index = index;
    a.offset_bytes = 8 * index;
    a.size_bytes = 8;
    a.value = static_cast<uint64_t>(value);
    writer.add(a);
  }
  add_counters(10, 8000, 0, 0, 2000, 1000, 3000, 8032, false);
  for (uint32_t g = 0; g < 3; ++g) {
    auto k = kernel(20 + g, "_Z5halfv", "cudaGraphLaunch", "fprof_validation::graphs/captured", 1000, 7, 4, 128);
    k.graph_id = 5;
    k.graph_node_id = 1;
    writer.add(k);
    if (g < 2) add_counters(20 + g, 0, 400, 0, 0, 0, 0, 100, false);  // the third: a reason instead
  }
  for (uint32_t i = 0; i < 2; ++i) {
    auto k = kernel(30 + i, "_Z6workerv", "cuLaunchKernel", "threads_span/fprof_validation::worker 0/iter", 1001, 8, 2, 64);
    k.local_bytes_per_thread = 256;
    writer.add(k);
    for (auto [index, value] : {std::pair{0, 99}, {1, 100 + static_cast<int>(i)}}) {
      fprof::core::KernelArgRecord a;
      a.process_id = 1;
      a.correlation_id = 30 + i;
      a.index = index;
      a.size_bytes = 8;
      a.value = static_cast<uint64_t>(value);
      writer.add(a);
    }
    add_counters(30 + i, 0, 0, 100, 0, 0, 0, 600, true);
  }
  fprof::core::NvtxRangeRecord r;
  r.process_id = 1;
  r.key = 1;
  r.domain = "fprof_validation";
  r.message = "launch_apis";
  r.thread_id = 1000;
  r.start_ns = 900;
  r.end_ns = 2000;
  writer.add(r);
  r.key = 2;
  r.domain = "";
  r.message = "threads_span";
  r.push_pop = false;
  writer.add(r);
  fprof::core::MemcpyRecord m;
  m.process_id = 1;
  m.bytes = 4096;
  m.copy_kind = "HtoD";
  m.start_ns = 100;
  m.end_ns = 200;
  writer.add(m);
  EXPECT_TRUE(writer.close().ok());
  // Schema v2 rows (the writer made the tables).
  sql(db,
      "INSERT INTO function SELECT 1, id, 16, 0, 0, 0, 1024, 90, 90 FROM string WHERE value = '_Z4fakev';"
      "INSERT INTO function SELECT 1, id, 10, 0, 0, 0, 1024, 90, 90 FROM string WHERE value = '_Z5halfv';"
      "INSERT INTO function SELECT 1, id, 32, 256, 0, 0, 1024, 90, 90 FROM string WHERE value = '_Z6workerv';"
      "INSERT INTO function_arg SELECT 1, id, 0, 'write', 'bytes compared', 64, 10, 0 FROM string WHERE value = '_Z4fakev';"
      "INSERT INTO function_arg SELECT 1, id, 1, 'read', 'bytes compared', 64, 10, 8 FROM string WHERE value = '_Z4fakev';"
      "INSERT INTO function_sass_op SELECT 1, id, 'HFMA2', 1 FROM string WHERE value IN ('_Z5halfv', '_Z6workerv');"
      "INSERT INTO kernel_counter_missing SELECT id, 'graph launch: one range for the graph' FROM kernel "
      "WHERE correlation_id = 22;"
      "UPDATE kernel_counter SET half_flops_method = 'SASS lanes x instruction counts';");
  return db;
}

struct Outcome {
  int exit_code = -1;
  std::string text;
};

Outcome check(const fs::path& db, bool metrics = true, const std::string& expectations = kExpectations) {
  writeText(dir() / "expect.tsv", expectations);
  for (const char* log : {"validation_program.ptxas.txt", "validation_dso.ptxas.txt", "validation_jit.ptxas.txt"}) {
    writeText(dir() / log, kPtxas);
  }
  const fs::path out = dir() / "out.txt";
  const std::string cmd = "'" + g_checker + "' check --metrics " + (metrics ? "1" : "0") + " --db '" + db.string() + "' --expect '" +
                          (dir() / "expect.tsv").string() + "' --ptxas-dir '" + dir().string() + "' > '" +
                          out.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  Outcome o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(out);
  o.text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return o;
}

fs::path damaged(const std::string& name, const std::string& statements, bool metrics) {
  const fs::path ideal = idealDatabase(metrics ? "metrics" : "trace");
  const fs::path copy = dir() / (name + ".fprof");
  fs::copy_file(ideal, copy, fs::copy_options::overwrite_existing);
  sql(copy, statements);
  return copy;
}

bool failsWith(const Outcome& o, const std::string& what) {
  std::istringstream in(o.text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("FAIL", 0) == 0 && line.find(what) != std::string::npos) return true;
  }
  return false;
}

TEST(ValidationCheck, IdealDatabasePassesEveryCheck) {
  const Outcome metrics = check(idealDatabase("metrics"), true);
  EXPECT_EQ(metrics.exit_code, 0) << metrics.text;
  EXPECT_NE(metrics.text.find(" passed, 0 failed"), std::string::npos) << metrics.text;
  const Outcome trace = check(idealDatabase("trace"), false);
  EXPECT_EQ(trace.exit_code, 0) << trace.text;
  // Every feature was exercised.
  const std::string both = metrics.text + trace.text;
  for (const char* feature : {"trace ", "metrics ", "coverage ", "lanes ", "v2-function ", "v2-args ", "v2-sass ",
                              "v2-missing ", "v2-provenance ", "exit ", "program "}) {
    EXPECT_NE(both.find("\n" + std::string(feature)), std::string::npos) << feature << "\n" << both;
  }
}

TEST(ValidationCheck, EachDamageFailsItsCheck) {
  struct Case {
    const char* name;
    const char* sql;
    const char* failing;
    bool metrics = true;  // argument roles are judged on trace-mode runs
  };
  const Case cases[] = {
      {"fp32", "UPDATE kernel_counter SET flops_fp32 = flops_fp32 + 2 WHERE flops_fp32 > 0;", "fp32 FLOPs"},
      {"lanes", "UPDATE kernel_counter SET flops_fp16 = 2 * flops_fp16;", "fp16 FLOPs (per lane)"},
      {"dropped", "DELETE FROM kernel WHERE correlation_id = 31;", "worker @ threads_span"},
      {"path", "UPDATE kernel SET nvtx_path_id = NULL WHERE correlation_id = 10;", "unexpected kernel"},
      {"api", "UPDATE kernel SET launch_api = 'cuLaunchKernel' WHERE correlation_id = 10;", "launch api"},
      {"thread", "UPDATE kernel SET thread_id = 1000 WHERE correlation_id = 30;", "host thread"},
      {"args", "UPDATE kernel_arg SET value = 1 WHERE correlation_id = 10 AND arg_index = 1;", "8-byte argument"},
      // Both repetitions with the first one's values: the second repetition's are missing.
      {"args_per_rep", "UPDATE kernel_arg SET value = 100 WHERE correlation_id = 31 AND arg_index = 1;",
       "worker @ threads_span/fprof_validation::worker 0/iter: 8-byte argument"},
      {"counters", "DELETE FROM kernel_counter WHERE kernel_id = (SELECT id FROM kernel WHERE correlation_id = 30);",
       "kernels with counters"},
      {"reason", "DELETE FROM kernel_counter_missing;", "counters or a stored reason"},
      {"nvtx", "DELETE FROM nvtx_range WHERE message = 'threads_span';", "threads_span"},
      {"memcpy", "DELETE FROM memcpy;", "memcpy"},
      {"registers", "UPDATE function SET registers_per_thread = 17;", "registers (ptxas -v)"},
      {"roles", "UPDATE function_arg SET role = 'read';", "argument 0: role", false},
      {"mode", "UPDATE metadata SET value = 'metrics' WHERE key = 'mode';", "metadata mode", false},
      {"sass", "DELETE FROM function_sass_op;", "SASS opcodes"},
      {"exit", "UPDATE metadata SET value = 'killed by SIGSEGV' WHERE key = 'exit_status';", "exit_status"},
      {"local", "UPDATE kernel_counter SET local_load_bytes = 0;", "local load bytes"},
      {"bytes", "UPDATE kernel_counter SET l2_bytes = 1;", "L2 bytes >= footprint"},
      {"bytes_once", "UPDATE kernel_counter SET l2_bytes = 9000;", "L2 bytes = footprint to 4 sectors"},
      {"raw", "UPDATE kernel_metric SET value = value + 1;", "sm__sass_thread_inst_executed_op_ffma"},
      {"varies", "UPDATE kernel_counter SET signature_varies = 1;", "counter source"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Outcome o = check(damaged(c.name, c.sql, c.metrics), c.metrics);
    EXPECT_EQ(o.exit_code, 1) << o.text;
    EXPECT_TRUE(failsWith(o, c.failing)) << "no FAIL row naming '" << c.failing << "'\n" << o.text;
  }
}

// A run that aborted: the exit signal in the metadata, the range open at the crash kept with no end.
TEST(ValidationCheck, CrashNeedsTheSignalAndTheOpenRange) {
  std::string expectations = kExpectations;
  expectations.replace(expectations.find("end\t"), std::string::npos,
                       "nvtx\tdomain=fprof_validation\tmessage=arith\tpayload=0\ttid=1000\tpush_pop=1\tclosed=0\n"
                       "crash\tkind=abort\tkernels=6\texit_signal=SIGABRT\n");
  const std::string crashed =
      "DELETE FROM metadata WHERE key = 'exit_code';"
      "UPDATE metadata SET value = 'killed by SIGABRT' WHERE key = 'exit_status';"
      "INSERT INTO metadata(key, value) VALUES ('exit_signal', 'SIGABRT');"
      "INSERT INTO nvtx_range(id, process_id, parent_id, domain, message, payload, thread_id, depth, start_ns, end_ns, "
      "push_pop) VALUES (9, 1, NULL, 'fprof_validation', 'arith', 0, 1000, 0, 950, NULL, 1);";
  const Outcome good = check(damaged("crashed", crashed, false), false, expectations);
  EXPECT_EQ(good.exit_code, 0) << good.text;
  EXPECT_NE(good.text.find("crash       nvtx fprof_validation::arith payload=0 tid=1000 push/pop (open at the crash)"),
            std::string::npos)
      << good.text;
  const Outcome lost = check(damaged("lost", crashed + "DELETE FROM nvtx_range WHERE id = 9; DELETE FROM metadata "
                                                       "WHERE key = 'exit_signal';", false),
                             false, expectations);
  EXPECT_EQ(lost.exit_code, 1);
  EXPECT_TRUE(failsWith(lost, "(open at the crash)")) << lost.text;
  EXPECT_TRUE(failsWith(lost, "exit_signal")) << lost.text;
}

// ncu's CSV (details page, base units): one row per kernel and metric, in launch order.
std::string ncuCsv(double fake_ffma) {
  std::string csv = "==PROF== Connected to process 42\n"
                    "\"ID\",\"Process ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\","
                    "\"Metric Value\"\n";
  int id = 0;
  auto row = [&](const char* name, const char* metric, const char* unit, const std::string& value) {
    csv += "\"" + std::to_string(id) + "\",\"42\",\"" + name + "\",\"Command line profiler metrics\",\"" + metric +
           "\",\"" + unit + "\",\"" + value + "\"\n";
  };
  auto kernel = [&](const char* name, double ffma, double fadd, double fmul) {
    row(name, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", ffma == 2000 ? "2,000" : std::to_string(static_cast<long>(ffma)));
    row(name, "sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst", std::to_string(static_cast<long>(fadd)));
    row(name, "sm__sass_thread_inst_executed_op_fmul_pred_on.sum", "inst", std::to_string(static_cast<long>(fmul)));
    row(name, "gpu__time_duration.sum", "nsecond", "1,234");  // timing: not compared
    ++id;
  };
  kernel("_Z4fakev", fake_ffma, 1000, 3000);
  for (int i = 0; i < 3; ++i) kernel("_Z5halfv", 0, 0, 0);
  for (int i = 0; i < 2; ++i) kernel("_Z6workerv", 0, 0, 0);
  csv += "validation_program: a line of the program's own output\n";
  return csv;
}

Outcome ncuCompare(const std::string& csv) {
  const fs::path db = idealDatabase(), csv_path = dir() / "ncu.csv", out = dir() / "ncu_out.txt";
  writeText(csv_path, csv);
  const std::string cmd = "'" + g_checker + "' ncu-compare --db '" + db.string() + "' --csv '" + csv_path.string() +
                          "' > '" + out.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  Outcome o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(out);
  o.text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return o;
}

TEST(ValidationCheck, NcuComparisonPassesOnEqualCountersAndFailsOnADifference) {
  Outcome same = ncuCompare(ncuCsv(2000));
  EXPECT_EQ(same.exit_code, 0) << same.text;
  EXPECT_NE(same.text.find("_Z4fakev #0: sm__sass_thread_inst_executed_op_ffma_pred_on.sum (exact)"), std::string::npos)
      << same.text;
  Outcome differs = ncuCompare(ncuCsv(2001));
  EXPECT_EQ(differs.exit_code, 1) << differs.text;
  EXPECT_TRUE(failsWith(differs, "_Z4fakev #0: sm__sass_thread_inst_executed_op_ffma_pred_on.sum")) << differs.text;
}

// A PyTorch-like run: 3 steps (step 0 warm-up), each between marker kernels, two kernels from the
// main thread (500) and two from autograd's thread (501); in metrics mode counters for every
// kernel of the selected steps 1 and 2 (250 tensor FLOPs each), a reason for every other kernel.
void torchDatabase(const std::string& stem, bool metrics, bool drop_autograd_counters) {
  const fs::path db = dir() / (stem + ".fprof");
  fs::remove(db);
  writeText(dir() / (stem + ".expect.tsv"),
            "torch\tmain_tid=500\tautograd_tid=501\tsteps=3\tselected=1,2\tsteady_from=1\t"
            "tensor_flops_per_step=1000\trange=startend\n");
  auto w = fprof::core::Writer::create(db.string());
  ASSERT_TRUE(w.ok());
  auto& writer = **w;
  fprof::core::ProcessInfo proc;
  proc.pid = 43;
  ASSERT_TRUE(writer.addProcess(proc).ok());
  uint32_t corr = 100;
  std::vector<uint32_t> unprofiled;
  for (int step = 0; step < 3; ++step) {
    writer.add(kernel(corr++, "fill", "cudaLaunchKernel", "fprof_validation_marker begin=" + std::to_string(step), 500, 7, 1, 1));
    unprofiled.push_back(corr - 1);
    for (uint32_t tid : {500u, 500u, 501u, 501u}) {
      writer.add(kernel(corr, "gemm", "cudaLaunchKernel", "train_step i=" + std::to_string(step), tid, 7, 8, 128));
      if (metrics && step > 0 && !(drop_autograd_counters && tid == 501)) {
        fprof::core::KernelCounters c;
        c.flops_tensor_fp16 = 250;
        writer.addCountersForLaunch(1, corr, 0, c, {});
      } else {
        unprofiled.push_back(corr);
      }
      ++corr;
    }
    writer.add(kernel(corr++, "fill", "cudaLaunchKernel", "fprof_validation_marker end=" + std::to_string(step), 500, 7, 1, 1));
    unprofiled.push_back(corr - 1);
  }
  ASSERT_TRUE(writer.close().ok());
  if (!metrics) return;
  std::string statements;
  for (uint32_t c : unprofiled) {
    statements += "INSERT INTO kernel_counter_missing SELECT id, 'not selected (--nvtx-include)' FROM kernel "
                  "WHERE correlation_id = " + std::to_string(c) + ";";
  }
  sql(db, statements);
}

Outcome torchCheck() {
  const fs::path out = dir() / "torch_out.txt";
  const std::string cmd = "'" + g_checker + "' torch --dir '" + dir().string() + "' > '" + out.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  Outcome o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(out);
  o.text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return o;
}

TEST(ValidationCheck, TorchStepsAreFoundBetweenMarkersAcrossThreads) {
  torchDatabase("torch_trace", false, false);
  torchDatabase("torch_metrics_pushpop", true, false);
  torchDatabase("torch_metrics_startend", true, false);
  const Outcome good = torchCheck();
  EXPECT_EQ(good.exit_code, 0) << good.text;
  EXPECT_NE(good.text.find("step 2 (selected): autograd-thread kernels with counters"), std::string::npos) << good.text;
  torchDatabase("torch_metrics_pushpop", true, true);  // what a per-thread push/pop selection gives
  const Outcome bad = torchCheck();
  EXPECT_EQ(bad.exit_code, 1) << bad.text;
  EXPECT_TRUE(failsWith(bad, "step 1 (selected): autograd-thread kernels with counters")) << bad.text;
  EXPECT_TRUE(failsWith(bad, "tensor FLOPs")) << bad.text;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s VALIDATION_CHECK\n", argv[0]);
    return 2;
  }
  g_checker = argv[1];
  const int rc = RUN_ALL_TESTS();
  std::error_code ec;
  if (std::getenv("KEEP") == nullptr) fs::remove_all(dir(), ec);
  return rc;
}
