// The hostile and damaged databases (see corpus.h): a small well-formed run written with the core
// Writer (NVTX op convention with a measured fused variant, counters, copies, allocations,
// ceilings), its strings swapped for hostile ones, then damaged with raw SQL on the written file.
#include "corpus.h"

#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fprof/core/store.h"
#include "sm90_limits.h"

namespace fprof::testing {
namespace {

// Every text of the run that comes from the profiled program or its machine.
struct Texts {
  std::string gemm = "void gemm_kernel<float, 128>(float const*, float const*, float*, int)";
  std::string relu = "relu_kernel(float*, int)";
  std::string fused = "gemm_relu_fused(float const*, float*, int)";
  std::string op = "mlp";             // the op's name in its NVTX op ranges
  std::string note = "";              // an extra token in every op range's message
  std::string plain_domain = "app";   // the domain of a plain range around the loose kernels
  std::string plain_message = "step";
  std::string host = "node1";
  std::string command_line = "./model --ops mlp";
  std::string device_name = "NVIDIA H100 80GB HBM3";
  std::string mode = "metrics";
  std::string collector_message = "3 launches were replayed twice";
  std::string ceiling_method = "measured by fprof ceilings";
  std::string metric_name = "dram__bytes_read.sum";
  std::string copy_kind = "HtoD";
  std::string memory_kind = "device";
  std::string launch_api = "cudaLaunchKernel";
  std::string arg_method = "bytes behind the pointer changed";  // schema 2: function_arg.method
  std::string sass_opcode = "HFMA2";                             // function_sass_op.opcode
  std::string missing_reason = "cooperative launch: not replayed";  // kernel_counter_missing.reason
  std::string exit_status = "exited with 0";
  int64_t pid = 4242;  // each case its own, so that `fprof merge` takes it with the clean file
};

constexpr int kIterations = 8;

core::DeviceInfo device(uint32_t process_id, const Texts& t) {
  core::DeviceInfo d;
  d.process_id = process_id;
  d.id = 0;
  d.name = t.device_name;
  d.uuid = "GPU-0000";
  setSm90Limits(d);
  d.sm_count = 132;
  d.l2_bytes = 50 << 20;
  d.global_memory_bytes = int64_t{80} << 30;
  d.memory_bus_width_bits = 5120;
  d.memory_clock_khz = 2619000;
  d.sm_clock_khz = 1980000;
  return d;
}

// The run: kIterations times an unfused op (two stage ranges, a GEMM and a ReLU), its fused
// variant, and a plain range around a loose ReLU; one kernel outside any range.
core::Status writeRun(const std::string& path, const Texts& t) {
  auto created = core::Writer::create(path, true);
  if (!created) return core::makeError(created.error());
  core::Writer& w = **created;
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"mode", t.mode}, {"fprof_version", "0.1.0"},
                                    {"exit_status", t.exit_status}}) {
    if (auto st = w.setMetadata(key, value); !st) return st;
  }
  core::ProcessInfo proc;
  proc.pid = t.pid;
  proc.host = t.host;
  proc.command_line = t.command_line;
  proc.start_unix_ns = 1'790'000'000'000'000'000;
  auto pid = w.addProcess(proc);
  if (!pid) return core::makeError(pid.error());
  if (auto st = w.addDevice(device(*pid, t)); !st) return st;
  for (const auto& [ceiling, unit, value] :
       {std::tuple<const char*, const char*, double>{"dram", "bytes_per_s", 3.0e12}, {"l2", "bytes_per_s", 9.0e12},
        {"fp32", "flops_per_s", 5.0e13}}) {
    w.add(core::CeilingRecord{t.device_name, ceiling, unit, value, "measured", t.ceiling_method});
  }
  w.add(core::CollectorEventRecord{*pid, 1000, "warning", t.collector_message});

  int64_t now = 1'000'000;
  uint32_t correlation = 1;
  uint64_t range_key = 1;
  constexpr uint64_t kBufferA = 0x7f0000000000, kBufferB = 0x7f0000100000, kBufferC = 0x7f0000200000;
  for (uint64_t address : {kBufferA, kBufferB, kBufferC}) {
    w.add(core::MemoryEventRecord{*pid, 0, 1, 0, correlation++, now, true, address, 1 << 20, t.memory_kind});
  }
  w.add(core::MemcpyRecord{*pid, 0, 1, 7, correlation++, now, now + 4000, 1 << 20, t.copy_kind, "pageable", "device", 0});
  w.add(core::MemsetRecord{*pid, 0, 1, 7, correlation++, now + 5000, now + 6000, 1 << 20, 0, t.memory_kind, 0});
  now += 10'000;

  auto range = [&](std::optional<uint64_t> parent, const std::string& domain, const std::string& message, int depth,
                   int64_t start_ns, int64_t end_ns, int iteration) {
    core::NvtxRangeRecord r;
    r.key = range_key++;
    r.process_id = *pid;
    r.parent_key = parent;
    r.domain = domain;
    r.message = message;
    r.payload = static_cast<uint64_t>(iteration);
    r.thread_id = 1;
    r.depth = depth;
    r.start_ns = start_ns;
    r.end_ns = end_ns;
    w.add(r);
    return r.key;
  };
  auto kernel = [&](const std::string& name, int64_t duration_ns, std::optional<uint64_t> range_id,
                    const std::string& nvtx_path, uint64_t in, uint64_t out, double flops, double bytes) {
    core::KernelRecord k;
    k.process_id = *pid;
    k.context_id = 1;
    k.stream_id = 7;
    k.correlation_id = correlation++;
    k.thread_id = 1;
    k.start_ns = now;
    k.end_ns = now + duration_ns;
    now = k.end_ns + 2000;
    k.grid_x = 264;
    k.grid_y = k.grid_z = 1;
    k.block_x = 256;
    k.block_y = k.block_z = 1;
    k.registers_per_thread = 32;
    k.theoretical_occupancy = 1.0;
    k.occupancy_limiter = "warps";
    k.name = name;
    k.demangled_name = name;
    k.launch_api = t.launch_api;
    k.nvtx_range_key = range_id;
    k.nvtx_path = nvtx_path;
    core::KernelCounters c;
    c.kernel_id = w.nextKernelId();
    c.flops_fp32 = flops;
    c.flops_fp16 = std::numeric_limits<double>::quiet_NaN();  // SQLite stores NaN as NULL
    c.dram_read_bytes = bytes / 2;
    c.dram_write_bytes = bytes / 2;
    c.l2_bytes = bytes * 2;
    c.l1_bytes = bytes * 3;
    c.achieved_occupancy = 0.8;
    c.gpu_time_ns = static_cast<double>(duration_ns);
    w.add(c);
    w.add(core::KernelMetricRecord{c.kernel_id, t.metric_name, bytes / 2});
    w.add(core::KernelArgRecord{k.correlation_id, *pid, 0, 0, 8, in});
    w.add(core::KernelArgRecord{k.correlation_id, *pid, 1, 8, 8, out});
    w.add(k);
  };

  const std::string note = t.note.empty() ? "" : " note=" + t.note;
  for (int it = 0; it < kIterations; ++it) {
    const int64_t jitter = 100 * (it % 3);
    // The unfused op: its range opens first and closes last; the stages nest inside.
    const int64_t op_start = now;
    const uint64_t op_key = range_key++;
    const int64_t s1_start = now;
    kernel(t.gemm, 40'000 + jitter, range_key, "fprof::" + t.op + "/matmul", kBufferA, kBufferB, 2.0e9, 8.0e6);
    range(op_key, "fprof", "op=matmul variant=unfused pair=p0 reads=x writes=t" + note, 1, s1_start, now, it);
    const int64_t s2_start = now;
    kernel(t.relu, 9'000 + jitter, range_key, "fprof::" + t.op + "/relu", kBufferB, kBufferC, 1.0e6, 8.0e6);
    range(op_key, "fprof", "op=relu variant=unfused pair=p0 reads=t writes=y" + note, 1, s2_start, now, it);
    core::NvtxRangeRecord op;
    op.key = op_key;
    op.process_id = *pid;
    op.domain = "fprof";
    op.message = "op=" + t.op + " variant=unfused pair=p0 reads=x writes=y" + note;
    op.payload = static_cast<uint64_t>(it);
    op.thread_id = 1;
    op.start_ns = op_start;
    op.end_ns = now;
    w.add(op);
    // The fused variant.
    const int64_t fused_start = now;
    const uint64_t fused_key = range_key;
    kernel(t.fused, 42'000 + jitter, fused_key, "fprof::" + t.op, kBufferA, kBufferC, 2.0e9, 8.0e6);
    range(std::nullopt, "fprof", "op=" + t.op + " variant=fused pair=p0 reads=x writes=y" + note, 0, fused_start, now,
          it);
    // A plain range of the program's own domain.
    const int64_t plain_start = now;
    const uint64_t plain_key = range_key;
    kernel(t.relu, 9'000 + jitter, plain_key, t.plain_domain + "::" + t.plain_message, kBufferC, kBufferA, 1.0e6, 8.0e6);
    range(std::nullopt, t.plain_domain, t.plain_message, 0, plain_start, now, it);
  }
  kernel(t.relu, 9'000, std::nullopt, "", kBufferA, kBufferB, 1.0e6, 8.0e6);
  // Schema 2: what the driver said of each function, and one kernel left without counters.
  for (const std::string& name : {t.gemm, t.relu, t.fused}) {
    core::FunctionRecord f;
    f.process_id = *pid;
    f.name = name;
    f.registers_per_thread = 30;
    w.add(f);
    w.add(core::FunctionArgRecord{*pid, name, 1, "write", t.arg_method, 64, 1});
    w.add(core::FunctionSassOpRecord{*pid, name, t.sass_opcode, 12});
  }
  w.add(core::KernelCounterMissing{w.nextKernelId() - 1, t.missing_reason});
  for (uint64_t address : {kBufferA, kBufferB, kBufferC}) {
    w.add(core::MemoryEventRecord{*pid, 0, 1, 0, correlation++, now, false, address, 1 << 20, t.memory_kind});
  }
  return w.close();
}

// Raw SQL on a written file: the damage a Writer would never write.
core::Status execSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    return core::makeError(path + ": cannot open for damage");
  }
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  std::string error = message ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  if (rc != SQLITE_OK) return core::makeError(path + ": damage failed: " + error + " in: " + sql);
  return {};
}

// Texts carrying one payload everywhere a program or a machine puts text.
Texts hostileTexts(const std::string& payload) {
  Texts t;
  t.gemm = "void gemm_kernel<" + payload + ">(float const*, float*, int)";
  t.relu = payload;
  t.fused = "fused_" + payload;
  t.note = payload;
  t.plain_domain = "dom" + payload;
  t.plain_message = payload;
  t.host = payload;
  t.command_line = "./model " + payload;
  t.device_name = "GPU " + payload;
  t.collector_message = payload;
  t.ceiling_method = payload;
  t.metric_name = "metric" + payload;
  t.copy_kind = payload;
  t.memory_kind = payload;
  t.launch_api = payload;
  t.arg_method = payload;
  t.sass_opcode = payload;
  t.missing_reason = payload;
  t.exit_status = payload;
  return t;
}

// A chain of `depth` NVTX ranges, each the parent of the next, with a kernel inside every
// `every`-th level and at the bottom. Op ranges (domain fprof, op=...) when `ops`.
core::Status writeDeepChain(const std::string& path, int depth, int every, bool ops) {
  auto created = core::Writer::create(path, true);
  if (!created) return core::makeError(created.error());
  core::Writer& w = **created;
  if (auto st = w.setMetadata("mode", "trace"); !st) return st;
  core::ProcessInfo proc;
  proc.pid = 77;
  proc.host = "deep";
  proc.command_line = "./recurse";
  auto pid = w.addProcess(proc);
  if (!pid) return core::makeError(pid.error());
  if (auto st = w.addDevice(device(*pid, Texts{})); !st) return st;
  const std::string domain = ops ? "fprof" : "rec";
  std::string path_text = domain + "::";
  for (int level = 0; level < depth; ++level) {
    core::NvtxRangeRecord r;
    r.key = static_cast<uint64_t>(level) + 1;
    r.process_id = *pid;
    if (level > 0) r.parent_key = static_cast<uint64_t>(level);
    r.domain = domain;
    r.message = ops ? "op=level" + std::to_string(level % 7) : "level " + std::to_string(level);
    r.thread_id = 1;
    r.depth = level;
    r.start_ns = 1000 + level;
    r.end_ns = int64_t{10'000'000'000} - level;
    w.add(r);
    path_text += (level > 0 ? "/" : "") + r.message;
    if (level % every == 0 || level == depth - 1) {
      core::KernelRecord k;
      k.process_id = *pid;
      k.stream_id = 7;
      k.correlation_id = static_cast<uint32_t>(level) + 1;
      k.start_ns = 2'000'000 + int64_t{10'000} * level;
      k.end_ns = k.start_ns + 5000;
      k.grid_x = k.grid_y = k.grid_z = 1;
      k.block_x = 128;
      k.block_y = k.block_z = 1;
      k.name = k.demangled_name = "recurse_kernel(int)";
      k.nvtx_range_key = r.key;
      // The collector writes the whole path; the deepest one is 1.3 MB.
      k.nvtx_path = level == depth - 1 ? path_text : domain + "::level " + std::to_string(level);
      w.add(k);
    }
    if (level % 50'000 == 0) {
      if (auto st = w.flush(); !st) return st;
    }
  }
  return w.close();
}

std::string repeat(const std::string& s, size_t times) {
  std::string out;
  out.reserve(s.size() * times);
  for (size_t i = 0; i < times; ++i) out += s;
  return out;
}

struct Builder {
  CorpusCase about;
  std::function<core::Status(const std::string&)> write;
};

const std::vector<Builder>& builders() {
  static const std::vector<Builder> all = [] {
    std::vector<Builder> b;
    auto texts = [&b](Texts t) {
      t.pid += static_cast<int64_t>(b.size());
      return [t](const std::string& path) { return writeRun(path, t); };
    };
    auto damaged = [&b](Texts t, std::string sql) {
      t.pid += static_cast<int64_t>(b.size());
      return [t, sql](const std::string& path) -> core::Status {
        if (auto st = writeRun(path, t); !st) return st;
        return execSql(path, sql);
      };
    };
    b.push_back({{"clean", "the well-formed run", "", ""}, texts(Texts{})});
    b.push_back({{"invalid_utf8", "invalid UTF-8 in every string (stray bytes, overlong, surrogate, cut short)", "", ""},
                 texts(hostileTexts("bad\xFF\xFE utf8 \xC0\xAF overlong \xED\xA0\x80 surrogate \xE2\x82 cut \xF8\x88"))});
    b.push_back({{"nul_bytes", "NUL bytes inside every string", "", ""},
                 texts(hostileTexts(std::string("nul\0inside\0", 11) + "tail"))});
    b.push_back({{"control_chars", "ESC sequences, CR, LF, TAB, DEL, an 8-bit CSI and a bidi override in every string",
                  "", ""},
                 texts(hostileTexts("\x1B[31mred\x1B[0m \x1B]0;pwned\x07 \x1B[2J cr\rlf\ntab\tdel\x7F c1\xC2\x9B"
                                    "31m bidi\xE2\x80\xAEgnp.exe"))});
    {
      Texts t = hostileTexts(
          "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&amp;</script><!-- |pipe| `tick` ``two`` *b* _i_ "
          "[l](u) a,b \"q\" ## ### %s%n {} {0} \\ ]]> \"><svg onload=alert(3)>");
      t.mode = "<script>alert('mode')</script>";
      b.push_back({{"markup", "HTML, Markdown, CSV, JSON, ImGui and format-string syntax in every string", "", ""},
                   texts(t)});
    }
    {
      Texts t;
      t.relu = "relu<" + std::string(1 << 20, 'T') + ">(float*)";
      t.plain_message = repeat("\xC3\xA9", 1 << 19);  // 1 MB of two-byte characters
      t.host = std::string(1 << 20, 'h');
      t.command_line = "./model " + std::string(1 << 20, 'a');
      t.collector_message = std::string(1 << 20, 'w');
      b.push_back({{"long_strings", "1 MB kernel name, NVTX message, host, command line and collector message", "", ""},
                   texts(t)});
    }
    b.push_back({{"dangling_strings", "kernel name, NVTX path and metric name ids the string table lacks",
                  "kernels name a string id missing from the string table", "<unknown name #99999>"},
                 damaged(Texts{},
                         "UPDATE kernel SET name_id = 99999, demangled_id = 99999 WHERE id IN (1, 2, 5);"
                         "UPDATE kernel SET nvtx_path_id = 88888 WHERE id = 3;"
                         "UPDATE kernel_metric SET metric_id = 77777 WHERE kernel_id = 4;"
                         "UPDATE function SET name_id = 66666 WHERE rowid = 1;"
                         "UPDATE function_sass_op SET name_id = 66666 WHERE rowid = 1;")});
    b.push_back({{"dangling_refs",
                  "kernels naming missing ranges, processes and devices; ranges naming missing parents; counters, "
                  "metrics and a free of missing kernels and allocations",
                  "", ""},
                 damaged(Texts{},
                         "UPDATE kernel SET nvtx_range_id = 123456 WHERE id = 4;"
                         "UPDATE nvtx_range SET parent_id = 654321 WHERE id = 2;"
                         "UPDATE kernel SET device_id = 7 WHERE id = 5;"
                         "UPDATE kernel SET process_id = 9 WHERE id = 6;"
                         "INSERT INTO kernel_counter(kernel_id, dram_read_bytes, flops_fp32) VALUES (999999, 1e6, 1e9);"
                         "INSERT INTO kernel_metric(kernel_id, metric_id, value) VALUES (999999, 1, 5);"
                         "INSERT INTO kernel_arg(process_id, correlation_id, arg_index, offset_bytes, size_bytes, value) "
                         "VALUES (1, 424242, 0, 0, 8, 12345);"
                         "INSERT INTO memory_event(process_id, device_id, context_id, stream_id, correlation_id, "
                         "timestamp_ns, operation, address, bytes, memory_kind) VALUES (1, 0, 1, 0, 0, 5, 'free', 99, 8, "
                         "'device');")});
    // Range ids: per iteration the op range, its two stages, the fused range, the plain range.
    b.push_back({{"cycle_self", "an op range and a plain range that are their own parents", "is its own parent", ""},
                 damaged(Texts{}, "UPDATE nvtx_range SET parent_id = id WHERE id IN (1, 5, 6);")});
    b.push_back({{"cycle_pair",
                  "an op range and its stage each other's parent; three plain ranges in a circle with a chain into it",
                  "its own ancestor", ""},
                 damaged(Texts{},
                         "UPDATE nvtx_range SET parent_id = 2 WHERE id = 1;"
                         "UPDATE nvtx_range SET parent_id = 10 WHERE id = 5;"
                         "UPDATE nvtx_range SET parent_id = 15 WHERE id = 10;"
                         "UPDATE nvtx_range SET parent_id = 5 WHERE id = 15;"
                         "UPDATE nvtx_range SET parent_id = 5 WHERE id = 20;")});
    b.push_back({{"deep_chain", "200,000 nested ranges, a kernel every 10,000 levels, a 1.3 MB NVTX path", "", ""},
                 [](const std::string& path) { return writeDeepChain(path, 200'000, 10'000, false); }});
    b.push_back({{"deep_op_chain", "200,000 nested NVTX op ranges (op=...), a kernel every 10,000 levels", "", ""},
                 [](const std::string& path) { return writeDeepChain(path, 200'000, 10'000, true); }});
    b.push_back({{"nan_inf",
                  "infinite and overflowing counters, metrics, occupancy and a ceiling; NaN written (stored as NULL) "
                  "and as text; a kernel that ends before it starts",
                  "kernel_counter values are infinite", ""},
                 damaged(Texts{},
                         "UPDATE kernel_counter SET flops_fp32 = 9e999 WHERE kernel_id = 1;"
                         "UPDATE kernel_counter SET dram_read_bytes = -9e999 WHERE kernel_id = 2;"
                         "UPDATE kernel_counter SET l2_bytes = 1e308, l1_bytes = 1e308, flops_fp64 = 1e308, "
                         "dram_write_bytes = 1e308 WHERE kernel_id IN (3, 7, 11);"
                         "UPDATE kernel_counter SET achieved_occupancy = 9e999 WHERE kernel_id = 4;"
                         "UPDATE kernel_counter SET instructions = 'NaN', gpu_time_ns = 'inf' WHERE kernel_id = 5;"
                         "UPDATE kernel_metric SET value = 9e999 WHERE kernel_id = 1;"
                         "UPDATE kernel_metric SET value = -9e999 WHERE kernel_id = 2;"
                         "UPDATE kernel SET theoretical_occupancy = 9e999 WHERE id = 5;"
                         "UPDATE kernel SET end_ns = start_ns - 5000 WHERE id = 6;"
                         "UPDATE ceiling SET value = 9e999 WHERE ceiling = 'dram';")});
    b.push_back({{"huge_ids", "kernel, NVTX range and string ids far beyond the row counts, negative string ids", "", ""},
                 damaged(Texts{},
                         "UPDATE kernel SET id = 1099511627776 WHERE id = 9;"
                         "UPDATE kernel_counter SET kernel_id = 1099511627776 WHERE kernel_id = 9;"
                         "UPDATE kernel_metric SET kernel_id = 1099511627776 WHERE kernel_id = 9;"
                         "UPDATE nvtx_range SET id = id + 4611686018427387904, "
                         "parent_id = parent_id + 4611686018427387904;"
                         "UPDATE kernel SET nvtx_range_id = nvtx_range_id + 4611686018427387904;"
                         "UPDATE string SET id = id + 1000000000000 WHERE id > 3;"
                         "UPDATE string SET id = -id WHERE id BETWEEN 1 AND 3;"
                         "UPDATE kernel SET name_id = CASE WHEN name_id > 3 THEN name_id + 1000000000000 ELSE -name_id END,"
                         " demangled_id = CASE WHEN demangled_id > 3 THEN demangled_id + 1000000000000 "
                         "ELSE -demangled_id END, nvtx_path_id = CASE WHEN nvtx_path_id > 3 THEN nvtx_path_id + "
                         "1000000000000 ELSE -nvtx_path_id END;"
                         "UPDATE kernel_metric SET metric_id = CASE WHEN metric_id > 3 THEN metric_id + 1000000000000 "
                         "ELSE -metric_id END;"
                         "UPDATE function SET name_id = CASE WHEN name_id > 3 THEN name_id + 1000000000000 "
                         "ELSE -name_id END;"
                         "UPDATE function_arg SET name_id = CASE WHEN name_id > 3 THEN name_id + 1000000000000 "
                         "ELSE -name_id END;"
                         "UPDATE function_sass_op SET name_id = CASE WHEN name_id > 3 THEN name_id + 1000000000000 "
                         "ELSE -name_id END;")});
    b.push_back({{"empty", "a valid database without a single kernel, range or string", "", ""},
                 [](const std::string& path) -> core::Status {
                   auto w = core::Writer::create(path, true);
                   if (!w) return core::makeError(w.error());
                   return (*w)->close();
                 }});
    return b;
  }();
  return all;
}

}  // namespace

const std::vector<CorpusCase>& corpusCases() {
  static const std::vector<CorpusCase> cases = [] {
    std::vector<CorpusCase> c;
    for (const Builder& b : builders()) c.push_back(b.about);
    return c;
  }();
  return cases;
}

core::Status writeCorpusDatabase(const std::string& name, const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
  for (const Builder& b : builders()) {
    if (b.about.name == name) return b.write(path);
  }
  return core::makeError("no corpus case " + name);
}

}  // namespace fprof::testing
