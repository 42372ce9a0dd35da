// After a metrics run: the SASS of the functions that ran half-precision instructions, each
// function's code cut from the cubins the collector saved (FPROF_CUBIN_DIR) and all of them decoded
// in one run of the toolkit's nvdisasm, turns their hadd/hmul/hfma instruction counts into
// fp16/bf16 FLOPs per lane (core/sass_half.h).
#pragma once

#include <string>

#include "fprof/core/expected.h"
#include "fprof/core/replay_merge.h"

namespace fprof::cli {

// Completes `db_path` from the cubins in `cubin_dir`; returns a line for the user, "" when there
// was nothing to do.
std::string applySassStep(const std::string& db_path, const std::string& cubin_dir);

// After a second run of application replay counted by SASS patching (core/sass_pc.h): each
// launch's SASS counters, by correlation id, from the per-PC counts the collector wrote to
// `pc_file` and the counted functions' instructions (nvdisasm of the cubins the run saved in
// `cubin_dir`, named by CRC). `summary`: a line for the user.
core::Expected<core::LaunchRawCounters> sassCountersOfPatchedRun(const std::string& db_path,
                                                                 const std::string& pc_file,
                                                                 const std::string& cubin_dir, std::string& summary);

// How far a run by SASS patching got, from the per-PC counts it wrote to `pc_file`
// (core::sassPcProgressText).
std::string patchedRunProgress(const std::string& pc_file);

}  // namespace fprof::cli
