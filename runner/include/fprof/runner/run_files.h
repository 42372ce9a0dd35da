// The files of a run: the databases the collector writes (NAME.fprof, and beside it
// NAME.rank<N>.fprof per rank, NAME.pid<PID>.fprof for a process whose name was taken), where
// they are written before they replace older files (--force), and which of them holds the
// program's kernels.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fprof/core/expected.h"

namespace fprof::runner {

// "./model" -> "model.fprof", then "model-2.fprof", ... so an earlier profile is never overwritten.
std::string defaultOutput(const std::string& program);

// The named database and its per-rank / per-process siblings, as they are on disk now, sorted.
std::vector<std::string> runDatabases(const std::string& output);

// Those of runDatabases written since `started`.
std::vector<std::string> producedFiles(const std::string& output, std::filesystem::file_time_type started);

// The part of a database's name that tells the processes of one run apart: "" for `output`
// itself, ".rank3" for run.rank3.fprof beside run.fprof, ".pid812" for run.pid812.fprof.
std::string processTag(const std::string& file, const std::string& output);

// A database and the SQLite files beside it (-wal, -shm).
void removeDatabaseFiles(const std::string& path);

// A folder of this run's own beside `output` (.NAME.work-XXXXXX, made by mkdtemp), for what the
// run needs only until it ends: the saved cubins, and a second run's databases and per-PC counts.
// Removing it after the run touches no file of the user's, nor of another run of the same output
// (a concurrent one, or one killed before it cleaned up).
core::Expected<std::string> makeScratchFolder(const std::string& output);

// Where the collector writes. Without --force, at the output itself (the collector never replaces
// a file). With --force, in a fresh folder beside it (.NAME.run<PID>-XXXXXX), so that nothing old
// is touched until the run has written its databases: publish() then moves each over the file of
// the same name, and files of other ranks or processes stay as they were.
class OutputPlace {
 public:
  static core::Expected<OutputPlace> prepare(const std::string& output, bool force);

  const std::string& output() const { return output_; }          // as the user named it
  const std::string& workingOutput() const { return working_; }  // what the collector is told
  bool staged() const { return !folder_.empty(); }
  const std::string& folder() const { return folder_; }

  // The final path of a database written at `working` (its name beside output()).
  std::string finalPath(const std::string& working) const;
  // Moves each of `databases` (working paths) into place, replacing a file of the same name and its
  // -wal/-shm; the final paths, and a line for each one that could not be moved (it stays).
  std::vector<std::string> publish(const std::vector<std::string>& databases, std::vector<std::string>& problems);
  // Removes the staging folder and what is left in it.
  void discard();

 private:
  std::string output_, working_, folder_;
};

// How many kernel executions a database holds; none where it cannot be read.
std::optional<int64_t> kernelCount(const std::string& db);

// The databases of a run in the order `fprof run` names them, and what it says of them: those
// holding kernels last, the named output last of them (where the program's own process wrote it;
// a torch.compile worker or another side process writes NAME.pid<PID>.fprof), and those without
// kernels folded into one line.
struct ReadyReport {
  std::vector<std::string> lines;  // each printed as "[fprof] <line>"
};
ReadyReport readyReport(const std::vector<std::string>& databases, const std::string& output);

}  // namespace fprof::runner
