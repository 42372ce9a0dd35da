// A progress line on stderr for the long steps of a command (reading a large database, the
// analysis, writing a report, merging, measuring ceilings): one line redrawn in place with "\r",
// saying what runs and for how long. Only where stderr is a terminal and the command was not
// asked to be quiet, so pipes, CI logs and golden files never see it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fprof::cli {

class Progress {
 public:
  // Databases smaller than this open and analyse in a moment: no line for them.
  static constexpr int64_t kLargeFileBytes = int64_t{32} << 20;

  // Draws on `out` when `enabled`; off by default (see forTerminal and forFile).
  explicit Progress(bool enabled, std::FILE* out = stderr,
                    std::chrono::milliseconds redraw = std::chrono::milliseconds(250));
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // On when stderr is a terminal and not quiet.
  static bool wanted(bool quiet);
  // The same, and only for a database (or the largest of several) of at least kLargeFileBytes.
  static bool wantedForFiles(bool quiet, const std::vector<std::string>& paths);

  // Starts a step: "reading run.fprof (1.2 GiB)"; the line shows it with the seconds it has run.
  void step(const std::string& what);
  // Clears the line; call before printing anything else on stderr. Idempotent.
  void done();
  bool enabled() const { return enabled_; }

 private:
  void draw();  // with mu_ held
  void tick();

  bool enabled_;
  std::FILE* out_;
  std::chrono::milliseconds redraw_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::string what_;
  std::chrono::steady_clock::time_point started_;
  size_t drawn_chars_ = 0;
  bool stop_ = false;
  std::thread ticker_;
};

}  // namespace fprof::cli
