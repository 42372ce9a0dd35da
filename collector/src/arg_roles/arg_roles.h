// Which pointer arguments of a kernel function the kernel writes, measured on one launch: a sample
// of the memory behind each argument is read before the launch and again after it, and compared.
// This is the pure part (what to read, aliasing, comparing) behind a memory seam; the driver calls
// live in arg_role_probe.h, so CPU tests run all of this on buffers in host memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/launch_info.h"

namespace fprof::collector {

// One kernel parameter as cuFuncGetParamInfo gives it.
struct ParamLayout {
  int32_t index = 0;
  int32_t offset_bytes = 0;  // in the parameter buffer
  int32_t size_bytes = 0;
};

// Every 8-byte word at an 8-aligned offset of the parameter buffer, inside any parameter, up to
// max_words: the candidates the probe classifies. Pointers also hide inside larger parameters
// (PyTorch's elementwise kernels pass theirs in an `at::detail::Array<char*, N>`, others in a
// struct or a lambda capture). Each word keeps its parameter's index and size and its own offset
// in the buffer. Values come from kernelParams (kernel_params[i] points at parameter i) or, when
// that is null, from a CU_LAUNCH_PARAM_BUFFER_POINTER buffer of buffer_bytes.
void readParamWords(const std::vector<ParamLayout>& layout, void* const* kernel_params, const uint8_t* buffer,
                    size_t buffer_bytes, size_t max_words, LaunchArgs& out);

// function_arg.role: kWrite = bytes behind the pointer changed during the launch (written, maybe
// also read); kRead = a device address whose sampled bytes did not change (read, unused, or
// written with the values already there); kNotPointer = the value is no device address.
enum class ArgRole { kWrite, kRead, kNotPointer };
std::string_view argRoleName(ArgRole role);  // "write", "read", "not_pointer"

struct ArgRoleResult {
  int32_t arg_index = 0;     // parameter index
  int32_t offset_bytes = 0;  // the 8-byte value's offset in the parameter buffer
  ArgRole role = ArgRole::kNotPointer;
  int64_t sampled_bytes = 0; // bytes compared before and after (0 when not a pointer)
  std::string method;        // how the role was obtained, one phrase
};

struct DeviceRange {
  uint64_t start = 0;
  uint64_t bytes = 0;
  uint64_t end() const { return start + bytes; }
};

// What an 8-byte value is, as the driver sees it.
struct AddressInfo {
  enum class Kind {
    kNotDevice,   // no allocation: not a pointer (or one the driver does not know)
    kDevice,      // device memory the probe may read: `range` is its allocation
    kUnreadable,  // a pointer the probe leaves alone (managed, host-mapped): no role
  };
  Kind kind = Kind::kNotDevice;
  DeviceRange range;
  std::string note;  // why kUnreadable, or what kNotDevice was ("host memory", ...)
};

// The seam to the driver. Tests implement it with host buffers that change between the reads.
class ProbeMemory {
 public:
  virtual ~ProbeMemory() = default;
  virtual AddressInfo describe(uint64_t address) = 0;
  // Copies [address, address + bytes) into `out`; on failure false and the reason in `error`.
  virtual bool read(uint64_t address, uint64_t bytes, uint8_t* out, std::string& error) = 0;
};

// What is read per pointer argument: the first head_bytes from the pointer, then strided_chunks
// chunks of chunk_bytes spread evenly over the rest of the argument's span, the last one ending
// at the span's end (the allocation's end, or the next argument's address in the same
// allocation). A span no longer than the head plus the chunks is read whole. Per launch at most
// max_bytes_per_launch in all: arguments past it get no role.
struct SamplePolicy {
  uint64_t head_bytes = 16 * 1024;
  uint32_t strided_chunks = 8;
  uint64_t chunk_bytes = 2 * 1024;
  uint64_t max_bytes_per_launch = 4 * 1024 * 1024;
};

struct ByteWindow {
  uint64_t address = 0;
  uint64_t bytes = 0;
};

// The windows read for a pointer whose span is [pointer, span_end): ascending, disjoint, never
// past span_end. Empty when the span is empty.
std::vector<ByteWindow> planWindows(uint64_t pointer, uint64_t span_end, const SamplePolicy& policy);

// Where each pointer argument's span ends: at the next larger address another argument points to
// inside the same allocation, else at the allocation's end; so bytes a later argument points to
// are never counted against an earlier one. Arguments with the same address share one span.
// `pointers[i]` and `allocations[i]` describe argument i; non-pointers have no allocation.
std::vector<uint64_t> spanEnds(const std::vector<uint64_t>& pointers,
                               const std::vector<std::optional<DeviceRange>>& allocations);

// The "before" copy of one launch's pointer arguments, and the comparison after it.
class ArgSample {
 public:
  // Describes every argument (no reads, no synchronization) and plans the windows. nullopt with
  // `why_not` when no argument is a readable device pointer: then nothing is to be measured.
  static std::optional<ArgSample> plan(ProbeMemory& memory, const LaunchArgs& args, const SamplePolicy& policy,
                                       std::string& why_not);
  // Reads the "before" copy. False with `why_not` when a read failed.
  bool readBefore(ProbeMemory& memory, std::string& why_not);

  // Reads the same windows again and gives each argument its role, in argument order (aliases
  // take the role of the argument they alias). A word inside a larger parameter that is no
  // pointer gets no row: it is just data of a struct.
  // nullopt with `why_not` when an allocation changed or a read failed.
  std::optional<std::vector<ArgRoleResult>> after(ProbeMemory& memory, std::string& why_not) const;

  uint64_t sampledBytes() const { return before_bytes_.size(); }
  // Arguments that got no role, each with why (unreadable memory, over the budget).
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  enum class EntryKind { kNotPointer, kSampled, kAlias, kUnmeasured };
  struct Entry {
    LaunchArg arg;
    EntryKind kind = EntryKind::kNotPointer;
    DeviceRange allocation;
    uint64_t span_end = 0;
    size_t alias_of = 0;                 // kAlias: the entry whose sample it shares
    std::vector<ByteWindow> windows;     // kSampled
    size_t first_byte = 0;               // kSampled: where its windows start in before_bytes_
    std::string note;                    // kNotPointer: what the value is
  };
  // The steps of plan.
  void classify(ProbeMemory& memory, Entry& e, std::optional<DeviceRange>& allocation);
  size_t planWindowsOfEntries(const std::vector<uint64_t>& ends, const std::vector<std::optional<DeviceRange>>& allocations,
                              const SamplePolicy& policy, uint64_t& planned_bytes);
  void unmeasureAliasesOfUnsampled();
  std::vector<Entry> entries_;
  std::vector<uint8_t> before_bytes_;
  std::vector<std::string> notes_;
};

}  // namespace fprof::collector
