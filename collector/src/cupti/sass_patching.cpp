// The SASS Metrics API around profiled launches (see sass_patching.h). Call order from the SASS
// probe's callback_serial variants (bench/probes/sass_probe.cu at commit 66625e7), exact on every
// function on an H100.
#include "cupti/sass_patching.h"

#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <utility>

#include "cupti/range_profiler.h"  // FPROF_PROFILER_CALL, profilerErrorText
#include "metrics/lap_seconds.h"

namespace fprof::collector {

SassPatching::~SassPatching() { teardown(); }

namespace {

bool metricId(const char* chip, const char* name, uint64_t& id, std::string& error) {
  CUpti_SassMetrics_GetProperties_Params p{};
  p.structSize = CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE;
  p.pChipName = chip;
  p.pMetricName = name;
  FPROF_PROFILER_CALL(cuptiSassMetricsGetProperties(&p));
  id = p.metric.metricId;
  return true;
}

}  // namespace

bool SassPatching::setup(CUcontext ctx, int device_ordinal, std::string& error) {
  ctx_ = ctx;
  device_ = device_ordinal;
  if (!initializeProfilerFor(device_ordinal, CUPTI_PROFILER_SASS_METRICS, "CUPTI's SASS Metrics API", initialized_,
                             chip_, error)) {
    return false;
  }
  if (!metricId(chip_.c_str(), core::kPcWarpInstMetric, warp_inst_id_, error) ||
      !metricId(chip_.c_str(), core::kPcThreadInstMetric, thread_inst_id_, error) ||
      !metricId(chip_.c_str(), core::kPcLocalSectorsMetric, local_sectors_id_, error)) {
    return false;
  }
  std::vector<CUpti_SassMetrics_Config> config;
  for (uint64_t id : {warp_inst_id_, thread_inst_id_, local_sectors_id_}) {
    config.push_back({id, CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU});
  }
  CUpti_SassMetricsSetConfig_Params set{};
  set.structSize = CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE;
  set.numOfMetricConfig = config.size();
  set.pConfigs = config.data();
  set.deviceIndex = static_cast<uint32_t>(device_ordinal);
  FPROF_PROFILER_CALL(cuptiSassMetricsSetConfig(&set));
  configured_ = true;
  return true;
}

bool SassPatching::begin(std::string& error) {
  auto t = std::chrono::steady_clock::now();
  CUpti_SassMetricsEnable_Params p{};
  p.structSize = CUpti_SassMetricsEnable_Params_STRUCT_SIZE;
  p.ctx = ctx_;
  p.enableLazyPatching = 1;  // only the functions launched while enabled are patched
  FPROF_PROFILER_CALL(cuptiSassMetricsEnable(&p));
  enabled_ = true;
  seconds_.enable += lapSeconds(t);
  return true;
}

bool SassPatching::end(std::vector<core::SassPcFunction>& functions, std::string& error) {
  if (!enabled_) return false;
  auto t = std::chrono::steady_clock::now();
  const CUresult done = cuCtxSynchronize();
  seconds_.wait += lapSeconds(t);
  const bool flushed = done == CUDA_SUCCESS && flush(functions, error);
  if (done != CUDA_SUCCESS) error = "cuCtxSynchronize failed (" + std::to_string(static_cast<int>(done)) + ")";
  seconds_.read += lapSeconds(t);
  CUpti_SassMetricsDisable_Params p{};
  p.structSize = CUpti_SassMetricsDisable_Params_STRUCT_SIZE;
  p.ctx = ctx_;
  const CUptiResult disabled = cuptiSassMetricsDisable(&p);
  enabled_ = false;
  seconds_.disable += lapSeconds(t);
  if (flushed && disabled != CUPTI_SUCCESS) {
    error = profilerErrorText("cuptiSassMetricsDisable", disabled);
    return false;
  }
  if (flushed && p.numOfDroppedRecords > 0) {
    error = std::to_string(p.numOfDroppedRecords) + " SASS records were dropped";
    return false;
  }
  return flushed;
}

// Every record is one metric's value at one PC (GPU granularity: one instance).
bool SassPatching::flush(std::vector<core::SassPcFunction>& functions, std::string& error) {
  CUpti_SassMetricsGetDataProperties_Params props{};
  props.structSize = CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE;
  props.ctx = ctx_;
  FPROF_PROFILER_CALL(cuptiSassMetricsGetDataProperties(&props));
  if (props.numOfPatchedInstructionRecords == 0 || props.numOfInstances == 0) return true;
  const size_t records = props.numOfPatchedInstructionRecords, instances = props.numOfInstances;
  std::vector<CUpti_SassMetrics_Data> data(records);
  std::vector<CUpti_SassMetrics_InstanceValue> values(records * instances);
  for (size_t i = 0; i < records; ++i) {
    data[i] = CUpti_SassMetrics_Data{};
    data[i].structSize = sizeof(CUpti_SassMetrics_Data);
    data[i].pInstanceValues = &values[i * instances];
  }
  CUpti_SassMetricsFlushData_Params fd{};
  fd.structSize = CUpti_SassMetricsFlushData_Params_STRUCT_SIZE;
  fd.ctx = ctx_;
  fd.numOfPatchedInstructionRecords = records;
  fd.numOfInstances = instances;
  fd.pMetricsData = data.data();
  FPROF_PROFILER_CALL(cuptiSassMetricsFlushData(&fd));
  std::map<std::pair<std::string, uint32_t>, std::map<uint32_t, core::SassPcCount>> by_function;
  for (CUpti_SassMetrics_Data& d : data) {
    if (d.functionName == nullptr) continue;
    core::SassPcCount& pc = by_function[{d.functionName, d.cubinCrc}][d.pcOffset];
    pc.pc = d.pcOffset;
    for (size_t k = 0; k < instances; ++k) {
      const CUpti_SassMetrics_InstanceValue& v = d.pInstanceValues[k];
      if (v.metricId == warp_inst_id_) pc.warp_inst += v.value;
      if (v.metricId == thread_inst_id_) pc.thread_inst += v.value;
      if (v.metricId == local_sectors_id_) pc.local_sectors += v.value;
    }
    std::free(const_cast<char*>(d.functionName));  // CUPTI's copy, freed by the caller as in NVIDIA's sample
    d.functionName = nullptr;
  }
  for (auto& [key, pcs] : by_function) {
    core::SassPcFunction f{key.first, key.second, {}};
    for (auto& [offset, pc] : pcs) f.pcs.push_back(pc);
    functions.push_back(std::move(f));
  }
  return true;
}

void SassPatching::teardown() {
  if (enabled_) {
    CUpti_SassMetricsDisable_Params p{};
    p.structSize = CUpti_SassMetricsDisable_Params_STRUCT_SIZE;
    p.ctx = ctx_;
    (void)cuptiSassMetricsDisable(&p);
    enabled_ = false;
  }
  if (configured_) {
    CUpti_SassMetricsUnsetConfig_Params p{};
    p.structSize = CUpti_SassMetricsUnsetConfig_Params_STRUCT_SIZE;
    p.deviceIndex = static_cast<uint32_t>(device_);
    (void)cuptiSassMetricsUnsetConfig(&p);
    configured_ = false;
  }
  if (initialized_) {
    CUpti_Profiler_DeInitialize_Params p{};
    p.structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE;
    (void)cuptiProfilerDeInitialize(&p);
    initialized_ = false;
  }
}

}  // namespace fprof::collector
