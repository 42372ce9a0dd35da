// The one owner of the CUPTI subscription and activity API (kineto's CuptiActivityApi is the
// model): subscribe, enable, hand out and take back activity buffers, flush, count drops. All
// failures are logged and returned; the target is never aborted.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fprof::collector {

class CuptiActivityApi {
 public:
  // Receives each completed buffer; takes ownership and returns it with releaseBuffer().
  using BufferSink = std::function<void(uint8_t* buffer, size_t valid_bytes)>;

  static CuptiActivityApi& instance();

  // Fails (with `error` set) when another CUPTI client holds the subscription.
  bool subscribe(CUpti_CallbackFunc callback, void* userdata, std::string& error);
  // The runtime's and the driver's launch and graph-launch APIs, context teardown and creation,
  // and NVTX where asked for.
  struct Callbacks {
    bool nvtx = true;
  };
  bool enableCallbacks(Callbacks which);
  // Metrics mode: callbacks on every driver memset and memcpy, because the driver may run them
  // as kernels, which the range profiler would count as ranges of their own.
  bool enableMemoryOperationCallbacks();
  // Metrics mode: every module's cubin, for the SASS that says how many lanes a half
  // instruction has (core/sass_half.h).
  bool enableModuleLoadCallbacks();
  bool enableGraphNodeCallbacks();  // CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED
  // CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED and _SET_PARAMS: a node's parameters changed after it
  // was made (cudaGraphKernelNodeSetParams with cudaGraphExecUpdate, cudaGraphExecKernelNodeSetParams).
  bool enableGraphNodeChangeCallbacks();
  // Driver API callbacks by id (the argument-role probe's own copies, to leave them out).
  bool enableDriverCallbacks(const uint32_t* ids, size_t count);
  static bool isMemoryOperation(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
  // Which activity kinds to record (all four by default).
  struct Kinds {
    bool kernel = true, memcpy = true, memset = true, memory = true;
    // Kernel records of the serialized kind (CUPTI_ACTIVITY_KIND_KERNEL: kernels run one at a
    // time) instead of the concurrent one: counting by SASS patching needs it (sass_patching.h).
    bool serialized_kernels = false;
  };
  // CUPTI is told that the buffers it gets are zeroed already
  // (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER), so it no longer zeroes each new buffer
  // itself, on the thread that needs it: a launching thread, for 8 MiB. The writer zeroes buffers
  // instead (releaseBuffer, prepareBuffers); where CUPTI refuses the attribute, it zeroes them.
  // Writer thread: keeps `count` zeroed buffers, their pages touched, ready for CUPTI's next
  // requests (at most the pool's size), so a launching thread neither zeroes nor faults them in.
  void prepareBuffers(size_t count);
  // Buffers CUPTI asked for so far (a thread filled one, or a flush completed one).
  uint64_t buffersRequested() const { return requested_.load(std::memory_order_relaxed); }
  // Kernel, memcpy, memset and memory activity. Returns one warning per kind that failed.
  std::vector<std::string> enableActivities(BufferSink sink, Kinds kinds);
  void setFlushPeriod(int period_ms);
  // CUPTI's profiling data (kernel timestamps) in pinned host memory (fprof run --gpu-fault-safe).
  bool setHostPinnedProfilingBuffers();
  // From a non-CUPTI thread or an API callback only (CUPTI forbids it inside buffer callbacks).
  // A no-op once released.
  void flushAll(bool forced);
  // A launch counted by SASS patching holds flushes from before the SASS Metrics API is enabled
  // until it is disabled again; flushAll on another thread waits meanwhile (the writer's periodic
  // flush during a patched launch hung a Hugging Face program's run, bench/RESULTS.md).
  void holdFlushes();
  void releaseFlushes();  // on the holding thread
  // Concurrent kernel records off and on again around a launch counted by SASS patching in a run
  // that traces kernels the concurrent way (a profiled launch's duplicate): the SASS Metrics API
  // counts 0 while they are on (sass_patching.h). False where CUPTI refused (nothing changed).
  bool pauseConcurrentKernelRecords();
  void resumeConcurrentKernelRecords();
  // Hands CUPTI over to another client (torch.profiler): flushes every buffer to the sink,
  // disables the activity kinds and unsubscribes. Nothing of CUPTI is touched afterwards.
  void release();
  bool released() const { return released_.load(); }
  void releaseBuffer(uint8_t* buffer);
  uint64_t droppedRecords() const { return dropped_.load(std::memory_order_relaxed); }
  uint32_t version() const;
  // The file of the libcupti in use, and every libcupti* mapped in the process (more than one
  // means two CUPTIs live side by side, e.g. the toolkit's and a Python wheel's).
  static std::string libraryPath();
  static std::vector<std::string> loadedLibraries();
  // The libcupti a global symbol lookup of a CUPTI function reaches (what a library that calls
  // CUPTI without binding it itself, like PyTorch's Kineto, uses).
  static std::string globalBindingPath();

  static int64_t timestampNs();
  // Iterates the records of a buffer: start with nullptr; returns nullptr at the end.
  static const CUpti_Activity* nextRecord(uint8_t* buffer, size_t valid_bytes, const CUpti_Activity* previous);

  static bool isLaunchCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
  static bool isDriverLaunch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
  static bool isGraphLaunch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
  static bool isContextTeardown(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
  // A static name for the launch API ("__cudaLaunchKernel" is the CUDA 13 <<<>>> path).
  static const char* launchApiName(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

 private:
  static void CUPTIAPI onBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI onBufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size,
                                         size_t valid_bytes);

  static constexpr size_t kPooledBuffers = 8;

  size_t buffer_bytes_ = size_t{8} << 20;
  bool zeroed_buffers_ = true;
  std::atomic<uint64_t> requested_{0};
  CUpti_SubscriberHandle subscriber_ = nullptr;
  BufferSink sink_;
  std::mutex pool_mu_;
  std::mutex flush_mu_;  // held between holdFlushes and releaseFlushes
  CUpti_ActivityKind kernel_kind_ = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;  // as enabled
  std::atomic<std::thread::id> flush_holder_{};
  std::vector<uint8_t*> pool_;
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> released_{false};
};

}  // namespace fprof::collector
