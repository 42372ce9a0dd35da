// The hostile validation program: a CUDA program written the way programs nobody here
// wrote are, whose every kernel has analytic expectations that the program itself writes out.
// validation_check (same folder) runs it under `fprof run` in trace mode, metrics mode and
// crashing, and compares each kernel in the database with what this program wrote.
//
//   validation_program --expect FILE [--expect-first-run] [--threads T] [--repeat R] [--dso LIB]
//                      [--crash-after N | --segv-after N | --illegal-address-after N]
//
// What it runs, in order (each phase in an NVTX range of the domain "fprof_validation"):
//   launch_apis  <<<>>>, cudaLaunchKernel, cuLaunchKernel (kernelParams, and the `extra` buffer),
//                cuLaunchKernelEx, cudaLaunchKernelExC with a 2x1x1 cluster, cudaLaunchCooperativeKernel
//                (grid-wide barrier), cudaLaunchKernelExC with programmatic stream serialization
//                (programmatic dependent launch, behind a primary that lets it launch at once)
//   arith x R    fp32 FFMA/FADD/FMUL, fp64 DFMA/DADD/DMUL, scalar __hfma/__hadd/__hmul on __half and
//                __nv_bfloat16, packed __hfma2/__hadd2/__hmul2 on __half2 and __nv_bfloat162, half ->
//                float conversions only, packed and scalar half FMAs mixed
//   tensor       mma.sync m16n8k16 fp16 -> fp32, wgmma m64n32k16 fp16 and bf16 (sm_90a), each checked
//                against a CPU reference
//   memory       register spills, a local array, a 64 MiB stream copy, argument roles
//   modules      a kernel of a dlopen()ed library, a kernel JIT-compiled from PTX at run time
//   graphs       a graph captured from a stream (3 kernels, launched 3 times) and one built by hand
//                with cudaGraphAddKernelNode (2 kernels, launched twice)
//   threads      T host threads at once, each its own stream and nested NVTX ranges in the default
//                and the named domain, under a start/end range that one thread starts and another ends
//
// The expectations file (TSV: a record type, then key=value fields) is written and flushed as the
// program goes, so after a crash it holds exactly what was launched before it. Record types:
//   program, device, memcpy, launch (one per launch site and NVTX context: count, grid, block,
//   cluster, launch API, host thread, stream, NVTX path, function facts, exact FLOPs per precision
//   and SASS instruction counts per launch, bytes it must at least move, 8-byte argument values),
//   argrole (per function and 8-byte argument: write / read / not_pointer), nvtx (one per range),
//   result (the program's own correctness checks), crash, end.
//
// --crash-after N: once N kernels were launched, cudaDeviceSynchronize, then abort().
// --segv-after N: the same, then a write through a null pointer on the host (SIGSEGV).
// --illegal-address-after N: the same, then a kernel writes to an address no allocation holds (the
//   context dies); the program exits with code 3.
// Crash points are checked in the main thread after each launch site (after the whole threads
// phase for its launches). Exit 77: no usable GPU.
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "validation_dso.h"
#include "validation_jit_ptx.h"
#include "validation_kernels.cuh"

using namespace validation;

