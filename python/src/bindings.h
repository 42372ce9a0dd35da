// What module.cpp binds besides the tables: loading a profile, and the error Python sees.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include <pybind11/pybind11.h>

#include "profile_tables.h"

namespace fprof::python {

// Bad input (a missing, damaged or newer file): fprof.FprofError in Python, a ValueError whose
// message is the one sentence the fprof command prints.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The job functions (job_bindings.cpp): rank summaries, job-level placement, the job's roofline.
void bindJobFunctions(pybind11::module_& m);
// The gate over two job folders (gate_bindings.cpp).
void bindGateFunctions(pybind11::module_& m);

// core::loadProfile without the GIL; InputError with the reader's sentence when it fails.
std::unique_ptr<LoadedProfile> loadProfileOrThrow(const std::string& path);

}  // namespace fprof::python
