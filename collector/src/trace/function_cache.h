// Per-function facts the launch callback needs: the kernel's own local memory per thread and the
// layout of its 8-byte parameters. Queried once per CUfunction; later launches pay one lookup in
// a per-thread cache.
#pragma once

#include <cuda.h>

#include <atomic>
#include <deque>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/launch_info.h"

namespace fprof::collector {

struct FunctionInfo {
  int64_t local_bytes_per_thread = -1;  // -1: the driver did not say
  // The context's function behind the handle a launch passed (a runtime launch passes a CUkernel,
  // a driver launch and a graph node a CUfunction): what launch signatures hash, so that the
  // same kernel launched either way has one signature.
  CUfunction function = nullptr;
  // The 8-byte parameters, and the 8-aligned words inside larger ones (PyTorch passes its
  // elementwise kernels' pointers in an at::detail::Array<char*, N>, others in structs or lambda
  // captures): each a possible device address for data flow.
  struct Param {
    int32_t index = 0;
    int32_t offset_bytes = 0;   // of the word, in the parameter buffer
    int32_t within_bytes = 0;   // of the word, inside its parameter
    int32_t param_bytes = 8;    // the parameter's size
  };
  std::vector<Param> eight_byte_params;
  // Words past that list (a larger parameter keeps only its first kWordsPerLargeParam words there)
  // that the argument-role probe found to hold device pointers: read from the function's next
  // launch on, so a launch shows every pointer the probe measured a role for (cuBLAS's nvjet GEMMs
  // carry theirs at offsets 176-496 of a 1720-byte struct, PyTorch's strided elementwise kernels
  // past offset 260 of their lambda). Set once (FunctionCache::addProbedWords), read on every
  // launch; the list is owned by the cache and lives as long as it.
  struct ProbedWords {
    std::atomic<const std::vector<Param>*> words{nullptr};
    ProbedWords() = default;
    ProbedWords(const ProbedWords& o) : words(o.words.load(std::memory_order_acquire)) {}
    ProbedWords& operator=(const ProbedWords& o) {
      words.store(o.words.load(std::memory_order_acquire), std::memory_order_release);
      return *this;
    }
    const std::vector<Param>* get() const { return words.load(std::memory_order_acquire); }
  };
  mutable ProbedWords probed;
  // The argument-role probe is done with this function (measured or given up): launches skip it
  // without asking the probe (a per-thread set and a lock). Set once, read on every launch.
  struct Flag {
    std::atomic<bool> on{false};
    Flag() = default;
    Flag(const Flag& o) : on(o.on.load(std::memory_order_relaxed)) {}
    Flag& operator=(const Flag& o) {
      on.store(o.on.load(std::memory_order_relaxed), std::memory_order_relaxed);
      return *this;
    }
  };
  mutable Flag probe_settled;
  struct Layout {
    int32_t offset_bytes = 0;
    int32_t size_bytes = 0;
  };
  std::vector<Layout> params;  // every parameter, in order
};

// The pure part of FunctionCache::addProbedWords (function_words.cpp, CPU-tested): the pointer
// words (parameter index, offset in the parameter buffer) that are not among
// info.eight_byte_params and lie inside their parameter, as Params, without duplicates.
std::vector<FunctionInfo::Param> probedPointerWords(const FunctionInfo& info,
                                                    const std::vector<std::pair<int32_t, int32_t>>& pointer_words);

// Grid, block, cluster and dynamic shared memory of a launch: with the function and its
// non-pointer argument bytes, what makes two launches do the same work.
struct LaunchShape {
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t cluster[3] = {0, 0, 0};
  uint32_t dynamic_shared_bytes = 0;
};

// A launch's signature (FunctionCache::signatures) and two looser ones. `loose` leaves out the
// 1-byte parameters, which are often a capture-less lambda passed by value whose byte is whatever
// was on the launching thread's stack (PyTorch's elementwise kernels): launches equal but for them
// may do the same work, which a second sample decides (LaunchSelector). `graph_key` also leaves out
// the cluster shape: a graph node made by stream capture has no cluster attribute yet when CUPTI
// reports it (cuBLASLt's Hopper GEMMs launch with clusters of 4 or 8 and their nodes read 0x0x0).
// All none when the arguments cannot be read.
struct LaunchSignatures {
  std::optional<uint64_t> full;
  std::optional<uint64_t> loose;
  std::optional<uint64_t> graph_key;
};

// What the driver says about a function once (the function table), queued for the writer.
struct FunctionFacts {
  std::string name;  // mangled (cuFuncGetName)
  std::optional<int> registers_per_thread;  // CU_FUNC_ATTRIBUTE_NUM_REGS: what ptxas -v says
  std::optional<int64_t> local_bytes_per_thread;
  std::optional<int64_t> static_shared_bytes;
  std::optional<int64_t> const_bytes;
  std::optional<int> max_threads_per_block;
  std::optional<int> binary_version;
  std::optional<int> ptx_version;
};

class FunctionCache {
 public:
  // `handle` is what the launch passed: a CUfunction, or a CUkernel cast to one (the runtime
  // launches context-independent kernels that way). Needs the launch's context to be current.
  const FunctionInfo& lookup(CUfunction handle);

  // Functions whose launch handle was a CUkernel resolved with cuKernelGetFunction, and handles
  // that could not be queried at all (their launches carry no local size or arguments).
  uint64_t resolvedKernelHandles() const { return resolved_.load(std::memory_order_relaxed); }
  uint64_t failedHandles() const { return failed_.load(std::memory_order_relaxed); }

  // A launch's signature, a hash of function, shape and every argument byte except device
  // addresses (8-byte values the driver knows as device memory), equal for launches that do the
  // same work, and two looser ones (LaunchSignatures), in one pass over the arguments. None when
  // the arguments cannot be read.
  static LaunchSignatures signatures(CUfunction handle, const FunctionInfo& info, const LaunchShape& shape,
                                     void** kernel_params, void** extra);

  // Facts of the functions queried since the last call (writer thread).
  std::vector<FunctionFacts> takeNewFunctions();

  // The probe measured `info`'s function: the words (parameter index, offset in the parameter
  // buffer) it found to hold device pointers. Those not among eight_byte_params become
  // info.probed, once; a second call changes nothing. Returns how many words were added.
  size_t addProbedWords(const FunctionInfo& info, const std::vector<std::pair<int32_t, int32_t>>& pointer_words);

 private:
  FunctionInfo query(CUfunction handle);
  void recordFacts(CUfunction function, int local_bytes);  // requires mu_
  std::vector<FunctionFacts> new_functions_;

  std::mutex mu_;
  std::unordered_map<CUfunction, FunctionInfo> infos_;  // node-based: references stay valid
  std::deque<std::vector<FunctionInfo::Param>> probed_words_;  // what FunctionInfo::probed points to
  std::atomic<uint64_t> resolved_{0};
  std::atomic<uint64_t> failed_{0};
};

}  // namespace fprof::collector