namespace {

#define CUDA_CHECK(call)                                                                                     \
  do {                                                                                                       \
    cudaError_t e_ = (call);                                                                                 \
    if (e_ != cudaSuccess) {                                                                                 \
      std::fprintf(stderr, "validation_program: %s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,         \
                   cudaGetErrorString(e_));                                                                  \
      std::exit(1);                                                                                          \
    }                                                                                                        \
  } while (0)
#define CU_CHECK(call)                                                                                       \
  do {                                                                                                       \
    CUresult r_ = (call);                                                                                    \
    if (r_ != CUDA_SUCCESS) {                                                                                \
      const char* s_ = nullptr;                                                                              \
      cuGetErrorString(r_, &s_);                                                                             \
      std::fprintf(stderr, "validation_program: %s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,         \
                   s_ ? s_ : "?");                                                                           \
      std::exit(1);                                                                                          \
    }                                                                                                        \
  } while (0)

enum class CrashKind { kNone, kAbort, kSegv, kIllegalAddress };

struct Options {
  std::string expect_path;
  // --expect-first-run: an expectations file that already holds lines is kept (a profiler that runs
  // the program twice, fprof's application replay, checks its first run: thread ids and pointers
  // differ between runs).
  bool expect_first_run = false;
  std::string dso_path;
  int threads = 4;
  int repeat = 2;
  long crash_after = -1;
  CrashKind crash = CrashKind::kNone;
};

const char* crashName(CrashKind k) {
  switch (k) {
    case CrashKind::kAbort: return "abort";
    case CrashKind::kSegv: return "segv";
    case CrashKind::kIllegalAddress: return "illegal-address";
    default: return "none";
  }
}

uint32_t osThreadId() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

// ---- The expectations file ----------------------------------------------------------------------

class Expectations {
 public:
  bool open(const std::string& path, bool keep_existing) {
    std::error_code ec;
    const bool written_before = std::filesystem::file_size(path, ec) > 0 && !ec;
    file_ = std::fopen(keep_existing && written_before ? "/dev/null" : path.c_str(), "w");
    return file_ != nullptr;
  }
  void line(const std::string& text) {
    std::lock_guard lock(mu_);
    std::fputs(text.c_str(), file_);
    std::fputc('\n', file_);
    std::fflush(file_);  // a crash must not lose what was written
  }

 private:
  std::mutex mu_;
  FILE* file_ = nullptr;
};

Expectations g_expect;
Options g_opt;
std::atomic<long> g_kernels{0};
nvtxDomainHandle_t g_domain = nullptr;
const char* kDomainName = "fprof_validation";

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
std::string dims(dim3 d) {
  return std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z);
}

// ---- NVTX: every range goes through here, so the program knows the path fprof should record -----

struct OpenRange {
  std::string domain;  // "" = default domain
  std::string message;
  std::optional<uint64_t> payload;
  uint32_t tid = 0;
  bool push_pop = true;
};

thread_local std::vector<OpenRange> t_stack;  // this thread's push/pop ranges, outermost first
std::mutex g_start_end_mu;
std::vector<std::pair<nvtxRangeId_t, OpenRange>> g_start_end;  // open start/end ranges, oldest first

std::string segment(const OpenRange& r) { return r.domain.empty() ? r.message : r.domain + "::" + r.message; }

// The path fprof records for a launch: open start/end ranges (process-wide, oldest first), then
// this thread's push/pop ranges, joined by '/'.
std::string currentPath() {
  std::string path;
  {
    std::lock_guard lock(g_start_end_mu);
    for (const auto& [id, r] : g_start_end) path += (path.empty() ? "" : "/") + segment(r);
  }
  for (const OpenRange& r : t_stack) path += (path.empty() ? "" : "/") + segment(r);
  return path;
}

void expectRange(const OpenRange& r, bool closed) {
  g_expect.line("nvtx\tdomain=" + r.domain + "\tmessage=" + r.message +
                "\tpayload=" + (r.payload ? std::to_string(*r.payload) : std::string()) + "\ttid=" +
                std::to_string(r.tid) + "\tpush_pop=" + (r.push_pop ? "1" : "0") + "\tclosed=" + (closed ? "1" : "0"));
}

nvtxEventAttributes_t attributes(const char* message, std::optional<uint64_t> payload) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  if (payload) {
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = *payload;
  }
  return a;
}

// Push in the named domain (named = true) or the default domain.
void push(bool named, const std::string& message, std::optional<uint64_t> payload = std::nullopt) {
  nvtxEventAttributes_t a = attributes(message.c_str(), payload);
  if (named) {
    nvtxDomainRangePushEx(g_domain, &a);
  } else if (payload) {
    nvtxRangePushEx(&a);
  } else {
    nvtxRangePushA(message.c_str());
  }
  t_stack.push_back({named ? kDomainName : "", message, payload, osThreadId(), true});
}

void pop() {
  const OpenRange r = t_stack.back();
  t_stack.pop_back();
  if (r.domain.empty()) {
    nvtxRangePop();
  } else {
    nvtxDomainRangePop(g_domain);
  }
  expectRange(r, true);
}

nvtxRangeId_t startRange(const std::string& message) {
  const nvtxRangeId_t id = nvtxRangeStartA(message.c_str());
  std::lock_guard lock(g_start_end_mu);
  g_start_end.push_back({id, OpenRange{"", message, std::nullopt, osThreadId(), false}});
  return id;
}

// May run on another thread than the start.
void endRange(nvtxRangeId_t id) {
  OpenRange r;
  {
    std::lock_guard lock(g_start_end_mu);
    for (auto it = g_start_end.begin(); it != g_start_end.end(); ++it) {
      if (it->first == id) {
        r = it->second;
        g_start_end.erase(it);
        break;
      }
    }
  }
  nvtxRangeEnd(id);
  expectRange(r, true);
}

// ---- Function facts and launch expectations -------------------------------------------------------

struct FunctionFacts {
  std::string name;  // mangled
  int regs = 0, local_bytes = 0, static_smem = 0, const_bytes = 0, max_threads = 0, binary_version = 0,
      ptx_version = 0;
};

FunctionFacts factsOf(CUfunction f) {
  FunctionFacts out;
  const char* name = nullptr;
  CU_CHECK(cuFuncGetName(&name, f));
  out.name = name;
  auto attr = [&](CUfunction_attribute a) {
    int v = 0;
    CU_CHECK(cuFuncGetAttribute(&v, a, f));
    return v;
  };
  out.regs = attr(CU_FUNC_ATTRIBUTE_NUM_REGS);
  out.local_bytes = attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  out.static_smem = attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  out.const_bytes = attr(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
  out.max_threads = attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  out.binary_version = attr(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
  out.ptx_version = attr(CU_FUNC_ATTRIBUTE_PTX_VERSION);
  return out;
}

CUfunction driverFunction(const void* kernel) {
  cudaFunction_t f = nullptr;
  CUDA_CHECK(cudaGetFuncBySymbol(&f, kernel));
  return reinterpret_cast<CUfunction>(f);
}

template <class Kernel>
FunctionFacts factsOf(Kernel* kernel) {
  return factsOf(driverFunction(reinterpret_cast<const void*>(kernel)));
}

// What one launch does, exactly. FLOPs count an FMA as 2 and a packed 16-bit instruction per lane;
// instruction counts are thread-level SASS instructions (as sm__sass_thread_inst_executed_op_*
// count them) for the fp32 and fp64 pipes, where the count is certain.
struct Work {
  double fp32 = 0, fp64 = 0, fp16 = 0, bf16 = 0, tensor_fp16 = 0, tensor_bf16 = 0;
  double ffma = 0, fadd = 0, fmul = 0, dfma = 0, dadd = 0, dmul = 0;
  double min_bytes = 0;         // bytes it must at least move through L1 and L2 (read + written footprint)
  double max_dram_read = -1;    // upper bounds where the footprint is far larger than L2; -1 = none
  double max_dram_write = -1;
  bool local_memory = false;    // has a stack frame (local loads/stores expected)
  bool bytes_once = false;      // reads and writes each footprint byte once: the SMs' L2 sectors are the
                                // footprint's, to its buffers' partial sectors
};

struct Launch {
  std::string label;
  std::string api;
  std::string stream;
  std::string graph = "none";  // none | captured | manual
  dim3 grid, block, cluster{0, 0, 0};
  size_t dyn_smem = 0;
  int count = 1;
  bool counters_required = true;  // false where CUPTI may not replay it (cooperative, cluster, graph)
  bool fault = false;             // the illegal-address kernel: its record may not survive
  bool programmatic = false;      // launched with programmatic stream serialization
  int64_t own_ns_min = 0;         // > 0: each launch's own time (its wait excluded) lies in
  int64_t own_ns_max = 0;         //      [own_ns_min, own_ns_max]
  std::vector<uint64_t> args8;    // 8-byte parameter values in order (not for graph launches)
  std::string roles;              // per parameter: r read, w write, n 8-byte non-pointer, a no role
                                  // recorded (not probed), - not checked
  Work work;
};

std::mutex g_roles_mu;
std::set<std::string> g_roles_written;

uint64_t arg8(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }
uint64_t arg8(long long v) { return static_cast<uint64_t>(v); }
uint64_t arg8(double v) {
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

void expectLaunch(const FunctionFacts& f, const Launch& l) {
  std::string args;
  for (size_t i = 0; i < l.args8.size(); ++i) args += (i ? "," : "") + std::to_string(l.args8[i]);
  const Work& w = l.work;
  g_expect.line(
      "launch\tlabel=" + l.label + "\tname=" + f.name + "\tapi=" + l.api + "\tgrid=" + dims(l.grid) +
      "\tblock=" + dims(l.block) + "\tcluster=" + dims(l.cluster) + "\tdyn_smem=" + std::to_string(l.dyn_smem) +
      "\ttid=" + std::to_string(osThreadId()) + "\tstream=" + l.stream + "\tnvtx=" + currentPath() +
      "\tcount=" + std::to_string(l.count) + "\tgraph=" + l.graph + "\tcounters=" +
      (l.counters_required ? "required" : "optional") + "\tfault=" + (l.fault ? "1" : "0") +
      "\tregs=" + std::to_string(f.regs) + "\tlocal=" + std::to_string(f.local_bytes) +
      "\tstatic_smem=" + std::to_string(f.static_smem) + "\tconst_bytes=" + std::to_string(f.const_bytes) +
      "\tmax_threads=" + std::to_string(f.max_threads) + "\tbinary_version=" + std::to_string(f.binary_version) +
      "\tptx_version=" + std::to_string(f.ptx_version) + "\tflops_fp32=" + num(w.fp32) +
      "\tflops_fp64=" + num(w.fp64) + "\tflops_fp16=" + num(w.fp16) + "\tflops_bf16=" + num(w.bf16) +
      "\tflops_tensor_fp16=" + num(w.tensor_fp16) + "\tflops_tensor_bf16=" + num(w.tensor_bf16) +
      "\tinst_ffma=" + num(w.ffma) + "\tinst_fadd=" + num(w.fadd) + "\tinst_fmul=" + num(w.fmul) +
      "\tinst_dfma=" + num(w.dfma) + "\tinst_dadd=" + num(w.dadd) + "\tinst_dmul=" + num(w.dmul) +
      "\tmin_bytes=" + num(w.min_bytes) + "\tmax_dram_read=" + num(w.max_dram_read) +
      "\tmax_dram_write=" + num(w.max_dram_write) + "\tlocal_memory=" + (w.local_memory ? "1" : "0") +
      "\tbytes_once=" + (w.bytes_once ? "1" : "0") + "\tprogrammatic=" + (l.programmatic ? "1" : "0") +
      "\town_ns=" + std::to_string(l.own_ns_min) + "," + std::to_string(l.own_ns_max) + "\targs=" + args);
  if (!l.fault) g_kernels += l.count;
  if (l.roles.empty()) return;
  std::lock_guard lock(g_roles_mu);
  if (!g_roles_written.insert(f.name).second) return;
  for (size_t i = 0; i < l.roles.size(); ++i) {
    const char r = l.roles[i];
    if (r == '-') continue;
    const char* role = r == 'w' ? "write" : r == 'r' ? "read" : r == 'a' ? "absent" : "not_pointer";
    g_expect.line("argrole\tname=" + f.name + "\tindex=" + std::to_string(i) + "\trole=" + role);
  }
}

// Work of the arithmetic kernels (validation_kernels.cuh), per launch over n active threads.
Work fp32Work(double n, double iters) {
  Work w;
  w.ffma = 2 * n * iters;
  w.fadd = n * iters;
  w.fmul = 3 * n * iters;
  w.fp32 = 2 * w.ffma + w.fadd + w.fmul;
  w.min_bytes = 8 * n;
  w.bytes_once = true;
  return w;
}
Work fp64Work(double n, double iters) {
  Work w;
  w.dfma = n * iters;
  w.dadd = 2 * n * iters;
  w.dmul = n * iters;
  w.fp64 = 2 * w.dfma + w.dadd + w.dmul;
  w.min_bytes = 12 * n;
  w.bytes_once = true;
  return w;
}
Work scalar16Work(double n, double iters, bool bf16) {
  Work w;
  (bf16 ? w.bf16 : w.fp16) = 4 * n * iters;  // FMA 2 + add 1 + mul 1, one lane each
  w.min_bytes = 6 * n;
  w.bytes_once = true;
  return w;
}
Work packed16Work(double n, double iters, bool bf16) {
  Work w;
  (bf16 ? w.bf16 : w.fp16) = 8 * n * iters;  // two lanes of FMA (4) + add (2) + mul (2)
  w.min_bytes = 8 * n;
  w.bytes_once = true;
  return w;
}

// ---- Crashes ------------------------------------------------------------------------------------

void writeOpenRanges() {
  for (const OpenRange& r : t_stack) expectRange(r, false);
  std::lock_guard lock(g_start_end_mu);
  for (const auto& [id, r] : g_start_end) expectRange(r, false);
}

[[noreturn]] void crashNow() {
  CUDA_CHECK(cudaDeviceSynchronize());
  const long kernels = g_kernels.load();
  writeOpenRanges();
  if (g_opt.crash == CrashKind::kIllegalAddress) {
    float* bad = reinterpret_cast<float*>(uintptr_t{0x10});
    // Facts first: once the kernel faults, driver calls return the context's sticky error.
    const FunctionFacts facts = factsOf(illegal_address_kernel);
    illegal_address_kernel<<<1, 32>>>(bad);
    Launch l;
    l.label = "illegal_address";
    l.api = "cudaLaunchKernel";
    l.stream = "legacy";
    l.grid = dim3(1);
    l.block = dim3(32);
    l.fault = true;
    l.counters_required = false;
    l.args8 = {arg8(bad)};
    expectLaunch(facts, l);
    const cudaError_t e = cudaDeviceSynchronize();
    g_expect.line("crash\tkind=illegal-address\tkernels=" + std::to_string(kernels) + "\texit_code=3\terror=" +
                  cudaGetErrorName(e));
    std::printf("validation_program: illegal address after %ld kernels: %s; exiting with 3\n", kernels,
                cudaGetErrorString(e));
    std::fflush(stdout);
    std::exit(3);
  }
  g_expect.line(std::string("crash\tkind=") + crashName(g_opt.crash) + "\tkernels=" + std::to_string(kernels) +
                "\texit_signal=" + (g_opt.crash == CrashKind::kAbort ? "SIGABRT" : "SIGSEGV"));
  std::printf("validation_program: %s after %ld kernels (synchronized)\n",
              g_opt.crash == CrashKind::kAbort ? "abort()" : "null-pointer write", kernels);
  std::fflush(stdout);
  if (g_opt.crash == CrashKind::kSegv) {
    volatile uintptr_t zero = 0;  // read at run time: the compiler cannot see the null pointer
    *reinterpret_cast<volatile int*>(zero) = 1;
  }
  std::abort();
}

// A crash point: main thread only, between launch sites.
void checkpoint() {
  if (g_opt.crash != CrashKind::kNone && g_kernels.load() >= g_opt.crash_after) crashNow();
}

// ---- Buffers ------------------------------------------------------------------------------------

template <class T>
T* deviceAlloc(size_t count) {
  T* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
  CUDA_CHECK(cudaMemset(p, 0, count * sizeof(T)));
  return p;
}

// Bytes that are not zero (0x3c in every byte), so that a kernel copying or adding them writes
// something new over a fresh allocation's zeros: the argument-role probe sees a write only where
// the bytes change.
template <class T>
void fillNonZero(T* p, size_t count) {
  CUDA_CHECK(cudaMemset(p, 0x3c, count * sizeof(T)));
}

template <class T>
void upload(T* dst, const std::vector<T>& src) {
  CUDA_CHECK(cudaMemcpy(dst, src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice));
  g_expect.line("memcpy\tkind=HtoD\tbytes=" + std::to_string(src.size() * sizeof(T)));
}

// Small exactly representable values (multiples of 1/4 in [-2, 2]): products and sums of up to
// 4096 of them are exact in fp32, so the tensor-core results must equal the CPU's bit for bit.
float smallValue(size_t i, unsigned salt) { return static_cast<float>(static_cast<int>((i * 2654435761u + salt) % 17u) - 8) * 0.25f; }

struct Buffers {
  int n = 0;  // elements of the arithmetic inputs (not a multiple of the block size)
  float* f32 = nullptr;
  double* f64 = nullptr;
  __half* f16 = nullptr;
  __nv_bfloat16* bf16 = nullptr;
  __half2* h2 = nullptr;
  __nv_bfloat162* b2 = nullptr;
  unsigned* out = nullptr;   // n words
  float* fout = nullptr;     // 8 n floats
};

Buffers makeBuffers(int n) {
  Buffers b;
  b.n = n;
  std::vector<float> f(n);
  std::vector<double> d(n);
  std::vector<__half> h(8 * static_cast<size_t>(n));
  std::vector<__nv_bfloat16> bf(n);
  std::vector<__half2> h2(n);
  std::vector<__nv_bfloat162> b2(n);
  for (int i = 0; i < n; ++i) {
    const float v = 1.0f + static_cast<float>(i % 251) / 512.0f;
    f[i] = v;
    d[i] = v;
    bf[i] = __float2bfloat16(v);
    h2[i] = __floats2half2_rn(v, v * 0.5f);
    b2[i] = __floats2bfloat162_rn(v, v * 0.5f);
  }
  for (size_t i = 0; i < h.size(); ++i) h[i] = __float2half(1.0f + static_cast<float>(i % 97) / 128.0f);
  b.f32 = deviceAlloc<float>(n);
  b.f64 = deviceAlloc<double>(n);
  b.f16 = deviceAlloc<__half>(h.size());
  b.bf16 = deviceAlloc<__nv_bfloat16>(n);
  b.h2 = deviceAlloc<__half2>(n);
  b.b2 = deviceAlloc<__nv_bfloat162>(n);
  b.out = deviceAlloc<unsigned>(n);
  b.fout = deviceAlloc<float>(8 * static_cast<size_t>(n));
  upload(b.f32, f);
  upload(b.f64, d);
  upload(b.f16, h);
  upload(b.bf16, bf);
  upload(b.h2, h2);
  upload(b.b2, b2);
  return b;
}

dim3 gridFor(int n, int block) { return dim3(static_cast<unsigned>((n + block - 1) / block)); }

// ---- Phase: launch APIs -------------------------------------------------------------------------

void phaseLaunchApis(const Buffers& b, cudaStream_t s, int sms) {
  push(true, "launch_apis");
  const int n = b.n;
  const dim3 block(256), grid = gridFor(n, 256);
  const float m = 1.0001f, c = 0.5f;

  // 1. <<<>>>: CUDA 13 emits __cudaLaunchKernel; fprof names the outermost launch callback it sees
  //    (cudaLaunchKernel, checked on an H200 by tests/gpu/trace_check).
  fp32_kernel<1><<<grid, block, 0, s>>>(b.out, b.f32, n, 3, m, c);
  CUDA_CHECK(cudaGetLastError());
  {
    Launch l{"chevron", "cudaLaunchKernel", "main"};
    l.grid = grid, l.block = block, l.args8 = {arg8(b.out), arg8(b.f32)}, l.roles = "wr----";
    l.work = fp32Work(n, 3);
    expectLaunch(factsOf(fp32_kernel<1>), l);
  }
  checkpoint();

  // 2. cudaLaunchKernel
  {
    int nn = n, iters = 5;
    float mm = m, cc = c;
    unsigned* out = b.out;
    const float* in = b.f32;
    void* args[] = {&out, &in, &nn, &iters, &mm, &cc};
    CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(fp32_kernel<2>), grid, block, args, 0, s));
    Launch l{"runtime", "cudaLaunchKernel", "main"};
    l.grid = grid, l.block = block, l.args8 = {arg8(out), arg8(in)}, l.roles = "wr----";
    l.work = fp32Work(n, 5);
    expectLaunch(factsOf(fp32_kernel<2>), l);
  }
  checkpoint();

  // 3. cuLaunchKernel with kernelParams
  {
    int nn = n, iters = 7;
    float mm = m, cc = c;
    unsigned* out = b.out;
    const float* in = b.f32;
    void* args[] = {&out, &in, &nn, &iters, &mm, &cc};
    CU_CHECK(cuLaunchKernel(driverFunction(reinterpret_cast<const void*>(fp32_kernel<3>)), grid.x, 1, 1, block.x, 1,
                            1, 0, s, args, nullptr));
    Launch l{"driver", "cuLaunchKernel", "main"};
    l.grid = grid, l.block = block, l.args8 = {arg8(out), arg8(in)}, l.roles = "wr----";
    l.work = fp32Work(n, 7);
    expectLaunch(factsOf(fp32_kernel<3>), l);
  }
  checkpoint();

  // 4. cuLaunchKernel with the `extra` parameter buffer
  {
    struct Params {
      float* out;
      const float* in;
      int n;
      float m;
    } params{b.fout, b.f32, n, 0.75f};
    static_assert(sizeof(Params) == 24, "the kernel's parameters fill 24 bytes");
    size_t size = sizeof params;
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &params, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    CU_CHECK(cuLaunchKernel(driverFunction(reinterpret_cast<const void*>(extra_args_kernel)), grid.x, 1, 1, block.x,
                            1, 1, 0, s, nullptr, extra));
    Launch l{"driver_extra", "cuLaunchKernel", "main"};
    l.grid = grid, l.block = block, l.args8 = {arg8(b.fout), arg8(b.f32)}, l.roles = "wr--";
    l.work.ffma = n;
    l.work.fp32 = 2.0 * n;
    l.work.min_bytes = 8.0 * n;
    l.work.bytes_once = true;
    expectLaunch(factsOf(extra_args_kernel), l);
  }
  checkpoint();

  // 5. cuLaunchKernelEx
  {
    int nn = n, iters = 9;
    float mm = m, cc = c;
    unsigned* out = b.out;
    const float* in = b.f32;
    void* args[] = {&out, &in, &nn, &iters, &mm, &cc};
    CUlaunchConfig config{};
    config.gridDimX = grid.x;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = block.x;
    config.blockDimY = config.blockDimZ = 1;
    config.hStream = s;
    CU_CHECK(cuLaunchKernelEx(&config, driverFunction(reinterpret_cast<const void*>(fp32_kernel<4>)), args, nullptr));
    Launch l{"driver_ex", "cuLaunchKernelEx", "main"};
    l.grid = grid, l.block = block, l.args8 = {arg8(out), arg8(in)}, l.roles = "wr----";
    l.work = fp32Work(n, 9);
    expectLaunch(factsOf(fp32_kernel<4>), l);
  }
  checkpoint();

  // 6. cudaLaunchKernelExC with a 2x1x1 thread-block cluster (distributed shared memory inside)
  {
    const dim3 cgrid(static_cast<unsigned>(((n + 255) / 256 + 1) / 2 * 2));  // a multiple of the cluster
    float* out = b.fout;
    const float* in = b.f32;
    int nn = n;
    void* args[] = {&out, &in, &nn};
    cudaLaunchConfig_t config{};
    config.gridDim = cgrid;
    config.blockDim = block;
    config.stream = s;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = 2;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    config.attrs = &attr;
    config.numAttrs = 1;
    CUDA_CHECK(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(cluster_kernel), args));
    Launch l{"cluster", "cudaLaunchKernelExC", "main"};
    l.grid = cgrid, l.block = block, l.cluster = dim3(2, 1, 1), l.counters_required = false;
    l.args8 = {arg8(out), arg8(in)}, l.roles = "wr-";
    l.work.fadd = n;
    l.work.fp32 = n;
    l.work.min_bytes = 8.0 * n;
    l.work.bytes_once = true;
    expectLaunch(factsOf(cluster_kernel), l);
  }
  checkpoint();

  // 7. cudaLaunchCooperativeKernel: one block per SM, a grid-wide barrier inside
  {
    const dim3 cgrid(static_cast<unsigned>(sms));
    float* out = b.fout;
    float* scratch = b.fout + n;
    int nn = n;
    void* args[] = {&out, &scratch, &nn};
    CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(cooperative_kernel), cgrid, block, args, 0, s));
    Launch l{"cooperative", "cudaLaunchCooperativeKernel", "main"};
    l.grid = cgrid, l.block = block, l.counters_required = false;
    // The argument-role probe leaves cooperative launches alone (collector/README.md): no roles.
    l.args8 = {arg8(out), arg8(scratch)}, l.roles = "aa-";
    l.work.fadd = n;
    l.work.fp32 = n;
    l.work.min_bytes = 8.0 * n;  // the stores (scratch, out); the loads of scratch may hit in L1
    expectLaunch(factsOf(cooperative_kernel), l);
  }
  checkpoint();

  // 8. Programmatic dependent launch: a one-block primary spinning 200 us lets the next kernel
  // launch at once; the secondary (cudaLaunchKernelExC with programmatic stream serialization)
  // waits for it, then spins 20 us. Three pairs: the argument-role probe synchronizes around the
  // first launch of each function, so the later pairs are the ones that overlap.
  {
    constexpr long long kPrimaryNs = 200000, kSecondaryNs = 20000;
    constexpr int kPairs = 3;
    unsigned* out = b.out;
    long long primary_ns = kPrimaryNs, secondary_ns = kSecondaryNs;
    void* primary_args[] = {&out, &primary_ns};
    void* secondary_args[] = {&out, &secondary_ns};
    for (int i = 0; i < kPairs; ++i) {
      CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(pdl_primary_kernel), dim3(1), dim3(32), primary_args,
                                  0, s));
      cudaLaunchConfig_t config{};
      config.gridDim = dim3(1);
      config.blockDim = dim3(32);
      config.stream = s;
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr.val.programmaticStreamSerializationAllowed = 1;
      config.attrs = &attr;
      config.numAttrs = 1;
      CUDA_CHECK(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(pdl_secondary_kernel), secondary_args));
    }
    Launch primary{"pdl_primary", "cudaLaunchKernel", "main"};
    primary.grid = dim3(1), primary.block = dim3(32), primary.count = kPairs;
    primary.args8 = {arg8(out), arg8(kPrimaryNs)}, primary.roles = "wn";
    expectLaunch(factsOf(pdl_primary_kernel), primary);
    Launch secondary{"pdl_secondary", "cudaLaunchKernelExC", "main"};
    secondary.grid = dim3(1), secondary.block = dim3(32), secondary.count = kPairs;
    secondary.args8 = {arg8(out), arg8(kSecondaryNs)}, secondary.roles = "wn";
    secondary.programmatic = true;
    // Its own spin, plus the launch's tail; far below the span of a launch that started while the
    // 200 us primary ran.
    secondary.own_ns_min = kSecondaryNs, secondary.own_ns_max = kSecondaryNs + 30000;
    expectLaunch(factsOf(pdl_secondary_kernel), secondary);
  }
  checkpoint();
  pop();
}

