// Writes the synthetic viewer fixture (counters, measured ceilings, an NVTX op pair) with as many
// extra counted kernels as asked: the screenshot test's database and the 100,000-point benchmark's;
// with a slowdown, saxpy runs that much longer (a "current" run that regressed, for diff mode).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "synthetic.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: gui_fixture OUT.fprof [EXTRA_KERNELS [SAXPY_SLOWDOWN]]\n");
    return 2;
  }
  fprof::gui::testing::SyntheticOptions o;
  o.saxpy_launches = 10;  // enough for the gate's test to call a 30% slowdown significant
  if (argc >= 3) o.extra_kernels = std::strtoll(argv[2], nullptr, 10);
  if (argc == 4) o.saxpy_slowdown = std::strtod(argv[3], nullptr);  // a regressed "current" run
  const std::string err = fprof::gui::testing::writeSynthetic(argv[1], o);
  if (!err.empty()) {
    std::fprintf(stderr, "gui_fixture: %s\n", err.c_str());
    return 1;
  }
  return 0;
}
