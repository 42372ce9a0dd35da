// Tensor-core FLOPs from pipe cycles and SASS (see sass_tensor.h).
#include "fprof/core/sass_tensor.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "fprof/core/metric_sets.h"
#include "fprof/core/store.h"
#include "sass_db.h"
#include "sqlite_util.h"

namespace fprof::core {
namespace {

using detail::joinedList;
using detail::Statement;
using detail::wholeNumber;

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }
bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool isMmaClass(const std::string& cls) { return startsWith(cls, kMmaClassPrefix); }

std::string rateText(double rate) {
  char text[32];
  std::snprintf(text, sizeof text, std::fabs(rate - std::round(rate)) < 1e-9 ? "%.0f" : "%.2f", rate);
  return text;
}

// The function's tensor instructions by family, without the "mma:" prefix.
struct MmaKinds {
  std::set<std::string> pipe;     // HMMA, HGMMA, QGMMA: kTensorCyclesMetric counts them
  std::set<std::string> dmma;     // DMMA
  std::set<std::string> integer;  // IMMA, IGMMA, BMMA, BGMMA: not counted
};

MmaKinds kindsOf(const SassHalfCounts& sass) {
  MmaKinds k;
  const std::string prefix = kMmaClassPrefix;
  for (const auto& [cls, count] : sass) {
    if (count <= 0 || !isMmaClass(cls)) continue;
    const std::string m = cls.substr(prefix.size());
    if (startsWith(m, "HMMA") || startsWith(m, "HGMMA") || startsWith(m, "QGMMA")) {
      k.pipe.insert(m);
    } else if (startsWith(m, "DMMA")) {
      k.dmma.insert(m);
    } else {
      k.integer.insert(m);
    }
  }
  return k;
}

// fp16, bf16, tf32 and fp8 from the tensor pipe's cycles; the method's phrase for them.
std::string pipeFlops(TensorFlops& t, const std::set<std::string>& kinds, int sm, double cycles, double hfma2_mma) {
  if (cycles <= 0 || kinds.empty()) {  // none ran (cycles without MMA kinds come from other instructions)
    t.fp16 = t.bf16 = t.tf32 = t.fp8 = 0;
    return {};
  }
  std::set<std::string> unrated, precisions;
  std::set<double> rates;
  for (const std::string& k : kinds) {
    if (auto r = mmaRateOf(k, sm)) {
      rates.insert(r->ops_per_cycle);
      precisions.insert(r->precision);
    } else {
      unrated.insert(k);
    }
  }
  const std::string counted = wholeNumber(cycles) + " tensor-pipe cycles of " + joinedList(kinds);
  if (!unrated.empty()) {
    return "fp16/bf16/tf32/fp8 tensor FLOPs unknown: no calibrated ops a cycle for " + joinedList(unrated) +
           (sm == 90 ? "" : " on sm_" + std::to_string(sm)) + " (" + counted +
           "); `--metrics full` counts them with the ops_path counters";
  }
  if (rates.size() > 1) {
    return "fp16/bf16/tf32/fp8 tensor FLOPs unknown: " + counted + " run at different ops a cycle; between " +
           wholeNumber(cycles * *rates.begin()) + " and " + wholeNumber(cycles * *rates.rbegin()) +
           " FLOPs; `--metrics full` counts them with the ops_path counters";
  }
  const double flops = std::round(cycles * *rates.begin());
  if (hfma2_mma > 0) {
    const double low = std::round(std::max(0.0, cycles - hfma2_mma) * *rates.begin());
    return "fp16/bf16/tf32/fp8 tensor FLOPs unknown: the kernel also ran " + wholeNumber(hfma2_mma) +
           " HFMA2.MMA, whose cycles the counter may include; between " + wholeNumber(low) + " and " +
           wholeNumber(flops) +
           " FLOPs (" + counted + ", " + joinedList(precisions) +
           ", if an HFMA2.MMA takes at most a cycle, as measured); `--metrics full` counts them";
  }
  if (precisions.size() > 1) {
    return "fp16/bf16/tf32/fp8 tensor FLOPs unknown by precision: " + wholeNumber(flops) + " FLOPs in all (" + counted +
           ", " + joinedList(precisions) + "); `--metrics full` splits them";
  }
  t.fp16 = t.bf16 = t.tf32 = t.fp8 = 0;
  const std::string& p = *precisions.begin();
  (p == "bf16" ? t.bf16 : p == "tf32" ? t.tf32 : p == "fp8" ? t.fp8 : t.fp16) = flops;
  return p + " " + wholeNumber(flops) + " = " + counted + " x " + rateText(*rates.begin()) + " ops a cycle";
}

// fp64 from DMMA instructions and the function's one DMMA shape; the method's phrase.
std::string dmmaFlops(TensorFlops& t, const std::set<std::string>& kinds, double instructions) {
  if (instructions <= 0) {
    t.fp64 = 0;
    return {};
  }
  const std::string counted = wholeNumber(instructions) + " DMMA instructions";
  if (kinds.empty()) return "fp64 tensor FLOPs unknown: " + counted + ", none in the SASS read (another module?)";
  std::set<double> per;
  for (const std::string& k : kinds) {
    if (auto f = dmmaFlopsOf(k)) per.insert(*f);
  }
  if (per.size() != 1 || per.size() != kinds.size()) {
    if (per.size() > 1) {
      return "fp64 tensor FLOPs unknown: " + counted + " of " + joinedList(kinds) + "; between " +
             wholeNumber(instructions * *per.begin()) + " and " + wholeNumber(instructions * *per.rbegin()) + " FLOPs";
    }
    return "fp64 tensor FLOPs unknown: unreadable DMMA shape in " + joinedList(kinds);
  }
  t.fp64 = instructions * *per.begin();
  return "fp64 " + wholeNumber(*t.fp64) + " = " + counted + " x " + wholeNumber(*per.begin()) + " (" +
         joinedList(kinds) + ")";
}

}  // namespace

