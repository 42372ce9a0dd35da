// After a metrics run: the SASS of the functions that ran half-precision instructions, each
// function's code cut from the cubins the collector saved (FPROF_CUBIN_DIR) and all of them decoded
// in one run of the toolkit's nvdisasm, turns their hadd/hmul/hfma instruction counts into
// fp16/bf16 FLOPs per lane (core/sass_half.h).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "fprof/core/expected.h"
#include "fprof/core/replay_merge.h"

namespace fprof::runner {

// Completes `db_path` from the cubins in `cubin_dir`; returns a line for the user, "" when there
// was nothing to do.
std::string applySassStep(const std::string& db_path, const std::string& cubin_dir);

// After a second run of application replay counted by SASS patching (core/sass_pc.h): each
// launch's SASS counters, by correlation id, from the per-PC counts the collector wrote to
// `pc_file` and the counted functions' instructions (nvdisasm of the cubins the run saved in
// `cubin_dir`, named by CRC). `summary`: a line for the user.
core::Expected<core::LaunchRawCounters> sassCountersOfPatchedRun(const std::string& db_path,
                                                                 const std::string& pc_file,
                                                                 const std::string& cubin_dir, std::string& summary);

// How far a run by SASS patching got, from the per-PC counts it wrote to `pc_file`
// (core::sassPcProgressText).
std::string patchedRunProgress(const std::string& pc_file);

// While the program of a one-run metrics run is running: the functions its duplicates count, read
// from the per-PC files the collector appends in `cubin_dir` (one per database,
// core::duplicatesPcFile), cut from the cubins it saves there and decoded by nvdisasm as
// they appear, on a thread of `fprof run` (which otherwise only waits), so that the steps after the
// run (sassCountersOfPatchedRun, applySassStep) find most of them decoded. It needs the device's SM,
// which the collector marks in `cubin_dir` ("device.sm90"); with none or several SMs it decodes
// nothing. Functions it did not reach are decoded after the run, as without it.
class SassPrefetch {
 public:
  explicit SassPrefetch(std::string cubin_dir);
  ~SassPrefetch();
  // Stops watching and waits for the decoding under way (its results stay for the steps after).
  void finish();

 private:
  void watch();
  void decodeNewFunctions();
  std::set<std::string> newCountedNames();

  std::string cubin_dir_, nvdisasm_;
  int sm_ = 0;
  std::map<std::string, uint64_t> read_up_to_;  // per-PC file -> bytes of whole lines read
  std::set<std::string> names_seen_;
  size_t functions_decoded_ = 0;
  double decode_seconds_ = 0;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace fprof::runner
