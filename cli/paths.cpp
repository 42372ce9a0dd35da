// Locating fprof's own files (see paths.h).
#include "paths.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>

namespace fprof::cli {

namespace fs = std::filesystem;

std::string selfDirectory() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path().string() : exe.parent_path().string();
}

std::string findSibling(const std::string& name) {
  const fs::path dir = selfDirectory();
  for (const fs::path& p : {dir / name, dir / ".." / "lib" / name}) {
    std::error_code ec;
    if (fs::exists(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return "";
}

std::string userCacheDirectory() {
  fs::path base;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    base = xdg;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    base = fs::path(home) / ".cache";
  } else {
    base = fs::temp_directory_path();
  }
  std::error_code ec;
  fs::create_directories(base / "fprof", ec);
  return (base / "fprof").string();
}

std::string ceilingsCachePath(const std::string& device_name) {
  // "NVIDIA H100 80GB HBM3" -> "NVIDIA_H100_80GB_HBM3.fprof"
  std::string file;
  for (char c : device_name) file += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return (fs::path(userCacheDirectory()) / "ceilings" / (file + ".fprof")).string();
}

}  // namespace fprof::cli
