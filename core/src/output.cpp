// Output files written by the rules of output.h: checked targets, temporary files beside them,
// exclusive or atomic placement, every write checked, nothing half-written left behind.
#include "fprof/core/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>

namespace fprof::core {
namespace {

namespace fs = std::filesystem;

constexpr size_t kBufferBytes = size_t{1} << 20;
constexpr const char* kDatabaseSideFiles[] = {"-wal", "-shm", "-journal"};

struct FileId {
  dev_t device;
  ino_t inode;
  bool operator==(const FileId& o) const { return device == o.device && inode == o.inode; }
};

// The file a path names, through symlinks; nothing when there is none.
std::optional<FileId> fileId(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

std::string parentOf(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// A symlink's final target, so that the temporary file sits beside the file replaced (same file
// system, so the rename is atomic) and the link itself is kept. Gives up after 40 links (a loop).
std::string resolveSymlinks(const std::string& path) {
  std::string at = path;
  for (int depth = 0; depth < 40; ++depth) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(at, ec))) return at;
    const fs::path link = fs::read_symlink(at, ec);
    if (ec) return at;
    at = link.is_absolute() ? link.string() : (fs::path(parentOf(at)) / link).string();
  }
  return at;
}

// The input `path` names, if any: the same file by device and inode.
std::optional<std::string> inputNamedBy(const std::string& path, const std::vector<std::string>& inputs) {
  const std::optional<FileId> out = fileId(path);
  if (!out) return std::nullopt;
  for (const std::string& in : inputs) {
    if (fileId(in) == out) return in;
  }
  return std::nullopt;
}

// The input that standard output is (a shell's `>> run.fprof`), when it is a regular file.
std::optional<std::string> inputStandardOutputIs(const std::vector<std::string>& inputs) {
  struct stat st {};
  if (::fstat(STDOUT_FILENO, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const FileId out{st.st_dev, st.st_ino};
  for (const std::string& in : inputs) {
    if (fileId(in) == out) return in;
  }
  return std::nullopt;
}

Status inputRefusal(const std::string& path, const std::string& input, const OutputRules& rules) {
  if (input == path) {
    return makeError(path + " is an input of this command; write " + rules.what + " to another file");
  }
  return makeError(path + " is the same file as the input " + input + "; write " + rules.what + " to another file");
}

Status missingDirectory(const std::string& path, const std::string& target) {
  const std::string dir = parentOf(target);
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return {};
    return makeError(path + ": " + dir + " is not a directory");
  }
  if (errno == ENOENT) return makeError(path + ": the directory " + dir + " does not exist");
  return makeError(path + ": " + dir + ": " + systemCause(errno));
}

// A name beside the target no other writer picks: the process id and 64 random bits. The
// target's name is cut so that the temporary name fits the file system's 255 bytes.
std::string temporaryName(const std::string& target) {
  static std::mt19937_64 random{std::random_device{}()};
  std::string name = fs::path(target).filename().string().substr(0, 160);
  char tail[64];
  std::snprintf(tail, sizeof tail, ".fprof-%ld-%016llx.tmp", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(random()));
  return (fs::path(parentOf(target)) / ("." + name + tail)).string();
}

// Temporary files of outputs being written, for the signal handler: fixed slots of C strings
// (a handler may not allocate). An output that finds no free slot is simply not cleaned up there.
constexpr int kRegistrySlots = 32;
std::atomic<const char*> g_temporary_paths[kRegistrySlots];
std::atomic<bool> g_temporary_is_database[kRegistrySlots];

int registerTemporary(const char* path, bool database) {
  for (int i = 0; i < kRegistrySlots; ++i) {
    const char* expected = nullptr;
    g_temporary_is_database[i].store(database);
    if (g_temporary_paths[i].compare_exchange_strong(expected, path)) return i;
  }
  return -1;
}

void unregisterTemporary(int slot) {
  if (slot >= 0) g_temporary_paths[slot].store(nullptr);
}

// Async-signal-safe: unlink and fixed buffers only.
void unlinkWithSuffix(const char* path, const char* suffix) {
  char buffer[4096];
  size_t n = 0;
  for (const char* p = path; *p && n + 1 < sizeof buffer; ++p) buffer[n++] = *p;
  for (const char* p = suffix; *p && n + 1 < sizeof buffer; ++p) buffer[n++] = *p;
  buffer[n] = '\0';
  ::unlink(buffer);
}

extern "C" void removeTemporariesAndDie(int sig) {
  for (int i = 0; i < kRegistrySlots; ++i) {
    const char* path = g_temporary_paths[i].load();
    if (!path) continue;
    ::unlink(path);
    if (g_temporary_is_database[i].load()) {
      for (const char* suffix : kDatabaseSideFiles) unlinkWithSuffix(path, suffix);
    }
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

int g_stdout_errno = 0;  // the first failure writing standard output

}  // namespace

std::string systemCause(int err) {
  std::string cause = std::strerror(err);
  if (!cause.empty()) cause[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(cause[0])));
  return cause;
}

Status checkOutputPath(const std::string& path, const OutputRules& rules) {
  if (path.empty()) return makeError("no output file named for " + rules.what);
  // "-" is standard output wherever a command writes text there (TextOutput); anywhere else it is
  // refused rather than taken as a file of that name, which nobody who writes it means.
  if (path == "-") {
    return makeError("-: " + rules.what + " cannot be written to standard output; name a file (./- for a file named '-')");
  }
  if (std::optional<std::string> input = inputNamedBy(path, rules.inputs)) return inputRefusal(path, *input, rules);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return makeError(path + ": is a directory; name a file for " + rules.what);
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return {};
    if (!S_ISREG(st.st_mode)) return makeError(path + ": is not a regular file; name a file for " + rules.what);
    if (!rules.replace) return makeError(path + ": file exists; choose another name or overwrite it with --force");
    return {};
  }
  const int stat_errno = errno;
  struct stat link {};
  if (::lstat(path.c_str(), &link) == 0) {  // a symlink to nothing
    if (!rules.replace) {
      return makeError(path + ": file exists (a symlink); choose another name or overwrite it with --force");
    }
    return missingDirectory(path, resolveSymlinks(path));
  }
  if (stat_errno != ENOENT) return makeError(path + ": cannot write " + rules.what + ": " + systemCause(stat_errno));
  return missingDirectory(path, path);
}

Status checkDistinctOutputs(const std::vector<std::pair<std::string, std::string>>& option_and_path) {
  auto key = [](const std::string& p) {
    std::error_code ec;
    return fs::weakly_canonical(fs::absolute(p, ec), ec).lexically_normal().string();
  };
  for (size_t i = 0; i < option_and_path.size(); ++i) {
    for (size_t j = i + 1; j < option_and_path.size(); ++j) {
      const auto& [opt_a, a] = option_and_path[i];
      const auto& [opt_b, b] = option_and_path[j];
      if (a == "-" && b == "-") {
        return makeError(opt_a + " and " + opt_b + " both name standard output (-); give each output its own");
      }
      if (a.empty() || b.empty() || a == "-" || b == "-") continue;
      const std::optional<FileId> ia = fileId(a), ib = fileId(b);
      if (key(a) == key(b) || (ia && ia == ib)) {
        return makeError(opt_a + " and " + opt_b + " name the same file (" + b + "); give each output its own");
      }
    }
  }
  return {};
}

Expected<std::unique_ptr<OutputFile>> OutputFile::create(const std::string& path, const OutputRules& rules,
                                                         OutputKind kind) {
  if (Status s = checkOutputPath(path, rules); !s) return Error{s.error()};
  std::unique_ptr<OutputFile> out(new OutputFile());
  out->path_ = path;
  out->target_ = resolveSymlinks(path);
  out->rules_ = rules;
  out->kind_ = kind;
  struct stat st {};
  const bool exists = ::stat(out->target_.c_str(), &st) == 0;
  if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    if (kind == OutputKind::kDatabase) return makeError(path + ": a database is written to a regular file");
    out->in_place_ = true;
    out->temp_path_ = out->target_;
    out->fd_ = ::open(out->target_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (out->fd_ < 0) return makeError(path + ": cannot write " + rules.what + ": " + systemCause(errno));
    return out;
  }
  for (int attempt = 0; attempt < 16 && out->fd_ < 0; ++attempt) {
    out->temp_path_ = temporaryName(out->target_);
    out->fd_ = ::open(out->temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (out->fd_ < 0 && errno != EEXIST) break;
  }
  if (out->fd_ < 0) {
    const int err = errno;
    out->temp_path_.clear();
    return makeError(path + ": cannot write " + rules.what + ": " + systemCause(err));
  }
  // A replaced file keeps its permissions: an output never becomes readable to more people.
  if (exists && S_ISREG(st.st_mode)) (void)::fchmod(out->fd_, st.st_mode & 07777);
  out->registry_slot_ = registerTemporary(out->temp_path_.c_str(), kind == OutputKind::kDatabase);
  if (kind == OutputKind::kDatabase) {
    // SQLite opens the file itself; the name stays reserved by the empty file.
    ::close(out->fd_);
    out->fd_ = -1;
  }
  return out;
}

OutputFile::~OutputFile() {
  if (!committed_) discard();
}

void OutputFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!in_place_ && !temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    if (kind_ == OutputKind::kDatabase) {
      for (const char* suffix : kDatabaseSideFiles) ::unlink((temp_path_ + suffix).c_str());
    }
  }
  unregisterTemporary(registry_slot_);
  registry_slot_ = -1;
}

