// Shared helpers of the CUPTI probes in bench/probes/ (see README.md there): error checks, JSON result
// lines for summarize.py, a record of every CUPTI call's result, and a small range-profiler wrapper
// (auto range + kernel replay, the calls of collector/src/range_profiler.cpp) that also returns each
// range's name. Probes only: no fprof code depends on this.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace probe {

inline double nowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline const char* cuptiText(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : "unknown CUPTI result";
}

inline std::string jsonEscape(const std::string& in) {
  std::string out;
  for (char c : in) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// One JSON object per line, prefixed with "@json " so summarize.py finds it among the prose.
class Json {
 public:
  Json& str(const char* k, const std::string& v) { return add(k, "\"" + jsonEscape(v) + "\""); }
  Json& num(const char* k, double v) {  // NaN and infinities (a failed evaluation) become null
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return add(k, std::isfinite(v) ? std::string(buf) : std::string("null"));
  }
  Json& integer(const char* k, long long v) { return add(k, std::to_string(v)); }
  Json& boolean(const char* k, bool v) { return add(k, v ? "true" : "false"); }
  Json& strList(const char* k, const std::vector<std::string>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ",\"" : "\"") + jsonEscape(v[i]) + "\"";
    return add(k, s + "]");
  }
  Json& raw(const char* k, const std::string& json) { return add(k, json); }
  std::string text() const { return "{" + body_ + "}"; }
  void emit() const {
    std::printf("@json %s\n", text().c_str());
    std::fflush(stdout);
  }

 private:
  Json& add(const char* k, const std::string& v) {
    if (!body_.empty()) body_ += ",";
    body_ += "\"" + jsonEscape(k) + "\":" + v;
    return *this;
  }
  std::string body_;
};

// Every CUPTI call made through CUPTI_REC is remembered with its result (issue 13's question 4: an
// error or a silent skip?). `take()` returns "call:RESULT,..." for the calls since the last take.
class CallLog {
 public:
  CUptiResult add(const char* expr, CUptiResult r) {
    std::string name(expr);
    name = name.substr(0, name.find('('));
    std::lock_guard<std::mutex> lock(m_);
    if (!text_.empty()) text_ += ",";
    text_ += name + ":" + (r == CUPTI_SUCCESS ? std::string("OK") : std::string(cuptiText(r)));
    if (r != CUPTI_SUCCESS) {
      std::printf("  cupti %s -> %s (%d)\n", name.c_str(), cuptiText(r), static_cast<int>(r));
      std::fflush(stdout);
    }
    return r;
  }
  std::string take() {
    std::lock_guard<std::mutex> lock(m_);
    std::string out;
    out.swap(text_);
    return out;
  }

 private:
  std::mutex m_;
  std::string text_;
};

inline CallLog& calls() {
  static CallLog log;
  return log;
}

#define CUPTI_REC(call) ::probe::calls().add(#call, (call))

#define CUDA_OK(call)                                                                                  \
  do {                                                                                                 \
    cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess) {                                                                           \
      std::printf("FATAL %s at %s:%d: %s\n", #call, __FILE__, __LINE__, cudaGetErrorString(e_));      \
      std::exit(1);                                                                                    \
    }                                                                                                  \
  } while (0)

inline unsigned cuptiVersion() {
  uint32_t v = 0;
  cuptiGetVersion(&v);
  return v;
}

inline int driverVersion() {
  int v = 0;
  cuDriverGetVersion(&v);
  return v;
}

// The CUPTI 13.4 layout of CUpti_RangeProfiler_Enable_Params (cacheControlMode appended; 0 none,
// 1 all, 2 L2). Declared here so the probes build against the 13.0 headers; used only when asked.
struct RangeProfilerEnableParams134 {
  size_t structSize;
  void* pPriv;
  CUcontext ctx;
  CUpti_RangeProfiler_Object* pRangeProfilerObject;
  int cacheControlMode;
};
constexpr size_t kRangeProfilerEnableParams134Size =
    offsetof(RangeProfilerEnableParams134, cacheControlMode) + sizeof(int);

