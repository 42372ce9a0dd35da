// Counters, copies and reasons of a metrics run (see counter_ledger.h).
#include "metrics/counter_ledger.h"

#include <algorithm>

#include "fprof/core/metric_sets.h"
#include "injection/log.h"

namespace fprof::collector {
namespace {

// Counts whose equality says two launches did the same work (bytes and time vary run to run).
bool isDeterministic(const std::string& metric) {
  return metric.find("inst_executed") != std::string::npos || metric.find("ops_path_tensor") != std::string::npos;
}

bool sameDeterministicCounts(const std::vector<std::pair<std::string, double>>& a,
                             const std::vector<std::pair<std::string, double>>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (isDeterministic(a[i].first) && a[i].second != b[i].second) return false;
  }
  return true;
}

}  // namespace

void CounterLedger::missing(LaunchRef launch, std::string reason) {
  LaunchCounterResult r;
  r.launch = launch;
  r.missing_reason = std::move(reason);
  results_.push_back(std::move(r));
}

void CounterLedger::missingWithCopies(const ProfiledLaunch& e, const std::string& why, const std::string& copies_why) {
  missing(e.launch, why);
  for (const LaunchRef& c : waiting_copies_[e.launch_index]) missing(c, copies_why);
  waiting_copies_.erase(e.launch_index);
}

// Copies go out as soon as their source is decoded; until then they wait on it.
void CounterLedger::copyOrWait(uint64_t source_index, LaunchRef launch) {
  auto it = decoded_.find(source_index);
  if (it == decoded_.end()) {
    waiting_copies_[source_index].push_back(launch);
    return;
  }
  ++copied_;
  results_.push_back(copiedFrom(it->second, launch));
}

LaunchCounterResult CounterLedger::copiedFrom(const CountedLaunch& source, LaunchRef launch) const {
  LaunchCounterResult r;
  r.launch = launch;
  r.counters = source.counters;
  r.counters.source = core::kCounterSourceSameSignature;
  r.raw = source.raw;
  r.source = source.launch;
  if (auto varies = signature_varies_.find(source.signature); varies != signature_varies_.end()) {
    r.counters.signature_varies = varies->second;
  }
  return r;
}

void CounterLedger::keepDecoded(const ProfiledLaunch& e, const std::vector<double>& row, const std::string& range_name) {
  LaunchCounterResult r;
  r.launch = e.launch;
  r.counters = core::deriveCounters(config_.metrics, row);
  for (size_t m = 0; m < config_.metrics.size() && m < row.size(); ++m) r.raw.emplace_back(config_.metrics[m], row[m]);
  keepCounted(e, std::move(r), range_name);
}

void CounterLedger::keepCounted(const ProfiledLaunch& e, LaunchCounterResult r, const std::string& range_name) {
  if (e.signature) {
    // A later sample of a signature says whether identical launches do identical work.
    auto [first, is_first] = first_sample_.try_emplace(*e.signature, r.raw);
    if (!is_first) {
      const bool varies = !sameDeterministicCounts(first->second, r.raw);
      bool& known = signature_varies_[*e.signature];
      if (varies && !known) {
        log_.note("warning", "launches of " + e.demangled +
                                 " with the same grid, block and arguments executed different instruction counts: its "
                                 "work depends on data, so copied values are approximate");
      }
      known = known || varies;
      r.counters.signature_varies = known;
    } else if (config_.samples_per_signature > 0) {
      decoded_[e.launch_index] = CountedLaunch{r.counters, r.raw, e.launch, *e.signature};  // copies come from first samples
    }
  }
  checkLooseSignature(e, r);
  keepGraphSource(e, r);
  if (log_.debugRanges()) {
    logInfo("range '%s' -> launch %u (%s), signature %016llx", range_name.c_str(), e.launch.correlation_id,
            e.mangled.c_str(), static_cast<unsigned long long>(e.signature.value_or(0)));
  }
  results_.push_back(std::move(r));
  if (auto waiting = waiting_copies_.find(e.launch_index); waiting != waiting_copies_.end()) {
    std::vector<LaunchRef> copies = std::move(waiting->second);
    waiting_copies_.erase(waiting);
    for (const LaunchRef& c : copies) copyOrWait(e.launch_index, c);
  }
}

// A launch profiled to check whether its 1-byte parameters matter: they do not when its
// deterministic counts equal the first sample's (a set without deterministic counters cannot tell).
void CounterLedger::checkLooseSignature(const ProfiledLaunch& e, const LaunchCounterResult& r) {
  if (!e.loose_check) return;
  auto first = first_sample_.find(e.loose_first_signature);
  if (first == first_sample_.end()) return;  // the first sample was not decoded: stays unchecked
  const bool any = std::any_of(r.raw.begin(), r.raw.end(), [](const auto& m) { return isDeterministic(m.first); });
  const bool same = any && sameDeterministicCounts(first->second, r.raw);
  selector_->looseChecked(*e.loose_check, same);
  if (log_.debugRanges()) logInfo("1-byte parameters of %s: %s", e.mangled.c_str(), same ? "no effect" : "matter");
}

// A decoded launch graph kernels may copy from, by its graph key (see GraphSource).
void CounterLedger::keepGraphSource(const ProfiledLaunch& e, const LaunchCounterResult& r) {
  if (!e.signature || !e.loose_signature || !e.graph_key) return;
  auto [it, first] = graph_sources_.try_emplace(*e.graph_key);
  GraphSource& g = it->second;
  if (first) {
    g.first = CountedLaunch{r.counters, r.raw, r.launch, *e.signature};
    g.loose = *e.loose_signature;
    return;
  }
  g.several_loose = g.several_loose || g.loose != *e.loose_signature;
  g.several_signatures = g.several_signatures || g.first.signature != *e.signature;
}

const GraphSource* CounterLedger::graphSource(uint64_t graph_key) const {
  auto it = graph_sources_.find(graph_key);
  return it == graph_sources_.end() ? nullptr : &it->second;
}

void CounterLedger::giveUpWaitingCopies() {
  for (auto& [source, copies] : waiting_copies_) {
    for (const LaunchRef& c : copies) missing(c, "the identical launch it would copy from was never decoded");
  }
  waiting_copies_.clear();
}

std::vector<LaunchCounterResult> CounterLedger::takeResults() {
  std::vector<LaunchCounterResult> out;
  out.swap(results_);
  return out;
}

}  // namespace fprof::collector