std::string OutputFile::inTermsOfTarget(std::string message) const {
  if (temp_path_.empty() || temp_path_ == path_) return message;
  for (size_t at = message.find(temp_path_); at != std::string::npos;) {
    message.replace(at, temp_path_.size(), path_);
    at = message.find(temp_path_, at + path_.size());
  }
  return message;
}

Status OutputFile::fail(const std::string& doing, int err) {
  error_ = makeError(path_ + ": " + doing + ": " + systemCause(err));
  return error_;
}

Status OutputFile::write(std::string_view bytes) {
  if (!error_) return error_;
  if (kind_ == OutputKind::kDatabase) return makeError(path_ + ": a database output is written by its writer");
  buffer_.append(bytes.data(), bytes.size());
  bytes_written_ += bytes.size();
  if (buffer_.size() >= kBufferBytes) return flushBuffer();
  return {};
}

Status OutputFile::flushBuffer() {
  size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot write " + rules_.what, errno);
    done += static_cast<size_t>(n);
  }
  buffer_.clear();
  return {};
}

Status OutputFile::commit() {
  if (committed_) return {};
  Status s = error_;
  if (s && kind_ == OutputKind::kStream) {
    s = flushBuffer();
    if (s && !in_place_ && ::fsync(fd_) != 0) s = fail("cannot write " + rules_.what, errno);
    if (::close(fd_) != 0 && s) s = fail("cannot write " + rules_.what, errno);
    fd_ = -1;
  }
  if (s && kind_ == OutputKind::kDatabase) {
    for (const char* suffix : kDatabaseSideFiles) {
      if (::access((temp_path_ + suffix).c_str(), F_OK) == 0) {
        s = makeError(path_ + ": " + rules_.what + " was not completed (its " + (suffix + 1) + " file remains)");
      }
    }
    const int fd = s ? ::open(temp_path_.c_str(), O_RDONLY | O_CLOEXEC) : -1;
    if (s && (fd < 0 || ::fsync(fd) != 0)) s = fail("cannot write " + rules_.what, errno);
    if (fd >= 0) ::close(fd);
  }
  if (s && !in_place_) s = place();
  if (!s) {
    discard();
    return s;
  }
  unregisterTemporary(registry_slot_);
  registry_slot_ = -1;
  committed_ = true;
  return {};
}

