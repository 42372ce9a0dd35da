// Times `fprof report`'s phases on a database (bench/RESULTS.md, section "Report"):
//   fprof_report_bench RUN.fprof [REPEATS]
// Prints wall and CPU seconds for open (core::loadProfile), analysis + build (buildReport) and
// rendering (HTML and Markdown), and the HTML size.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "fprof/core/store.h"
#include "fprof/reports/html_report.h"
#include "fprof/reports/markdown_report.h"
#include "fprof/reports/report_data.h"

namespace {

struct Clock {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  std::clock_t cpu = std::clock();
};

void print(const char* phase, const Clock& a, const Clock& b) {
  std::printf("  %-22s wall %7.3f s   cpu %7.3f s\n", phase, std::chrono::duration<double>(b.wall - a.wall).count(),
              static_cast<double>(b.cpu - a.cpu) / CLOCKS_PER_SEC);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s RUN.fprof [REPEATS]\n", argv[0]);
    return 2;
  }
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  for (int rep = 0; rep < repeats; ++rep) {
    const Clock t0;
    auto profile = fprof::core::loadProfile(argv[1]);
    if (!profile) {
      std::fprintf(stderr, "%s\n", profile.error().c_str());
      return 2;
    }
    const Clock t1;
    const fprof::reports::ReportData data = fprof::reports::buildReport(*profile, nullptr);
    const Clock t2;
    const std::string html = fprof::reports::renderHtml(data);
    const Clock t3;
    const std::string md = fprof::reports::renderMarkdown(data);
    const Clock t4;
    std::printf("run %d: %zu kernels, %lld groups (%zu listed), HTML %zu bytes, Markdown %zu bytes\n", rep + 1,
                profile->kernels.size(), static_cast<long long>(data.group_count), data.groups.size(), html.size(),
                md.size());
    print("open", t0, t1);
    print("analysis + build", t1, t2);
    print("render HTML", t2, t3);
    print("render Markdown", t3, t4);
    print("total", t0, t4);
  }
  return 0;
}
