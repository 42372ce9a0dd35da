// Device memory mapped with the driver's virtual memory management (cuMemCreate + cuMemMap, as
// PyTorch's expandable segments and JAX hold theirs), for the programs of tests/gpu_metrics.
#pragma once

#include <cuda.h>

#include <cstddef>

struct MappedMemory {
  CUdeviceptr va = 0;
  size_t bytes = 0;  // rounded up to the allocation granularity
  CUmemGenericAllocationHandle handle = 0;
};

// At least `bytes` of device 0's memory, mapped read-write; false where the driver refuses.
inline bool mapDeviceMemory(size_t bytes, MappedMemory& out) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  if (cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS) return false;
  out.bytes = (bytes + granularity - 1) / granularity * granularity;
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return cuMemCreate(&out.handle, out.bytes, &prop, 0) == CUDA_SUCCESS &&
         cuMemAddressReserve(&out.va, out.bytes, 0, 0, 0) == CUDA_SUCCESS &&
         cuMemMap(out.va, out.bytes, 0, out.handle, 0) == CUDA_SUCCESS &&
         cuMemSetAccess(out.va, out.bytes, &access, 1) == CUDA_SUCCESS;
}

inline bool unmapDeviceMemory(const MappedMemory& m) {
  return cuMemUnmap(m.va, m.bytes) == CUDA_SUCCESS && cuMemAddressFree(m.va, m.bytes) == CUDA_SUCCESS &&
         cuMemRelease(m.handle) == CUDA_SUCCESS;
}