// ---- Phase: arithmetic with exact counts ---------------------------------------------------------

void phaseArith(const Buffers& b, cudaStream_t s, int rep) {
  push(true, "arith", static_cast<uint64_t>(rep));
  const int n = b.n;
  const dim3 block(256), grid = gridFor(n, 256);
  // Constants change per repetition so every launch writes new bytes (argument roles).
  const float m = 1.0001f, c = 0.25f + 0.5f * static_cast<float>(rep);
  const __half hm = __float2half(1.0f), hc = __float2half(0.125f * static_cast<float>(rep + 1));
  const __nv_bfloat16 bm = __float2bfloat16(1.0f), bc = __float2bfloat16(0.125f * static_cast<float>(rep + 1));
  const __half2 h2m = __halves2half2(hm, hm), h2c = __halves2half2(hc, hc);
  const __nv_bfloat162 b2m = __halves2bfloat162(bm, bm), b2c = __halves2bfloat162(bc, bc);

  auto site = [&](const char* label, const FunctionFacts& f, dim3 g, dim3 bl, Work w, const char* roles,
                  std::vector<uint64_t> args) {
    CUDA_CHECK(cudaGetLastError());
    Launch l{label, "cudaLaunchKernel", "main"};
    l.grid = g, l.block = bl, l.work = w, l.roles = roles, l.args8 = std::move(args);
    expectLaunch(f, l);
    checkpoint();
  };
  fp32_kernel<10><<<grid, block, 0, s>>>(b.out, b.f32, n, 16, m, c);
  site("fp32", factsOf(fp32_kernel<10>), grid, block, fp32Work(n, 16), "wr----", {arg8(b.out), arg8(b.f32)});
  fp64_kernel<10><<<grid, block, 0, s>>>(b.out, b.f64, n, 8, 1.0000001, 0.5 + rep);
  site("fp64", factsOf(fp64_kernel<10>), grid, block, fp64Work(n, 8), "wr--nn",
       {arg8(b.out), arg8(b.f64), arg8(1.0000001), arg8(0.5 + rep)});
  scalar16_kernel<__half, 10><<<grid, block, 0, s>>>(b.out, b.f16, n, 12, hm, hc);
  site("half_scalar", factsOf(scalar16_kernel<__half, 10>), grid, block, scalar16Work(n, 12, false), "wr----",
       {arg8(b.out), arg8(b.f16)});
  // A different block size: 128 threads.
  const dim3 block128(128), grid128 = gridFor(n, 128);
  scalar16_kernel<__nv_bfloat16, 10><<<grid128, block128, 0, s>>>(b.out, b.bf16, n, 10, bm, bc);
  site("bf16_scalar", factsOf(scalar16_kernel<__nv_bfloat16, 10>), grid128, block128, scalar16Work(n, 10, true),
       "wr----", {arg8(b.out), arg8(b.bf16)});
  packed16_kernel<__half2, 10><<<grid, block, 0, s>>>(b.out, b.h2, n, 6, h2m, h2c);
  site("half2_packed", factsOf(packed16_kernel<__half2, 10>), grid, block, packed16Work(n, 6, false), "wr----",
       {arg8(b.out), arg8(b.h2)});
  packed16_kernel<__nv_bfloat162, 10><<<grid, block, 0, s>>>(b.out, b.b2, n, 5, b2m, b2c);
  site("bf162_packed", factsOf(packed16_kernel<__nv_bfloat162, 10>), grid, block, packed16Work(n, 5, true),
       "wr----", {arg8(b.out), arg8(b.b2)});
  {
    // Conversions only (HADD2.F32): 0 FLOPs. Reads 2 bytes and writes 4 per conversion.
    const int iters = 4;
    const int shift = rep % 2;  // different input halves per repetition: new bytes written
    half_to_float_kernel<10><<<grid, block, 0, s>>>(b.fout, b.f16 + shift, n, iters);
    Work w;
    w.min_bytes = 6.0 * n * iters;
    site("half_to_float", factsOf(half_to_float_kernel<10>), grid, block, w, "wr--",
         {arg8(b.fout), arg8(b.f16 + shift)});
  }
  {
    const int iters = 9;
    mixed16_kernel<10><<<grid, block, 0, s>>>(b.out, b.h2, b.f16, n, iters, h2m, h2c, hm, hc);
    Work w;
    w.fp16 = 6.0 * n * iters;  // packed FMA 4 + scalar FMA 2
    w.min_bytes = 10.0 * n;
    w.bytes_once = true;
    site("mixed_half", factsOf(mixed16_kernel<10>), grid, block, w, "wrr------",
         {arg8(b.out), arg8(b.h2), arg8(b.f16)});
  }
  pop();
}

