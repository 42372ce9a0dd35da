// A corpus of hostile and damaged .fprof databases, generated at test time (nothing large is
// committed): what a profiled program can put in its strings (invalid UTF-8, NUL, ESC and CR,
// markup, 1 MB names) and what a damaged file can hold (dangling string, range and kernel ids,
// NVTX parent cycles, a 200,000-deep chain of ranges, NaN and infinite counters, negative
// durations, huge ids). Every subcommand and the viewer must get through each of them.
#pragma once

#include <string>
#include <vector>

#include "fprof/core/expected.h"

namespace fprof::testing {

struct CorpusCase {
  std::string name;  // also the file stem: <name>.fprof
  std::string what;  // one line on what the file holds
  // A text every command's stderr must hold exactly once per database read (a warning said once),
  // and that the file's `info` must show; empty when the file is undamaged.
  std::string warning;
  std::string shown;  // a text `fprof info` must print for it ("" for none)
};

// Every case, "clean" first (the well-formed file the others are compared with).
const std::vector<CorpusCase>& corpusCases();

// Writes the case's database at `path` (replacing what is there).
core::Status writeCorpusDatabase(const std::string& name, const std::string& path);

}  // namespace fprof::testing
