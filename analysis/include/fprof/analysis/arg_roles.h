// Data flow, step 1 of 4 (docs/analysis.md, "Data flow"): what each pointer argument of a launch
// does to the memory behind it -- read, written, or not known -- and how that was learnt:
//   measured   the collector compared the bytes behind each pointer before and after a launch of
//              the function (schema v2 `function_arg`): 'write' = they changed, 'read' = they did
//              not (read, or unused), 'not_pointer' = no device address;
//   signature  the C++ parameter list in the demangled name: `T const*` is read; `T*` is written
//              where the kernel marks its inputs const (some parameter is `T const*`) or it is the
//              only pointer, else not known (PyTorch's gather takes `char*` for its output and its
//              input alike);
//   position   no parameter list (extern "C", Triton, cuBLAS): the resolved pointer argument with
//              the highest index is the output, the others are read.
// A kernel is *opaque* when it may write memory fprof cannot see: its pointers travel inside a
// by-value struct, lambda or array (PyTorch's TensorIterator kernels, cuBLAS), it has no pointer
// argument at all, or its arguments cannot be attributed (graph nodes). Step 2 (buffers.h) treats
// an opaque kernel as a possible writer of any byte of its device.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fprof/core/store.h"

namespace fprof::analysis {

enum class ArgRole : uint8_t {
  kRead,
  kWrite,
  kUnknown,  // may be read, may be written: ends what was there, links nothing
};
// Ordered from the strongest evidence to the weakest.
enum class RoleSource : uint8_t { kMeasured, kSignature, kPosition };
std::string_view argRoleName(ArgRole r);         // "read", "write", "unknown"
std::string_view roleSourceName(RoleSource s);   // "measured", "kernel signature", "argument position"
inline RoleSource weaker(RoleSource a, RoleSource b) { return a > b ? a : b; }

// One resolved pointer argument of a launch: its parameter index and, for an 8-byte word inside a
// larger parameter (a struct or array the collector read word by word: a kernel_arg row whose
// size_bytes is the parameter's, more than 8), the word's offset in the parameter buffer.
struct ArgSlot {
  int32_t index = 0;
  std::optional<int32_t> word_offset;
};

// What the collector measured, per (process, function name id, argument index, offset). The
// database's `function_arg.offset_bytes` is the measured word's offset in the parameter buffer,
// the same as `kernel_arg.offset_bytes` of that word: roles and words join on (index, offset).
// Empty for files older than schema v2 and for runs that did not measure.
class MeasuredRoles {
 public:
  // role is the database's text: "write", "read" or "not_pointer" (anything else is ignored). A
  // role without an offset is the whole parameter's (it applies to an 8-byte parameter only).
  void add(uint32_t process_id, uint32_t name_id, int32_t arg_index, std::string_view role,
           std::optional<int32_t> offset_bytes = std::nullopt);
  bool empty() const { return by_function_.empty(); }
  // The measured role of one argument: nullopt if not measured; kUnknown never appears, and a
  // 'not_pointer' argument answers `pointer == false`. A word inside a larger parameter takes only
  // the role measured at that word's offset (the parameter's index alone does not say which
  // word); an 8-byte parameter takes any role measured for its index.
  struct Entry {
    ArgRole role = ArgRole::kRead;
    bool pointer = true;
  };
  std::optional<Entry> find(uint32_t process_id, uint32_t name_id, const ArgSlot& slot) const;
  // The arguments measured as written, for a function that was measured (else nullopt): a launch
  // that does not show all of them writes memory fprof cannot see (dataflow.h).
  using Writes = std::vector<ArgSlot>;
  std::optional<Writes> writes(uint32_t process_id, uint32_t name_id) const;
  // Whether the role measured for `measured` applies to the launch argument `slot` (the rule of find).
  static bool covers(const ArgSlot& measured, const ArgSlot& slot);

 private:
  struct Measured {
    ArgSlot slot;
    Entry entry;
  };
  static uint64_t key(uint32_t process_id, uint32_t name_id) { return (uint64_t{process_id} << 32) | name_id; }
  std::unordered_map<uint64_t, std::vector<Measured>> by_function_;
};

// The `function_arg` rows of a profile (schema v2); empty where the file has none.
MeasuredRoles measuredRoles(const core::Profile& p);

// What a demangled name's parameter list says, parameter by parameter.
enum class ParamKind : uint8_t {
  kScalar,          // int, float, bool, ...: never a device address
  kConstPointer,    // T const*, const T*
  kMutablePointer,  // T*
  kAggregate,       // a struct, lambda or array passed by value: may hold pointers we do not see
};
struct Signature {
  bool parsed = false;  // the name carries a parameter list
  std::vector<ParamKind> params;
  bool anyConstPointer() const;
  bool anyAggregate() const;
  size_t pointerCount() const;
};
Signature parseSignature(std::string_view demangled_name);

// Roles of the resolved pointer arguments of one launch (`args`, in parameter order). Measured
// roles win argument by argument; an argument the measurement does not cover falls back to the
// signature, else to the position rule. An argument that is no pointer (measured 'not_pointer', or
// a scalar parameter whose value looks like an address) gets nullopt. A word inside a by-value
// aggregate is of unknown role unless measured.
struct ArgRoleResult {
  ArgRole role = ArgRole::kRead;
  RoleSource source = RoleSource::kPosition;
};
std::vector<std::optional<ArgRoleResult>> argumentRoles(const MeasuredRoles& measured, const Signature& signature,
                                                        uint32_t process_id, uint32_t name_id,
                                                        const std::vector<ArgSlot>& args);
// The same into `out` (reused across launches: one call per kernel of a large run).
void argumentRoles(const MeasuredRoles& measured, const Signature& signature, uint32_t process_id, uint32_t name_id,
                   const std::vector<ArgSlot>& args, std::vector<std::optional<ArgRoleResult>>& out);

// Whether a launch may write memory beyond its resolved pointer arguments (see the top of this
// file). `args`: the launch's kernel_arg rows in parameter order; `resolved_pointers`: how many of
// them resolved to device memory. `words_recorded`: the collector recorded every 8-byte word of
// larger parameters too (some row of the run has size_bytes > 8), so a parameter with no row is
// smaller than 8 bytes and holds no pointer; otherwise only 8-byte parameters have rows, and a
// by-value aggregate without one may hide pointers. Without a parameter list, a parameter larger
// than 8 bytes shows as a gap in the recorded offsets wider than 8 bytes per missing parameter (a
// missing 4-byte scalar and its padding take at most 8); one after the last row cannot be seen.
bool launchIsOpaque(const Signature& signature, const core::KernelArgRecord* args, size_t arg_count,
                    size_t resolved_pointers, bool words_recorded = false);

}  // namespace fprof::analysis
