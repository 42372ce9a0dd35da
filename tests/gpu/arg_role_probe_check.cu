// The argument-role probe against a real GPU, without CUPTI: each case launches a known kernel
// between ArgRoleProbe::before() and after(), as the launch callback will, and checks the roles,
// that the kernel's results are untouched, and that a capturing stream is left alone.
// Exit 0 = passed, 1 = a check failed, 77 = no GPU (skipped).
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "arg_roles/arg_role_probe.h"

using fprof::collector::ArgRole;
using fprof::collector::ArgRoleProbe;
using fprof::collector::LaunchArg;
using fprof::collector::LaunchArgs;
using fprof::collector::ProbeLaunch;
using fprof::collector::ProbeOutcome;

namespace {

__global__ void scale(const float* x, float* y, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.0f * x[i];
}
__global__ void addInto(const float* a, float* b, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) b[i] += a[i] + 1.0f;
}
__global__ void writeTail(float* buf, size_t begin, size_t count) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) buf[begin + i] = 7.0f;
}
__global__ void attentionLike(const float* q, const float* k, const float* v, float* o, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) o[i] = q[i] + k[i] * v[i];
}

struct Pointers {  // as PyTorch passes its elementwise kernels' tensors: inside one parameter
  const float* in;
  float* out;
};
__global__ void structArgs(int n, Pointers p) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p.out[i] = p.in[i] + 1.0f;
}

int g_failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s  %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++g_failures;
}

LaunchArgs pointerArgs(std::initializer_list<uint64_t> values) {
  LaunchArgs args;
  int32_t i = 0;
  for (uint64_t v : values) {
    args.push_back(LaunchArg{i, i * 8, 8, v});
    ++i;
  }
  return args;
}

template <typename Launch>
ProbeOutcome probe(ArgRoleProbe& p, const void* key, cudaStream_t stream, const LaunchArgs& args, Launch launch) {
  ProbeLaunch l;
  l.function_key = key;
  l.stream = reinterpret_cast<CUstream>(stream);
  l.symbol_name = "test_kernel";
  l.args = &args;
  ProbeOutcome gave_up;
  auto state = p.before(l, &gave_up);
  if (!state) return gave_up;
  launch();
  const cudaError_t launched = cudaGetLastError();
  return p.after(std::move(*state), launched == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED);
}

std::string rolesText(const ProbeOutcome& o) {
  std::string s = o.measured ? "" : "not measured: " + o.reason;
  for (const auto& r : o.roles) {
    s += " [" + std::to_string(r.arg_index) + " " + std::string(fprof::collector::argRoleName(r.role)) + " " +
         std::to_string(r.sampled_bytes) + "B]";
  }
  return s;
}

