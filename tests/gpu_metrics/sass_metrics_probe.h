// The SASS Metrics API as the probes of tests/gpu_metrics use it: metrics configured by name, the
// records since the last flush read back with their metric names.
#pragma once

#include <cuda.h>
#include <cupti.h>
#include <cupti_sass_metrics.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fprof/core/metric_sets.h"
#include "range_profiler.h"

namespace fprof::gpu_test {

// The range profiler of `ctx` set up for the roofline set's hardware counters (`metrics`, the set
// without its SASS-instrumented ones), counting the program's own run (application replay, no
// cache control); false, with a line printed, where it cannot be.
inline bool setUpRooflineHardwareCounters(collector::RangeProfiler& profiler, CUcontext ctx,
                                          std::vector<std::string>& metrics) {
  for (const std::string& m : *core::expandMetricSelection("roofline")) {
    if (!core::isSassInstrumented(m)) metrics.push_back(m);
  }
  std::string error;
  if (!profiler.setup(ctx, 0, metrics, 16, collector::CacheControl::kNone, collector::ReplayMode::kApplication, error)) {
    std::printf("setup: %s\n", error.c_str());
    return false;
  }
  return true;
}

inline const char* cuptiText(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s != nullptr ? s : "?";
}

using SassMetricNames = std::map<uint64_t, std::string>;  // metric id -> name

// Sets device 0's SASS metrics to `names` (one value a PC for the whole GPU); false, with a line
// printed, where CUPTI refuses.
inline bool configureSassMetrics(const std::string& chip, const std::vector<const char*>& names,
                                 SassMetricNames& ids) {
  std::vector<CUpti_SassMetrics_Config> config;
  for (const char* m : names) {
    CUpti_SassMetrics_GetProperties_Params pp{CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE};
    pp.pChipName = chip.c_str();
    pp.pMetricName = m;
    if (CUptiResult r = cuptiSassMetricsGetProperties(&pp); r != CUPTI_SUCCESS) {
      std::printf("sass: properties of %s: %s\n", m, cuptiText(r));
      return false;
    }
    config.push_back({pp.metric.metricId, CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU});
    ids[pp.metric.metricId] = m;
  }
  CUpti_SassMetricsSetConfig_Params sc{CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
  sc.numOfMetricConfig = config.size();
  sc.pConfigs = config.data();
  sc.deviceIndex = 0;
  if (CUptiResult r = cuptiSassMetricsSetConfig(&sc); r != CUPTI_SUCCESS) {
    std::printf("sass: set config: %s\n", cuptiText(r));
    return false;
  }
  return true;
}

// The ranges the range profiler (auto range) counted for `launch` alone, the context drained before
// and after it; errors printed.
inline std::vector<std::vector<double>> rangesOfOneLaunch(collector::RangeProfiler& profiler,
                                                          const std::function<void()>& launch) {
  std::string error;
  auto drain = [] {
    if (CUresult r = cuCtxSynchronize(); r != CUDA_SUCCESS) std::printf("  cuCtxSynchronize: error %d\n", int(r));
  };
  drain();
  if (!profiler.start(error)) std::printf("  start: %s\n", error.c_str());
  launch();
  drain();
  std::vector<std::vector<double>> rows;
  if (!profiler.stopAndDecode(rows, error)) std::printf("  decode: %s\n", error.c_str());
  return rows;
}

struct SassRecord {
  std::string function;  // empty where CUPTI gave no name
  uint32_t pc = 0;
  std::string metric;
  uint64_t value = 0;
};

struct SassFlush {
  CUptiResult result = CUPTI_SUCCESS;  // of the data properties, then of the flush
  size_t patched_records = 0;          // patched instructions with data
  size_t instances = 0;                // values a patched instruction
  std::vector<SassRecord> records;     // one a patched instruction and value
};

// The records since the last flush of `ctx`.
inline SassFlush flushSassRecords(CUcontext ctx, const SassMetricNames& ids) {
  SassFlush out;
  CUpti_SassMetricsGetDataProperties_Params dp{CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE};
  dp.ctx = ctx;
  out.result = cuptiSassMetricsGetDataProperties(&dp);
  out.patched_records = dp.numOfPatchedInstructionRecords;
  out.instances = dp.numOfInstances;
  if (out.result != CUPTI_SUCCESS || dp.numOfPatchedInstructionRecords == 0 || dp.numOfInstances == 0) return out;
  std::vector<CUpti_SassMetrics_Data> data(dp.numOfPatchedInstructionRecords);
  std::vector<CUpti_SassMetrics_InstanceValue> values(data.size() * dp.numOfInstances);
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = {};
    data[i].structSize = sizeof(CUpti_SassMetrics_Data);
    data[i].pInstanceValues = &values[i * dp.numOfInstances];
  }
  CUpti_SassMetricsFlushData_Params fd{CUpti_SassMetricsFlushData_Params_STRUCT_SIZE};
  fd.ctx = ctx;
  fd.numOfPatchedInstructionRecords = data.size();
  fd.numOfInstances = dp.numOfInstances;
  fd.pMetricsData = data.data();
  out.result = cuptiSassMetricsFlushData(&fd);
  for (const CUpti_SassMetrics_Data& d : data) {
    for (size_t k = 0; k < dp.numOfInstances; ++k) {
      const auto id = ids.find(d.pInstanceValues[k].metricId);
      out.records.push_back({d.functionName != nullptr ? d.functionName : "", d.pcOffset,
                             id != ids.end() ? id->second : std::to_string(d.pInstanceValues[k].metricId),
                             d.pInstanceValues[k].value});
    }
  }
  return out;
}

}  // namespace fprof::gpu_test
