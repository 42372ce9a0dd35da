// Commands the Python package runs (`python -m fprof ...`): `fprof job`, and `fprof gate` on job
// folders. The package's Python is the build folder's virtual environment beside this fprof
// (build/python/venv, made by the build's tests), else python3 on PATH, whichever has the package.
#pragma once

#include <string>
#include <vector>

#include "fprof/core/expected.h"

namespace fprof::cli {

// The Python interpreter that can import the package fprof; an error saying how to install it.
core::Expected<std::string> findPackagePython();

// Replaces this process with `python -m fprof ARGS...`, so the package's exit status and output
// are the command's. Returns only when that cannot be done: 2, with the reason on stderr.
int runPackageCommand(const std::vector<std::string>& args);

}  // namespace fprof::cli