bool rolesAre(const ProbeOutcome& o, std::initializer_list<ArgRole> expected) {
  if (!o.measured || o.roles.size() != expected.size()) return false;
  size_t i = 0;
  for (ArgRole r : expected) {
    if (o.roles[i++].role != r) return false;
  }
  return true;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("arg_role_probe_check: no GPU\n");
    return 77;
  }
  cudaFree(nullptr);
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  ArgRoleProbe p;
  const size_t n = size_t{1} << 22;  // 16 MiB of floats
  float *x = nullptr, *y = nullptr;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  std::vector<float> host(n, 1.5f);
  cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(y, 0, n * sizeof(float));

  // Reads x, writes y; n is no pointer.
  {
    const auto args = pointerArgs({reinterpret_cast<uint64_t>(x), reinterpret_cast<uint64_t>(y), n});
    check(p.wanted(reinterpret_cast<const void*>(&scale)), "a new function is wanted");
    const auto t0 = std::chrono::steady_clock::now();
    const ProbeOutcome o = probe(p, reinterpret_cast<const void*>(&scale), stream, args,
                                 [&] { scale<<<264, 256, 0, stream>>>(x, y, n); });
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    check(rolesAre(o, {ArgRole::kRead, ArgRole::kWrite, ArgRole::kNotPointer}), "scale: x read, y write, n not a pointer:" + rolesText(o));
    check(!p.wanted(reinterpret_cast<const void*>(&scale)), "a measured function is not wanted again");
    std::printf("info  probe + launch of scale over 2 x 16 MiB: %.3f ms\n", ms);
    cudaMemcpy(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
    bool right = true;
    for (size_t i = 0; i < n; i += 4099) right = right && host[i] == 3.0f;
    check(right, "scale's result is what the kernel computed");
  }
  // The same buffer as input and output: one sample, both written.
  {
    const auto args = pointerArgs({reinterpret_cast<uint64_t>(y), reinterpret_cast<uint64_t>(y), n});
    const ProbeOutcome o = probe(p, reinterpret_cast<const void*>(&addInto), stream, args,
                                 [&] { addInto<<<264, 256, 0, stream>>>(y, y, n); });
    check(rolesAre(o, {ArgRole::kWrite, ArgRole::kWrite, ArgRole::kNotPointer}), "in-place: both arguments write:" + rolesText(o));
  }
  // Writes only the last 1000 floats of a 16 MiB buffer: the last sampled chunk ends there.
  {
    const auto args = pointerArgs({reinterpret_cast<uint64_t>(x), n - 1000, 1000});
    const ProbeOutcome o = probe(p, reinterpret_cast<const void*>(&writeTail), stream, args,
                                 [&] { writeTail<<<4, 256, 0, stream>>>(x, n - 1000, 1000); });
    check(rolesAre(o, {ArgRole::kWrite, ArgRole::kNotPointer, ArgRole::kNotPointer}), "tail write found:" + rolesText(o));
  }
  // q, k, v, o as views into one allocation: only o written.
  {
    float* qkvo = nullptr;
    const size_t m = 1 << 16;
    cudaMalloc(&qkvo, 4 * m * sizeof(float));
    const std::vector<float> ones(4 * m, 1.0f);
    cudaMemcpy(qkvo, ones.data(), 4 * m * sizeof(float), cudaMemcpyHostToDevice);
    const auto base = reinterpret_cast<uint64_t>(qkvo);
    const auto args = pointerArgs({base, base + m * 4, base + 2 * m * 4, base + 3 * m * 4, m});
    const ProbeOutcome o = probe(p, reinterpret_cast<const void*>(&attentionLike), stream, args, [&] {
      attentionLike<<<64, 256, 0, stream>>>(qkvo, qkvo + m, qkvo + 2 * m, qkvo + 3 * m, m);
    });
    check(rolesAre(o, {ArgRole::kRead, ArgRole::kRead, ArgRole::kRead, ArgRole::kWrite, ArgRole::kNotPointer}),
          "views into one allocation: q, k, v read, o write:" + rolesText(o));
    cudaFree(qkvo);
  }
  // Pointers inside a struct parameter, found through the function's parameter layout.
  {
    cudaFunction_t f = nullptr;
    cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(&structArgs));
    std::vector<fprof::collector::ParamLayout> layout;
    for (size_t i = 0;; ++i) {
      size_t offset = 0, bytes = 0;
      if (cuFuncGetParamInfo(reinterpret_cast<CUfunction>(f), i, &offset, &bytes) != CUDA_SUCCESS) break;
      layout.push_back({static_cast<int32_t>(i), static_cast<int32_t>(offset), static_cast<int32_t>(bytes)});
    }
    check(layout.size() == 2 && layout[1].size_bytes == 16, "cuFuncGetParamInfo: int n, then a 16-byte struct");
    int count = 1 << 20;
    Pointers ptrs{x, y};
    void* params[] = {&count, &ptrs};
    LaunchArgs words;
    fprof::collector::readParamWords(layout, params, nullptr, 0, 64, words);
    const ProbeOutcome o = probe(p, reinterpret_cast<const void*>(f), stream, words, [&] {
      cuLaunchKernel(reinterpret_cast<CUfunction>(f), 64, 1, 1, 256, 1, 1, 0, reinterpret_cast<CUstream>(stream), params,
                     nullptr);
    });
    check(rolesAre(o, {ArgRole::kRead, ArgRole::kWrite}) && o.roles[0].arg_index == 1 && o.roles[1].offset_bytes == 16,
          "struct parameter: in read, out write, at parameter 1:" + rolesText(o));
  }
  // A capturing stream is left alone and the function stays wanted.
  {
    cudaStream_t cap;
    cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking);
    static const char capture_key = 0;
    float* z = nullptr;
    cudaMalloc(&z, 4096);
    const auto args = pointerArgs({reinterpret_cast<uint64_t>(z), reinterpret_cast<uint64_t>(z), 1024});
    cudaStreamBeginCapture(cap, cudaStreamCaptureModeGlobal);
    ProbeLaunch l;
    l.function_key = &capture_key;  // a function not seen yet
    l.stream = reinterpret_cast<CUstream>(cap);
    l.args = &args;
    auto state = p.before(l);
    check(!state.has_value(), "no probe on a capturing stream");
    writeTail<<<1, 32, 0, cap>>>(z, 0, 32);
    cudaGraph_t graph = nullptr;
    check(cudaStreamEndCapture(cap, &graph) == cudaSuccess && graph != nullptr, "the capture is still valid");
    if (graph != nullptr) cudaGraphDestroy(graph);
    check(p.wanted(l.function_key), "a function seen only in a capture is still wanted");
    cudaFree(z);
    cudaStreamDestroy(cap);
  }
  check(!ArgRoleProbe::activeOnThisThread(), "the own-calls flag is down outside the probe");
  const auto stats = p.stats();
  std::printf("info  measured %llu functions, gave up %llu, sampled %llu bytes, waited %.3f ms\n",
              static_cast<unsigned long long>(stats.functions_measured),
              static_cast<unsigned long long>(stats.functions_given_up),
              static_cast<unsigned long long>(stats.bytes_sampled), static_cast<double>(stats.wait_ns) / 1e6);
  check(cudaDeviceSynchronize() == cudaSuccess && cudaGetLastError() == cudaSuccess, "no CUDA error left behind");
  cudaFree(x);
  cudaFree(y);
  cudaStreamDestroy(stream);
  std::printf("arg_role_probe_check: %s\n", g_failures == 0 ? "passed" : "FAILED");
  return g_failures == 0 ? 0 : 1;
}
