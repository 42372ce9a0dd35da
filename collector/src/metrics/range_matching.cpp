// Matching counter ranges to profiled launches (see range_matching.h).
#include "metrics/range_matching.h"

namespace fprof::collector {
namespace {

// "void axpy<float>(float*, int)" -> "void axpy<float>": a range name may leave the parameters out.
std::string withoutParameters(const std::string& demangled) {
  int depth = 0;
  for (size_t i = demangled.size(); i-- > 0;) {
    if (demangled[i] == ')') ++depth;
    if (demangled[i] == '(' && --depth == 0) return demangled.substr(0, i);
  }
  return demangled;
}

bool anyRangeNamesALaunch(const std::vector<std::string>& names, const std::vector<ProfiledLaunchName>& launches) {
  for (const std::string& n : names) {
    for (const ProfiledLaunchName& l : launches) {
      if (rangeNameMatches(n, l)) return true;
    }
  }
  return false;
}

std::vector<std::optional<size_t>> byPosition(size_t range_count, size_t launch_count) {
  std::vector<std::optional<size_t>> out(launch_count);
  if (range_count != launch_count) return out;
  for (size_t i = 0; i < launch_count; ++i) out[i] = i;
  return out;
}

// Walks both lists in order. A range that names the current launch pairs with it; a range that
// names a later launch means the launches in between made no range; a range that names no launch
// still to come is one the collector did not see, and is dropped.
std::vector<std::optional<size_t>> byName(const std::vector<std::string>& names,
                                          const std::vector<ProfiledLaunchName>& launches) {
  std::vector<std::optional<size_t>> out(launches.size());
  size_t l = 0;
  for (size_t r = 0; r < names.size() && l < launches.size(); ++r) {
    for (size_t next = l; next < launches.size(); ++next) {
      if (rangeNameMatches(names[r], launches[next])) {
        out[next] = r;
        l = next + 1;
        break;
      }
    }
  }
  return out;
}

}  // namespace

bool rangeNameMatches(const std::string& range_name, const ProfiledLaunchName& launch) {
  if (range_name.empty()) return false;
  return range_name == launch.mangled || range_name == launch.demangled ||
         range_name == withoutParameters(launch.demangled);
}

std::vector<std::optional<size_t>> matchRangesToLaunches(const std::vector<std::string>& range_names,
                                                         size_t range_count,
                                                         const std::vector<ProfiledLaunchName>& launches) {
  if (range_names.size() != range_count || !anyRangeNamesALaunch(range_names, launches)) {
    return byPosition(range_count, launches.size());
  }
  return byName(range_names, launches);
}

}  // namespace fprof::collector
