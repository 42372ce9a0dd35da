// kernel_counter's numeric columns, as schema_tables.h declares them (the 19 after kernel_id), for
// code that handles them as one list: the second run's UPDATE (replay_merge.cpp) and the reader's
// check for values that are not finite.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

#include "fprof/core/model.h"
#include "schema_tables.h"

namespace fprof::core::detail {

inline constexpr size_t kCounterValueCount = 19;

template <size_t... I>
constexpr auto counterValueNames(std::index_sequence<I...>) {
  return std::array<const char*, sizeof...(I)>{std::get<I + 1>(kKernelCounterTable.columns).info.name...};
}
template <size_t... I>
constexpr auto counterValueMembers(std::index_sequence<I...>) {
  return std::array<std::optional<double> KernelCounters::*, sizeof...(I)>{
      std::get<I + 1>(kKernelCounterTable.columns).access.record...};
}

// Names as they appear in SQL, and the matching fields of a KernelCounters, in one order.
inline constexpr auto kCounterValueColumns = counterValueNames(std::make_index_sequence<kCounterValueCount>{});
inline constexpr auto kCounterValueMembers = counterValueMembers(std::make_index_sequence<kCounterValueCount>{});

// Pointers to the fields in column order; const where `c` is (KernelCounters or const KernelCounters).
template <class Counters>
auto counterValues(Counters& c) {
  std::array<decltype(&c.dram_read_bytes), kCounterValueCount> values{};
  for (size_t i = 0; i < kCounterValueCount; ++i) values[i] = &(c.*kCounterValueMembers[i]);
  return values;
}

// graph_launch_counter holds the same values, after process_id and correlation_id.
template <size_t... I>
constexpr bool graphLaunchCountersMatch(std::index_sequence<I...>) {
  return ((std::string_view(std::get<I + 2>(kGraphLaunchCounterTable.columns).info.name) ==
               std::string_view(kCounterValueColumns[I]) &&
           std::get<I + 2>(kGraphLaunchCounterTable.columns).access.inner == kCounterValueMembers[I]) &&
          ...);
}
static_assert(std::string_view(std::get<kCounterValueCount + 1>(kKernelCounterTable.columns).info.name) == "source",
              "kernel_counter: 19 value columns after kernel_id");
static_assert(graphLaunchCountersMatch(std::make_index_sequence<kCounterValueCount>{}),
              "graph_launch_counter holds kernel_counter's values, in its order");

}  // namespace fprof::core::detail
