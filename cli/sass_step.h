// After a metrics run: the SASS of the functions that ran half-precision instructions, read from
// the cubins the collector saved (FPROF_CUBIN_DIR) with the toolkit's nvdisasm, turns their
// hadd/hmul/hfma instruction counts into fp16/bf16 FLOPs per lane (core/sass_half.h).
#pragma once

#include <string>

namespace fprof::cli {

// nvdisasm from FPROF_NVDISASM, PATH, $CUDA_HOME/bin or /usr/local/cuda/bin; "" if none.
std::string findNvdisasm();

// Completes `db_path` from the cubins in `cubin_dir`; returns a line for the user, "" when there
// was nothing to do.
std::string applySassStep(const std::string& db_path, const std::string& cubin_dir);

}  // namespace fprof::cli