// ---- Phase: tensor cores -------------------------------------------------------------------------

// Compares a device result with the CPU's: element-wise, and order-free (sum and sum of squares,
// which do not depend on where each element went).
void expectResult(const char* what, const std::vector<float>& got, const std::vector<double>& want) {
  size_t mismatches = 0;
  double sum_got = 0, sum_want = 0, sq_got = 0, sq_want = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    mismatches += static_cast<double>(got[i]) != want[i];
    sum_got += got[i];
    sum_want += want[i];
    sq_got += static_cast<double>(got[i]) * got[i];
    sq_want += want[i] * want[i];
  }
  const bool products = sum_got == sum_want && sq_got == sq_want;
  g_expect.line(std::string("result\tname=") + what + "\tproducts=" + (products ? "1" : "0") + "\telementwise=" +
                (mismatches == 0 ? "1" : "0") + "\tmismatches=" + std::to_string(mismatches) + "\tof=" +
                std::to_string(want.size()));
  std::printf("validation_program: %s: %s (%zu of %zu elements differ)\n", what,
              mismatches == 0 ? "equals the CPU reference" : (products ? "right values, wrong places" : "WRONG"),
              mismatches, want.size());
}

template <class T>
std::vector<T> smallMatrix(size_t count, unsigned salt, std::vector<double>& as_double) {
  std::vector<T> out(count);
  as_double.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const float v = smallValue(i, salt);
    if constexpr (std::is_same_v<T, __half>) {
      out[i] = __float2half(v);
    } else {
      out[i] = __float2bfloat16(v);
    }
    as_double[i] = v;
  }
  return out;
}

