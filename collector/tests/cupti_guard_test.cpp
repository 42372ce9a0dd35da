// libfprof_preload.so's guard, on a machine without a GPU: this program runs with the guard in
// LD_PRELOAD (see CMakeLists.txt), registers a hook as the collector does and plays the second
// CUPTI client. The real cuptiSubscribe behind the guard then fails without a driver; what is
// checked is the hand-over protocol, not CUPTI.
#include <cupti.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

int g_calls = 0;
std::string g_client;

void hook(const char* client) {
  ++g_calls;
  g_client = client != nullptr ? client : "";
}

int fail(const char* what) {
  std::fprintf(stderr, "cupti_guard_test: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  using SetHook = void (*)(void (*)(const char*));
  auto set_hook = reinterpret_cast<SetHook>(dlsym(RTLD_DEFAULT, "fprof_cupti_guard_set_hook"));
  if (set_hook == nullptr) return fail("the guard is not preloaded (fprof_cupti_guard_set_hook not found)");

  // Before a hook is registered (the collector's own subscription) nothing is intercepted.
  CUpti_SubscriberHandle subscriber = nullptr;
  (void)cuptiSubscribe(&subscriber, nullptr, nullptr);
  if (g_calls != 0) return fail("a subscription before the hook was registered called a hook");

  // Dl_info of our own code: the guard must name this executable as the client.
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&hook), &self) == 0 || self.dli_fname == nullptr) return fail("dladdr(hook)");

  set_hook(&hook);
  const CUptiResult r = cuptiSubscribe(&subscriber, nullptr, nullptr);
  if (g_calls != 1) return fail("the second client's cuptiSubscribe did not call the hook once");
  if (g_client != self.dli_fname) {
    std::fprintf(stderr, "client '%s', expected '%s'\n", g_client.c_str(), self.dli_fname);
    return fail("the hook was not told which object subscribed");
  }
  // The call went on to the real libcupti (which answers something: no driver here).
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::printf("real cuptiSubscribe answered %d (%s)\n", static_cast<int>(r), text ? text : "?");

  // The hook is one-shot: the collector has let go, later subscriptions are not its business.
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  (void)cuptiSubscribe_v2(&subscriber, nullptr, nullptr, &params);
  if (g_calls != 1) return fail("the hook ran again after it had handed CUPTI over");

  // cuptiSubscribe_v2 goes through the guard too.
  set_hook(&hook);
  (void)cuptiSubscribe_v2(&subscriber, nullptr, nullptr, &params);
  if (g_calls != 2) return fail("cuptiSubscribe_v2 did not call the hook");

  // Exactly one libcupti is mapped: the toolkit's, pulled in by the guard.
  Dl_info cupti{};
  if (dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &cupti) == 0) return fail("dladdr(cuptiGetVersion)");
  std::printf("libcupti in use: %s\n", cupti.dli_fname);
  std::printf("cupti_guard_test: passed\n");
  return 0;
}
