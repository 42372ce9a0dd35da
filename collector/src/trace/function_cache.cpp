// Per-function attribute and parameter-layout cache; see function_cache.h.
#include "trace/function_cache.h"

#include <cstring>

#include "cupti/checks.h"
#include "trace/param_buffer.h"

namespace fprof::collector {

namespace {
// Words read per large parameter and per function: PyTorch's Array<char*, N> holds a few pointers
// at its start; a 4 KB struct of sizes would otherwise add hundreds of rows to every launch.
constexpr size_t kWordsPerLargeParam = 16;
constexpr size_t kWordsPerFunction = 48;

void addPointerWords(FunctionInfo& info, int32_t index, size_t offset, size_t size) {
  if (size == 8) {
    info.eight_byte_params.push_back({index, static_cast<int32_t>(offset), 0, 8});
    return;
  }
  const size_t first = (offset + 7) / 8 * 8;
  size_t words = 0;
  for (size_t at = first; at + 8 <= offset + size && words < kWordsPerLargeParam; at += 8, ++words) {
    if (info.eight_byte_params.size() >= kWordsPerFunction) return;
    info.eight_byte_params.push_back(
        {index, static_cast<int32_t>(at), static_cast<int32_t>(at - offset), static_cast<int32_t>(size)});
  }
}
}  // namespace

const FunctionInfo& FunctionCache::lookup(CUfunction handle) {
  thread_local CUfunction last_handle = nullptr;
  thread_local const FunctionInfo* last_info = nullptr;
  if (handle == last_handle && last_info != nullptr) return *last_info;
  std::lock_guard lock(mu_);
  auto it = infos_.find(handle);
  if (it == infos_.end()) it = infos_.emplace(handle, query(handle)).first;
  last_handle = handle;
  last_info = &it->second;
  return it->second;
}

FunctionInfo FunctionCache::query(CUfunction handle) {
  FunctionInfo info;
  // The runtime passes a CUkernel (library kernel) where the driver API passes a CUfunction;
  // cuFuncGetAttribute rejects the former, so resolve it to this context's CUfunction first.
  CUfunction function = handle;
  int local_bytes = 0;
  if (cuFuncGetAttribute(&local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, function) != CUDA_SUCCESS) {
    CUfunction resolved = nullptr;
    if (!FPROF_CU_OK(cuKernelGetFunction(&resolved, reinterpret_cast<CUkernel>(handle))) ||
        !FPROF_CU_OK(cuFuncGetAttribute(&local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, resolved))) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      return info;
    }
    function = resolved;
    resolved_.fetch_add(1, std::memory_order_relaxed);
  }
  info.local_bytes_per_thread = local_bytes;
  info.function = function;
  recordFacts(function, local_bytes);
  // cuFuncGetParamInfo answers CUDA_ERROR_INVALID_VALUE past the last parameter.
  for (size_t i = 0; i < 4096; ++i) {
    size_t offset = 0, size = 0;
    if (cuFuncGetParamInfo(function, i, &offset, &size) != CUDA_SUCCESS) break;
    addPointerWords(info, static_cast<int32_t>(i), offset, size);
    info.params.push_back({static_cast<int32_t>(offset), static_cast<int32_t>(size)});
  }
  return info;
}

void FunctionCache::recordFacts(CUfunction function, int local_bytes) {
  FunctionFacts facts;
  const char* name = nullptr;
  if (cuFuncGetName(&name, function) != CUDA_SUCCESS || name == nullptr) return;
  facts.name = name;
  facts.local_bytes_per_thread = local_bytes;
  auto attribute = [function](CUfunction_attribute a) -> std::optional<int> {
    int v = 0;
    if (cuFuncGetAttribute(&v, a, function) != CUDA_SUCCESS) return std::nullopt;
    return v;
  };
  facts.registers_per_thread = attribute(CU_FUNC_ATTRIBUTE_NUM_REGS);
  if (auto v = attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)) facts.static_shared_bytes = *v;
  if (auto v = attribute(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)) facts.const_bytes = *v;
  facts.max_threads_per_block = attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  facts.binary_version = attribute(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
  facts.ptx_version = attribute(CU_FUNC_ATTRIBUTE_PTX_VERSION);
  new_functions_.push_back(std::move(facts));
}