// C[m][n] = sum_k A[m][k] * Bt[n][k]
std::vector<double> referenceGemm(const std::vector<double>& a, const std::vector<double>& bt, int m, int n, int k) {
  std::vector<double> c(static_cast<size_t>(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int kk = 0; kk < k; ++kk) s += a[static_cast<size_t>(i) * k + kk] * bt[static_cast<size_t>(j) * k + kk];
      c[static_cast<size_t>(i) * n + j] = s;
    }
  return c;
}

template <class T, bool Bf16>
void wgmmaSite(const char* label, cudaStream_t s) {
  const int blocks = 16, m = kWgmmaM * blocks, n = kWgmmaN, k = kWgmmaK;
  std::vector<double> a_ref, bt_ref;
  const auto a = smallMatrix<T>(static_cast<size_t>(m) * k, Bf16 ? 11u : 3u, a_ref);
  const auto bt = smallMatrix<T>(static_cast<size_t>(n) * k, Bf16 ? 13u : 5u, bt_ref);
  T* da = deviceAlloc<T>(a.size());
  T* dbt = deviceAlloc<T>(bt.size());
  float* dc = deviceAlloc<float>(static_cast<size_t>(m) * n);
  upload(da, a);
  upload(dbt, bt);
  wgmma_kernel<T, Bf16><<<blocks, 128, 0, s>>>(dc, da, dbt);
  CUDA_CHECK(cudaGetLastError());
  Launch l{label, "cudaLaunchKernel", "main"};
  l.grid = dim3(blocks), l.block = dim3(128), l.args8 = {arg8(dc), arg8(da), arg8(dbt)}, l.roles = "wrr";
  (Bf16 ? l.work.tensor_bf16 : l.work.tensor_fp16) = 2.0 * m * n * k;
  l.work.min_bytes = 2.0 * m * k + 2.0 * n * k + 4.0 * m * n;
  expectLaunch(factsOf(wgmma_kernel<T, Bf16>), l);
  checkpoint();
  std::vector<float> c(static_cast<size_t>(m) * n);
  CUDA_CHECK(cudaStreamSynchronize(s));
  CUDA_CHECK(cudaMemcpy(c.data(), dc, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
  g_expect.line("memcpy\tkind=DtoH\tbytes=" + std::to_string(c.size() * sizeof(float)));
  expectResult(label, c, referenceGemm(a_ref, bt_ref, m, n, k));
}

void phaseTensor(cudaStream_t s) {
  push(true, "tensor");
  {
    const int m = 128, n = 64, k = 256;
    std::vector<double> a_ref, bt_ref;
    const auto a = smallMatrix<__half>(static_cast<size_t>(m) * k, 7u, a_ref);
    const auto bt = smallMatrix<__half>(static_cast<size_t>(n) * k, 9u, bt_ref);
    __half* da = deviceAlloc<__half>(a.size());
    __half* dbt = deviceAlloc<__half>(bt.size());
    float* dc = deviceAlloc<float>(static_cast<size_t>(m) * n);
    upload(da, a);
    upload(dbt, bt);
    const int warps = (m / 16) * (n / 8);
    const dim3 grid(static_cast<unsigned>(warps * 32 / 128)), block(128);
    mma_sync_kernel<<<grid, block, 0, s>>>(dc, da, dbt, m, n, k);
    CUDA_CHECK(cudaGetLastError());
    Launch l{"mma_sync", "cudaLaunchKernel", "main"};
    l.grid = grid, l.block = block, l.args8 = {arg8(dc), arg8(da), arg8(dbt)}, l.roles = "wrr---";
    l.work.tensor_fp16 = 2.0 * m * n * k;
    l.work.min_bytes = 2.0 * m * k + 2.0 * n * k + 4.0 * m * n;
    expectLaunch(factsOf(mma_sync_kernel), l);
    checkpoint();
    std::vector<float> c(static_cast<size_t>(m) * n);
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(c.data(), dc, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
    g_expect.line("memcpy\tkind=DtoH\tbytes=" + std::to_string(c.size() * sizeof(float)));
    expectResult("mma_sync", c, referenceGemm(a_ref, bt_ref, m, n, k));
  }
  wgmmaSite<__half, false>("wgmma_fp16", s);
  wgmmaSite<__nv_bfloat16, true>("wgmma_bf16", s);
  pop();
}

// ---- Phase: local memory, bytes, argument roles ----------------------------------------------------

void phaseMemory(const Buffers& b, cudaStream_t s, int64_t l2_bytes) {
  push(true, "memory");
  {
    const int n = 1 << 16;  // a power of two
    const dim3 grid(n / 256), block(256);
    spill_kernel<<<grid, block, 0, s>>>(b.out, b.f32, n);
    CUDA_CHECK(cudaGetLastError());
    Launch l{"spill", "cudaLaunchKernel", "main"};
    l.grid = grid, l.block = block, l.args8 = {arg8(b.out), arg8(b.f32)}, l.roles = "wr-";
    l.work.ffma = 384.0 * n;
    l.work.fadd = 384.0 * n;
    l.work.fp32 = 3 * 384.0 * n;
    l.work.min_bytes = 8.0 * n;
    l.work.local_memory = true;
    expectLaunch(factsOf(spill_kernel), l);
    checkpoint();
  }
  {
    const int n = 1 << 16;
    int* idx = deviceAlloc<int>(n);
    std::vector<int> host(n);
    for (int i = 0; i < n; ++i) host[i] = (i * 7) & 63;
    upload(idx, host);
    const dim3 grid(n / 256), block(256);
    local_array_kernel<<<grid, block, 0, s>>>(b.fout, idx, b.f32, n);
    CUDA_CHECK(cudaGetLastError());
    Launch l{"local_array", "cudaLaunchKernel", "main"};
    l.grid = grid, l.block = block, l.args8 = {arg8(b.fout), arg8(idx), arg8(b.f32)}, l.roles = "wrr-";
    l.work.min_bytes = 12.0 * n;
    l.work.local_memory = true;
    expectLaunch(factsOf(local_array_kernel), l);
    checkpoint();
  }
  {
    // 64 MiB each way: larger than the L2, so DRAM must carry it. Reads: no more than it. Writes:
    // no more than it plus one L2 of dirty lines that earlier work (or a replay's memory restore)
    // may leave to be written back while this kernel runs.
    const size_t count = (64u << 20) / sizeof(float4);
    float4* in = deviceAlloc<float4>(count);
    float4* out = deviceAlloc<float4>(count);
    fillNonZero(in, count);
    const dim3 grid(static_cast<unsigned>(count / 256)), block(256);
    stream_copy_kernel<<<grid, block, 0, s>>>(out, in, count);
    CUDA_CHECK(cudaGetLastError());
    Launch l{"stream_copy", "cudaLaunchKernel", "main"};
    l.grid = grid, l.block = block, l.args8 = {arg8(out), arg8(in), static_cast<uint64_t>(count)}, l.roles = "wrn";
    const double bytes = 16.0 * static_cast<double>(count);
    l.work.min_bytes = 2 * bytes;
    l.work.max_dram_read = 1.02 * bytes + (1 << 20);
    l.work.max_dram_write = 1.02 * bytes + static_cast<double>(l2_bytes);
    l.work.bytes_once = true;
    expectLaunch(factsOf(stream_copy_kernel), l);
    checkpoint();
  }
  {
    // Argument roles: an interior pointer written, an unused pointer, an 8-byte integer and a
    // double, a buffer written at its last element only.
    const int n = 1 << 16;
    const size_t sparse_count = (4u << 20) / sizeof(float);
    float* in_a = deviceAlloc<float>(n);
    float* in_b = deviceAlloc<float>(n);
    fillNonZero(in_a, n);
    fillNonZero(in_b, n);
    float* out = deviceAlloc<float>(n + 256);
    float* inout = deviceAlloc<float>(n);
    float* unused = deviceAlloc<float>(n);
    float* sparse = deviceAlloc<float>(sparse_count);
    const long long sparse_index = static_cast<long long>(sparse_count) - 1;
    const double scale = 0.75;
    const dim3 grid(n / 256), block(256);
    roles_kernel<<<grid, block, 0, s>>>(in_a, out + 256, in_b, sparse_index, inout, scale, unused, sparse, n);
    CUDA_CHECK(cudaGetLastError());
    Launch l{"roles", "cudaLaunchKernel", "main"};
    l.grid = grid, l.block = block, l.roles = "rwrnwnrw-";
    l.args8 = {arg8(in_a), arg8(out + 256), arg8(in_b), arg8(sparse_index), arg8(inout), arg8(scale), arg8(unused),
               arg8(sparse)};
    l.work.fadd = n;
    l.work.ffma = n;
    l.work.fp32 = 3.0 * n;
    l.work.min_bytes = 20.0 * n;
    l.work.bytes_once = true;
    expectLaunch(factsOf(roles_kernel), l);
    checkpoint();
  }
  pop();
}

// ---- Phase: a dlopen()ed library and PTX JIT --------------------------------------------------------

std::string defaultDsoPath() {
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return "libfprof_validation_dso.so";
  exe[len] = '\0';
  std::string dir(exe);
  dir = dir.substr(0, dir.rfind('/'));
  return dir + "/../lib/libfprof_validation_dso.so";
}

void phaseModules(const Buffers& b, cudaStream_t s) {
  push(true, "modules");
  const int n = b.n;
  const dim3 block(256), grid = gridFor(n, 256);
  {
    const std::string path = g_opt.dso_path.empty() ? defaultDsoPath() : g_opt.dso_path;
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      std::fprintf(stderr, "validation_program: cannot dlopen %s: %s\n", path.c_str(), dlerror());
      std::exit(1);
    }
    auto describe = reinterpret_cast<ValidationDsoDescribeFn>(dlsym(lib, "validation_dso_describe"));
    auto launch = reinterpret_cast<ValidationDsoLaunchFn>(dlsym(lib, "validation_dso_launch"));
    if (describe == nullptr || launch == nullptr) {
      std::fprintf(stderr, "validation_program: %s lacks validation_dso_describe/launch\n", path.c_str());
      std::exit(1);
    }
    ValidationDsoKernel info{};
    if (int e = describe(&info); e != 0) {
      std::fprintf(stderr, "validation_program: validation_dso_describe failed: %d\n", e);
      std::exit(1);
    }
    const int iters = 11;
    if (int e = launch(b.out, b.f32, n, iters, 1.0001f, 0.5f, s); e != 0) {
      std::fprintf(stderr, "validation_program: validation_dso_launch failed: %d\n", e);
      std::exit(1);
    }
    FunctionFacts f;
    f.name = info.name;
    f.regs = info.registers_per_thread;
    f.local_bytes = info.local_bytes_per_thread;
    f.static_smem = info.static_shared_bytes;
    f.const_bytes = info.const_bytes;
    f.max_threads = info.max_threads_per_block;
    f.binary_version = info.binary_version;
    f.ptx_version = info.ptx_version;
    Launch l{"dlopen", "cudaLaunchKernel", "main"};
    l.grid = grid, l.block = block, l.args8 = {arg8(b.out), arg8(b.f32)}, l.roles = "wr----";
    l.work.ffma = 1.0 * n * iters;
    l.work.fadd = 1.0 * n * iters;
    l.work.fp32 = 3.0 * n * iters;
    l.work.min_bytes = 8.0 * n;
    l.work.bytes_once = true;
    expectLaunch(f, l);
    checkpoint();
  }
  {
    CUmodule module = nullptr;
    CU_CHECK(cuModuleLoadData(&module, kValidationJitPtx));
    CUfunction f = nullptr;
    CU_CHECK(cuModuleGetFunction(&f, module, "validation_jit_fma"));
    float* out = b.fout;
    const float* in = b.f32;
    int nn = n;
    float mm = 1.5f, cc = 0.25f;
    void* args[] = {&out, &in, &nn, &mm, &cc};
    CU_CHECK(cuLaunchKernel(f, grid.x, 1, 1, block.x, 1, 1, 0, s, args, nullptr));
    Launch l{"ptx_jit", "cuLaunchKernel", "main"};
    l.grid = grid, l.block = block, l.args8 = {arg8(out), arg8(in)}, l.roles = "wr---";
    l.work.ffma = 3.0 * n;
    l.work.fmul = 1.0 * n;
    l.work.fp32 = 7.0 * n;
    l.work.min_bytes = 8.0 * n;
    l.work.bytes_once = true;
    expectLaunch(factsOf(f), l);
    checkpoint();
  }
  pop();
}

// ---- Phase: CUDA graphs ----------------------------------------------------------------------------

void phaseGraphs(const Buffers& b, cudaStream_t s) {
  const int n = b.n;
  const dim3 block(256), grid = gridFor(n, 256);
  // Captured under one NVTX range, launched under another: kernels belong to the launch's range.
  cudaGraph_t captured = nullptr;
  push(true, "capture");
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  fp32_kernel<20><<<grid, block, 0, s>>>(b.out, b.f32, n, 2, 1.0001f, 0.5f);
  fp64_kernel<20><<<grid, block, 0, s>>>(b.out, b.f64, n, 3, 1.0000001, 0.5);
  scalar16_kernel<__half, 20><<<grid, block, 0, s>>>(b.out, b.f16, n, 4, __float2half(1.0f), __float2half(0.25f));
  CUDA_CHECK(cudaStreamEndCapture(s, &captured));
  pop();
  cudaGraphExec_t captured_exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&captured_exec, captured, 0));

  // Built by hand: fp32_kernel<21> -> packed16_kernel<__half2, 21>
  cudaGraph_t manual = nullptr;
  CUDA_CHECK(cudaGraphCreate(&manual, 0));
  int nn = n, iters_a = 5, iters_b = 3;
  float mm = 1.0001f, cc = 0.5f;
  unsigned* out = b.out;
  const float* in = b.f32;
  const __half2* in2 = b.h2;
  __half2 m2 = __floats2half2_rn(1.0f, 1.0f), c2 = __floats2half2_rn(0.5f, 0.25f);
  void* args_a[] = {&out, &in, &nn, &iters_a, &mm, &cc};
  void* args_b[] = {&out, &in2, &nn, &iters_b, &m2, &c2};
  cudaKernelNodeParams pa{}, pb{};
  pa.func = reinterpret_cast<void*>(fp32_kernel<21>);
  pa.gridDim = grid;
  pa.blockDim = block;
  pa.kernelParams = args_a;
  pb.func = reinterpret_cast<void*>(packed16_kernel<__half2, 21>);
  pb.gridDim = grid;
  pb.blockDim = block;
  pb.kernelParams = args_b;
  cudaGraphNode_t node_a = nullptr, node_b = nullptr;
  CUDA_CHECK(cudaGraphAddKernelNode(&node_a, manual, nullptr, 0, &pa));
  CUDA_CHECK(cudaGraphAddKernelNode(&node_b, manual, &node_a, 1, &pb));
  cudaGraphExec_t manual_exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&manual_exec, manual, 0));

  // Launched eagerly too, with the same shape and scalar arguments as two graph nodes: in metrics
  // mode those nodes' kernels take these launches' counters (same signature); the graphs'
  // other kernels have no such twin and keep a reason.
  fp32_kernel<20><<<grid, block, 0, s>>>(b.out, b.f32, n, 2, 1.0001f, 0.5f);
  fp32_kernel<21><<<grid, block, 0, s>>>(out, in, nn, iters_a, mm, cc);
  auto twin = [&](const char* label, const FunctionFacts& f, Work w) {
    Launch l{label, "cudaLaunchKernel", "main"};
    l.grid = grid, l.block = block, l.args8 = {arg8(b.out), arg8(b.f32)}, l.roles = "wr----", l.work = w;
    expectLaunch(f, l);
  };
  twin("graph_twin_fp32_20", factsOf(fp32_kernel<20>), fp32Work(n, 2));
  twin("graph_twin_fp32_21", factsOf(fp32_kernel<21>), fp32Work(n, 5));

  push(true, "graphs");
  push(false, "captured");
  const int captured_launches = 3, manual_launches = 2;
  for (int i = 0; i < captured_launches; ++i) CUDA_CHECK(cudaGraphLaunch(captured_exec, s));
  // Graph kernels are not replayed: counters are required only of those with an eager twin.
  auto graphLaunch = [&](const char* label, const FunctionFacts& f, Work w, int count, const char* kind,
                         bool twin = false) {
    Launch l{label, "cudaGraphLaunch", "main"};
    l.grid = grid, l.block = block, l.graph = kind, l.count = count, l.counters_required = twin, l.work = w;
    expectLaunch(f, l);
  };
  graphLaunch("graph_captured_fp32", factsOf(fp32_kernel<20>), fp32Work(n, 2), captured_launches, "captured", true);
  graphLaunch("graph_captured_fp64", factsOf(fp64_kernel<20>), fp64Work(n, 3), captured_launches, "captured");
  graphLaunch("graph_captured_half", factsOf(scalar16_kernel<__half, 20>), scalar16Work(n, 4, false),
              captured_launches, "captured");
  pop();
  checkpoint();
  push(false, "manual");
  for (int i = 0; i < manual_launches; ++i) CUDA_CHECK(cudaGraphLaunch(manual_exec, s));
  graphLaunch("graph_manual_fp32", factsOf(fp32_kernel<21>), fp32Work(n, 5), manual_launches, "manual", true);
  graphLaunch("graph_manual_half2", factsOf(packed16_kernel<__half2, 21>), packed16Work(n, 3, false),
              manual_launches, "manual");
  pop();
  CUDA_CHECK(cudaStreamSynchronize(s));
  checkpoint();
  pop();
  CUDA_CHECK(cudaGraphExecDestroy(captured_exec));
  CUDA_CHECK(cudaGraphExecDestroy(manual_exec));
  CUDA_CHECK(cudaGraphDestroy(captured));
  CUDA_CHECK(cudaGraphDestroy(manual));
}

