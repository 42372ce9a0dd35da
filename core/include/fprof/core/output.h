// How fprof writes a file on its user's behalf (docs/outputs.md). Every writer (report, export,
// gate, merge, ceilings, the viewer's screenshots) goes through here, so every output follows the
// same rules: it never replaces a file it was not told to (--force), never one of the command's
// inputs (however the path names it: a hard link, a symlink), and never leaves half a file: the
// bytes go to a temporary file beside the target, renamed into place only once complete.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fprof/core/expected.h"

namespace fprof::core {

struct OutputRules {
  // Replace a file already at the path: --force, or a writer's documented default (the ceilings
  // cache). Never an input, never a directory.
  bool replace = false;
  // The files the command reads: never written over, whatever path names them.
  std::vector<std::string> inputs;
  // What is written, for messages: "the report", "the merged database".
  std::string what = "the output";
};

enum class OutputKind {
  kStream,    // bytes written through OutputFile::write
  kDatabase,  // a SQLite database written by core::Writer at temporaryPath()
};

// The checks a target must pass, made before the work that fills it so that a mistake costs
// nothing: a path is given, it is not a directory, not an input, and exists only where `replace`
// allows. Its directory must exist. Whether the directory is writable shows when the output is
// created (OutputFile::create), which gives the system's reason. "-" is refused: where a command
// can write to standard output, TextOutput takes "-" before a file is made.
Status checkOutputPath(const std::string& path, const OutputRules& rules);

// Two outputs of one command (gate --json and --markdown) naming the same file is a mistake,
// whichever would win: paths that are the same file, or will be, are refused, and so are two "-".
Status checkDistinctOutputs(const std::vector<std::pair<std::string, std::string>>& option_and_path);

// One output file. Text outputs write through write(); a database output is written by a
// core::Writer at temporaryPath(). Nothing is at the target until commit() succeeds; an output
// destroyed without commit() removes its temporary file (and a database's side files).
//
// A character device or a FIFO (/dev/null, /dev/stdout, a shell's process substitution) holds no
// file to lose: it is written in place, without --force and without a temporary file.
class OutputFile {
 public:
  static Expected<std::unique_ptr<OutputFile>> create(const std::string& path, const OutputRules& rules,
                                                      OutputKind kind = OutputKind::kStream);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Buffered; the first failure is kept and returned by this and every later call.
  Status write(std::string_view bytes);
  // Writes what is buffered, syncs and closes the file, then puts it at the target: without
  // `replace` by an exclusive rename (two writers racing for one path: exactly one wins, the
  // other fails and leaves the winner's file alone), with it by an atomic replace.
  Status commit();

  const std::string& path() const { return path_; }
  // Where a database output is written (a name beside the target); for a stream, the same file.
  const std::string& temporaryPath() const { return temp_path_; }
  // A message of the writer that filled temporaryPath() (SQLite's, "no space left on device"),
  // in terms of the path the user named.
  std::string inTermsOfTarget(std::string message) const;
  uint64_t bytesWritten() const { return bytes_written_; }

 private:
  OutputFile() = default;
  Status flushBuffer();
  Status place();
  Status fail(const std::string& doing, int err);
  void discard();

  std::string path_;       // the target as the user named it (messages)
  std::string target_;     // the file to put in place (a symlink's target, resolved)
  std::string temp_path_;  // the temporary file beside target_, or target_ when written in place
  OutputRules rules_;
  OutputKind kind_ = OutputKind::kStream;
  bool in_place_ = false;  // a device or FIFO
  int fd_ = -1;
  int registry_slot_ = -1;
  std::string buffer_;
  uint64_t bytes_written_ = 0;
  Status error_;
  bool committed_ = false;
};

// Where a command's text goes: a file (an OutputFile) or, for "-" or "", standard output, whose
// writes are checked too (a full disk behind a shell redirection is an error, not exit 0).
class TextOutput {
 public:
  static Expected<TextOutput> open(const std::string& path, const OutputRules& rules);
  Status write(std::string_view bytes);
  Status finish();
  bool toStandardOutput() const { return !file_; }
  uint64_t bytesWritten() const { return bytes_written_; }

 private:
  std::unique_ptr<OutputFile> file_;
  uint64_t bytes_written_ = 0;
};

// Standard output redirected onto one of the command's inputs (`fprof info run.fprof >>
// run.fprof`) would write into the file being read: refused, as a path naming an input is.
// TextOutput::open checks it for "-"; commands that print call it before they read.
Status checkStandardOutputIsNoInput(const std::vector<std::string>& inputs, const std::string& what);

// Writes to standard output through stdio, remembering the first failure and its cause.
Status writeStandardOutput(std::string_view bytes);
// Flushes standard output: every failure since the start, with the system's cause
// ("standard output: no space left on device"). main() calls it before returning.
Status finishStandardOutput();

// Removes the temporary files of outputs still being written when the process is stopped by
// SIGINT, SIGTERM, SIGHUP or SIGPIPE, then dies of the signal as it would have. For the
// commands that own no child (every command but `fprof run`, which forwards signals).
void removeTemporaryOutputsOnSignals();

// The system's reason for errno value `err`, in lower case as fprof's messages are written:
// "permission denied", "no space left on device", "is a directory", "read-only file system".
std::string systemCause(int err);

// A whole (small) input file: a configuration, a saved measurement. Errors name the cause the
// system gave; an empty file is an error too (`what` names the file in messages).
Expected<std::string> readInputFile(const std::string& path, const std::string& what);

}  // namespace fprof::core
