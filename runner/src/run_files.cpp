// The files of a run (see run_files.h).
#include "fprof/runner/run_files.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "fprof/core/output.h"

namespace fprof::runner {
namespace {

namespace fs = std::filesystem;

std::string withCommas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string readyLine(const std::string& db, std::optional<int64_t> kernels) {
  const std::string count = !kernels ? "" : *kernels == 0 ? "no kernels; " :
                            withCommas(*kernels) + (*kernels == 1 ? " kernel; " : " kernels; ");
  return "profile ready: " + db + " (" + count + "next: fprof info " + db + ", fprof report " + db + ")";
}

// A new folder named `pattern` with its trailing XXXXXX made unique (mkdtemp); `what` says what
// it is for, in the error.
core::Expected<std::string> newFolder(const std::string& pattern, const std::string& what) {
  std::string folder = pattern;
  if (::mkdtemp(folder.data()) == nullptr) {
    return core::makeError("cannot create " + pattern + " for " + what + ": " + core::systemCause(errno));
  }
  return folder;
}

}  // namespace

std::string defaultOutput(const std::string& program) {
  std::string stem = fs::path(program).filename().string();
  if (stem.empty() || stem == "." || stem == "..") stem = "profile";
  std::error_code ec;
  std::string candidate = stem + ".fprof";
  for (int n = 2; fs::exists(candidate, ec); ++n) candidate = stem + "-" + std::to_string(n) + ".fprof";
  return candidate;
}

std::vector<std::string> runDatabases(const std::string& output) {
  std::vector<std::string> files;
  const fs::path out(output);
  const fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  const std::string stem = out.stem().string();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool same = e.path().filename() == out.filename();
    const bool sibling = name.rfind(stem + ".rank", 0) == 0 || name.rfind(stem + ".pid", 0) == 0;
    if ((same || sibling) && e.path().extension() == ".fprof") {
      files.push_back((out.parent_path().empty() ? e.path().filename() : e.path()).string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> producedFiles(const std::string& output, fs::file_time_type started) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const std::string& f : runDatabases(output)) {
    if (fs::last_write_time(f, ec) >= started) files.push_back(f);
  }
  return files;
}

std::string processTag(const std::string& file, const std::string& output) {
  const std::string stem = fs::path(output).stem().string();
  const std::string name = fs::path(file).stem().string();
  return name.size() > stem.size() && name.rfind(stem, 0) == 0 ? name.substr(stem.size()) : "";
}

void removeDatabaseFiles(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix, ec);
}

core::Expected<OutputPlace> OutputPlace::prepare(const std::string& output, bool force) {
  OutputPlace place;
  place.output_ = place.working_ = output;
  if (!force) return place;
  const fs::path out(output);
  // A name of its own: a folder left by an earlier fprof that was killed holds that run's
  // databases, and is kept.
  const auto folder = newFolder(
      (out.parent_path() / ("." + out.filename().string() + ".run" + std::to_string(getpid()) + "-XXXXXX")).string(),
      "the new files");
  if (!folder) return core::Error{folder.error()};
  place.folder_ = *folder;
  place.working_ = (fs::path(*folder) / out.filename()).string();
  return place;
}

core::Expected<std::string> makeScratchFolder(const std::string& output) {
  const fs::path out = fs::absolute(output);
  return newFolder((out.parent_path() / ("." + out.filename().string() + ".work-XXXXXX")).string(), "the saved cubins");
}

std::string OutputPlace::finalPath(const std::string& working) const {
  if (!staged()) return working;
  return (fs::path(output_).parent_path() / fs::path(working).filename()).string();
}

std::vector<std::string> OutputPlace::publish(const std::vector<std::string>& databases,
                                              std::vector<std::string>& problems) {
  std::vector<std::string> placed;
  for (const std::string& working : databases) {
    const std::string target = finalPath(working);
    if (target == working) {
      placed.push_back(working);
      continue;
    }
    // The old database's -wal and -shm would be read as the new one's.
    removeDatabaseFiles(target);
    std::error_code ec;
    fs::rename(working, target, ec);
    if (ec) {
      problems.push_back("could not move " + working + " to " + target + ": " + ec.message() + "; it stays there");
      continue;
    }
    for (const char* suffix : {"-wal", "-shm"}) {
      if (fs::exists(working + suffix, ec)) fs::rename(working + suffix, target + suffix, ec);
    }
    placed.push_back(target);
  }
  return placed;
}

void OutputPlace::discard() {
  if (!staged()) return;
  std::error_code ec;
  fs::remove_all(folder_, ec);
}

std::optional<int64_t> kernelCount(const std::string& db) {
  sqlite3* handle = nullptr;
  std::optional<int64_t> count;
  if (sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(handle, "SELECT count(*) FROM kernel", -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      count = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(handle);
  return count;
}

ReadyReport readyReport(const std::vector<std::string>& databases, const std::string& output) {
  struct Entry {
    std::string db;
    std::optional<int64_t> kernels;
  };
  std::vector<Entry> with, without;
  for (const std::string& db : databases) {
    const std::optional<int64_t> n = kernelCount(db);
    (n && *n == 0 ? without : with).push_back({db, n});
  }
  ReadyReport report;
  if (with.empty()) {  // no process ran a kernel: each is the profile
    for (const Entry& e : without) report.lines.push_back(readyLine(e.db, e.kernels));
    return report;
  }
  // The named output last: the program's own process; then by name.
  std::stable_sort(with.begin(), with.end(), [&](const Entry& a, const Entry& b) {
    return processTag(a.db, output).empty() < processTag(b.db, output).empty();
  });
  if (!without.empty()) {
    std::string names;
    for (const Entry& e : without) names += (names.empty() ? "" : ", ") + e.db;
    report.lines.push_back(std::to_string(without.size()) +
                           (without.size() == 1 ? " other process ran no kernel" : " other processes ran no kernel") +
                           " (a launcher, torch.compile's compile workers): " + names);
  }
  for (const Entry& e : with) report.lines.push_back(readyLine(e.db, e.kernels));
  return report;
}

}  // namespace fprof::runner
