// FLOPs of half-precision (fp16/bf16) non-tensor instructions, counted per lane from the
// function's SASS. The hardware counters (sm__sass_thread_inst_executed_op_{hadd,hmul,hfma})
// count instructions, and on sm_90 one opcode, HFMA2, serves four purposes: a packed FMA on two
// halves (2 lanes), a scalar FMA with lane-broadcast operands (`Ra.H0_H0`: 1 lane), a move of an
// immediate into a register (`HFMA2.MMA R, -RZ, RZ, imm`: no FLOP), and HADD2.F32 with -RZ is a
// half->float conversion. The SASS (nvdisasm of the module's cubin) says which forms a function
// holds; where it holds one form per opcode, the per-lane count is exact.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fprof/core/expected.h"

namespace fprof::core {

// Static instruction counts of one function by class, e.g. "HFMA2.f16.packed" -> 8. The class is
// opcode (HFMA2, HADD2, HMUL2), precision (f16, bf16) and form (packed, scalar, zero).
using SassHalfCounts = std::map<std::string, int64_t>;

// Per mangled function name, from the text `nvdisasm -c` prints for a cubin.
std::map<std::string, SassHalfCounts> parseNvdisasmHalfOps(std::string_view nvdisasm_text);

struct HalfFlops {
  std::optional<double> fp16;
  std::optional<double> bf16;
  std::string method;  // one phrase: how they were counted, or why they are unknown
};

// The FLOPs behind a kernel's dynamic hadd/hmul/hfma instruction counts, given its function's SASS.
// Unknown (none) where an opcode the kernel executed appears in more than one form or precision:
// then the method gives the bounds.
HalfFlops halfFlopsFromSass(const SassHalfCounts& sass, double hadd, double hmul, double hfma);

// The raw metric names the dynamic counts come from.
inline constexpr const char* kHaddMetric = "sm__sass_thread_inst_executed_op_hadd_pred_on.sum";
inline constexpr const char* kHmulMetric = "sm__sass_thread_inst_executed_op_hmul_pred_on.sum";
inline constexpr const char* kHfmaMetric = "sm__sass_thread_inst_executed_op_hfma_pred_on.sum";

// Functions (mangled names) of a database whose kernels ran half instructions and wait for SASS.
Expected<std::vector<std::string>> functionsNeedingSass(const std::string& db_path);

// Writes function_sass_op rows for the functions given and recomputes flops_fp16/flops_bf16 and
// half_flops_method of their kernels (and of copies of them); functions pending SASS that are not
// in `sass` get `why_missing` as their method. One transaction.
Status applySassHalfFlops(const std::string& db_path, const std::map<std::string, SassHalfCounts>& sass,
                          const std::string& why_missing);

}  // namespace fprof::core