size_t FunctionCache::addProbedWords(const FunctionInfo& info,
                                     const std::vector<std::pair<int32_t, int32_t>>& pointer_words) {
  std::vector<FunctionInfo::Param> words = probedPointerWords(info, pointer_words);
  if (words.empty()) return 0;
  std::lock_guard lock(mu_);
  if (info.probed.get() != nullptr) return 0;
  probed_words_.push_back(std::move(words));
  info.probed.words.store(&probed_words_.back(), std::memory_order_release);
  return probed_words_.back().size();
}

std::vector<FunctionFacts> FunctionCache::takeNewFunctions() {
  std::lock_guard lock(mu_);
  std::vector<FunctionFacts> out;
  out.swap(new_functions_);
  return out;
}

namespace {
struct Fnv1a {
  uint64_t h = 1469598103934665603ull;
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
};

bool isDeviceAddress(uint64_t value) {
  if (value < (uint64_t{1} << 16)) return false;  // small integers are no addresses
  unsigned int type = 0;
  return cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, static_cast<CUdeviceptr>(value)) ==
         CUDA_SUCCESS;
}

// A parameter's bytes into the signature, leaving out every 8-byte word (aligned in the parameter
// buffer) that holds a device address: where the data lives does not change the work. Larger
// parameters are read word by word, so the pointers inside a struct (PyTorch's TensorIterator
// arguments, `std::array<char*, N>`) leave it too, and the same op on the next step's tensors is
// the same signature.
void addWithoutAddresses(std::initializer_list<Fnv1a*> hs, const uint8_t* bytes, size_t size, int32_t offset) {
  size_t done = 0;
  for (size_t w = (8 - static_cast<size_t>(offset) % 8) % 8; w + 8 <= size; w += 8) {
    uint64_t value = 0;
    std::memcpy(&value, bytes + w, 8);
    if (!isDeviceAddress(value)) continue;
    for (Fnv1a* h : hs) h->add(bytes + done, w - done);
    done = w + 8;
  }
  for (Fnv1a* h : hs) h->add(bytes + done, size - done);
}

}  // namespace

// One pass over the arguments for the three hashes (each device-address check is a driver call).
LaunchSignatures FunctionCache::signatures(CUfunction handle, const FunctionInfo& info, const LaunchShape& shape,
                                           void** kernel_params, void** extra) {
  const uint8_t* buffer = nullptr;
  size_t buffer_bytes = 0;
  if (kernel_params == nullptr && extra != nullptr) {
    const ParamBuffer b = paramBufferOf(extra);
    buffer = b.bytes;
    buffer_bytes = b.size;
    if (buffer == nullptr) return {};
  } else if (kernel_params == nullptr && !info.params.empty()) {
    return {};
  }
  if (info.local_bytes_per_thread < 0) return {};  // the function could not be queried
  // A cluster of one CTA is no cluster: a graph node reports 1x1x1 where a launch says nothing.
  LaunchShape hashed = shape;
  if (hashed.cluster[0] <= 1 && hashed.cluster[1] <= 1 && hashed.cluster[2] <= 1) {
    hashed.cluster[0] = hashed.cluster[1] = hashed.cluster[2] = 0;
  }
  LaunchShape without_cluster = hashed;
  without_cluster.cluster[0] = without_cluster.cluster[1] = without_cluster.cluster[2] = 0;
  const CUfunction function = info.function != nullptr ? info.function : handle;
  Fnv1a full, loose, graph;
  for (Fnv1a* h : {&full, &loose, &graph}) h->add(&function, sizeof function);
  full.add(&hashed, sizeof hashed);
  loose.add(&hashed, sizeof hashed);
  graph.add(&without_cluster, sizeof without_cluster);
  for (size_t i = 0; i < info.params.size(); ++i) {
    const FunctionInfo::Layout& p = info.params[i];
    const uint8_t* bytes = nullptr;
    if (buffer != nullptr) {
      if (static_cast<size_t>(p.offset_bytes) + static_cast<size_t>(p.size_bytes) > buffer_bytes) return {};
      bytes = buffer + p.offset_bytes;
    } else {
      bytes = static_cast<const uint8_t*>(kernel_params[i]);
    }
    const size_t size = static_cast<size_t>(p.size_bytes);
    if (size == 1) {
      full.add(bytes, 1);
    } else {
      addWithoutAddresses({&full, &loose, &graph}, bytes, size, p.offset_bytes);
    }
  }
  return {full.h, loose.h, graph.h};
}

}  // namespace fprof::collector