struct Range {
  std::string name;
  std::vector<double> values;
};

// Auto range + kernel replay on one context, as the collector sets it up, with range names. Several
// metric configurations can share the context's range-profiler object (addConfig/select): each has
// its own host object, config image and counter-data image, and select() points SetConfig at it.
class RangeProfiler {
 public:
  // cacheControl < 0: the 13.0 Enable params; >= 0: the 13.4 params with that cache-control mode.
  bool setup(CUcontext ctx, const std::vector<std::string>& metrics, size_t maxRanges, int cacheControl = -1) {
    ctx_ = ctx;
    max_ranges_ = maxRanges;
    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    if (CUPTI_REC(cuptiProfilerInitialize(&init)) != CUPTI_SUCCESS) return false;
    CUdevice dev = 0;
    cuCtxGetDevice(&dev);
    CUpti_Profiler_DeviceSupported_Params sup{CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE};
    sup.cuDevice = dev;
    sup.api = CUPTI_PROFILER_RANGE_PROFILING;
    if (CUPTI_REC(cuptiProfilerDeviceSupported(&sup)) != CUPTI_SUCCESS) return false;
    CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    chip.deviceIndex = static_cast<size_t>(dev);
    if (CUPTI_REC(cuptiDeviceGetChipName(&chip)) != CUPTI_SUCCESS) return false;
    chip_ = chip.pChipName;
    CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    avail.ctx = ctx_;
    if (CUPTI_REC(cuptiProfilerGetCounterAvailability(&avail)) != CUPTI_SUCCESS) return false;
    availability_.assign(avail.counterAvailabilityImageSize, 0);
    avail.pCounterAvailabilityImage = availability_.data();
    if (CUPTI_REC(cuptiProfilerGetCounterAvailability(&avail)) != CUPTI_SUCCESS) return false;
    if (cacheControl < 0) {
      CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
      enable.ctx = ctx_;
      if (CUPTI_REC(cuptiRangeProfilerEnable(&enable)) != CUPTI_SUCCESS) return false;
      object_ = enable.pRangeProfilerObject;
    } else {
      RangeProfilerEnableParams134 enable{};
      enable.structSize = kRangeProfilerEnableParams134Size;
      enable.ctx = ctx_;
      enable.cacheControlMode = cacheControl;
      if (CUPTI_REC(cuptiRangeProfilerEnable(reinterpret_cast<CUpti_RangeProfiler_Enable_Params*>(&enable))) !=
          CUPTI_SUCCESS)
        return false;
      object_ = enable.pRangeProfilerObject;
    }
    return addConfig(metrics) == 0 && select(0);
  }