// ---- Phase: several host threads at once ------------------------------------------------------------

class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void wait() {
    std::unique_lock lock(mu_);
    const int generation = generation_;
    if (++waiting_ == count_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_, waiting_ = 0, generation_ = 0;
};

struct WorkerBuffers {
  unsigned* out = nullptr;
  const float* in = nullptr;
  const __half2* in2 = nullptr;
  const __nv_bfloat16* inb = nullptr;
  int n = 0;
};

// Per iteration: fp32_kernel<100 + Tag> with <<<>>> (FLOPs depend on the tag, so counters given to
// the wrong launch show), packed16_kernel<__half2, 50> with cudaLaunchKernel (the same function
// from every thread), scalar16_kernel<bf16, 60 + Tag> with cuLaunchKernel in a nested range.
template <int Tag>
void workerIteration(const WorkerBuffers& wb, cudaStream_t s, int iter) {
  const int n = wb.n;
  const dim3 block(256), grid = gridFor(n, 256);
  push(false, "iter", static_cast<uint64_t>(iter));
  const int fp32_iters = 2 + 3 * Tag;
  const float c = 0.25f * static_cast<float>(iter + 1);
  fp32_kernel<100 + Tag><<<grid, block, 0, s>>>(wb.out, wb.in, n, fp32_iters, 1.0001f, c);
  CUDA_CHECK(cudaGetLastError());
  const std::string stream = "worker" + std::to_string(Tag);
  {
    Launch l{"worker_fp32", "cudaLaunchKernel", stream};
    l.grid = grid, l.block = block, l.args8 = {arg8(wb.out), arg8(wb.in)}, l.roles = "wr----";
    l.work = fp32Work(n, fp32_iters);
    expectLaunch(factsOf(fp32_kernel<100 + Tag>), l);
  }
  {
    int nn = n, iters = 4;
    unsigned* out = wb.out;
    const __half2* in2 = wb.in2;
    __half2 m2 = __floats2half2_rn(1.0f, 1.0f), c2 = __floats2half2_rn(c, c);
    void* args[] = {&out, &in2, &nn, &iters, &m2, &c2};
    CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(packed16_kernel<__half2, 50>), grid, block, args, 0, s));
    Launch l{"worker_half2", "cudaLaunchKernel", stream};
    l.grid = grid, l.block = block, l.args8 = {arg8(out), arg8(in2)}, l.roles = "wr----";
    l.work = packed16Work(n, iters, false);
    expectLaunch(factsOf(packed16_kernel<__half2, 50>), l);
  }
  push(true, "inner");
  {
    int nn = n, iters = 1 + Tag;
    unsigned* out = wb.out;
    const __nv_bfloat16* in = wb.inb;
    __nv_bfloat16 m = __float2bfloat16(1.0f), cb = __float2bfloat16(c);
    void* args[] = {&out, &in, &nn, &iters, &m, &cb};
    CU_CHECK(cuLaunchKernel(driverFunction(reinterpret_cast<const void*>(scalar16_kernel<__nv_bfloat16, 60 + Tag>)),
                            grid.x, 1, 1, block.x, 1, 1, 0, s, args, nullptr));
    Launch l{"worker_bf16", "cuLaunchKernel", stream};
    l.grid = grid, l.block = block, l.args8 = {arg8(out), arg8(in)}, l.roles = "wr----";
    l.work = scalar16Work(n, iters, true);
    expectLaunch(factsOf(scalar16_kernel<__nv_bfloat16, 60 + Tag>), l);
  }
  pop();
  pop();
}