// Without `replace`: renameat2(RENAME_NOREPLACE), or where the file system lacks it link() and
// unlink(); both fail if the target appeared meanwhile. With it: rename(), which replaces the
// old file in one step (a reader sees the old file or the new one, never a mix).
Status OutputFile::place() {
  if (std::optional<std::string> input = inputNamedBy(target_, rules_.inputs)) {
    return inputRefusal(path_, *input, rules_);
  }
  if (kind_ == OutputKind::kDatabase) {
    // A stale write-ahead log beside the target would be replayed into the new database.
    if (rules_.replace || ::access(target_.c_str(), F_OK) != 0) {
      for (const char* suffix : kDatabaseSideFiles) ::unlink((target_ + suffix).c_str());
    }
  }
  const char* temp = temp_path_.c_str();
  const char* target = target_.c_str();
  auto cannotMove = [&] { return fail("cannot move " + rules_.what + " into place", errno); };
  auto appeared = [&] {
    return makeError(path_ + ": file exists (it appeared while fprof was writing " + rules_.what +
                     "); it was left as it is");
  };
  if (rules_.replace) return ::rename(temp, target) == 0 ? Status{} : cannotMove();
  if (::renameat2(AT_FDCWD, temp, AT_FDCWD, target, RENAME_NOREPLACE) == 0) return {};
  if (errno == EEXIST) return appeared();
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return cannotMove();
  if (::link(temp, target) == 0) {
    ::unlink(temp);
    return {};
  }
  if (errno == EEXIST) return appeared();
  if (errno != EPERM && errno != ENOTSUP) return cannotMove();
  // A file system with neither (FAT): the check and the rename are two steps, so a writer racing
  // for the same path in between could be replaced. Nothing better is offered there.
  if (::access(target, F_OK) == 0) return appeared();
  return ::rename(temp, target) == 0 ? Status{} : cannotMove();
}

