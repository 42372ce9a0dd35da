// What fprof's own checkpoint around a profiled launch's duplicate must save (own_checkpoint.h):
// the memory the program allocated, kept per context from its allocation calls, and the writable
// variables of each loaded module, read from the module's cubin. No CUDA or CUPTI types: tested on
// the CPU.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fprof::collector {

struct MemoryRange {
  uint64_t base = 0;
  uint64_t bytes = 0;
  bool host = false;  // pinned host memory (a kernel reaches it through unified addressing)
};

// The live allocations of a program, device memory per context and pinned host memory for all.
// Once a call it cannot follow was seen (managed memory, arrays, memory of a graph or another
// process), refused() says why and no context's map is trusted again.
class AllocationMap {
 public:
  void addDevice(const void* context, uint64_t base, uint64_t bytes);
  void addHost(uint64_t base, uint64_t bytes);
  void removeDevice(uint64_t base);  // a free: the allocation that starts there, in any context
  void removeHost(uint64_t base);
  // An unmapping: every mapping inside [base, base + bytes), in any context.
  void removeDeviceWithin(uint64_t base, uint64_t bytes);
  void refuse(const std::string& why);  // the first reason is kept

  std::string refused() const;
  // The context's device allocations and every host one, in address order; false where refused.
  bool rangesOf(const void* context, std::vector<MemoryRange>& out) const;
  // Whether `address` lies in a device allocation of the context or a host allocation.
  bool contains(const void* context, uint64_t address) const;

 private:
  static bool inside(const std::map<uint64_t, uint64_t>& ranges, uint64_t address);
  mutable std::mutex mu_;
  std::map<const void*, std::map<uint64_t, uint64_t>> device_;  // context -> base -> bytes
  std::map<uint64_t, uint64_t> host_;
  std::string refused_;
};

// What a module's code can store to outside the memory its launches are given: its writable
// variables (__device__, __managed__), and the device functions it calls that live outside it
// (vprintf, malloc, free: the device heap and the printf buffer, which only the whole checkpoint
// holds). __assertfail is not one of them: a failing assertion ends the context either way.
struct ModuleWrites {
  std::vector<std::string> variables;
  std::vector<std::string> outside_calls;
};
ModuleWrites moduleWrites(std::string_view cubin);

// The loaded modules' writes, found by a function's mangled name: a name in several modules
// (a template instantiated in several files) gets all of theirs, so each variable named must be
// found in the launched function's own module before the own checkpoint is used.
class ModuleWritesIndex {
 public:
  void addCubin(std::string_view cubin);
  // False where no loaded cubin defines the function.
  bool lookup(std::string_view function, ModuleWrites& out) const;

 private:
  mutable std::mutex mu_;
  std::vector<ModuleWrites> modules_;
  std::unordered_multimap<uint64_t, uint32_t> by_function_;  // name hash -> index in modules_
};

}  // namespace fprof::collector
