// Kernel names a person can read: the function's own name with its template arguments in short
// form, like Nsight's "function name" (`vectorized_layer_norm_kernel<BFloat16, float>` for
// `void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int,
// ...)`), and a table that keeps two different kernels of one output apart. Every front end shows
// these; the full demangled name stays on hover, in details and in exports (docs/analysis.md).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fprof/core/store.h"

namespace fprof::analysis {

struct ShortNameOptions {
  // Longer names lose their deepest template arguments first (`<...>`), then the trailing ones of
  // the function's own list, and only then are cut at the end with "...".
  size_t max_chars = 120;
  // A name without template arguments (nvjet, cuDNN's xmma, Triton) is cut only beyond this.
  size_t max_plain_chars = 160;
};

// The short form of one demangled kernel name: return type, scopes, `(anonymous namespace)`,
// lambdas and the parameter list dropped; namespaces inside template arguments dropped too; a
// lambda argument becomes the function it was written in. A generic function name (`kernel`,
// `Kernel2`, `device_kernel`) keeps its enclosing scope. C names (nvjet, Triton, XLA, NCCL) stay.
// Never cut in the middle; every cut says so with "...".
std::string shortKernelName(std::string_view demangled, const ShortNameOptions& options = {});

// Every demangled kernel name of a profile, each once, in the order of first launch: what
// KernelNames::of shortens, for a caller that lets the profile go first (fprof gate).
std::vector<std::string> distinctKernelNames(const core::Profile& p);

// The short names of a set of kernel names, told apart: two different full names never get the
// same short name. Where they would, the colliding ones get the first of these that separates
// them: more of their template arguments (up to all of them, uncut), their lambdas, their
// parameter lists, their scopes; else " #n", n by the order of the full names.
class KernelNames {
 public:
  KernelNames() = default;
  explicit KernelNames(std::vector<std::string> full_names, const ShortNameOptions& options = {});
  // Every kernel name of the profiles (a run and its baseline, say), so that one output names
  // each kernel the same way everywhere.
  static KernelNames of(const std::vector<const core::Profile*>& profiles, const ShortNameOptions& options = {});

  // The short name of a kernel of the set; of any other name, its plain short form.
  std::string shortName(std::string_view full) const;
  // For text that may be a kernel name or something else (a fusion stage: an NVTX op or a
  // kernel): the short name of a kernel of the set, any other text unchanged.
  std::string label(std::string_view text) const;
  // The labels of a chain of stages joined by " -> ": how a data-flow fusion pair, named by its
  // kernels, is shown.
  std::string chainLabel(const std::vector<std::string>& stages) const;
  bool contains(std::string_view full) const { return short_of_.count(std::string(full)) > 0; }
  size_t size() const { return short_of_.size(); }

 private:
  ShortNameOptions options_;
  std::unordered_map<std::string, std::string> short_of_;
};

}  // namespace fprof::analysis