  // Builds another metric configuration; returns its index, or -1.
  int addConfig(const std::vector<std::string>& metrics) {
    configs_.emplace_back();
    Config& c = configs_.back();
    c.names = metrics;
    for (const std::string& m : c.names) c.ptrs.push_back(m.c_str());
    CUpti_Profiler_Host_Initialize_Params host{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    host.pChipName = chip_.c_str();
    host.pCounterAvailabilityImage = availability_.data();
    if (CUPTI_REC(cuptiProfilerHostInitialize(&host)) != CUPTI_SUCCESS) return -1;
    c.host = host.pHostObject;
    CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    add.pHostObject = c.host;
    add.ppMetricNames = c.ptrs.data();
    add.numMetrics = c.ptrs.size();
    if (CUPTI_REC(cuptiProfilerHostConfigAddMetrics(&add)) != CUPTI_SUCCESS) return -1;
    CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    size.pHostObject = c.host;
    if (CUPTI_REC(cuptiProfilerHostGetConfigImageSize(&size)) != CUPTI_SUCCESS) return -1;
    c.config.assign(size.configImageSize, 0);
    CUpti_Profiler_Host_GetConfigImage_Params image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    image.pHostObject = c.host;
    image.configImageSize = c.config.size();
    image.pConfigImage = c.config.data();
    if (CUPTI_REC(cuptiProfilerHostGetConfigImage(&image)) != CUPTI_SUCCESS) return -1;
    CUpti_Profiler_Host_GetNumOfPasses_Params passes{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    passes.configImageSize = c.config.size();
    passes.pConfigImage = c.config.data();
    if (CUPTI_REC(cuptiProfilerHostGetNumOfPasses(&passes)) != CUPTI_SUCCESS) return -1;
    c.passes = passes.numOfPasses;
    const size_t bytes = counterDataSize(c);
    if (bytes == 0) return -1;
    c.image.assign(bytes, 0);
    return static_cast<int>(configs_.size()) - 1;
  }

  // Makes configuration i the one the next Start collects (a fresh counter-data image + SetConfig).
  // With REENABLE set, a switch to another configuration also disables the range-profiler object
  // and enables a new one first (only the 13.0 Enable parameters).
  bool select(int i) {
    if (i != current_ && std::getenv("REENABLE") != nullptr && object_ != nullptr) {
      CUpti_RangeProfiler_Disable_Params dis{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
      dis.pRangeProfilerObject = object_;
      if (CUPTI_REC(cuptiRangeProfilerDisable(&dis)) != CUPTI_SUCCESS) return false;
      CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
      enable.ctx = ctx_;
      if (CUPTI_REC(cuptiRangeProfilerEnable(&enable)) != CUPTI_SUCCESS) return false;
      object_ = enable.pRangeProfilerObject;
    }
    current_ = i;
    return resetImage();
  }

  CUptiResult start() {
    CUpti_RangeProfiler_Start_Params p{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = object_;
    return CUPTI_REC(cuptiRangeProfilerStart(&p));
  }

  CUptiResult stop() {
    CUpti_RangeProfiler_Stop_Params p{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = object_;
    return CUPTI_REC(cuptiRangeProfilerStop(&p));
  }

  // Decodes what was gathered since the last decode into `out` (appended), then readies the image.
  CUptiResult decode(std::vector<Range>& out, size_t& dropped) {
    Config& c = configs_[current_];
    CUpti_RangeProfiler_DecodeData_Params d{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    d.pRangeProfilerObject = object_;
    CUptiResult r = CUPTI_REC(cuptiRangeProfilerDecodeData(&d));
    dropped = d.numOfRangeDropped;
    if (r != CUPTI_SUCCESS) return r;
    CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    info.pCounterDataImage = c.image.data();
    info.counterDataImageSize = c.image.size();
    r = CUPTI_REC(cuptiRangeProfilerGetCounterDataInfo(&info));
    if (r != CUPTI_SUCCESS) return r;
    for (size_t i = 0; i < info.numTotalRanges; ++i) {
      Range range;
      CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri{
          CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
      ri.pCounterDataImage = c.image.data();
      ri.counterDataImageSize = c.image.size();
      ri.rangeIndex = i;
      ri.rangeDelimiter = "/";
      if (CUPTI_REC(cuptiRangeProfilerCounterDataGetRangeInfo(&ri)) == CUPTI_SUCCESS && ri.rangeName)
        range.name = ri.rangeName;
      else
        range.name = "<no name>";
      range.values.assign(c.ptrs.size(), -1.0);
      CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
      ev.pHostObject = c.host;
      ev.pCounterDataImage = c.image.data();
      ev.counterDataImageSize = c.image.size();
      ev.rangeIndex = i;
      ev.ppMetricNames = c.ptrs.data();
      ev.numMetrics = c.ptrs.size();
      ev.pMetricValues = range.values.data();
      CUPTI_REC(cuptiProfilerHostEvaluateToGpuValues(&ev));
      out.push_back(std::move(range));
    }
    return resetImage() ? CUPTI_SUCCESS : CUPTI_ERROR_UNKNOWN;
  }

  // Index of a metric in the current configuration's values, or -1.
  int index(const std::string& metric) const {
    const Config& c = configs_[current_];
    for (size_t i = 0; i < c.names.size(); ++i)
      if (c.names[i] == metric) return static_cast<int>(i);
    return -1;
  }
  size_t passes() const { return configs_.empty() ? 0 : configs_[current_].passes; }
  const std::string& chip() const { return chip_; }

 private:
  struct Config {
    std::vector<std::string> names;
    std::vector<const char*> ptrs;  // into names: a Config is never copied after addConfig fills it
    CUpti_Profiler_Host_Object* host = nullptr;
    std::vector<uint8_t> config, image;
    size_t passes = 0;
  };

  // Size of a counter-data image for configuration c (0 on failure); also makes c the metric
  // list the object sizes and initializes images for.
  size_t counterDataSize(Config& c) {
    CUpti_RangeProfiler_GetCounterDataSize_Params s{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    s.pRangeProfilerObject = object_;
    s.pMetricNames = c.ptrs.data();
    s.numMetrics = c.ptrs.size();
    s.maxNumOfRanges = max_ranges_;
    s.maxNumRangeTreeNodes = static_cast<uint32_t>(max_ranges_);
    return CUPTI_REC(cuptiRangeProfilerGetCounterDataSize(&s)) == CUPTI_SUCCESS ? s.counterDataSize : 0;
  }

  bool resetImage() {
    Config& c = configs_[current_];
    // The object keeps the metric list of its last GetCounterDataSize: with several
    // configurations, ask again for this one, or CounterDataImageInitialize fails (CUPTI 13.0:
    // CUPTI_ERROR_UNKNOWN).
    if (configs_.size() > 1 && counterDataSize(c) == 0) return false;
    std::fill(c.image.begin(), c.image.end(), uint8_t{0});
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    init.pRangeProfilerObject = object_;
    init.counterDataSize = c.image.size();
    init.pCounterData = c.image.data();
    if (CUPTI_REC(cuptiRangeProfilerCounterDataImageInitialize(&init)) != CUPTI_SUCCESS) return false;
    CUpti_RangeProfiler_SetConfig_Params sc{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = object_;
    sc.configSize = c.config.size();
    sc.pConfig = c.config.data();
    sc.counterDataImageSize = c.image.size();
    sc.pCounterDataImage = c.image.data();
    sc.range = CUPTI_AutoRange;
    sc.replayMode = CUPTI_KernelReplay;
    sc.maxRangesPerPass = max_ranges_;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    return CUPTI_REC(cuptiRangeProfilerSetConfig(&sc)) == CUPTI_SUCCESS;
  }

  CUcontext ctx_ = nullptr;
  std::string chip_;
  std::vector<uint8_t> availability_;
  std::deque<Config> configs_;  // deque: configs never move, so their names/ptrs stay valid
  CUpti_RangeProfiler_Object* object_ = nullptr;
  size_t max_ranges_ = 0;
  int current_ = 0;
};

// The metric sets of core/src/metric_sets.cpp the probes need (copied: probes do not link fprof).
inline std::vector<std::string> memoryOnePassMetrics() {
  return {"dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "gpu__time_duration.sum"};
}

inline std::vector<std::string> rooflineMetrics() {
  return {"dram__bytes_read.sum",
          "dram__bytes_write.sum",
          "lts__t_bytes.sum",
          "l1tex__t_bytes.sum",
          "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
          "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
          "sm__warps_active.avg.pct_of_peak_sustained_active",
          "gpu__time_duration.sum",
          "sm__sass_thread_inst_executed_op_dadd_pred_on.sum",
          "sm__sass_thread_inst_executed_op_dmul_pred_on.sum",
          "sm__sass_thread_inst_executed_op_dfma_pred_on.sum",
          "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
          "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
          "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
          "sm__sass_thread_inst_executed_op_hadd_pred_on.sum",
          "sm__sass_thread_inst_executed_op_hmul_pred_on.sum",
          "sm__sass_thread_inst_executed_op_hfma_pred_on.sum",
          "sm__ops_path_tensor_src_fp16.sum",
          "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
          "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
          "sm__ops_path_tensor_src_fp8.sum",
          "sm__ops_path_tensor_src_fp64.sum",
          "sm__ops_path_tensor_src_int8.sum",
          "smsp__inst_executed.sum"};
}

inline std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string(fallback);
}

}  // namespace probe
