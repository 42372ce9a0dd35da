// The CUPTI range profiler for one context (see range_profiler.h). Call order from the CUPTI 13
// samples and the probe that ran on an H100 (shared/reference/cupti_probe/probe.cu).
#include "cupti/range_profiler.h"

#include <algorithm>
#include <cstddef>

#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

namespace fprof::collector {

std::string profilerErrorText(const char* call, CUptiResult result) {
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  std::string s = std::string(call) + " failed: " + (text ? text : "unknown CUPTI error");
  if (result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) {
    s += ". GPU performance counters are restricted to administrators on this machine "
         "(NVreg_RestrictProfilingToAdminUsers=1): run as root, or set the nvidia module option "
         "NVreg_RestrictProfilingToAdminUsers=0 and reload the driver";
  } else if (result == CUPTI_ERROR_HARDWARE_BUSY || result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    s += ". Another profiler (ncu, nsys, DCGM or a second CUPTI client) holds the counters: stop it and retry";
  }
  return s;
}


bool initializeProfilerFor(int device_ordinal, CUpti_Profiler_API api, const char* what, bool& initialized,
                           std::string& chip, std::string& error) {
  CUpti_Profiler_Initialize_Params init{};
  init.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
  FPROF_PROFILER_CALL(cuptiProfilerInitialize(&init));
  initialized = true;

  CUpti_Profiler_DeviceSupported_Params supported{};
  supported.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE;
  supported.cuDevice = device_ordinal;
  supported.api = api;
  FPROF_PROFILER_CALL(cuptiProfilerDeviceSupported(&supported));
  if (supported.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
    error = std::string("this GPU does not support ") + what + " (";
    if (supported.architecture != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) error += "architecture ";
    if (supported.vGpu != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) error += "vGPU ";
    if (supported.confidentialCompute != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) error += "confidential computing ";
    if (supported.cmp != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) error += "CMP ";
    if (supported.wsl != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) error += "WSL ";
    error += "unsupported)";
    return false;
  }

  CUpti_Device_GetChipName_Params name{};
  name.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
  name.deviceIndex = static_cast<size_t>(device_ordinal);
  FPROF_PROFILER_CALL(cuptiDeviceGetChipName(&name));
  chip = name.pChipName;
  return true;
}

RangeProfiler::~RangeProfiler() { teardown(); }

namespace {
// CUPTI 13.4's layout of CUpti_RangeProfiler_Enable_Params: the 13.0 fields, then cacheControlMode
// (0 none, 1 all caches, 2 L2). Declared here because fprof builds against the 13.0 headers; a
// 13.4 library reads the field because structSize says it is there.
struct RangeProfilerEnableParams134 {
  size_t structSize;
  void* pPriv;
  CUcontext ctx;
  CUpti_RangeProfiler_Object* pRangeProfilerObject;
  int cacheControlMode;
};
constexpr size_t kEnableParams134Size = offsetof(RangeProfilerEnableParams134, cacheControlMode) + sizeof(int);
constexpr int kCacheControlAll = 1;
constexpr uint32_t kFirstCuptiWithCacheControl = 130400;
}  // namespace

bool RangeProfiler::setup(CUcontext ctx, int device_ordinal, const std::vector<std::string>& metrics,
                          size_t max_ranges, CacheControl cache_control, ReplayMode replay, std::string& error) {
  ctx_ = ctx;
  max_ranges_ = max_ranges;
  metric_names_ = metrics;
  metric_ptrs_.clear();
  for (const std::string& m : metric_names_) metric_ptrs_.push_back(m.c_str());

  if (!initializeProfilerFor(device_ordinal, CUPTI_PROFILER_RANGE_PROFILING, "the CUPTI range profiler", initialized_,
                             chip_, error)) {
    return false;
  }
  if (!readCounterAvailability(error) || !buildConfigImage(error) || !choosePasses(replay, error)) return false;
  if (!chooseCacheControl(cache_control, error)) return false;
  if (!enable(error) || !resetCounterData(error)) return false;
  return !wantsToggledSession() || switchToToggledSession(error);
}

// Counter availability fails here, early, when counters need admin rights.
bool RangeProfiler::readCounterAvailability(std::string& error) {
  CUpti_Profiler_GetCounterAvailability_Params avail{};
  avail.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
  avail.ctx = ctx_;
  FPROF_PROFILER_CALL(cuptiProfilerGetCounterAvailability(&avail));
  availability_.assign(avail.counterAvailabilityImageSize, 0);
  avail.pCounterAvailabilityImage = availability_.data();
  FPROF_PROFILER_CALL(cuptiProfilerGetCounterAvailability(&avail));
  return true;
}

// The host object with the metrics added, and the config image it makes of them.
bool RangeProfiler::buildConfigImage(std::string& error) {
  CUpti_Profiler_Host_Initialize_Params host{};

  host.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
  host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  host.pChipName = chip_.c_str();
  host.pCounterAvailabilityImage = availability_.data();
  FPROF_PROFILER_CALL(cuptiProfilerHostInitialize(&host));
  host_ = host.pHostObject;

  // Add metrics one at a time first, so an unknown name is reported by name.
  for (const char* m : metric_ptrs_) {
    CUpti_Profiler_Host_GetMetricProperties_Params props{};
    props.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
    props.pHostObject = host_;
    props.pMetricName = m;
    if (cuptiProfilerHostGetMetricProperties(&props) != CUPTI_SUCCESS) {
      error = std::string("metric '") + m + "' is not available on " + chip_ +
              " (see 'fprof metrics list'; the rollup suffix must be one the metric has, e.g. .sum)";
      return false;
    }
  }
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{};
  add.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
  add.pHostObject = host_;
  add.ppMetricNames = metric_ptrs_.data();
  add.numMetrics = metric_ptrs_.size();
  FPROF_PROFILER_CALL(cuptiProfilerHostConfigAddMetrics(&add));

  CUpti_Profiler_Host_GetConfigImageSize_Params size{};

  size.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
  size.pHostObject = host_;
  FPROF_PROFILER_CALL(cuptiProfilerHostGetConfigImageSize(&size));
  config_.assign(size.configImageSize, 0);
  CUpti_Profiler_Host_GetConfigImage_Params image{};
  image.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
  image.pHostObject = host_;
  image.configImageSize = config_.size();
  image.pConfigImage = config_.data();
  FPROF_PROFILER_CALL(cuptiProfilerHostGetConfigImage(&image));
  return true;
}

// The passes the config image takes, and the replay that counts them (chooseReplay).
bool RangeProfiler::choosePasses(ReplayMode replay, std::string& error) {
  CUpti_Profiler_Host_GetNumOfPasses_Params passes{};

  passes.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
  passes.configImageSize = config_.size();
  passes.pConfigImage = config_.data();
  FPROF_PROFILER_CALL(cuptiProfilerHostGetNumOfPasses(&passes));
  passes_ = passes.numOfPasses;
  const std::optional<ReplayMode> chosen = chooseReplay(replay, metric_names_, passes_, error);
  if (!chosen) return false;
  replay_ = *chosen;
  return true;
}

// Whether the replay passes start with caches invalidated: CUPTI 13.4's cacheControlMode, under
// kernel replay only. Under application replay the collector invalidates the L2 itself (L2Sweep):
// CUPTI's cache control applies to replay passes.
bool RangeProfiler::chooseCacheControl(CacheControl cache_control, std::string& error) {
  uint32_t version = 0;
  const bool can_control = replay_ == ReplayMode::kKernel && cuptiGetVersion(&version) == CUPTI_SUCCESS &&
                           version >= kFirstCuptiWithCacheControl;
  if (cache_control == CacheControl::kAll && !can_control && replay_ == ReplayMode::kKernel) {
    error = "--cache-control all under kernel replay needs CUPTI 13.4 or newer (this process loaded CUPTI " +
            std::to_string(version) +
            ", whose kernel replay cannot invalidate caches between passes): use --replay application (fprof "
            "empties the L2 itself), or run with fprof run --cupti PATH/libcupti.so.13 from the nvidia-cuda-cupti "
            "wheel, or use --cache-control none";
    return false;
  }
  cache_control_applied_ = cache_control != CacheControl::kNone && can_control;
  return true;
}

bool RangeProfiler::switchToToggledSession(std::string& error) {
  if (CUptiResult r = disable(); r != CUPTI_SUCCESS) {
    error = profilerErrorText("cuptiRangeProfilerDisable", r);
    return false;
  }
  toggled_ = std::make_unique<ToggledSession>(ctx_, counter_data_, config_, max_ranges_);
  toggled_->useUserRanges(user_ranges_);
  if (toggled_->prepare(error)) return true;
  toggled_.reset();
  return false;
}

bool RangeProfiler::enable(std::string& error) {
  if (cache_control_applied_) {
    RangeProfilerEnableParams134 enable{};
    enable.structSize = kEnableParams134Size;
    enable.ctx = ctx_;
    enable.cacheControlMode = kCacheControlAll;
    FPROF_PROFILER_CALL(cuptiRangeProfilerEnable(reinterpret_cast<CUpti_RangeProfiler_Enable_Params*>(&enable)));
    object_ = enable.pRangeProfilerObject;
  } else {
    CUpti_RangeProfiler_Enable_Params enable{};
    enable.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
    enable.ctx = ctx_;
    FPROF_PROFILER_CALL(cuptiRangeProfilerEnable(&enable));
    object_ = enable.pRangeProfilerObject;
  }
  return true;
}

bool RangeProfiler::resetCounterData(std::string& error) {
  if (toggled_) return toggled_->resetImage(error);
  // The image is sized once and re-initialized in place afterwards: CUPTI keeps the pointer
  // given to SetConfig, so the buffer must never move while the profiler is enabled.
  if (counter_data_.empty()) {
    CUpti_RangeProfiler_GetCounterDataSize_Params size{};
    size.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
    size.pRangeProfilerObject = object_;
    size.pMetricNames = metric_ptrs_.data();
    size.numMetrics = metric_ptrs_.size();
    size.maxNumOfRanges = max_ranges_;
    size.maxNumRangeTreeNodes = static_cast<uint32_t>(max_ranges_);
    FPROF_PROFILER_CALL(cuptiRangeProfilerGetCounterDataSize(&size));
    counter_data_.assign(size.counterDataSize, 0);
  } else {
    std::fill(counter_data_.begin(), counter_data_.end(), uint8_t{0});
  }

  CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{};
  init.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
  init.pRangeProfilerObject = object_;
  init.counterDataSize = counter_data_.size();
  init.pCounterData = counter_data_.data();
  FPROF_PROFILER_CALL(cuptiRangeProfilerCounterDataImageInitialize(&init));

  CUpti_RangeProfiler_SetConfig_Params config{};

  config.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
  config.pRangeProfilerObject = object_;
  config.configSize = config_.size();
  config.pConfig = config_.data();
  config.counterDataImageSize = counter_data_.size();
  config.pCounterDataImage = counter_data_.data();
  config.range = user_ranges_ ? CUPTI_UserRange : CUPTI_AutoRange;
  config.replayMode = replay_ == ReplayMode::kApplication ? CUPTI_UserReplay : CUPTI_KernelReplay;
  config.maxRangesPerPass = max_ranges_;
  config.numNestingLevels = 1;
  config.minNestingLevel = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;
  FPROF_PROFILER_CALL(cuptiRangeProfilerSetConfig(&config));
  return true;
}

bool RangeProfiler::readyToCount(std::string& error) { return toggled_ == nullptr || toggled_->open(error); }

bool RangeProfiler::start(std::string& error) {
  if (started_) return true;
  if (toggled_) {
    if (!toggled_->countOn(error)) return false;
    started_ = true;
    return true;
  }
  CUpti_RangeProfiler_Start_Params p{};
  p.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE;
  p.pRangeProfilerObject = object_;
  FPROF_PROFILER_CALL(cuptiRangeProfilerStart(&p));
  started_ = true;
  return true;
}

bool RangeProfiler::stop(std::string& error) {
  if (!started_) return true;
  started_ = false;
  if (toggled_) return toggled_->countOff(error);
  CUpti_RangeProfiler_Stop_Params stop{};
  stop.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
  stop.pRangeProfilerObject = object_;
  FPROF_PROFILER_CALL(cuptiRangeProfilerStop(&stop));
  return true;
}

bool RangeProfiler::useUserRanges(bool user, std::string& error) {
  if (user == user_ranges_) return true;
  user_ranges_ = user;
  if (toggled_) {
    toggled_->useUserRanges(user);
    return true;
  }
  if (object_ == nullptr) return true;  // setup configures them
  if (user && replay_ != ReplayMode::kApplication) {
    error = "user ranges need application replay";
    return false;
  }
  // SetConfig cannot change the range mode of an enabled profiler (CUPTI 13.0, H100: the next
  // push or start fails), so the profiler is disabled and enabled again, with a counter-data
  // image of the new object (initializing the old image for it crashed inside CUPTI).
  if (CUptiResult r = disable(); r != CUPTI_SUCCESS) {
    error = profilerErrorText("cuptiRangeProfilerDisable", r);
    return false;
  }
  counter_data_.clear();
  return enable(error) && resetCounterData(error);
}

CUptiResult RangeProfiler::disable() {
  CUpti_RangeProfiler_Disable_Params p{};
  p.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
  p.pRangeProfilerObject = object_;
  const CUptiResult r = cuptiRangeProfilerDisable(&p);
  object_ = nullptr;
  return r;
}

bool RangeProfiler::pushRange(const char* name, std::string& error) {
  if (toggled_) return toggled_->pushRange(name, error);
  CUpti_RangeProfiler_PushRange_Params p{};
  p.structSize = CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE;
  p.pRangeProfilerObject = object_;
  p.pRangeName = name;
  FPROF_PROFILER_CALL(cuptiRangeProfilerPushRange(&p));
  return true;
}

bool RangeProfiler::popRange(std::string& error) {
  if (toggled_) return toggled_->popRange(error);
  CUpti_RangeProfiler_PopRange_Params p{};
  p.structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE;
  p.pRangeProfilerObject = object_;
  FPROF_PROFILER_CALL(cuptiRangeProfilerPopRange(&p));
  return true;
}

bool RangeProfiler::decode(std::vector<std::vector<double>>& rows, std::string& error,
                           std::vector<std::string>* names) {
  size_t dropped = 0;
  if (!collectRanges(dropped, error)) return false;

  CUpti_RangeProfiler_GetCounterDataInfo_Params info{};

  info.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
  info.pCounterDataImage = counter_data_.data();
  info.counterDataImageSize = counter_data_.size();
  FPROF_PROFILER_CALL(cuptiRangeProfilerGetCounterDataInfo(&info));

  for (size_t r = 0; r < info.numTotalRanges; ++r) {
    std::vector<double> values(metric_ptrs_.size(), 0.0);
    CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{};
    eval.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
    eval.pHostObject = host_;
    eval.pCounterDataImage = counter_data_.data();
    eval.counterDataImageSize = counter_data_.size();
    eval.rangeIndex = r;
    eval.ppMetricNames = metric_ptrs_.data();
    eval.numMetrics = metric_ptrs_.size();
    eval.pMetricValues = values.data();
    FPROF_PROFILER_CALL(cuptiProfilerHostEvaluateToGpuValues(&eval));
    rows.push_back(std::move(values));
    if (names != nullptr) names->push_back(rangeName(r));
  }
  if (dropped != 0) error = std::to_string(dropped) + " ranges were dropped by the range profiler";
  // A fresh image for the next batch: the decoded one is full.
  return resetCounterData(error) && dropped == 0;
}

// The ranges counted since the last decode, decoded into the counter-data image.
bool RangeProfiler::collectRanges(size_t& dropped, std::string& error) {
  if (toggled_) return toggled_->close(dropped, error);
  CUpti_RangeProfiler_DecodeData_Params decode{};
  decode.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
  decode.pRangeProfilerObject = object_;
  FPROF_PROFILER_CALL(cuptiRangeProfilerDecodeData(&decode));
  dropped = decode.numOfRangeDropped;
  return true;
}

std::string RangeProfiler::rangeName(size_t range_index) const {
  CUpti_RangeProfiler_CounterData_GetRangeInfo_Params info{};
  info.structSize = CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE;
  info.pCounterDataImage = counter_data_.data();
  info.counterDataImageSize = counter_data_.size();
  info.rangeIndex = range_index;
  info.rangeDelimiter = "/";
  if (cuptiRangeProfilerCounterDataGetRangeInfo(&info) != CUPTI_SUCCESS || info.rangeName == nullptr) return {};
  // CUPTI allocates the name; it documents no call to free it, so it is copied and left.
  return info.rangeName;
}

void RangeProfiler::teardown() {
  if (toggled_) {
    toggled_.reset();  // its session ended
    started_ = false;
  }
  if (object_) {
    if (started_) {
      CUpti_RangeProfiler_Stop_Params stop{};
      stop.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
      stop.pRangeProfilerObject = object_;
      cuptiRangeProfilerStop(&stop);
      started_ = false;
    }
    (void)disable();
  }
  if (host_) {
    CUpti_Profiler_Host_Deinitialize_Params p{};
    p.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
    p.pHostObject = host_;
    cuptiProfilerHostDeinitialize(&p);
    host_ = nullptr;
  }
  if (initialized_) {
    CUpti_Profiler_DeInitialize_Params p{};
    p.structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE;
    cuptiProfilerDeInitialize(&p);
    initialized_ = false;
  }
}

}  // namespace fprof::collector
