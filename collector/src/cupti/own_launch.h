// The collector's own driver calls made from inside the program's launch callbacks (the L2 sweep,
// a profiled launch's duplicate): CUPTI may report them to the collector's callbacks, and they are
// not the program's.
#pragma once

namespace fprof::collector {

namespace detail {
inline thread_local bool t_inside_own_launch = false;
}

// True on a thread while it makes driver calls of the collector's own.
inline bool insideOwnLaunch() { return detail::t_inside_own_launch; }

// Marks the driver calls made while it lives as the collector's own.
class OwnLaunchScope {
 public:
  OwnLaunchScope() : outer_(detail::t_inside_own_launch) { detail::t_inside_own_launch = true; }
  ~OwnLaunchScope() { detail::t_inside_own_launch = outer_; }
  OwnLaunchScope(const OwnLaunchScope&) = delete;
  OwnLaunchScope& operator=(const OwnLaunchScope&) = delete;

 private:
  bool outer_;
};

}  // namespace fprof::collector
