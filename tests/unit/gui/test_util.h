// Helpers for the GUI tests: temporary database paths.
#pragma once

#include <filesystem>
#include <string>

namespace fprof::gui::testing {

inline std::string tempPath(const std::string& name) {
  std::filesystem::create_directories(FPROF_TEST_TMP);
  return std::string(FPROF_TEST_TMP) + "/" + name;
}

}  // namespace fprof::gui::testing
