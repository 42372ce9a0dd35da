// The profiler session kept open across counted launches (see toggled_session.h).
#include "cupti/toggled_session.h"

#include <cupti.h>
#include <cupti_profiler_target.h>

#include <algorithm>

#include "cupti/range_profiler.h"

namespace fprof::collector {

namespace {
// Launches a pass may see while counting is off (the program's own, fprof's sweeps and
// duplicates) besides the counted ones: whether CUPTI counts them against maxLaunchesPerPass is
// not documented, so the bound is generous.
constexpr size_t kLaunchesPerCountedLaunch = 64;
}  // namespace

ToggledSession::~ToggledSession() { abandon(); }

bool ToggledSession::prepare(std::string& error) {
  pristine_ = image_;
  CUpti_Profiler_CounterDataImage_CalculateScratchBufferSize_Params size{};
  size.structSize = CUpti_Profiler_CounterDataImage_CalculateScratchBufferSize_Params_STRUCT_SIZE;
  size.counterDataImageSize = image_.size();
  size.pCounterDataImage = image_.data();
  FPROF_PROFILER_CALL(cuptiProfilerCounterDataImageCalculateScratchBufferSize(&size));
  scratch_.assign(size.counterDataScratchBufferSize, 0);
  return resetImage(error);
}

bool ToggledSession::resetImage(std::string& error) {
  std::copy(pristine_.begin(), pristine_.end(), image_.begin());
  CUpti_Profiler_CounterDataImage_InitializeScratchBuffer_Params init{};
  init.structSize = CUpti_Profiler_CounterDataImage_InitializeScratchBuffer_Params_STRUCT_SIZE;
  init.counterDataImageSize = image_.size();
  init.pCounterDataImage = image_.data();
  init.counterDataScratchBufferSize = scratch_.size();
  init.pCounterDataScratchBuffer = scratch_.data();
  FPROF_PROFILER_CALL(cuptiProfilerCounterDataImageInitializeScratchBuffer(&init));
  return true;
}

bool ToggledSession::open(std::string& error) {
  if (open_) return true;
  CUpti_Profiler_BeginSession_Params begin{};
  begin.structSize = CUpti_Profiler_BeginSession_Params_STRUCT_SIZE;
  begin.ctx = ctx_;
  begin.counterDataImageSize = image_.size();
  begin.pCounterDataImage = image_.data();
  begin.counterDataScratchBufferSize = scratch_.size();
  begin.pCounterDataScratchBuffer = scratch_.data();
  begin.range = user_ranges_ ? CUPTI_UserRange : CUPTI_AutoRange;
  begin.replayMode = CUPTI_UserReplay;
  begin.maxRangesPerPass = max_ranges_;
  begin.maxLaunchesPerPass = max_ranges_ * kLaunchesPerCountedLaunch;
  FPROF_PROFILER_CALL(cuptiProfilerBeginSession(&begin));
  open_ = true;

  CUpti_Profiler_SetConfig_Params config{};
  config.structSize = CUpti_Profiler_SetConfig_Params_STRUCT_SIZE;
  config.ctx = ctx_;
  config.pConfig = config_.data();
  config.configSize = config_.size();
  config.minNestingLevel = 1;
  config.numNestingLevels = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;
  CUpti_Profiler_BeginPass_Params pass{};
  pass.structSize = CUpti_Profiler_BeginPass_Params_STRUCT_SIZE;
  pass.ctx = ctx_;
  if (CUptiResult r = cuptiProfilerSetConfig(&config); r != CUPTI_SUCCESS) {
    error = profilerErrorText("cuptiProfilerSetConfig", r);
    abandon();
    return false;
  }
  if (CUptiResult r = cuptiProfilerBeginPass(&pass); r != CUPTI_SUCCESS) {
    error = profilerErrorText("cuptiProfilerBeginPass", r);
    abandon();
    return false;
  }
  return true;
}

bool ToggledSession::countOn(std::string& error) {
  if (!open(error)) return false;
  CUpti_Profiler_EnableProfiling_Params p{};
  p.structSize = CUpti_Profiler_EnableProfiling_Params_STRUCT_SIZE;
  p.ctx = ctx_;
  FPROF_PROFILER_CALL(cuptiProfilerEnableProfiling(&p));
  counting_ = true;
  return true;
}

bool ToggledSession::countOff(std::string& error) {
  if (!counting_) return true;
  counting_ = false;
  CUpti_Profiler_DisableProfiling_Params p{};
  p.structSize = CUpti_Profiler_DisableProfiling_Params_STRUCT_SIZE;
  p.ctx = ctx_;
  FPROF_PROFILER_CALL(cuptiProfilerDisableProfiling(&p));
  return true;
}

void ToggledSession::useUserRanges(bool user) {
  if (user == user_ranges_) return;
  abandon();
  user_ranges_ = user;
}

bool ToggledSession::pushRange(const char* name, std::string& error) {
  CUpti_Profiler_PushRange_Params p{};
  p.structSize = CUpti_Profiler_PushRange_Params_STRUCT_SIZE;
  p.ctx = ctx_;
  p.pRangeName = name;
  FPROF_PROFILER_CALL(cuptiProfilerPushRange(&p));
  return true;
}

bool ToggledSession::popRange(std::string& error) {
  CUpti_Profiler_PopRange_Params p{};
  p.structSize = CUpti_Profiler_PopRange_Params_STRUCT_SIZE;
  p.ctx = ctx_;
  FPROF_PROFILER_CALL(cuptiProfilerPopRange(&p));
  return true;
}

bool ToggledSession::close(size_t& dropped, std::string& error) {
  dropped = 0;
  if (!open_) return true;
  if (!countOff(error)) {
    abandon();
    return false;
  }
  CUpti_Profiler_EndPass_Params end{};
  end.structSize = CUpti_Profiler_EndPass_Params_STRUCT_SIZE;
  end.ctx = ctx_;
  CUpti_Profiler_FlushCounterData_Params flush{};
  flush.structSize = CUpti_Profiler_FlushCounterData_Params_STRUCT_SIZE;
  flush.ctx = ctx_;
  CUptiResult r = cuptiProfilerEndPass(&end);
  const char* failed = "cuptiProfilerEndPass";
  if (r == CUPTI_SUCCESS) {
    r = cuptiProfilerFlushCounterData(&flush);
    failed = "cuptiProfilerFlushCounterData";
  }
  abandon();  // unset the config and end the session, whatever the pass gave
  if (r != CUPTI_SUCCESS) {
    error = profilerErrorText(failed, r);
    return false;
  }
  dropped = flush.numRangesDropped;
  return true;
}

void ToggledSession::abandon() {
  if (counting_) {
    std::string ignored;
    (void)countOff(ignored);
  }
  if (!open_) return;
  open_ = false;
  CUpti_Profiler_UnsetConfig_Params unset{};
  unset.structSize = CUpti_Profiler_UnsetConfig_Params_STRUCT_SIZE;
  unset.ctx = ctx_;
  (void)cuptiProfilerUnsetConfig(&unset);
  CUpti_Profiler_EndSession_Params end{};
  end.structSize = CUpti_Profiler_EndSession_Params_STRUCT_SIZE;
  end.ctx = ctx_;
  (void)cuptiProfilerEndSession(&end);
}

}  // namespace fprof::collector
