// Instruction counts per SASS instruction (per PC) of profiled launches, from CUPTI's SASS Metrics
// API (binary patching: no replay, no memory saved), and the SASS counters they give once joined
// with each instruction's opcode. The second run of application replay counts this way
// (collector/src/cupti/sass_patching.h); `fprof run` reads the functions' SASS with nvdisasm afterwards
// and turns each launch's counts into the same raw metrics kernel replay would have counted
// (sm__sass_thread_inst_executed_op_ffma_pred_on.sum, ...), so the rest of the pipeline is unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fprof/core/expected.h"
#include "fprof/core/sass_half.h"

namespace fprof::core {

// The SASS Metrics API metrics counted per PC (GH100 offers 60; these three give every SASS counter
// of the roofline set).
inline constexpr const char* kPcWarpInstMetric = "smsp__sass_inst_executed";
inline constexpr const char* kPcThreadInstMetric = "smsp__sass_thread_inst_executed_pred_on";
inline constexpr const char* kPcLocalSectorsMetric = "smsp__sass_sectors_mem_local";

struct SassPcCount {
  uint32_t pc = 0;              // byte offset in the function's code
  uint64_t warp_inst = 0;       // kPcWarpInstMetric
  uint64_t thread_inst = 0;     // kPcThreadInstMetric: threads with the predicate on
  uint64_t local_sectors = 0;   // kPcLocalSectorsMetric
};

struct SassPcFunction {
  std::string name;        // mangled, as CUPTI reports it
  uint32_t cubin_crc = 0;  // cuptiGetCubinCrc of the module holding it
  std::vector<SassPcCount> pcs;
};

// One profiled launch (as LaunchRef: the runtime launch's correlation id and the driver call's).
struct SassPcLaunch {
  uint32_t correlation_id = 0;
  uint32_t nested_correlation_id = 0;
  std::vector<SassPcFunction> functions;
};

// The text the collector appends per launch to FPROF_SASS_PC_FILE, and its reader:
//   L <correlation_id> <nested_correlation_id>
//   F <cubin_crc> <mangled name>
//   <pc> <warp_inst> <thread_inst> <local_sectors>      (one line per PC of that function)
std::string sassPcLaunchText(const SassPcLaunch& launch);
Expected<std::vector<SassPcLaunch>> parseSassPcText(std::string_view text);
// How far a run by SASS patching got, from its PC file: "3 launches counted, the last correlation 41
// (_Z4axpyifPKfPf)", "no launch counted", or why the text cannot be read.
std::string sassPcProgressText(std::string_view text);

// Where the duplicates of a metrics run write a database's per-PC counts: in the run's cubin
// folder (FPROF_CUBIN_DIR, a folder `fprof run` made for the run) as DATABASE_NAME.pcs, so that no
// file beside the database is touched; beside the database (DATABASE.pcs) where there is none, as
// when the collector is injected without `fprof run`.
std::string duplicatesPcFile(const std::string& database, const std::string& cubin_dir);

// Instruction text (opcode with modifiers, then operands) by byte offset in one function's code.
using SassInstructions = std::map<uint32_t, std::string>;

// From `nvdisasm -b` over several functions' code laid end to end (as parseNvdisasmHalfOpsByRange):
// each range's instructions, at offsets from the range's start.
std::map<std::string, SassInstructions> parseNvdisasmInstructionsByRange(std::string_view nvdisasm_text,
                                                                         const std::vector<CodeRange>& ranges);

// The raw SASS metric one instruction's thread count goes to (e.g. FFMA32I ->
// sm__sass_thread_inst_executed_op_ffma_pred_on.sum), or nullptr for none of the nine FLOP counters.
const char* flopMetricOfInstruction(std::string_view instruction);

using RawCounters = std::vector<std::pair<std::string, double>>;

// Whether `metric` is one of the counters sassCountersOfLaunch gives.
bool countedFromPcCounts(const std::string& metric);

// The roofline set's SASS counters of one launch: the nine FLOP instruction counters, the local
// load/store sectors and smsp__sass_inst_executed.sum, summed over its PCs by opcode, and the
// half-precision FLOPs per lane (kHalfFlopsFp16PerPcMetric, kHalfFlopsBf16PerPcMetric). `code` gives a
// function's instructions by (name, cubin crc) or nullptr; none (and `why`) where a function with
// counted instructions has no code or a counted PC holds no instruction.
using SassCodeLookup = std::function<const SassInstructions*(const std::string& name, uint32_t crc)>;
std::optional<RawCounters> sassCountersOfLaunch(const SassPcLaunch& launch, const SassCodeLookup& code, std::string& why);

}  // namespace fprof::core
