// fprof's own checkpoint around a profiled launch's duplicate (own_checkpoint.h).
#include "cupti/own_checkpoint.h"

#include <cupti_driver_cbid.h>

#include <algorithm>
#include <cstring>

#include "cupti/checks.h"
#include "trace/param_buffer.h"

namespace fprof::collector {
namespace {

template <typename P>
const P& paramsOf(const CUpti_CallbackData& cb) {
  return *static_cast<const P*>(cb.functionParams);
}

uint64_t deviceAddress(const CUdeviceptr* p) { return p != nullptr ? static_cast<uint64_t>(*p) : 0; }
uint64_t hostAddress(void* const* p) { return p != nullptr ? reinterpret_cast<uint64_t>(*p) : 0; }

// A per-thread-stream call's stream 0 is the calling thread's stream, not the legacy one.
CUstream perThread(CUstream stream) { return stream == nullptr ? CU_STREAM_PER_THREAD : stream; }

bool capturing(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// An asynchronous allocation (the call's parameters P): one a stream capture makes belongs to the
// graph (mapped while the graph runs), which the map cannot follow. `per_thread`: a _ptsz call.
template <typename P>
void trackAsyncAllocation(AllocationMap& map, const CUpti_CallbackData& cb, bool per_thread) {
  const P& p = paramsOf<P>(cb);
  if (capturing(per_thread ? perThread(p.hStream) : p.hStream)) {
    return map.refuse("the program allocates memory inside a captured CUDA graph");
  }
  map.addDevice(cb.context, deviceAddress(p.dptr), p.bytesize);
}

// Calls the map cannot follow: every later duplicate takes the CUPTI checkpoint.
const char* refusedCallText(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
      return "the program allocates managed memory";
    case CUPTI_DRIVER_TRACE_CBID_cuArrayCreate:
    case CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate:
    case CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate:
      return "the program creates CUDA arrays (a surface store writes them)";
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemAllocNode:
      return "the program allocates memory inside a CUDA graph";
    case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle:
    case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemPoolImportPointer:
    case CUPTI_DRIVER_TRACE_CBID_cuImportExternalMemory:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphicsMapResources:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphicsMapResources_ptsz:
      return "the program maps memory of another process or API";
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2:
      return "the program allocates through a driver call fprof does not follow";
    default:
      return nullptr;
  }
}

}  // namespace

const std::vector<CUpti_CallbackId>& allocationCallbackIds() {
  static const std::vector<CUpti_CallbackId> ids = {
      CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuMemMap,
      CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
      CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister,
      CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
      CUPTI_DRIVER_TRACE_CBID_cuArrayCreate,
      CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2,
      CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate,
      CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate,
      CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemAllocNode,
      CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle,
      CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemPoolImportPointer,
      CUPTI_DRIVER_TRACE_CBID_cuImportExternalMemory,
      CUPTI_DRIVER_TRACE_CBID_cuGraphicsMapResources,
      CUPTI_DRIVER_TRACE_CBID_cuGraphicsMapResources_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuMemAlloc,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost,
      CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister,
      CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2,
  };
  return ids;
}

bool isAllocationCall(CUpti_CallbackId cbid) {
  // Asked at every driver callback the collector gets, launches included: a table, not a search.
  static const std::vector<bool> table = [] {
    const std::vector<CUpti_CallbackId>& ids = allocationCallbackIds();
    std::vector<bool> t(*std::max_element(ids.begin(), ids.end()) + 1, false);
    for (CUpti_CallbackId id : ids) t[id] = true;
    return t;
  }();
  return cbid < table.size() && table[cbid];
}

void trackAllocationCall(AllocationMap& map, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  if (cb.callbackSite != CUPTI_API_EXIT || cb.functionParams == nullptr) return;
  if (cb.functionReturnValue == nullptr || *static_cast<const CUresult*>(cb.functionReturnValue) != CUDA_SUCCESS) {
    return;
  }
  if (const char* why = refusedCallText(cbid)) return map.refuse(why);
  const void* ctx = cb.context;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      const auto& p = paramsOf<cuMemAlloc_v2_params>(cb);
      return map.addDevice(ctx, deviceAddress(p.dptr), p.bytesize);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      const auto& p = paramsOf<cuMemAllocPitch_v2_params>(cb);
      return map.addDevice(ctx, deviceAddress(p.dptr), p.pPitch != nullptr ? *p.pPitch * p.Height : 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
      return trackAsyncAllocation<cuMemAllocAsync_params>(map, cb, false);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
      return trackAsyncAllocation<cuMemAllocAsync_ptsz_params>(map, cb, true);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
      return trackAsyncAllocation<cuMemAllocFromPoolAsync_params>(map, cb, false);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
      return trackAsyncAllocation<cuMemAllocFromPoolAsync_ptsz_params>(map, cb, true);
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      return map.removeDevice(paramsOf<cuMemFree_v2_params>(cb).dptr);
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
      return map.removeDevice(paramsOf<cuMemFreeAsync_params>(cb).dptr);
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      return map.removeDevice(paramsOf<cuMemFreeAsync_ptsz_params>(cb).dptr);
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      const auto& p = paramsOf<cuMemMap_params>(cb);
      if (ctx == nullptr) return map.refuse("the program maps memory with no context current");
      return map.addDevice(ctx, p.ptr, p.size);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      const auto& p = paramsOf<cuMemUnmap_params>(cb);
      return map.removeDeviceWithin(p.ptr, p.size);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
      const auto& p = paramsOf<cuMemHostAlloc_params>(cb);
      return map.addHost(hostAddress(p.pp), p.bytesize);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
      const auto& p = paramsOf<cuMemAllocHost_v2_params>(cb);
      return map.addHost(hostAddress(p.pp), p.bytesize);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2: {
      const auto& p = paramsOf<cuMemHostRegister_v2_params>(cb);
      // A device's I/O memory (a PCIe BAR) is no memory to read and write back with memcpy.
      if ((p.Flags & CU_MEMHOSTREGISTER_IOMEMORY) != 0) return map.refuse("the program registers I/O memory");
      return map.addHost(reinterpret_cast<uint64_t>(p.p), p.bytesize);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
      return map.removeHost(reinterpret_cast<uint64_t>(paramsOf<cuMemHostUnregister_params>(cb).p));
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      return map.removeHost(reinterpret_cast<uint64_t>(paramsOf<cuMemFreeHost_params>(cb).p));
    default:
      return;
  }
}

OwnCheckpoint::~OwnCheckpoint() { teardown(); }

bool OwnCheckpoint::setup(std::string& error) {
  if (CUresult r = cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) {
    error = cuErrorText("cuStreamCreate for the own checkpoint", r);
    return false;
  }
  return true;
}

bool OwnCheckpoint::covers(CUcontext ctx, const LaunchArguments& launch, std::vector<MemoryRange>& ranges,
                           std::string& why) {
  if (stream_ == nullptr) {
    why = "the own checkpoint has no stream";
    return false;
  }
  if (!allocations_.rangesOf(ctx, ranges)) {
    why = allocations_.refused();
    return false;
  }
  std::vector<MemoryRange> variables;
  if (!addModuleVariables(launch, variables, why)) return false;
  if (!argumentsPointIntoKnownMemory(ctx, launch, variables, why)) return false;
  ranges.insert(ranges.end(), variables.begin(), variables.end());
  return true;
}

bool OwnCheckpoint::addModuleVariables(const LaunchArguments& launch, std::vector<MemoryRange>& ranges,
                                       std::string& why) {
  ModuleWrites writes;
  if (launch.function == nullptr || launch.name == nullptr || !modules_.lookup(launch.name, writes)) {
    why = "the launched function's module was not seen loaded";
    return false;
  }
  if (!writes.outside_calls.empty()) {
    why = "its module calls " + writes.outside_calls.front() + " (outside the memory fprof saves)";
    return false;
  }
  if (writes.variables.empty()) return true;
  CUmodule module = nullptr;
  if (CUresult r = cuFuncGetModule(&module, launch.function); r != CUDA_SUCCESS) {
    why = cuErrorText("cuFuncGetModule", r);
    return false;
  }
  for (const std::string& name : writes.variables) {
    CUdeviceptr address = 0;
    size_t bytes = 0;
    if (cuModuleGetGlobal(&address, &bytes, module, name.c_str()) != CUDA_SUCCESS) {
      why = "its module's variable " + name + " was not found in the launched function's module";
      return false;
    }
    ranges.push_back({static_cast<uint64_t>(address), bytes, false});
  }
  return true;
}

// Each 8-byte word of the arguments that the driver knows as device memory must lie in memory the
// snapshot holds.
bool OwnCheckpoint::argumentsPointIntoKnownMemory(CUcontext ctx, const LaunchArguments& launch,
                                                  const std::vector<MemoryRange>& variables, std::string& why) {
  const ParamBuffer buffer = launch.kernel_params == nullptr ? paramBufferOf(launch.extra) : ParamBuffer{};
  auto known = [&](uint64_t value) {
    if (value < (uint64_t{1} << 16) || allocations_.contains(ctx, value)) return true;
    for (const MemoryRange& v : variables) {
      if (value - v.base < v.bytes) return true;
    }
    CUdeviceptr base = 0;
    size_t bytes = 0;
    return cuMemGetAddressRange(&base, &bytes, static_cast<CUdeviceptr>(value)) != CUDA_SUCCESS;
  };
  for (size_t i = 0; i < 4096; ++i) {
    size_t offset = 0, size = 0;
    if (cuFuncGetParamInfo(launch.function, i, &offset, &size) != CUDA_SUCCESS) break;
    const uint8_t* bytes = nullptr;
    if (buffer.bytes != nullptr && offset + size <= buffer.size) {
      bytes = buffer.bytes + offset;
    } else if (buffer.bytes == nullptr && launch.kernel_params != nullptr) {
      bytes = static_cast<const uint8_t*>(launch.kernel_params[i]);
    }
    if (bytes == nullptr) {
      why = "the launch's arguments could not be read";
      return false;
    }
    // Words at 8-byte offsets of the parameter buffer: where the compiler puts a pointer.
    for (size_t at = (8 - offset % 8) % 8; at + 8 <= size; at += 8) {
      uint64_t value = 0;
      std::memcpy(&value, bytes + at, sizeof value);
      if (!known(value)) {
        why = "argument " + std::to_string(i) + " points into device memory allocated where fprof did not see it";
        return false;
      }
    }
  }
  return true;
}

bool OwnCheckpoint::growScratch(uint64_t bytes, std::string& error) {
  if (bytes <= scratch_bytes_) return true;
  if (scratch_ != 0) cuMemFree(scratch_);
  scratch_ = 0;
  scratch_bytes_ = 0;
  const uint64_t want = bytes + bytes / 4;  // room for the program to grow a little
  if (CUresult r = cuMemAlloc(&scratch_, want); r != CUDA_SUCCESS) {
    error = cuErrorText("cuMemAlloc for the own checkpoint's copy", r);
    return false;
  }
  scratch_bytes_ = want;
  return true;
}

bool OwnCheckpoint::save(const std::vector<MemoryRange>& ranges, std::string& error) {
  saved_.clear();
  scratch_at_.clear();
  saved_host_.clear();
  host_copy_.clear();
  uint64_t device_bytes = 0, host_bytes = 0;
  for (const MemoryRange& r : ranges) {
    if (r.host) {
      saved_host_.push_back(r);
      host_bytes += r.bytes;
      continue;
    }
    saved_.push_back(r);
    scratch_at_.push_back(device_bytes);
    device_bytes += (r.bytes + 255) / 256 * 256;
  }
  if (!growScratch(device_bytes, error)) {
    saved_.clear();
    return false;
  }
  host_copy_.resize(host_bytes);
  size_t at = 0;
  for (const MemoryRange& r : saved_host_) {
    std::memcpy(host_copy_.data() + at, reinterpret_cast<const void*>(r.base), r.bytes);
    at += r.bytes;
  }
  saved_bytes_ = device_bytes + host_bytes;
  if (!copyAll(true, error)) {
    saved_.clear();
    saved_host_.clear();
    return false;
  }
  return true;
}

// The device ranges to the scratch or back, in one batch where the driver has it.
bool OwnCheckpoint::copyAll(bool to_scratch, std::string& error) {
  std::vector<CUdeviceptr> dsts, srcs;
  std::vector<size_t> sizes;
  for (size_t i = 0; i < saved_.size(); ++i) {
    const CUdeviceptr program = saved_[i].base, copy = scratch_ + scratch_at_[i];
    dsts.push_back(to_scratch ? copy : program);
    srcs.push_back(to_scratch ? program : copy);
    sizes.push_back(saved_[i].bytes);
  }
  if (!dsts.empty()) {
    CUmemcpyAttributes attributes{};
    attributes.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    size_t first = 0;
    CUresult r = cuMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), dsts.size(), &attributes, &first, 1, stream_);
    if (r == CUDA_ERROR_NOT_SUPPORTED) {  // an older driver: one copy a range
      r = CUDA_SUCCESS;
      for (size_t i = 0; i < dsts.size() && r == CUDA_SUCCESS; ++i) r = cuMemcpyAsync(dsts[i], srcs[i], sizes[i], stream_);
    }
    if (r != CUDA_SUCCESS) {
      error = cuErrorText(to_scratch ? "saving the program's memory (cuMemcpyBatchAsync)" : "restoring the program's memory", r);
      return false;
    }
  }
  if (CUresult r = cuStreamSynchronize(stream_); r != CUDA_SUCCESS) {
    error = cuErrorText("cuStreamSynchronize after the own checkpoint's copies", r);
    return false;
  }
  return true;
}

// Host memory goes back only where it changed: the program's other threads may fill its pinned
// buffers meanwhile, and what the duplicate did not change is theirs to keep.
bool OwnCheckpoint::restore(std::string& error) {
  if (!copyAll(false, error)) return false;
  constexpr size_t kPage = 4096;
  size_t at = 0;
  for (const MemoryRange& r : saved_host_) {
    auto* program = reinterpret_cast<uint8_t*>(r.base);
    for (size_t done = 0; done < r.bytes; done += kPage) {
      const size_t n = std::min(kPage, static_cast<size_t>(r.bytes) - done);
      if (std::memcmp(program + done, host_copy_.data() + at + done, n) != 0) {
        std::memcpy(program + done, host_copy_.data() + at + done, n);
      }
    }
    at += r.bytes;
  }
  return true;
}

void OwnCheckpoint::teardown() {
  if (scratch_ != 0) cuMemFree(scratch_);
  scratch_ = 0;
  scratch_bytes_ = 0;
  if (stream_ != nullptr) cuStreamDestroy(stream_);
  stream_ = nullptr;
}

}  // namespace fprof::collector
