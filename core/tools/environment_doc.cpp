// fprof-environment-doc: prints docs/environment.md, generated from the environment table
// (core/environment.h). Regenerate with: build/bin/fprof-environment-doc > docs/environment.md
#include <cstdio>

#include "fprof/core/environment.h"

int main() {
  const std::string doc = fprof::core::env::environmentMarkdown();
  return std::fwrite(doc.data(), 1, doc.size(), stdout) == doc.size() && std::fflush(stdout) == 0 ? 0 : 2;
}
