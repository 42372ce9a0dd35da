// Writes the synthetic report fixtures: used by the golden tests, the browser test and the
// benchmark in bench/RESULTS.md. Usage:
//   fprof_report_fixture trace|counters|hostile|baseline OUT.fprof
//   fprof_report_fixture large OUT.fprof KERNELS DISTINCT_NAMES [counters]
//   fprof_report_fixture recorded OUT.fprof RECORDED.fprof   (a copy with neutral command lines)
#include <cstdio>
#include <cstdlib>
#include <string>

#include "neutral_paths.h"
#include "synthetic_profile.h"

int main(int argc, char** argv) {
  using namespace fprof::testing;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s trace|counters|hostile|baseline OUT.fprof | large OUT.fprof KERNELS NAMES [counters]\n",
                 argv[0]);
    return 2;
  }
  const std::string kind = argv[1];
  const std::string out = argv[2];
  fprof::core::Status st;
  if (kind == "recorded") {
    if (argc < 4) {
      std::fprintf(stderr, "recorded needs the recorded database to copy\n");
      return 2;
    }
    const std::string error = copyWithNeutralCommandLines(argv[3], out);
    if (!error.empty()) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    return 0;
  }
  if (kind == "large") {
    if (argc < 5) {
      std::fprintf(stderr, "large needs KERNELS and DISTINCT_NAMES\n");
      return 2;
    }
    st = writeLargeProfile(out, std::atoll(argv[3]), std::atoll(argv[4]), argc > 5 && std::string(argv[5]) == "counters");
  } else {
    SyntheticOptions o;
    if (kind == "counters" || kind == "hostile" || kind == "baseline") o.counters = true;
    if (kind == "hostile") o.hostile_names = true;
    if (kind == "baseline") o.slowdown = 0.8;  // the baseline ran the epilogue faster: this run regressed
    if (kind != "trace" && kind != "counters" && kind != "hostile" && kind != "baseline") {
      std::fprintf(stderr, "unknown fixture kind '%s'\n", kind.c_str());
      return 2;
    }
    st = writeSyntheticProfile(out, o);
  }
  if (!st) {
    std::fprintf(stderr, "%s\n", st.error().c_str());
    return 1;
  }
  return 0;
}