void workerIterationFor(int tag, const WorkerBuffers& wb, cudaStream_t s, int iter) {
  switch (tag) {
    case 0: return workerIteration<0>(wb, s, iter);
    case 1: return workerIteration<1>(wb, s, iter);
    case 2: return workerIteration<2>(wb, s, iter);
    case 3: return workerIteration<3>(wb, s, iter);
    case 4: return workerIteration<4>(wb, s, iter);
    case 5: return workerIteration<5>(wb, s, iter);
    case 6: return workerIteration<6>(wb, s, iter);
    default: return workerIteration<7>(wb, s, iter);
  }
}

void phaseThreads(const Buffers& b, int threads, int repeat) {
  if (threads <= 0) return;
  // Threads with the same tag (t % 8) would share kernel names, stream labels and NVTX paths.
  threads = std::min(threads, 8);
  const int n = (1 << 16) + 5;
  std::vector<WorkerBuffers> wb(static_cast<size_t>(threads));
  for (auto& w : wb) {
    w.out = deviceAlloc<unsigned>(n);
    w.in = b.f32;
    w.in2 = b.h2;
    w.inb = b.bf16;
    w.n = n;
  }
  Barrier start(threads), done(threads);
  const nvtxRangeId_t span = startRange("threads_span");  // started here, ended by the last worker
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      CUDA_CHECK(cudaFree(nullptr));  // the primary context, current on this thread
      cudaStream_t s = nullptr;
      CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      start.wait();
      push(true, "worker " + std::to_string(t), static_cast<uint64_t>(t));
      for (int r = 0; r < repeat; ++r) workerIterationFor(t, wb[static_cast<size_t>(t)], s, r);
      pop();
      CUDA_CHECK(cudaStreamSynchronize(s));
      done.wait();
      if (t == threads - 1) endRange(span);
      CUDA_CHECK(cudaStreamDestroy(s));
    });
  }
  for (auto& th : pool) th.join();
  checkpoint();
}

