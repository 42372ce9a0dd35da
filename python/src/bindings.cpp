// Loading a profile for Python (see bindings.h).
#include "bindings.h"

#include <pybind11/pybind11.h>

namespace fprof::python {

std::unique_ptr<LoadedProfile> loadProfileOrThrow(const std::string& path) {
  core::Expected<core::Profile> loaded = [&] {
    pybind11::gil_scoped_release release;
    return core::loadProfile(path);
  }();
  if (!loaded) throw InputError(loaded.error());
  return std::make_unique<LoadedProfile>(std::move(*loaded));
}

}  // namespace fprof::python
