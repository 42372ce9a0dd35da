// libfprof_preload.so: `fprof run` puts it in LD_PRELOAD. Two jobs, both about sharing the
// process with other CUPTI users (PyTorch's Kineto above all):
//
// 1. One CUPTI. This library depends on the toolkit's libcupti (the one fprof was built with,
//    which matches the driver fprof was tested on). Preloaded, it is loaded before the program's
//    own copy (PyTorch's wheel ships one); later loads of the same soname reuse it, so the
//    process holds exactly one libcupti.
// 2. Stay out of torch.profiler's way. CUPTI takes one subscriber. fprof subscribes at cuInit;
//    when another client calls cuptiSubscribe later (Kineto when torch.profiler starts), the
//    call lands here first: the collector's hook flushes what it has, unsubscribes and notes
//    it, and then the real cuptiSubscribe runs and succeeds for the newcomer.
//
// The collector's own subscription passes straight through: it registers its hook only after
// subscribing. Built without the C++ runtime (no statics with guards, no exceptions, linked as
// C): a preloaded libstdc++ could clash with the one a program (a conda Python) brings.
#include <cupti.h>
#include <dlfcn.h>

#include <atomic>

namespace {

using YieldHook = void (*)(const char* client);
std::atomic<YieldHook> g_hook{nullptr};

// The object that called us, for the message ("libtorch_cuda.so").
const char* callerObject(const void* return_address) {
  Dl_info info{};
  if (return_address != nullptr && dladdr(return_address, &info) != 0 && info.dli_fname != nullptr) {
    return info.dli_fname;
  }
  return "an unknown library";
}

// RTLD_NEXT: the libcupti this library depends on comes after it in the search order.
template <typename Fn>
Fn realFunction(std::atomic<Fn>& cache, const char* name) {
  Fn f = cache.load();
  if (f == nullptr) {
    f = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
    cache.store(f);
  }
  return f;
}

using SubscribeFn = CUptiResult(CUPTIAPI*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
using SubscribeV2Fn = CUptiResult(CUPTIAPI*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*,
                                             CUpti_SubscriberParams*);
std::atomic<SubscribeFn> g_subscribe{nullptr};
std::atomic<SubscribeV2Fn> g_subscribe_v2{nullptr};

void yieldFor(const void* return_address) {
  if (YieldHook hook = g_hook.exchange(nullptr)) hook(callerObject(return_address));
}

}  // namespace

extern "C" {

// Called by the collector once it holds its subscription; nullptr unregisters.
__attribute__((visibility("default"))) void fprof_cupti_guard_set_hook(YieldHook hook) { g_hook.store(hook); }

__attribute__((visibility("default"))) CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber,
                                                                            CUpti_CallbackFunc callback,
                                                                            void* userdata) {
  yieldFor(__builtin_return_address(0));
  const SubscribeFn real = realFunction(g_subscribe, "cuptiSubscribe");
  return real != nullptr ? real(subscriber, callback, userdata) : CUPTI_ERROR_NOT_INITIALIZED;
}

__attribute__((visibility("default"))) CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber,
                                                                               CUpti_CallbackFunc callback,
                                                                               void* userdata,
                                                                               CUpti_SubscriberParams* params) {
  yieldFor(__builtin_return_address(0));
  const SubscribeV2Fn real = realFunction(g_subscribe_v2, "cuptiSubscribe_v2");
  return real != nullptr ? real(subscriber, callback, userdata, params) : CUPTI_ERROR_NOT_INITIALIZED;
}

}  // extern "C"
