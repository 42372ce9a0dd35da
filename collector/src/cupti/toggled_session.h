// Auto range with the pass begun once and profiling switched on and off around each counted
// launch: the CUPTI profiler API of cupti_profiler_target.h (deprecated in CUDA 13.0, still
// shipped), whose EnableProfiling/DisableProfiling leave the kernels launched while off uncounted.
// The range profiler has no such switch: counting one launch in the program's own run costs a
// cuptiRangeProfilerStart and Stop each (17.8 + 6.3 ms on an H100, bench/RESULTS.md).
// The counter-data image is the range profiler's (same layout; RangeProfiler sizes and
// initializes it) and is decoded the same way.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fprof::collector {

class ToggledSession {
 public:
  // `image` holds an initialized counter-data image and `config` the config image; both are the
  // caller's and must not move while the session is open. max_ranges: counted launches a pass.
  ToggledSession(CUcontext ctx, std::vector<uint8_t>& image, const std::vector<uint8_t>& config, size_t max_ranges)
      : ctx_(ctx), image_(image), config_(config), max_ranges_(max_ranges) {}
  ~ToggledSession();
  ToggledSession(const ToggledSession&) = delete;
  ToggledSession& operator=(const ToggledSession&) = delete;

  // Keeps the image as initialized (to reset it after each decode) and readies its scratch buffer.
  bool prepare(std::string& error);
  // Begins the session and its pass, if not open. Done before the L2 is emptied for the next
  // counted launch, not as counting begins: what the session writes to device memory as it begins
  // must reach DRAM before that launch, or its range counts it (2.9 MB of DRAM writes on the first
  // range of each session, H100, bench/RESULTS.md). countOn opens it otherwise. Not
  // opened at the end of a decode: a session still open as the process exits crashed it.
  bool open(std::string& error);
  bool countOn(std::string& error);
  bool countOff(std::string& error);
  // User ranges (pushRange/popRange delimit a range, a CUDA graph launch) instead of one range a
  // kernel launch: changed between sessions only, so the open one, whose ranges must have been
  // decoded, is ended first.
  void useUserRanges(bool user);
  bool pushRange(const char* name, std::string& error);
  bool popRange(std::string& error);
  // Ends the pass and the session, the ranges counted decoded into the image; `dropped` gets the
  // ranges CUPTI dropped.
  bool close(size_t& dropped, std::string& error);
  // The image as prepare found it, for the next session.
  bool resetImage(std::string& error);
  bool isOpen() const { return open_; }

 private:
  void abandon();  // ends whatever is open, results ignored (teardown, a failed close)

  CUcontext ctx_;
  std::vector<uint8_t>& image_;
  const std::vector<uint8_t>& config_;
  size_t max_ranges_;
  std::vector<uint8_t> pristine_, scratch_;
  bool open_ = false;
  bool counting_ = false;
  bool user_ranges_ = false;
};

}  // namespace fprof::collector
