// Half-precision FLOPs per lane from SASS (see sass_half.h).
#include "fprof/core/sass_half.h"

#include <sqlite3.h>

#include <algorithm>
#include <iterator>
#include <cmath>
#include <set>
#include <sstream>

#include "fprof/core/metric_sets.h"
#include "fprof/core/store.h"
#include "sass_db.h"
#include "sass_text.h"
#include "sqlite_util.h"

namespace fprof::core {
namespace {

using detail::addressOf;
using detail::forEachLine;
using detail::joinedList;
using detail::Statement;
using detail::wholeNumber;

constexpr const char* kOpcodes[] = {"HFMA2", "HADD2", "HMUL2"};
// Other 16-bit instructions that may run on the FMA pipe's fp16 unit (compares, min/max): a
// function holding them gets no pipe split, since the fp16 pipe counter may count them too.
constexpr const char* kOtherFp16Opcodes[] = {"HSETP2", "HSET2", "HMNMX2"};
// Tensor-core matrix instructions: kept whole ("mma:HGMMA.64x128x16.F32") for sass_tensor.h.
constexpr const char* kMmaOpcodes[] = {"HMMA", "HGMMA", "QGMMA", "IMMA", "IGMMA", "DMMA", "BMMA", "BGMMA"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == ';' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> splitOperands(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ',') {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  return out;
}

bool isZeroRegister(std::string_view op) { return op == "RZ" || op == "-RZ" || op == "|RZ|" || op == "-|RZ|"; }

bool isRegister(std::string_view op) {
  while (!op.empty() && (op.front() == '-' || op.front() == '|' || op.front() == '!')) op.remove_prefix(1);
  return op.size() >= 2 && op[0] == 'R' && op[1] >= '0' && op[1] <= '9';
}

bool broadcastsOneLane(std::string_view op) {
  return op.find(".H0_H0") != std::string_view::npos || op.find(".H1_H1") != std::string_view::npos;
}

// "packed", "scalar" or "zero" for one instruction's operands (destination first).
const char* formOf(std::string_view opcode, std::string_view modifiers, const std::vector<std::string_view>& ops) {
  const std::vector<std::string_view> sources(ops.size() > 1 ? ops.begin() + 1 : ops.end(), ops.end());
  // A half->float conversion: HADD2.F32 Rd, -RZ, Rs.H0_H0 adds nothing.
  if (opcode == "HADD2" && modifiers.find(".F32") != std::string_view::npos && !sources.empty() &&
      isZeroRegister(sources[0])) {
    return "zero";
  }
  // An immediate moved into a register: HFMA2.MMA Rd, -RZ, RZ, imm (0 * 0 + imm).
  if (opcode == "HFMA2" && sources.size() >= 2 && isZeroRegister(sources[0]) && isZeroRegister(sources[1])) {
    return "zero";
  }
  if (opcode == "HMUL2" && !sources.empty() && (isZeroRegister(sources[0]) || isZeroRegister(sources.back()))) {
    return "zero";
  }
  bool any_register = false;
  for (std::string_view op : sources) {
    if (!isRegister(op)) continue;
    any_register = true;
    if (!broadcastsOneLane(op)) return "packed";
  }
  return any_register ? "scalar" : "packed";
}

// The class of one SASS line, or "" when it is no half-precision arithmetic instruction:
// opcode, ".MMA" where ptxas put it on the MMA pipe, precision and form (sass_half.h).
std::string classOf(std::string_view line) {
  const size_t close = line.find("*/");
  if (close != std::string_view::npos) line.remove_prefix(close + 2);
  line = trim(line);
  if (!line.empty() && line.front() == '@') {  // predicate guard: @P0, @!PT
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) return {};
    line = trim(line.substr(space));
  }
  const size_t space = line.find(' ');
  const std::string_view mnemonic = line.substr(0, space);
  const size_t dot = mnemonic.find('.');
  const std::string_view opcode = mnemonic.substr(0, dot);
  const std::string_view modifiers = dot == std::string_view::npos ? std::string_view() : mnemonic.substr(dot);
  for (const char* o : kMmaOpcodes) {
    if (opcode == o) return std::string(kMmaClassPrefix) + std::string(mnemonic);
  }
  const bool bf16 = modifiers.find("BF16") != std::string_view::npos;
  const std::string precision = bf16 ? ".bf16." : ".f16.";
  for (const char* o : kOtherFp16Opcodes) {
    if (opcode == o) return std::string(opcode) + precision + "other";
  }
  bool half = false;
  for (const char* o : kOpcodes) half = half || opcode == o;
  if (!half) return {};
  const std::vector<std::string_view> ops =
      splitOperands(space == std::string_view::npos ? std::string_view() : line.substr(space + 1));
  const bool mma = modifiers.find(".MMA") != std::string_view::npos;
  return std::string(opcode) + (mma ? ".MMA" : "") + precision + formOf(opcode, modifiers, ops);
}

// "//----- .text._Z4axpyPfi -----" or ".text._Z4axpyPfi:" opens a function's code.
std::optional<std::string> functionStart(std::string_view line) {
  line = trim(line);
  if (line.rfind(".text.", 0) != 0 || line.empty() || line.back() != ':') return std::nullopt;
  return std::string(line.substr(6, line.size() - 7));
}

// One class split into its parts: "HFMA2.MMA.f16.packed" -> HFMA2, MMA pipe, f16, packed.
struct SassClass {
  std::string opcode;
  bool mma = false;
  std::string precision;
  std::string form;
};

std::optional<SassClass> parseClass(const std::string& cls) {
  if (cls.rfind(kMmaClassPrefix, 0) == 0) return std::nullopt;  // a tensor instruction: not half arithmetic
  std::vector<std::string> parts;
  std::stringstream in(cls);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  if (parts.size() == 3) return SassClass{parts[0], false, parts[1], parts[2]};
  if (parts.size() == 4 && parts[1] == "MMA") return SassClass{parts[0], true, parts[2], parts[3]};
  return std::nullopt;
}

enum class Pipe { kAny, kFma, kMma };

using Forms = std::set<std::pair<std::string, std::string>>;  // (precision, form) with static count > 0

// The forms of one opcode in a function's SASS, on one pipe or on both.
Forms formsOf(const SassHalfCounts& sass, const std::string& opcode, Pipe pipe) {
  Forms f;
  for (const auto& [cls, count] : sass) {
    const auto c = parseClass(cls);
    if (count <= 0 || !c || c->opcode != opcode) continue;
    if ((pipe == Pipe::kFma && c->mma) || (pipe == Pipe::kMma && !c->mma)) continue;
    f.emplace(c->precision, c->form);
  }
  return f;
}

// Whether X = sm__thread_inst_executed_pipe_fma_type_fp16_pred_on splits the function's HFMA2
// count by pipe: every HADD2 and HMUL2 on the FMA pipe (X - hadd - hmul is then its HFMA2) and no
// other 16-bit instruction that X may count.
bool pipeSplitApplies(const SassHalfCounts& sass) {
  for (const auto& [cls, count] : sass) {
    const auto c = parseClass(cls);
    if (count <= 0 || !c) continue;
    if (c->form == "other" || (c->mma && c->opcode != "HFMA2")) return false;
  }
  return true;
}

double lanesOf(const std::string& form) { return form == "packed" ? 2 : form == "scalar" ? 1 : 0; }


}  // namespace

std::optional<HalfLaneFlops> halfFlopsOfInstruction(std::string_view instruction) {
  const std::optional<SassClass> c = parseClass(classOf(instruction));
  if (!c || c->form == "other") return std::nullopt;
  return HalfLaneFlops{lanesOf(c->form) * (c->opcode == "HFMA2" ? kFlopsPerFma : 1.0), c->precision == "bf16"};
}

std::map<std::string, SassHalfCounts> parseNvdisasmHalfOps(std::string_view text) {
  std::map<std::string, SassHalfCounts> out;
  SassHalfCounts* current = nullptr;
  forEachLine(text, [&](std::string_view line) {
    if (auto name = functionStart(line)) {
      current = &out[*name];
    } else if (std::string cls = current != nullptr ? classOf(line) : std::string(); !cls.empty()) {
      ++(*current)[cls];
    }
  });
  return out;
}

std::map<std::string, SassHalfCounts> parseNvdisasmHalfOpsByRange(std::string_view text,
                                                                   const std::vector<CodeRange>& ranges) {
  std::map<std::string, SassHalfCounts> out;
  for (const CodeRange& r : ranges) out[r.name];
  detail::forEachLineInRanges(text, ranges, [&](const CodeRange& r, uint64_t, std::string_view line) {
    if (std::string cls = classOf(line); !cls.empty()) ++out[r.name][cls];
  });
  return out;
}

namespace {

// FLOPs and how they were counted, over the instruction groups of one kernel.
struct Tally {
  double fp16 = 0, bf16 = 0, low = 0, high = 0;
  std::vector<std::string> how, ambiguous;
};

// One group of executed instructions (an opcode, or the HFMA2 of one pipe) whose SASS forms are
// `forms`: exact where it holds one form and precision, bounds otherwise.
void countGroup(Tally& t, const std::string& label, const Forms& forms, double count, double flops_per_lane,
                bool show_count) {
  if (count <= 0) return;
  const std::string counted = show_count ? " x " + wholeNumber(count) : "";
  if (forms.size() == 1) {
    const auto& [precision, form] = *forms.begin();
    const double flops = count * lanesOf(form) * flops_per_lane;
    (precision == "bf16" ? t.bf16 : t.fp16) += flops;
    t.low += flops;
    t.high += flops;
    t.how.push_back(label + (precision == "bf16" ? ".BF16 " : " ") + form + counted);
    return;
  }
  double lo = 2, hi = 0;
  for (const auto& [precision, form] : forms) {
    lo = std::min(lo, lanesOf(form));
    hi = std::max(hi, lanesOf(form));
  }
  if (forms.empty()) lo = 0, hi = 2;  // executed, yet not in the SASS read: wrong module?
  t.low += count * lo * flops_per_lane;
  t.high += count * hi * flops_per_lane;
  t.ambiguous.push_back(label + counted + (forms.empty() ? " (not in the SASS read)" : ""));
}

}  // namespace

HalfFlops halfFlopsFromSass(const SassHalfCounts& sass, double hadd, double hmul, double hfma,
                            std::optional<double> fp16_pipe) {
  HalfFlops r;
  Tally t;
  countGroup(t, "HADD2", formsOf(sass, "HADD2", Pipe::kAny), hadd, 1.0, false);
  countGroup(t, "HMUL2", formsOf(sass, "HMUL2", Pipe::kAny), hmul, 1.0, false);
  const Forms hfma_forms = formsOf(sass, "HFMA2", Pipe::kAny);
  const Forms fma_pipe_forms = formsOf(sass, "HFMA2", Pipe::kFma);
  const Forms mma_pipe_forms = formsOf(sass, "HFMA2", Pipe::kMma);
  const bool split = hfma > 0 && hfma_forms.size() > 1 && fp16_pipe && pipeSplitApplies(sass);
  if (split) {
    const double on_fma_pipe = std::clamp(*fp16_pipe - hadd - hmul, 0.0, hfma);
    countGroup(t, "HFMA2", fma_pipe_forms, on_fma_pipe, kFlopsPerFma, true);
    countGroup(t, "HFMA2.MMA", mma_pipe_forms, hfma - on_fma_pipe, kFlopsPerFma, true);
  } else {
    countGroup(t, "HFMA2", hfma_forms, hfma, kFlopsPerFma, false);
  }
  if (!t.ambiguous.empty()) {
    // Without the fp16 pipe counter, say where collecting it would make the count exact.
    const bool split_would_help = !fp16_pipe && hfma_forms.size() > 1 && fma_pipe_forms.size() <= 1 &&
                                  mma_pipe_forms.size() <= 1 && pipeSplitApplies(sass) && t.ambiguous.size() == 1;
    r.method = "unknown: the function's SASS holds " + joinedList(t.ambiguous) +
               " in several forms (packed, lane-broadcast scalar, immediate move/conversion) or precisions, and the "
               "counters count instructions, not lanes; between " + wholeNumber(t.low) + " and " + wholeNumber(t.high) +
               " FLOPs" +
               (split_would_help ? "; the sets `roofline` and `full` count the FMA pipe's HFMA2 apart from the MMA pipe's "
                                   "(HFMA2.MMA), which makes them exact here"
                                 : "; `fprof run --replay application` counts each instruction and makes them exact");
    return r;
  }
  r.fp16 = t.fp16;
  r.bf16 = t.bf16;
  if (t.how.empty()) return r;
  r.method = "per lane from the function's SASS" +
             (split ? ", HFMA2 by pipe from " + std::string(kFp16PipeMetric) +
                          " - hadd - hmul (the FMA pipe's; that counter moves in steps of 32 threads: where warps are "
                          "partial the split can be off by tens of HFMA2, 2 FLOPs each, 30 at most seen on an H100)"
                    : std::string()) +
             " (" + joinedList(t.how) + "; packed = 2 lanes, lane-broadcast scalar = 1, immediate moves and conversions = 0)";
  return r;
}

Expected<int> deviceSmOf(const std::string& db_path) {
  int sm = 0;
  Status s = updateDatabase(db_path, [&](sqlite3* db) -> Status {
    Statement st(db, "SELECT compute_major * 10 + compute_minor FROM device ORDER BY rowid LIMIT 1");
    if (!st.ok()) return makeError(db_path + ": " + detail::sqliteMessage(db));
    if (st.step() == SQLITE_ROW) sm = static_cast<int>(st.i64(0));
    return {};
  });
  if (!s) return Error{s.error()};
  if (sm <= 0) return Error{db_path + ": no device recorded"};
  return sm;
}

Expected<std::vector<std::string>> functionsNeedingSass(const std::string& db_path) {
  return detail::functionsPending(db_path, "half_flops_method", kHalfFlopsPending);
}

Status applySassHalfFlops(const std::string& db_path, const std::map<std::string, SassHalfCounts>& sass,
                          const std::string& why_missing) {
  return updateDatabase(db_path, [&](sqlite3* db) -> Status {
    auto fail = [&](const char* what) { return makeError(db_path + ": " + what + ": " + detail::sqliteMessage(db)); };
    struct Pending {
      int64_t kernel_id;
      uint32_t process_id;
      std::string name;
      double hadd, hmul, hfma;
      std::optional<double> fp16_pipe;  // NULL where the set did not collect it
    };
    std::vector<Pending> pending;
    {
      const std::string value = detail::kKernelMetricValueSql;
      const std::string sql = "SELECT c.kernel_id, k.process_id, n.value, " + value + ", " + value + ", " + value +
                              ", " + value +
                              " FROM kernel_counter c JOIN kernel k ON k.id = c.kernel_id JOIN string n ON n.id = "
                              "k.name_id WHERE c.half_flops_method = ?";
      Statement st(db, sql.c_str());
      if (!st.ok()) return fail("read kernels waiting for SASS");
      st.bindAll(std::string_view(kHaddMetric), std::string_view(kHmulMetric), std::string_view(kHfmaMetric),
                 std::string_view(kFp16PipeMetric), std::string_view(kHalfFlopsPending));
      while (st.step() == SQLITE_ROW) {
        pending.push_back({st.i64(0), static_cast<uint32_t>(st.i64(1)), st.text(2), st.f64(3), st.f64(4), st.f64(5),
                           st.isNull(6) ? std::nullopt : std::optional<double>(st.f64(6))});
      }
    }
    Statement update(db, "UPDATE kernel_counter SET flops_fp16 = ?, flops_bf16 = ?, half_flops_method = ? "
                         "WHERE kernel_id = ?");
    detail::SassOpWriter ops(db);
    if (!update.ok() || !ops.ok()) return fail("prepare SASS updates");
    for (const Pending& p : pending) {
      auto it = sass.find(p.name);
      HalfFlops flops;
      if (it == sass.end()) {
        flops.method = why_missing;
      } else {
        flops = halfFlopsFromSass(it->second, p.hadd, p.hmul, p.hfma, p.fp16_pipe);
        if (!ops.write(p.process_id, p.name, it->second)) return fail("write function_sass_op");
      }
      update.bindAll(flops.fp16, flops.bf16, std::string_view(flops.method), p.kernel_id);
      if (update.run() != SQLITE_DONE) return fail("update kernel_counter");
    }
    return {};
  });
}

}  // namespace fprof::core