std::optional<MmaRate> mmaRateOf(const std::string& m, int sm) {
  if (sm != 90 || has(m, ".SP")) return std::nullopt;  // calibrated on GH100, dense only
  if (startsWith(m, "QGMMA")) {
    if (has(m, "E4M3") || has(m, "E5M2")) return MmaRate{"fp8", 2048};
    return std::nullopt;
  }
  const bool bf16 = has(m, ".BF16"), tf32 = has(m, ".TF32");
  if (startsWith(m, "HGMMA")) {
    if (tf32) return MmaRate{"tf32", 512};
    return MmaRate{bf16 ? "bf16" : "fp16", 1024};
  }
  if (startsWith(m, "HMMA") && !tf32) {
    if (startsWith(m, "HMMA.16816.")) return MmaRate{bf16 ? "bf16" : "fp16", 2048.0 / 3.0};
    if (startsWith(m, "HMMA.1688.")) return MmaRate{bf16 ? "bf16" : "fp16", 512};
  }
  return std::nullopt;
}

std::optional<double> dmmaFlopsOf(const std::string& m) {
  const size_t dot = m.find('.');
  if (!startsWith(m, "DMMA") || dot == std::string::npos) return std::nullopt;
  std::string shape = m.substr(dot + 1, m.find('.', dot + 1) - dot - 1);
  int a = 0, b = 0, c = 0;
  if (std::sscanf(shape.c_str(), "%dx%dx%d", &a, &b, &c) == 3 ||
      (shape.size() == 3 && std::sscanf(shape.c_str(), "%1d%1d%1d", &a, &b, &c) == 3)) {
    if (a > 0 && b > 0 && c > 0) return 2.0 * a * b * c;
  }
  return std::nullopt;
}

TensorFlops tensorFlopsFromSass(const SassHalfCounts& sass, int sm, double pipe_cycles, double dmma_instructions,
                                double hfma2_mma) {
  TensorFlops t;
  const MmaKinds kinds = kindsOf(sass);
  std::string method;
  for (const std::string& part :
       {pipeFlops(t, kinds.pipe, sm, pipe_cycles, hfma2_mma), dmmaFlops(t, kinds.dmma, dmma_instructions)}) {
    if (!part.empty()) method += (method.empty() ? "" : "; ") + part;
  }
  if (!kinds.integer.empty()) {
    method += (method.empty() ? "" : "; ") + std::string("integer tensor ops (") + joinedList(kinds.integer) +
              ") not counted by this metric set (`--metrics full` counts them)";
  }
  t.method = method.empty() ? "" : "from the function's SASS: " + method;
  return t;
}

Expected<std::vector<std::string>> functionsNeedingTensorSass(const std::string& db_path) {
  return detail::functionsPending(db_path, "tensor_flops_method", kTensorFlopsPending);
}

Status applySassTensorFlops(const std::string& db_path, const std::map<std::string, SassHalfCounts>& sass, int sm,
                            const std::string& why_missing) {
  return updateDatabase(db_path, [&](sqlite3* db) -> Status {
    auto fail = [&](const char* what) { return makeError(db_path + ": " + what + ": " + detail::sqliteMessage(db)); };
    struct Pending {
      int64_t kernel_id;
      uint32_t process_id;
      std::string name;
      double cycles, dmma, hfma2_mma;  // hfma2_mma 0 where not collected
    };
    std::vector<Pending> pending;
    {
      const std::string value = detail::kKernelMetricValueSql;
      const std::string sql = "SELECT c.kernel_id, k.process_id, n.value, " + value + ", " + value + ", " + value +
                              " FROM kernel_counter c JOIN kernel k ON k.id = c.kernel_id JOIN string n ON n.id = "
                              "k.name_id WHERE c.tensor_flops_method = ?";
      Statement st(db, sql.c_str());
      if (!st.ok()) return fail("read kernels waiting for SASS");
      st.bindAll(std::string_view(kTensorCyclesMetric), std::string_view(kDmmaInstMetric),
                 std::string_view(kHfma2MmaInstMetric), std::string_view(kTensorFlopsPending));
      while (st.step() == SQLITE_ROW) {
        pending.push_back({st.i64(0), static_cast<uint32_t>(st.i64(1)), st.text(2), st.f64(3), st.f64(4), st.f64(5)});
      }
    }
    Statement update(db,
                     "UPDATE kernel_counter SET flops_tensor_fp16 = ?, flops_tensor_bf16 = ?, flops_tensor_tf32 = ?, "
                     "flops_tensor_fp8 = ?, flops_tensor_fp64 = ?, tensor_flops_method = NULLIF(?, '') "
                     "WHERE kernel_id = ?");
    detail::SassOpWriter ops(db);
    if (!update.ok() || !ops.ok()) return fail("prepare SASS updates");
    for (const Pending& p : pending) {
      auto it = sass.find(p.name);
      TensorFlops flops;
      if (it == sass.end()) {
        flops.method = why_missing;
      } else {
        flops = tensorFlopsFromSass(it->second, sm, p.cycles, p.dmma, p.hfma2_mma);
        if (!ops.write(p.process_id, p.name, it->second, isMmaClass)) return fail("write function_sass_op");
      }
      update.bindAll(flops.fp16, flops.bf16, flops.tf32, flops.fp8, flops.fp64, std::string_view(flops.method),
                     p.kernel_id);
      if (update.run() != SQLITE_DONE) return fail("update kernel_counter");
    }
    return {};
  });
}

}  // namespace fprof::core
