// Fusion candidates (see fusion.h). analyzeFusion reads top-down: the three sources of chains --
// declared NVTX pairs, PyTorch's op graph, data flow -- each turning its chains into instances
// that the model (fusion_model.h) evaluates and that aggregate into candidates; then the ranking.
#include "fprof/analysis/fusion.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "fprof/analysis/fusion_chains.h"
#include "fprof/analysis/stats.h"

namespace fprof::analysis {

std::string_view pairSourceName(PairSource s) {
  switch (s) {
    case PairSource::kNvtx: return "nvtx";
    case PairSource::kDataFlow: return "dataflow";
    case PairSource::kFrameworkOps: return "framework";
  }
  return "dataflow";
}

namespace {

constexpr std::string_view kDeclaredByNvtx = "declared by NVTX op ranges";
constexpr std::string_view kDeclaredByPytorch = "declared by PyTorch (emit_nvtx input_op_ids)";

std::string rolesName(RoleSource s) {
  return s == RoleSource::kMeasured ? "measured" : "inferred from the " + std::string(roleSourceName(s));
}

template <typename Kernels>
double kernelNs(const core::Profile& p, const Kernels& ks) {
  double t = 0;
  for (size_t k : ks) t += static_cast<double>(p.kernels[k].durationNs());
  return t;
}

// ---- Aggregation: the instances of one candidate, evaluated one by one.

struct Aggregate {
  FusionCandidate c;
  std::vector<double> unfused, fused, bytes, occupancy;
  std::vector<std::vector<double>> stages;  // per stage index, one time per instance
  double saving_sum = 0;
  bool all_predicted = true;
  std::set<std::string> risks;
  std::optional<RoleSource> roles;  // data flow: the weakest roles of any instance's links
};

void addInstance(Aggregate& a, const Instance& in, const InstanceResult& r) {
  std::vector<size_t> kernels;
  for (const auto& stage : in.stages) kernels.insert(kernels.end(), stage.begin(), stage.end());
  std::sort(kernels.begin(), kernels.end());
  a.c.instance_kernels.push_back(std::move(kernels));
  a.c.instance_saving_ns.push_back(r.fused_ns ? std::optional<double>(r.unfused_ns - *r.fused_ns) : std::nullopt);
  a.unfused.push_back(r.unfused_ns);
  if (a.stages.size() < r.stage_ns.size()) a.stages.resize(r.stage_ns.size());
  for (size_t i = 0; i < r.stage_ns.size(); ++i) a.stages[i].push_back(r.stage_ns[i]);
  if (r.fused_ns) {
    a.fused.push_back(*r.fused_ns);
    a.saving_sum += r.unfused_ns - *r.fused_ns;
    a.c.model = r.model;
  } else {
    a.all_predicted = false;
  }
  if (r.intermediate_bytes) {
    a.bytes.push_back(*r.intermediate_bytes);
    a.c.bytes_source = r.bytes_source;
  }
  if (r.fused_occupancy) a.occupancy.push_back(*r.fused_occupancy);
  if (!r.no_fuse.empty() && a.c.fuse) {
    a.c.fuse = false;
    a.c.reason = r.no_fuse;
  }
  for (const auto& s : r.risks) a.risks.insert(s);
  ++a.c.instances;
}

FusionCandidate finish(Aggregate& a, int64_t program_ns) {
  FusionCandidate c = std::move(a.c);
  c.unfused_ns = median(a.unfused).value_or(0);
  for (const auto& st : a.stages) c.stage_ns.push_back(median(st).value_or(0));
  if (a.all_predicted && !a.fused.empty()) {
    c.predicted_fused_ns = median(a.fused);
    c.predicted_saving_ns = c.unfused_ns - *c.predicted_fused_ns;
    c.total_saving_ns = a.saving_sum;
    if (program_ns > 0) c.program_share = a.saving_sum / static_cast<double>(program_ns);
  } else {
    c.model.reset();
  }
  if (a.bytes.size() == a.unfused.size() && !a.bytes.empty()) {
    c.intermediate_bytes = median(a.bytes);
  } else {
    c.bytes_source = BytesSource::kNone;
  }
  if (!a.occupancy.empty()) c.fused_occupancy = *std::min_element(a.occupancy.begin(), a.occupancy.end());
  c.risks.assign(a.risks.begin(), a.risks.end());
  return c;
}

// The first instance of a candidate names its stages and their kernels.
void describeStages(const core::Profile& p, const Instance& in, const std::vector<std::string>& names,
                    FusionCandidate& c) {
  c.stages = names;
  for (const StageEdge& e : in.edges) c.links.emplace_back(e.from, e.to);
  for (const auto& s : in.stages) {
    std::vector<std::string> kernels;
    for (size_t k : s) kernels.push_back(p.str(p.kernels[k].demangled_id));
    c.stage_kernels.push_back(std::move(kernels));
  }
}

// ---- Intermediate sizes from data flow: the bytes a stage wrote that the next one read.

bool writes(const KernelAccess& a) { return a.write || a.unknown; }
bool reads(const KernelAccess& a) { return a.read || a.unknown; }

// Bytes written by any kernel of `from` and read by any kernel of `to` (each written extent once).
std::optional<double> sharedBytes(const DataFlow& df, const std::vector<size_t>& from, const std::vector<size_t>& to) {
  if (df.access_begin.empty()) return std::nullopt;
  std::set<std::pair<uint32_t, uint64_t>> counted;
  double bytes = 0;
  for (size_t k : from) {
    for (uint32_t x = df.access_begin[k]; x < df.access_begin[k + 1]; ++x) {
      const KernelAccess& w = df.accesses[x];
      if (!writes(w)) continue;
      bool read = false;
      for (size_t c : to) {
        for (uint32_t y = df.access_begin[c]; y < df.access_begin[c + 1] && !read; ++y) {
          const KernelAccess& r = df.accesses[y];
          read = reads(r) && r.allocation == w.allocation && r.address < w.address + static_cast<uint64_t>(w.bytes) &&
                 w.address < r.address + static_cast<uint64_t>(r.bytes);
        }
      }
      if (read && counted.emplace(w.allocation, w.address).second) bytes += static_cast<double>(w.tensor_bytes);
    }
  }
  if (counted.empty()) return std::nullopt;
  return bytes;
}

// The buffer a stage declares as `name`, matched by position: the i-th name of the stage's
// `reads` (`writes`) is the i-th buffer its kernel reads (writes), used only when the counts
// agree. For edges whose other side cannot be resolved: cuBLAS passes its pointers in a struct,
// so a GEMM stage's output or input is only seen from the kernel on the other side.
std::optional<double> declaredBytes(const DataFlow& df, const std::vector<size_t>& stage,
                                    const std::vector<std::string>& names, const std::string& name, bool write) {
  if (df.access_begin.empty() || stage.size() != 1 || !df.args_known[stage.front()]) return std::nullopt;
  const size_t k = stage.front();
  std::vector<int64_t> seen;
  for (uint32_t x = df.access_begin[k]; x < df.access_begin[k + 1]; ++x) {
    if (write ? writes(df.accesses[x]) : reads(df.accesses[x])) seen.push_back(df.accesses[x].tensor_bytes);
  }
  if (seen.size() != names.size()) return std::nullopt;
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return std::nullopt;
  return static_cast<double>(seen[static_cast<size_t>(it - names.begin())]);
}

// ---- Source 1: pairs the program declared (docs/nvtx-convention.md).

struct DeclaredPairs {
  std::map<std::string, Aggregate> pairs;  // by pair id
  std::map<std::string, std::vector<double>> fused_ns, vendor_ns;
  std::vector<uint8_t> kernels;  // kernels of any variant of a declared pair: left to it
  bool any = false;
};

// One instance of an unfused declared chain: its stages (the stage ranges' kernels, then kernels
// directly in the op range), and an edge wherever a stage reads a buffer the latest earlier stage
// writes. Without stage ranges, the op's kernels in launch order are the stages, chained.
Instance declaredInstance(const core::Profile& p, const OpIndex& ops, const OpInstance& op, const DataFlow& df,
                          std::vector<std::string>& stage_names) {
  Instance in;
  if (op.children().empty()) {
    for (size_t k : op.kernels()) {
      in.stages.push_back({k});
      stage_names.push_back(p.str(p.kernels[k].demangled_id));
    }
    for (size_t s = 1; s < in.stages.size(); ++s) {
      in.edges.push_back({s - 1, s, "?", sharedBytes(df, in.stages[s - 1], in.stages[s]), true});
    }
    return in;
  }
  std::vector<const OpTags*> stage_tags;
  for (size_t ch : op.children()) {
    if (ops.ops[ch].allKernels().empty()) continue;
    in.stages.push_back(ops.ops[ch].allKernels().vector());
    stage_tags.push_back(ops.ops[ch].tags);
    stage_names.push_back(ops.ops[ch].tags->op);
  }
  for (size_t k : op.kernels()) {
    in.stages.push_back({k});
    stage_tags.push_back(nullptr);
    stage_names.push_back(p.str(p.kernels[k].demangled_id));
  }
  for (size_t j = 0; j < in.stages.size(); ++j) {
    if (!stage_tags[j]) continue;
    for (const std::string& b : stage_tags[j]->reads) {
      for (size_t s = j; s-- > 0;) {
        if (!stage_tags[s]) continue;
        const auto& w = stage_tags[s]->writes;
        if (std::find(w.begin(), w.end(), b) == w.end()) continue;
        // An intermediate the whole op also lists as its output is still written when fused.
        const bool op_output = std::find(op.tags->writes.begin(), op.tags->writes.end(), b) != op.tags->writes.end();
        std::optional<double> bytes = sharedBytes(df, in.stages[s], in.stages[j]);
        if (!bytes) bytes = declaredBytes(df, in.stages[s], stage_tags[s]->writes, b, true);
        if (!bytes) bytes = declaredBytes(df, in.stages[j], stage_tags[j]->reads, b, false);
        in.edges.push_back({s, j, b, bytes, !op_output});
        break;
      }
    }
  }
  return in;
}

DeclaredPairs declaredPairs(const core::Profile& p, const OpIndex& ops, const DataFlow& df, FusionModel& model) {
  DeclaredPairs d;
  d.kernels.assign(p.kernels.size(), 0);
  for (const OpInstance& op : ops.ops) {
    if (op.tags->pair.empty() || op.tags->variant.empty()) continue;
    // Stage ranges of an unfused chain repeat the chain's variant and pair: not a chain of their own.
    if (op.parent && ops.ops[*op.parent].tags->pair == op.tags->pair) continue;
    d.any = true;
    for (size_t k : op.allKernels()) d.kernels[k] = 1;
    if (op.allKernels().empty()) continue;
    if (op.tags->variant == "fused" || op.tags->variant == "vendor") {
      (op.tags->variant == "fused" ? d.fused_ns : d.vendor_ns)[op.tags->pair].push_back(kernelNs(p, op.allKernels()));
      continue;
    }
    if (op.tags->variant != "unfused") continue;
    std::vector<std::string> stage_names;
    const Instance in = declaredInstance(p, ops, op, df, stage_names);
    if (in.stages.size() < 2) continue;
    Aggregate& a = d.pairs[op.tags->pair];
    if (a.c.instances == 0) {
      a.c.source = PairSource::kNvtx;
      a.c.id = op.tags->pair;
      a.c.op = op.tags->op;
      a.c.roles = kDeclaredByNvtx;
      describeStages(p, in, stage_names, a.c);
      for (const auto& e : in.edges) a.c.intermediates.push_back(e.name);
      a.c.launches_per_instance = static_cast<int64_t>(op.allKernels().size());
      a.c.launches_removed = a.c.launches_per_instance - 1;
    }
    addInstance(a, in, model.evaluate(in));
  }
  return d;
}

// Declared candidates, with their measured fused and vendor variants.
void addDeclared(DeclaredPairs& d, FusionResult& res) {
  for (auto& [id, a] : d.pairs) {
    FusionCandidate c = finish(a, res.program_gpu_ns);
    if (c.intermediates.empty() && c.fuse) {
      c.fuse = false;
      c.reason = "the stages declare no buffer passed between them: nothing would stay on chip";
    }
    if (auto it = d.fused_ns.find(id); it != d.fused_ns.end()) {
      c.measured_fused_ns = median(it->second);
      c.measured_fused_instances = static_cast<int64_t>(it->second.size());
      c.measured_saving_ns = c.unfused_ns - *c.measured_fused_ns;
      if (c.predicted_fused_ns && *c.measured_fused_ns > 0) {
        c.prediction_error = (*c.predicted_fused_ns - *c.measured_fused_ns) / *c.measured_fused_ns;
      }
    }
    if (auto it = d.vendor_ns.find(id); it != d.vendor_ns.end()) c.vendor_ns = median(it->second);
    res.candidates.push_back(std::move(c));
  }
}

// A chain's candidate key: the same kernels (name and launch shape) stage by stage. Binary: this
// runs once per chain instance, a million times in a large run.
void appendKernelKey(const core::Profile& p, size_t k, std::string& key) {
  const core::KernelRow& kr = p.kernels[k];
  const int32_t fields[] = {static_cast<int32_t>(kr.demangled_id), kr.grid_x, kr.grid_y, kr.grid_z,
                            kr.block_x, kr.block_y, kr.block_z};
  key.append(reinterpret_cast<const char*>(fields), sizeof(fields));
}

// ---- Source 2: PyTorch's op graph. Stages are op calls (all their kernels); the intermediate is
// the consumer's input, sized from emit_nvtx's shapes and the element size its kernels' names
// give (an assumption, said in docs/analysis.md), or from data flow where its kernels show it.

double elementCount(const std::vector<int64_t>& shape) {
  double elements = 1;
  for (int64_t d : shape) elements *= static_cast<double>(d);
  return elements;
}

std::optional<double> opInputBytes(const core::Profile& p, const DataFlow& df, const FrameworkOp& producer,
                                   const FrameworkOp& consumer, const FrameworkOpLink& link) {
  if (auto b = sharedBytes(df, producer.kernels, consumer.kernels)) return b;
  if (!link.input_shape) return std::nullopt;
  const double elements = elementCount(*link.input_shape);
  for (const FrameworkOp* op : {&consumer, &producer}) {
    for (size_t k : op->kernels) {
      if (auto e = elementBytesFromKernelName(p.str(p.kernels[k].demangled_id))) return elements * *e;
    }
  }
  return std::nullopt;
}

// "aten::gelu input 0 [512, 1024]": the consumer's input, with its shape where recorded.
std::string inputName(const FrameworkOp& consumer, const FrameworkOpLink& link) {
  std::string name = fmt::format("{} input {}", consumer.range.name, link.input);
  if (link.input_shape) name += fmt::format(" [{}]", fmt::join(*link.input_shape, ", "));
  return name;
}

// The largest of the shapes the consumers' inputs recorded for a group's links: the intermediate
// that would stay on chip ([4, 12, 512, 512], attention's scores); empty where none was recorded.
std::vector<int64_t> largestInputShape(const FrameworkOps& fops, const ChainGroup& g) {
  std::vector<int64_t> best;
  double best_elements = -1;
  for (const ChainLink* l : g.links) {
    for (size_t e = l->first; e < l->first + l->count; ++e) {
      const std::optional<std::vector<int64_t>>& shape = fops.links[e].input_shape;
      if (!shape) continue;
      const double elements = elementCount(*shape);
      if (elements > best_elements) {
        best_elements = elements;
        best = *shape;
      }
    }
  }
  return best;
}

// Instances whose intermediate is read elsewhere too keep its write (fusion_chains.h); said once
// per candidate.
constexpr std::string_view kWriteKept =
    "an intermediate is also read by other kernels or ops: the fused kernel still writes it (predicted so)";

// The stage index of each node of a group (its nodes are in ascending order).
size_t stageOf(const ChainGroup& g, size_t node) {
  return static_cast<size_t>(std::lower_bound(g.nodes.begin(), g.nodes.end(), node) - g.nodes.begin());
}

// A group's shape for its candidate key: which stage feeds which.
void appendLinkKey(const ChainGroup& g, std::string& key) {
  for (const ChainLink* l : g.links) {
    const uint32_t ends[] = {static_cast<uint32_t>(stageOf(g, l->producer)), static_cast<uint32_t>(stageOf(g, l->consumer))};
    key.append(reinterpret_cast<const char*>(ends), sizeof(ends));
  }
}

void addFrameworkChains(const core::Profile& p, const FrameworkOps& fops, const DataFlow& df, FusionModel& model,
                        const std::vector<uint8_t>& skip_kernels, FusionResult& res) {
  if (fops.links.empty()) return;
  std::vector<uint8_t> skip(fops.ops.size(), 0);
  for (size_t o = 0; o < fops.ops.size(); ++o) {
    for (size_t k : fops.ops[o].kernels) skip[o] = skip[o] || skip_kernels[k];
  }
  // Every reader of an op's output is linked to it by the op graph.
  const std::vector<ChainLink> links =
      groupLinks(fops.links.size(), [&](size_t i) { return fops.links[i].producer; },
                 [&](size_t i) { return fops.links[i].consumer; }, [&](size_t i) { return fops.links[i].readers; },
                 [&](size_t i) { return fops.links[i].readers; });
  auto kind = [&](size_t o) { return nodeKindFromName(fops.ops[o].range.name); };
  std::map<std::string, Aggregate> flow;
  findChains(links, fops.ops.size(), skip, kind, [&](const ChainGroup& g) {
    Instance in;
    for (size_t o : g.nodes) in.stages.push_back(fops.ops[o].kernels);
    std::vector<std::string> intermediates;
    bool write_kept = false;
    for (const ChainLink* l : g.links) {
      const FrameworkOpLink& first = fops.links[l->first];
      std::optional<double> bytes;
      for (size_t e = l->first; e < l->first + l->count; ++e) {
        const auto b = opInputBytes(p, df, fops.ops[l->producer], fops.ops[l->consumer], fops.links[e]);
        bytes = b && (!bytes || *b > *bytes) ? b : bytes;
      }
      const bool removed = !g.other_readers && l->writeRemoved();
      write_kept = write_kept || !removed;
      in.edges.push_back({stageOf(g, l->producer), stageOf(g, l->consumer), "", bytes, removed});
      intermediates.push_back(inputName(fops.ops[l->consumer], first));
    }
    std::string key;
    for (size_t o : g.nodes) {
      key += fops.ops[o].range.name;
      key += '\n';
      for (size_t k : fops.ops[o].kernels) appendKernelKey(p, k, key);
    }
    appendLinkKey(g, key);
    Aggregate& a = flow[key];
    if (a.c.instances == 0) {
      a.c.source = PairSource::kFrameworkOps;
      std::vector<std::string> names;
      for (size_t o : g.nodes) names.push_back(fops.ops[o].range.name);
      describeStages(p, in, names, a.c);
      for (const auto& n : names) a.c.id += (a.c.id.empty() ? "" : " -> ") + n;
      a.c.intermediates = intermediates;
      a.c.shape = largestInputShape(fops, g);
      a.c.roles = kDeclaredByPytorch;
      int64_t launches = 0;
      for (const auto& st : in.stages) launches += static_cast<int64_t>(st.size());
      a.c.launches_per_instance = launches;
      a.c.launches_removed = launches - 1;
    }
    if (write_kept) a.risks.insert(std::string(kWriteKept));
    addInstance(a, in, model.evaluate(in));
  });
  for (auto& [key, a] : flow) res.candidates.push_back(finish(a, res.program_gpu_ns));
}

// ---- Source 3: data flow among the kernels the other sources do not cover.

// A stage's name: the framework op its kernel ran in, else the kernel (its full name; every front
// end shows it by the short name the run's name table gives it, kernel_names.h). Not a region (a
// module or record_function name spans many kernels: "model.layers.0 -> model.layers.0" would
// read as a self-pair).
std::string stageName(const core::Profile& p, const FrameworkOps& fops, size_t k) {
  if (fops.kernel_op[k] >= 0) return fops.ops[static_cast<size_t>(fops.kernel_op[k])].range.name;
  return p.str(p.kernels[k].demangled_id);
}

// "3145728 B in the allocation at 0x7f0000000000, measured": an intermediate, and how its
// producer's write and its consumer's read were known.
std::string intermediateName(const DataFlow& df, const ChainLink& l) {
  const DataEdge& e = df.edges[l.first];
  int64_t bytes = 0;
  RoleSource roles = RoleSource::kMeasured;
  for (size_t i = l.first; i < l.first + l.count; ++i) {
    bytes += df.edges[i].tensor_bytes;
    roles = weaker(roles, df.edges[i].roles);
  }
  return fmt::format("{} B in the allocation at 0x{:x}, {}", bytes, df.allocations[e.allocation].address,
                     rolesName(roles));
}

void addDataFlowChains(const core::Profile& p, const DataFlow& df, const FrameworkOps& fops, FusionModel& model,
                       const std::vector<uint8_t>& skip, FusionResult& res) {
  const std::vector<ChainLink> links = groupLinks(
      df.edges.size(), [&](size_t i) { return df.edges[i].producer; }, [&](size_t i) { return df.edges[i].consumer; },
      [&](size_t i) { return df.edges[i].readers_of_value; }, [&](size_t i) { return df.edges[i].linked_readers; });
  std::unordered_map<uint32_t, NodeKind> kinds;  // by demangled name id
  auto kind = [&](size_t k) {
    const uint32_t name = p.kernels[k].demangled_id;
    auto it = kinds.find(name);
    if (it == kinds.end()) it = kinds.emplace(name, nodeKindFromName(p.str(name))).first;
    return it->second;
  };
  std::map<std::string, Aggregate> flow;
  findChains(links, p.kernels.size(), skip, kind, [&](const ChainGroup& g) {
    Instance in;
    for (size_t k : g.nodes) in.stages.push_back({k});
    RoleSource roles = RoleSource::kMeasured;
    bool write_kept = false;
    for (const ChainLink* l : g.links) {
      double bytes = 0;
      for (size_t e = l->first; e < l->first + l->count; ++e) {
        bytes += static_cast<double>(df.edges[e].tensor_bytes);
        roles = weaker(roles, df.edges[e].roles);
      }
      const bool removed = !g.other_readers && l->writeRemoved();
      write_kept = write_kept || !removed;
      in.edges.push_back({stageOf(g, l->producer), stageOf(g, l->consumer), "", bytes, removed});
    }
    std::string key;
    for (const auto& st : in.stages) appendKernelKey(p, st.front(), key);
    appendLinkKey(g, key);
    Aggregate& a = flow[key];
    if (a.c.instances == 0) {
      a.c.source = PairSource::kDataFlow;
      std::vector<std::string> names;
      for (const auto& st : in.stages) names.push_back(stageName(p, fops, st.front()));
      describeStages(p, in, names, a.c);
      for (const auto& n : names) a.c.id += (a.c.id.empty() ? "" : " -> ") + n;
      for (const ChainLink* l : g.links) a.c.intermediates.push_back(intermediateName(df, *l));
      a.c.launches_per_instance = static_cast<int64_t>(in.stages.size());
      a.c.launches_removed = a.c.launches_per_instance - 1;
    }
    if (write_kept) a.risks.insert(std::string(kWriteKept));
    a.roles = weaker(a.roles.value_or(roles), roles);  // the weakest of any instance's
    addInstance(a, in, model.evaluate(in));
  });
  for (auto& [key, a] : flow) {
    a.c.roles = rolesName(*a.roles);
    res.candidates.push_back(finish(a, res.program_gpu_ns));
  }
}

void addNotes(const DataFlow& df, const FrameworkOps& fops, FusionResult& res) {
  if (!df.have_args) {
    res.notes.push_back("no launch arguments recorded: pairs can only come from NVTX op ranges");
  } else if (!df.have_allocations) {
    res.notes.push_back("no allocation records: pointer arguments cannot be matched to buffers");
  } else if (!df.have_measured_roles) {
    res.notes.push_back(
        "argument roles were not measured (schema v2 function_arg): reads and writes are inferred from kernel "
        "signatures and argument positions");
  }
  size_t opaque = 0;
  for (uint8_t o : df.opaque) opaque += o;
  if (opaque > 0) {
    res.notes.push_back(fmt::format(
        "{} of {} kernels pass pointers fprof cannot see (in by-value structs, as cuBLAS and PyTorch's elementwise "
        "kernels do, or graph nodes): data flow does not link across them",
        opaque, df.opaque.size()));
  }
  if (fops.pytorch && !fops.op_graph) {
    res.notes.push_back(
        "PyTorch ops were marked (emit_nvtx) without their inputs' producers: "
        "emit_nvtx(record_shapes=True) declares them");
  }
}

void rank(FusionResult& res) {
  // Fusable by total saving (unknown saving last), then the ones not to fuse.
  std::stable_sort(res.candidates.begin(), res.candidates.end(), [](const FusionCandidate& a, const FusionCandidate& b) {
    if (a.fuse != b.fuse) return a.fuse;
    const double sa = a.total_saving_ns.value_or(-1e300), sb = b.total_saving_ns.value_or(-1e300);
    if (sa != sb) return sa > sb;
    return a.id < b.id;
  });
  std::vector<double> errors;
  for (const FusionCandidate& c : res.candidates) {
    if (c.prediction_error) errors.push_back(std::abs(*c.prediction_error));
  }
  res.measured_pairs = static_cast<int64_t>(errors.size());
  res.median_abs_error = median(errors);
}

}  // namespace

FusionResult analyzeFusion(const core::Profile& p, const OpIndex& ops, const DataFlow& df, const FusionOptions& opt) {
  return analyzeFusion(p, ops, indexFrameworkOps(p), df, opt);
}

FusionResult analyzeFusion(const core::Profile& p, const OpIndex& ops, const FrameworkOps& fops, const DataFlow& df,
                           const FusionOptions& opt) {
  FusionResult res;
  for (const core::KernelRow& k : p.kernels) res.program_gpu_ns += k.durationNs();
  FusionModel model(p, df, opt);

  // 1. Pairs the program declared; their kernels are not paired again.
  DeclaredPairs declared = declaredPairs(p, ops, df, model);
  res.nvtx_convention = declared.any;
  addDeclared(declared, res);
  // 2. PyTorch's op graph; where it exists, the kernels of its ops are left to it.
  addFrameworkChains(p, fops, df, model, declared.kernels, res);
  std::vector<uint8_t> skip = std::move(declared.kernels);
  if (fops.op_graph) {
    for (size_t k = 0; k < p.kernels.size(); ++k) skip[k] = skip[k] || fops.kernel_op[k] >= 0;
  }
  // 3. Data flow among the rest.
  addNotes(df, fops, res);
  addDataFlowChains(p, df, fops, model, skip, res);
  rank(res);
  // 4. Each candidate named by its ops and pattern, with what to do.
  const ProgramKind program = programKind(p, fops);
  for (FusionCandidate& c : res.candidates) nameCandidate(c, program);
  return res;
}

}  // namespace fprof::analysis
