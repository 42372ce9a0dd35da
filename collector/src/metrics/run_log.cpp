// Notes and metadata of a metrics run (see run_log.h).
#include "metrics/run_log.h"

#include <string_view>

#include "injection/log.h"

namespace fprof::collector {

void RunLog::note(const char* severity, const std::string& message) {
  notes_.emplace_back(severity, message);
  if (std::string_view(severity) == "info") {
    logInfo("%s", message.c_str());
  } else {
    logWarning("%s", message.c_str());
  }
}

std::vector<std::pair<std::string, std::string>> RunLog::takeNotes() {
  std::vector<std::pair<std::string, std::string>> out;
  out.swap(notes_);
  return out;
}

std::vector<std::pair<std::string, std::string>> RunLog::takeMetadata() {
  std::vector<std::pair<std::string, std::string>> out;
  out.swap(metadata_);
  return out;
}

}  // namespace fprof::collector
