// FLOPs of half-precision (fp16/bf16) non-tensor instructions, counted per lane from the
// function's SASS. The hardware counters (sm__sass_thread_inst_executed_op_{hadd,hmul,hfma})
// count instructions, and on sm_90 one opcode, HFMA2, serves four purposes: a packed FMA on two
// halves (2 lanes), a scalar FMA with lane-broadcast operands (`Ra.H0_H0`: 1 lane), a move of an
// immediate into a register (`HFMA2.MMA R, -RZ, RZ, imm`: no FLOP), and HADD2.F32 with -RZ is a
// half->float conversion. The SASS (nvdisasm of the module's cubin) says which forms a function
// holds; where it holds one form per opcode, the per-lane count is exact.
//
// ptxas spreads HFMA2 over two pipes: plain HFMA2 runs on the FMA pipe, HFMA2.MMA on the MMA pipe
// (immediate moves are always HFMA2.MMA). sm__thread_inst_executed_pipe_fma_type_fp16_pred_on
// counts the FMA pipe's 16-bit instructions only, so with it, X - hadd - hmul is the HFMA2 count
// on the FMA pipe and the rest ran as HFMA2.MMA: a function with one form on each pipe (e.g.
// packed HFMA2.MMA beside scalar HFMA2) gets its FLOPs too. That counter moves in steps of 32
// threads (a warp): where warps are partial it read up to 30 instructions off the true count on an
// H100 (bench/RESULTS.md), so such a split is right to within ~31 HFMA2 (2 FLOPs each), and the
// method says so. Where all warps are full it is exact.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fprof/core/expected.h"

namespace fprof::core {

// Static instruction counts of one function by class, e.g. "HFMA2.MMA.f16.packed" -> 8. The class
// is opcode (HFMA2, HADD2, HMUL2), ".MMA" where the instruction runs on the MMA pipe, precision
// (f16, bf16) and form (packed, scalar, zero); 16-bit compares and min/max (HSETP2, HSET2, HMNMX2)
// are counted as form "other" (no FLOPs; they rule out the pipe split).
// Tensor-core instructions (HMMA, HGMMA, QGMMA, IMMA, IGMMA, DMMA, BMMA, BGMMA) are kept whole with
// their modifiers, prefixed kMmaClassPrefix ("mma:HGMMA.64x128x16.F32"), for sass_tensor.h.
using SassHalfCounts = std::map<std::string, int64_t>;
inline constexpr const char* kMmaClassPrefix = "mma:";

// The FLOPs one thread's execution of one instruction does on half-precision lanes (packed HFMA2 4,
// lane-broadcast HFMA2 2, packed HADD2 2, conversions and immediate moves 0, ...), and whether they
// are bf16; none for an instruction that is no HADD2/HMUL2/HFMA2. `instruction` as nvdisasm prints
// it, with or without its address comment.
struct HalfLaneFlops {
  double flops = 0;
  bool bf16 = false;
};
std::optional<HalfLaneFlops> halfFlopsOfInstruction(std::string_view instruction);

// Per mangled function name, from the text `nvdisasm -c` prints for a cubin.
std::map<std::string, SassHalfCounts> parseNvdisasmHalfOps(std::string_view nvdisasm_text);

// Several functions' code decoded in one `nvdisasm -b` run over their concatenation (nvdisasm's
// start-up, about 0.3-0.5 s, is most of its cost for a kernel): each line goes to the function
// whose byte range [begin, end) holds its address.
struct CodeRange {
  std::string name;
  uint64_t begin = 0, end = 0;
};
std::map<std::string, SassHalfCounts> parseNvdisasmHalfOpsByRange(std::string_view nvdisasm_text,
                                                                   const std::vector<CodeRange>& ranges);

// The SM version (90 for compute capability 9.0) of the first device of a database; none when it
// has no device row.
Expected<int> deviceSmOf(const std::string& db_path);

struct HalfFlops {
  std::optional<double> fp16;
  std::optional<double> bf16;
  std::string method;  // one phrase: how they were counted, or why they are unknown
};

// The FLOPs behind a kernel's dynamic hadd/hmul/hfma instruction counts, given its function's SASS.
// Unknown (none) where an opcode the kernel executed appears in more than one form or precision:
// then the method gives the bounds. fp16_pipe (kFp16PipeMetric, where collected) splits HFMA2 by
// pipe, so that each pipe's HFMA2 needs one form only.
HalfFlops halfFlopsFromSass(const SassHalfCounts& sass, double hadd, double hmul, double hfma,
                            std::optional<double> fp16_pipe = std::nullopt);

// The raw metric names the dynamic counts come from.
inline constexpr const char* kHaddMetric = "sm__sass_thread_inst_executed_op_hadd_pred_on.sum";
inline constexpr const char* kHmulMetric = "sm__sass_thread_inst_executed_op_hmul_pred_on.sum";
inline constexpr const char* kHfmaMetric = "sm__sass_thread_inst_executed_op_hfma_pred_on.sum";
// Thread-level 16-bit instructions on the FMA pipe (HFMA2.MMA not included); in the `roofline` and `full` sets.
inline constexpr const char* kFp16PipeMetric = "sm__thread_inst_executed_pipe_fma_type_fp16_pred_on.sum";

// Functions (mangled names) of a database whose kernels ran half instructions and wait for SASS.
Expected<std::vector<std::string>> functionsNeedingSass(const std::string& db_path);

// Writes function_sass_op rows for the functions given and recomputes flops_fp16/flops_bf16 and
// half_flops_method of their kernels (and of copies of them); functions pending SASS that are not
// in `sass` get `why_missing` as their method. One transaction.
Status applySassHalfFlops(const std::string& db_path, const std::map<std::string, SassHalfCounts>& sass,
                          const std::string& why_missing);

}  // namespace fprof::core