Status checkStandardOutputIsNoInput(const std::vector<std::string>& inputs, const std::string& what) {
  const std::optional<std::string> input = inputStandardOutputIs(inputs);
  if (!input) return {};
  return makeError("standard output is the input " + *input + " (redirected onto it); write " + what +
                   " to another file");
}

Expected<TextOutput> TextOutput::open(const std::string& path, const OutputRules& rules) {
  TextOutput out;
  if (path.empty() || path == "-") {
    if (Status s = checkStandardOutputIsNoInput(rules.inputs, rules.what); !s) return Error{s.error()};
    return out;
  }
  auto file = OutputFile::create(path, rules);
  if (!file) return Error{file.error()};
  out.file_ = std::move(*file);
  return out;
}

Status TextOutput::write(std::string_view bytes) {
  bytes_written_ += bytes.size();
  return file_ ? file_->write(bytes) : writeStandardOutput(bytes);
}

Status TextOutput::finish() {
  if (file_) return file_->commit();
  if (std::fflush(stdout) != 0 && g_stdout_errno == 0) g_stdout_errno = errno;
  if (g_stdout_errno != 0) return makeError("standard output: " + systemCause(g_stdout_errno));
  return {};
}

Status writeStandardOutput(std::string_view bytes) {
  if (g_stdout_errno != 0) return makeError("standard output: " + systemCause(g_stdout_errno));
  if (bytes.empty()) return {};
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) {
    g_stdout_errno = errno != 0 ? errno : EIO;
    return makeError("standard output: " + systemCause(g_stdout_errno));
  }
  return {};
}

Status finishStandardOutput() {
  if (std::fflush(stdout) != 0 && g_stdout_errno == 0) g_stdout_errno = errno != 0 ? errno : EIO;
  if (std::ferror(stdout) && g_stdout_errno == 0) g_stdout_errno = EIO;
  if (std::fclose(stdout) != 0 && g_stdout_errno == 0) g_stdout_errno = errno != 0 ? errno : EIO;
  if (g_stdout_errno != 0) return makeError("standard output: " + systemCause(g_stdout_errno));
  return {};
}

void removeTemporaryOutputsOnSignals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;  // nohup, ignored pipes
    struct sigaction sa {};
    sa.sa_handler = removeTemporariesAndDie;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(sig, &sa, nullptr);
  }
}

Expected<std::string> readInputFile(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return makeError(path + ": no such file");
    return makeError(path + ": cannot read " + what + ": " + systemCause(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return makeError(path + ": is a directory; " + what + " is a file");
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return makeError(path + ": cannot read " + what + ": " + systemCause(err));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return makeError(path + ": " + what + " is empty");
  return text;
}

}  // namespace fprof::core