// ---- main -----------------------------------------------------------------------------------------

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    auto count = [&](long& out) {
      const char* v = value();
      if (v == nullptr) return false;
      char* end = nullptr;
      out = std::strtol(v, &end, 10);
      return *end == '\0' && out >= 0;
    };
    long v = 0;
    if (a == "--expect") {
      const char* p = value();
      if (p == nullptr) return false;
      o.expect_path = p;
    } else if (a == "--expect-first-run") {
      o.expect_first_run = true;
    } else if (a == "--dso") {
      const char* p = value();
      if (p == nullptr) return false;
      o.dso_path = p;
    } else if (a == "--threads" && count(v)) {
      o.threads = static_cast<int>(v);
    } else if (a == "--repeat" && count(v) && v > 0) {
      o.repeat = static_cast<int>(v);
    } else if ((a == "--crash-after" || a == "--segv-after" || a == "--illegal-address-after") && count(v)) {
      if (o.crash != CrashKind::kNone) return false;
      o.crash_after = v;
      o.crash = a == "--crash-after" ? CrashKind::kAbort : a == "--segv-after" ? CrashKind::kSegv : CrashKind::kIllegalAddress;
    } else {
      return false;
    }
  }
  return !o.expect_path.empty();
}

}  // namespace

int main(int argc, char** argv) {
  if (!parse(argc, argv, g_opt)) {
    std::fprintf(stderr,
                 "usage: %s --expect FILE [--threads T] [--repeat R] [--dso LIB]\n"
                 "          [--crash-after N | --segv-after N | --illegal-address-after N]\n",
                 argv[0]);
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "validation_program: no CUDA device: skipped\n");
    return 77;
  }
  if (!g_expect.open(g_opt.expect_path, g_opt.expect_first_run)) {
    std::perror(g_opt.expect_path.c_str());
    return 1;
  }
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major < 9) {
    std::fprintf(stderr, "validation_program: %s is sm_%d%d; this program needs sm_90 (wgmma, clusters): skipped\n",
                 prop.name, prop.major, prop.minor);
    return 77;
  }
  g_expect.line("program\tpid=" + std::to_string(getpid()) + "\ttid=" + std::to_string(osThreadId()) +
                "\tthreads=" + std::to_string(std::min(g_opt.threads, 8)) + "\trepeat=" + std::to_string(g_opt.repeat) +
                "\tcrash=" + crashName(g_opt.crash) + "\tcrash_after=" + std::to_string(g_opt.crash_after));
  g_expect.line(std::string("device\tname=") + prop.name + "\tsms=" + std::to_string(prop.multiProcessorCount) +
                "\tcc=" + std::to_string(prop.major) + "." + std::to_string(prop.minor));
  g_domain = nvtxDomainCreateA(kDomainName);

  const Buffers b = makeBuffers((1 << 18) + 37);
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (g_opt.crash != CrashKind::kNone && g_opt.crash_after == 0) crashNow();

  long before = 0;
  auto said = [&](const char* phase) {
    std::printf("validation_program: %-11s %3ld kernels\n", phase, g_kernels.load() - before);
    std::fflush(stdout);
    before = g_kernels.load();
  };
  phaseLaunchApis(b, s, prop.multiProcessorCount);
  said("launch_apis");
  for (int rep = 0; rep < g_opt.repeat; ++rep) phaseArith(b, s, rep);
  said("arith");
  phaseTensor(s);
  said("tensor");
  phaseMemory(b, s, prop.l2CacheSize);
  said("memory");
  phaseModules(b, s);
  said("modules");
  phaseGraphs(b, s);
  said("graphs");
  CUDA_CHECK(cudaStreamSynchronize(s));
  phaseThreads(b, g_opt.threads, g_opt.repeat);
  said("threads");
  CUDA_CHECK(cudaDeviceSynchronize());
  if (g_opt.crash != CrashKind::kNone) {
    std::printf("validation_program: the run ended before %ld kernels; no crash\n", g_opt.crash_after);
  }
  const long kernels = g_kernels.load();
  g_expect.line("end\tkernels=" + std::to_string(kernels) + "\texit_code=0");
  std::printf("validation_program: %ld kernels (threads %d, repeat %d); expectations in %s\n", kernels,
              std::min(g_opt.threads, 8), g_opt.repeat, g_opt.expect_path.c_str());
  CUDA_CHECK(cudaStreamDestroy(s));
  return 0;
}
