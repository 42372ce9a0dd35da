// Where fprof's helper programs and libraries live relative to the fprof executable.
#pragma once

#include <string>

namespace fprof::cli {

// Directory holding the running fprof executable.
std::string selfDirectory();

// Absolute path of a file installed beside fprof: bin/NAME or ../lib/NAME; "" if not found.
std::string findSibling(const std::string& name);

// Per-user cache directory for fprof ($XDG_CACHE_HOME/fprof or ~/.cache/fprof), created on demand.
std::string userCacheDirectory();

// Where `fprof ceilings` keeps the latest measurement of a GPU model, and `fprof run` looks for it.
std::string ceilingsCachePath(const std::string& device_name);

}  // namespace fprof::cli
