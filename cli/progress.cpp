// The progress line (see progress.h).
#include "progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <vector>

namespace fprof::cli {

Progress::Progress(bool enabled, std::FILE* out, std::chrono::milliseconds redraw)
    : enabled_(enabled), out_(out), redraw_(redraw) {}

Progress::~Progress() { done(); }

bool Progress::wanted(bool quiet) { return !quiet && isatty(STDERR_FILENO) == 1; }

bool Progress::wantedForFiles(bool quiet, const std::vector<std::string>& paths) {
  if (!wanted(quiet)) return false;
  std::error_code ec;
  for (const std::string& p : paths) {
    const auto bytes = std::filesystem::file_size(p, ec);
    if (!ec && static_cast<int64_t>(bytes) >= kLargeFileBytes) return true;
  }
  return false;
}

void Progress::step(const std::string& what) {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    what_ = what;
    started_ = std::chrono::steady_clock::now();
    stop_ = false;
    draw();
  }
  if (!ticker_.joinable()) {
    try {
      ticker_ = std::thread([this] { tick(); });
    } catch (const std::system_error&) {
      // No thread: the line still names each step, without the running seconds.
    }
  }
}

void Progress::done() {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (drawn_chars_ > 0) {
    // Blank the line and return to its start, for whatever is printed next.
    std::fputs(("\r" + std::string(drawn_chars_, ' ') + "\r").c_str(), out_);
    std::fflush(out_);
    drawn_chars_ = 0;
  }
}

void Progress::draw() {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const std::string line = fmt::format("fprof: {} ... {:.0f} s", what_, seconds);
  // Shorter than the line before: pad, so nothing of it stays behind.
  const size_t pad = drawn_chars_ > line.size() ? drawn_chars_ - line.size() : 0;
  std::fputs(("\r" + line + std::string(pad, ' ')).c_str(), out_);
  std::fflush(out_);
  drawn_chars_ = line.size() + pad;
}

void Progress::tick() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    wake_.wait_for(lock, redraw_, [this] { return stop_; });
    if (!stop_) draw();
  }
}

}  // namespace fprof::cli
