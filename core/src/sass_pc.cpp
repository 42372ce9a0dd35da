// Per-PC instruction counts and the SASS counters they give (see sass_pc.h).
#include "fprof/core/sass_pc.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <iterator>
#include <cstdlib>

#include "fprof/core/metric_sets.h"
#include "sass_text.h"

namespace fprof::core {
namespace {

using detail::forEachLine;

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// "@P0 FFMA.FTZ R0, R1, R2, R3 ;" -> "FFMA" (the opcode without guard and modifiers).
std::string_view opcodeOf(std::string_view instruction) {
  instruction = trimmed(instruction);
  if (!instruction.empty() && instruction.front() == '@') {
    const size_t space = instruction.find(' ');
    instruction = space == std::string_view::npos ? std::string_view() : trimmed(instruction.substr(space));
  }
  const std::string_view mnemonic = instruction.substr(0, instruction.find(' '));
  return mnemonic.substr(0, mnemonic.find('.'));
}

// The instruction of one nvdisasm line: what follows the address comment, up to the ';'.
std::string instructionText(std::string_view line) {
  const size_t close = line.find("*/");
  if (close != std::string_view::npos) line.remove_prefix(close + 2);
  const size_t end = line.find(';');
  return std::string(trimmed(end == std::string_view::npos ? line : line.substr(0, end)));
}

struct FlopOpcode {
  const char* opcode;
  const char* metric;
};

// The opcodes behind ncu's nine FLOP instruction counters on sm_90 (the *32I forms take an
// immediate operand). HADD2.F32 conversions and HFMA2.MMA immediate moves count as hadd and hfma
// there too: their lanes are sass_half.h's business.
constexpr FlopOpcode kFlopOpcodes[] = {
    {"DADD", "sm__sass_thread_inst_executed_op_dadd_pred_on.sum"},
    {"DMUL", "sm__sass_thread_inst_executed_op_dmul_pred_on.sum"},
    {"DFMA", "sm__sass_thread_inst_executed_op_dfma_pred_on.sum"},
    {"FADD", "sm__sass_thread_inst_executed_op_fadd_pred_on.sum"},
    {"FADD32I", "sm__sass_thread_inst_executed_op_fadd_pred_on.sum"},
    {"FMUL", "sm__sass_thread_inst_executed_op_fmul_pred_on.sum"},
    {"FMUL32I", "sm__sass_thread_inst_executed_op_fmul_pred_on.sum"},
    {"FFMA", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"},
    {"FFMA32I", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"},
    {"HADD2", kHaddMetric},
    {"HADD2_32I", kHaddMetric},
    {"HMUL2", kHmulMetric},
    {"HMUL2_32I", kHmulMetric},
    {"HFMA2", kHfmaMetric},
    {"HFMA2_32I", kHfmaMetric},
};

// The nine FLOP counters, then local sectors and warp instructions: every launch gets all twelve.
std::vector<std::string> countedMetricNames() {
  std::vector<std::string> names;
  for (const FlopOpcode& f : kFlopOpcodes) {
    if (std::find(names.begin(), names.end(), f.metric) == names.end()) names.emplace_back(f.metric);
  }
  names.emplace_back(kLocalLoadSectorsSassMetric);
  names.emplace_back(kLocalStoreSectorsSassMetric);
  names.emplace_back(kInstructionsSassMetric);
  names.emplace_back(kHalfFlopsFp16PerPcMetric);
  names.emplace_back(kHalfFlopsBf16PerPcMetric);
  return names;
}

bool readNumbers(std::string_view line, uint64_t (&values)[4]) {
  const std::string text(line);
  unsigned long long a = 0, b = 0, c = 0, d = 0;
  if (std::sscanf(text.c_str(), "%llu %llu %llu %llu", &a, &b, &c, &d) != 4) return false;
  values[0] = a;
  values[1] = b;
  values[2] = c;
  values[3] = d;
  return true;
}

}  // namespace

std::string sassPcLaunchText(const SassPcLaunch& launch) {
  std::string out = "L " + std::to_string(launch.correlation_id) + " " + std::to_string(launch.nested_correlation_id) + "\n";
  char line[96];
  for (const SassPcFunction& f : launch.functions) {
    out += "F " + std::to_string(f.cubin_crc) + " " + f.name + "\n";
    for (const SassPcCount& p : f.pcs) {
      std::snprintf(line, sizeof line, "%" PRIu32 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", p.pc, p.warp_inst,
                    p.thread_inst, p.local_sectors);
      out += line;
    }
  }
  return out;
}

Expected<std::vector<SassPcLaunch>> parseSassPcText(std::string_view text) {
  std::vector<SassPcLaunch> out;
  size_t number = 0;
  std::string error;
  forEachLine(text, [&](std::string_view line) {
    ++number;
    if (!error.empty() || line.empty()) return;
    auto bad = [&] { error = "line " + std::to_string(number) + " is not a PC count record: " + std::string(line.substr(0, 80)); };
    if (line.rfind("L ", 0) == 0) {
      unsigned a = 0, b = 0;
      if (std::sscanf(std::string(line).c_str(), "L %u %u", &a, &b) != 2) return bad();
      out.push_back(SassPcLaunch{a, b, {}});
    } else if (line.rfind("F ", 0) == 0) {
      const size_t space = line.find(' ', 2);
      if (out.empty() || space == std::string_view::npos) return bad();
      out.back().functions.push_back(
          SassPcFunction{std::string(line.substr(space + 1)),
                         static_cast<uint32_t>(std::strtoul(std::string(line.substr(2, space - 2)).c_str(), nullptr, 10)),
                         {}});
    } else {
      uint64_t v[4];
      if (out.empty() || out.back().functions.empty() || !readNumbers(line, v)) return bad();
      out.back().functions.back().pcs.push_back(SassPcCount{static_cast<uint32_t>(v[0]), v[1], v[2], v[3]});
    }
  });
  if (!error.empty()) return makeError(error);
  return out;
}

std::string duplicatesPcFile(const std::string& database, const std::string& cubin_dir) {
  if (cubin_dir.empty()) return database + ".pcs";
  const size_t slash = database.rfind('/');
  return cubin_dir + "/" + (slash == std::string::npos ? database : database.substr(slash + 1)) + ".pcs";
}

std::string sassPcProgressText(std::string_view text) {
  const auto launches = parseSassPcText(text);
  if (!launches) return "its counts unreadable (" + launches.error() + ")";
  if (launches->empty()) return "no launch counted";
  const SassPcLaunch& last = launches->back();
  std::string out = std::to_string(launches->size()) + (launches->size() == 1 ? " launch" : " launches") +
                    " counted, the last correlation " + std::to_string(last.correlation_id);
  if (!last.functions.empty()) out += " (" + last.functions.front().name + ")";
  return out;
}

std::map<std::string, SassInstructions> parseNvdisasmInstructionsByRange(std::string_view text,
                                                                         const std::vector<CodeRange>& ranges) {
  std::map<std::string, SassInstructions> out;
  for (const CodeRange& r : ranges) out[r.name];
  detail::forEachLineInRanges(text, ranges, [&](const CodeRange& r, uint64_t at, std::string_view line) {
    out[r.name][static_cast<uint32_t>(at - r.begin)] = instructionText(line);
  });
  return out;
}

const char* flopMetricOfInstruction(std::string_view instruction) {
  const std::string_view opcode = opcodeOf(instruction);
  for (const FlopOpcode& f : kFlopOpcodes) {
    if (opcode == f.opcode) return f.metric;
  }
  return nullptr;
}

bool countedFromPcCounts(const std::string& metric) {
  static const std::vector<std::string> names = countedMetricNames();
  return std::find(names.begin(), names.end(), metric) != names.end();
}

std::optional<RawCounters> sassCountersOfLaunch(const SassPcLaunch& launch, const SassCodeLookup& code, std::string& why) {
  static const std::vector<std::string> names = countedMetricNames();
  std::map<std::string, double> sums;
  for (const std::string& n : names) sums[n] = 0;
  for (const SassPcFunction& f : launch.functions) {
    const SassInstructions* instructions = code(f.name, f.cubin_crc);
    for (const SassPcCount& p : f.pcs) {
      sums[kInstructionsSassMetric] += static_cast<double>(p.warp_inst);
      if (p.warp_inst == 0 && p.local_sectors == 0) continue;
      if (instructions == nullptr) {
        why = "the code of " + f.name + " was not found among the modules the second run saved";
        return std::nullopt;
      }
      auto at = instructions->find(p.pc);
      if (at == instructions->end()) {
        why = "no instruction of " + f.name + " at offset " + std::to_string(p.pc) + " in its saved code";
        return std::nullopt;
      }
      if (const char* metric = flopMetricOfInstruction(at->second)) sums[metric] += static_cast<double>(p.thread_inst);
      if (const auto half = halfFlopsOfInstruction(at->second)) {
        sums[half->bf16 ? kHalfFlopsBf16PerPcMetric : kHalfFlopsFp16PerPcMetric] +=
            static_cast<double>(p.thread_inst) * half->flops;
      }
      const std::string_view opcode = opcodeOf(at->second);
      if (opcode == "LDL") sums[kLocalLoadSectorsSassMetric] += static_cast<double>(p.local_sectors);
      if (opcode == "STL") sums[kLocalStoreSectorsSassMetric] += static_cast<double>(p.local_sectors);
    }
  }
  RawCounters out;
  for (const std::string& n : names) out.emplace_back(n, sums[n]);
  return out;
}

}  // namespace fprof::core
