// fprof-metrics-host: checks metric names and counts replay passes for a GPU chip with the CUPTI
// host API. Needs no GPU (the chip is named) and no running program; `fprof metrics list` runs it.
//   fprof-metrics-host [--chip GH100] (--list | METRIC...)
// Prints one line per metric, "ok NAME" or "unknown NAME", then "passes N" for all valid ones;
// with --list, the same for each of fprof's metric sets.
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <cuda.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fprof/core/metric_sets.h"

namespace {

std::string resultText(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : "unknown CUPTI error";
}

// The chip of GPU 0 when a driver and a GPU are there; empty otherwise. The driver is opened at
// run time, so this tool also runs where no driver is installed (CI).
std::string detectChip() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (driver == nullptr) return "";
  using InitFn = CUresult (*)(unsigned int);
  using CountFn = CUresult (*)(int*);
  auto init_fn = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
  auto count_fn = reinterpret_cast<CountFn>(dlsym(driver, "cuDeviceGetCount"));
  if (init_fn == nullptr || count_fn == nullptr || init_fn(0) != CUDA_SUCCESS) return "";
  int count = 0;
  if (count_fn(&count) != CUDA_SUCCESS || count == 0) return "";
  CUpti_Profiler_Initialize_Params init{};
  init.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
  if (cuptiProfilerInitialize(&init) != CUPTI_SUCCESS) return "";
  CUpti_Device_GetChipName_Params chip{};
  chip.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
  chip.deviceIndex = 0;
  if (cuptiDeviceGetChipName(&chip) != CUPTI_SUCCESS) return "";
  return chip.pChipName;
}

bool addsToConfig(const std::string& chip, const char* name) {
  CUpti_Profiler_Host_Initialize_Params probe{};
  probe.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
  probe.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  probe.pChipName = chip.c_str();
  if (cuptiProfilerHostInitialize(&probe) != CUPTI_SUCCESS) return false;
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{};
  add.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
  add.pHostObject = probe.pHostObject;
  add.ppMetricNames = &name;
  add.numMetrics = 1;
  const bool ok = cuptiProfilerHostConfigAddMetrics(&add) == CUPTI_SUCCESS;
  CUpti_Profiler_Host_Deinitialize_Params d{};
  d.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
  d.pHostObject = probe.pHostObject;
  cuptiProfilerHostDeinitialize(&d);
  return ok;
}

size_t passesFor(const std::string& chip, std::vector<const char*> names) {
  if (names.empty()) return 0;
  CUpti_Profiler_Host_Initialize_Params host{};
  host.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
  host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  host.pChipName = chip.c_str();
  if (cuptiProfilerHostInitialize(&host) != CUPTI_SUCCESS) return 0;
  size_t result = 0;
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{};
  add.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
  add.pHostObject = host.pHostObject;
  add.ppMetricNames = names.data();
  add.numMetrics = names.size();
  CUpti_Profiler_Host_GetConfigImageSize_Params size{};
  size.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
  size.pHostObject = host.pHostObject;
  if (cuptiProfilerHostConfigAddMetrics(&add) == CUPTI_SUCCESS &&
      cuptiProfilerHostGetConfigImageSize(&size) == CUPTI_SUCCESS) {
    std::vector<uint8_t> image(size.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params get{};
    get.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
    get.pHostObject = host.pHostObject;
    get.configImageSize = image.size();
    get.pConfigImage = image.data();
    CUpti_Profiler_Host_GetNumOfPasses_Params passes{};
    passes.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
    passes.configImageSize = image.size();
    passes.pConfigImage = image.data();
    if (cuptiProfilerHostGetConfigImage(&get) == CUPTI_SUCCESS &&
        cuptiProfilerHostGetNumOfPasses(&passes) == CUPTI_SUCCESS) {
      result = passes.numOfPasses;
    }
  }
  CUpti_Profiler_Host_Deinitialize_Params d{};
  d.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
  d.pHostObject = host.pHostObject;
  cuptiProfilerHostDeinitialize(&d);
  return result;
}

// Prints "ok NAME"/"unknown NAME" lines (indented by `indent`) and returns the pass count.
size_t report(const std::string& chip, const std::vector<std::string>& metrics, const char* indent) {
  std::vector<const char*> valid;
  for (const std::string& m : metrics) {
    const bool ok = addsToConfig(chip, m.c_str());
    std::printf("%s%-8s %s\n", indent, ok ? "ok" : "unknown", m.c_str());
    if (ok) valid.push_back(m.c_str());
  }
  return passesFor(chip, valid);
}

}  // namespace

int main(int argc, char** argv) {
  std::string chip;
  bool list = false;
  std::vector<std::string> metrics;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--chip") == 0 && i + 1 < argc) {
      chip = argv[++i];
    } else if (std::strcmp(argv[i], "--list") == 0) {
      list = true;
    } else {
      metrics.emplace_back(argv[i]);
    }
  }
  std::string source = "named";
  if (chip.empty()) {
    chip = detectChip();
    source = "this machine's GPU";
  }
  if (chip.empty()) {
    chip = "GH100";
    source = "no GPU here; Hopper assumed, name another with --chip";
  }
  CUpti_Profiler_Host_Initialize_Params host{};
  host.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
  host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  host.pChipName = chip.c_str();
  if (CUptiResult r = cuptiProfilerHostInitialize(&host); r != CUPTI_SUCCESS) {
    std::fprintf(stderr, "fprof-metrics-host: chip %s: %s\n", chip.c_str(), resultText(r).c_str());
    return 2;
  }
  CUpti_Profiler_Host_Deinitialize_Params d{};
  d.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
  d.pHostObject = host.pHostObject;
  cuptiProfilerHostDeinitialize(&d);
  std::printf("chip %s (%s)\n", chip.c_str(), source.c_str());
  if (list) {
    for (const fprof::core::MetricSet& set : fprof::core::builtinMetricSets()) {
      std::printf("\n%s: %s\n", set.name.c_str(), set.description.c_str());
      const size_t passes = report(chip, set.metrics, "  ");
      std::printf("  replay passes per kernel: %zu\n", passes);
    }
    return 0;
  }
  const size_t passes = report(chip, metrics, "");
  std::printf("passes %zu\n", passes);
  return 0;
}
