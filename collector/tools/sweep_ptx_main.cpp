// Writes the collector's cache-sweep PTX (collector/src/cupti/sweep_ptx.h) to two files, for ptxas at
// build time (collector/CMakeLists.txt, sweep_cubins.h):  fprof_sweep_ptx L2_PTX CODE_PTX
#include <cstdio>
#include <fstream>
#include <string>

#include "cupti/sweep_ptx.h"

namespace {
bool writeText(const char* path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fprof_sweep_ptx L2_PTX CODE_PTX\n");
    return 2;
  }
  if (!writeText(argv[1], fprof::collector::l2SweepPtx()) || !writeText(argv[2], fprof::collector::codeSweepPtx())) {
    std::fprintf(stderr, "fprof_sweep_ptx: could not write %s or %s\n", argv[1], argv[2]);
    return 1;
  }
  return 0;
}
