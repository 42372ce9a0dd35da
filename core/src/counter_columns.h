// kernel_counter's numeric columns in one order, for the writer's INSERT and the second run's
// UPDATE (replay_merge.cpp): names as they appear in SQL, and the matching fields of a row.
#pragma once

#include <array>
#include <optional>
#include <tuple>
#include <utility>

#include "fprof/core/model.h"

namespace fprof::core::detail {

inline constexpr const char* kCounterValueColumns[] = {
    "dram_read_bytes",   "dram_write_bytes",  "l2_bytes",          "l1_bytes",
    "flops_fp64",        "flops_fp32",        "flops_fp16",        "flops_bf16",
    "flops_tensor_fp16", "flops_tensor_bf16", "flops_tensor_tf32", "flops_tensor_fp8",
    "flops_tensor_fp64", "ops_tensor_int8",   "achieved_occupancy", "local_load_bytes",
    "local_store_bytes", "instructions",      "gpu_time_ns"};

// Pointers to the fields in column order; const where `c` is (KernelCounters or const KernelCounters).
template <class Counters>
auto counterValues(Counters& c) {
  return std::array{&c.dram_read_bytes,   &c.dram_write_bytes,  &c.l2_bytes,          &c.l1_bytes,
                    &c.flops_fp64,        &c.flops_fp32,        &c.flops_fp16,        &c.flops_bf16,
                    &c.flops_tensor_fp16, &c.flops_tensor_bf16, &c.flops_tensor_tf32, &c.flops_tensor_fp8,
                    &c.flops_tensor_fp64, &c.ops_tensor_int8,   &c.achieved_occupancy, &c.local_load_bytes,
                    &c.local_store_bytes, &c.instructions,      &c.gpu_time_ns};
}

static_assert(std::size(kCounterValueColumns) == std::tuple_size_v<decltype(counterValues(std::declval<KernelCounters&>()))>,
              "one name per field of counterValues");

}  // namespace fprof::core::detail
