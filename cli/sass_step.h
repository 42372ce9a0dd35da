// After a metrics run: the SASS of the functions that ran half-precision instructions, each
// function's code cut from the cubins the collector saved (FPROF_CUBIN_DIR) and all of them decoded
// in one run of the toolkit's nvdisasm, turns their hadd/hmul/hfma instruction counts into
// fp16/bf16 FLOPs per lane (core/sass_half.h).
#pragma once

#include <string>

namespace fprof::cli {

// Completes `db_path` from the cubins in `cubin_dir`; returns a line for the user, "" when there
// was nothing to do.
std::string applySassStep(const std::string& db_path, const std::string& cubin_dir);

}  // namespace fprof::cli
