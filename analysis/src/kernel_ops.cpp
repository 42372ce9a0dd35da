// The op each kernel is reported under (see run_analysis.h, KernelOps).
#include <optional>
#include <unordered_map>

#include "fprof/analysis/run_analysis.h"

namespace fprof::analysis {

namespace {

// Under the NVTX op convention, the innermost enclosing op that has a variant (the op, not its
// stage), shown as "name (variant)"; else the framework op or named region the kernel ran in;
// otherwise the innermost range's message.
std::string opName(const core::Profile& p, const OpIndex& ops, const FrameworkOps& fops, size_t kernel_index) {
  const int32_t inner = kernel_index < ops.kernel_op.size() ? ops.kernel_op[kernel_index] : -1;
  if (inner >= 0) {
    // Walk out from the innermost op; the op is the outermost of the enclosing ranges that carry a
    // variant (a stage and its op both do; structural ranges such as layer or prefill do not).
    std::optional<size_t> chosen;
    size_t steps = 0;  // indexOps leaves no circle in the parents; the bound keeps the walk finite regardless
    for (std::optional<size_t> at = static_cast<size_t>(inner); at && steps++ < ops.ops.size(); at = ops.ops[*at].parent) {
      if (!ops.ops[*at].tags->variant.empty()) {
        chosen = *at;
      } else if (chosen) {
        break;
      }
    }
    const OpTags& t = *ops.ops[chosen ? *chosen : static_cast<size_t>(inner)].tags;
    return t.variant.empty() ? t.op : t.op + " (" + t.variant + ")";
  }
  if (std::string framework = frameworkOpName(p, fops, kernel_index); !framework.empty()) return framework;
  const core::KernelRow& k = p.kernels[kernel_index];
  if (!k.nvtx_path_id) return "";
  const std::string& path = p.str(*k.nvtx_path_id);
  const size_t slash = path.rfind('/');
  std::string leaf = slash == std::string::npos ? path : path.substr(slash + 1);
  if (slash == std::string::npos) {
    if (const size_t colons = leaf.find("::"); colons != std::string::npos) leaf = leaf.substr(colons + 2);
  }
  return leaf;
}

}  // namespace

KernelOps nameKernelOps(const core::Profile& p, const OpIndex& ops, const FrameworkOps& fops) {
  KernelOps r;
  std::unordered_map<std::string, uint32_t> ids;
  auto intern = [&](std::string name) {
    auto [it, inserted] = ids.emplace(name, static_cast<uint32_t>(r.names.size()));
    if (inserted) r.names.push_back(std::move(name));
    return it->second;
  };
  std::vector<int64_t> by_instance(ops.ops.size(), -1);
  std::unordered_map<uint32_t, uint32_t> by_path;
  std::vector<int64_t> by_framework_op(fops.ops.size(), -1), by_region(fops.region_names.size(), -1);
  const uint32_t none = intern("");
  r.of_kernel.assign(p.kernels.size(), none);
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const int32_t inner = i < ops.kernel_op.size() ? ops.kernel_op[i] : -1;
    if (inner >= 0) {
      int64_t& id = by_instance[static_cast<size_t>(inner)];
      if (id < 0) id = intern(opName(p, ops, fops, i));
      r.of_kernel[i] = static_cast<uint32_t>(id);
    } else if (fops.kernel_op[i] >= 0 || fops.kernel_region[i] >= 0) {
      int64_t& id = fops.kernel_op[i] >= 0 ? by_framework_op[static_cast<size_t>(fops.kernel_op[i])]
                                           : by_region[static_cast<size_t>(fops.kernel_region[i])];
      if (id < 0) id = intern(opName(p, ops, fops, i));
      r.of_kernel[i] = static_cast<uint32_t>(id);
    } else if (const auto& path = p.kernels[i].nvtx_path_id) {
      auto it = by_path.find(*path);
      if (it == by_path.end()) it = by_path.emplace(*path, intern(opName(p, ops, fops, i))).first;
      r.of_kernel[i] = it->second;
    }
  }
  return r;
}

}  // namespace fprof::analysis
