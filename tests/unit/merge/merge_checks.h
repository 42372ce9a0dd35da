// Checks that hold for any merge, usable on any databases: the synthetic ranks of rank_fixture.h
// today, the recorded torchrun files under tests/data when they arrive. Point them at files:
//   expectMergeKeepsEveryRow({"tests/data/a.rank0.fprof", "tests/data/a.rank1.fprof"}, merged);
//   expectRanksMatchInputs({...}, merged);
#pragma once

#include <string>
#include <vector>

namespace fprof::testing {

// `merged` (already written from `inputs`) holds every row of every input: process, device,
// kernel, counter, metric, argument, NVTX, copy, set, memory and collector-event rows in the
// same numbers; ids unique where the analysis keys on them ((process, correlation), NVTX range
// ids, kernel ids) and every reference (counters -> kernel, kernel -> NVTX range, NVTX parent)
// pointing at a row of the same process.
void expectMergeKeepsEveryRow(const std::vector<std::string>& inputs, const std::string& merged);

// For each input, the same processes taken out of `merged` (core::selectProcesses) analyse
// exactly as the input itself: summary, roofline placements, data flow, fusion candidates, a diff
// with no change, the Markdown report, and the per-process metadata (mode).
void expectRanksMatchInputs(const std::vector<std::string>& inputs, const std::string& merged);

}  // namespace fprof::testing
