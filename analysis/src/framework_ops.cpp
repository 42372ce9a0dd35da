// Framework NVTX ranges: PyTorch emit_nvtx, user ranges, XLA thunks (see framework_ops.h).
#include "fprof/analysis/framework_ops.h"

#include "fprof/analysis/nvtx_ranges.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "fprof/analysis/nvtx_ops.h"

namespace fprof::analysis {

namespace {

bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::optional<int64_t> parseInt(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr == s.data()) return std::nullopt;
  return v;
}

// "[[4, 256], [256], []]" -> {{4, 256}, {256}, {}}; empty on anything else.
std::vector<std::vector<int64_t>> parseShapes(std::string_view s) {
  std::vector<std::vector<int64_t>> out;
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return out;
  s = s.substr(1, s.size() - 2);
  size_t i = 0;
  while (i < s.size()) {
    const size_t open = s.find('[', i);
    if (open == std::string_view::npos) break;
    const size_t close = s.find(']', open);
    if (close == std::string_view::npos) return {};
    std::vector<int64_t> shape;
    std::string_view dims = s.substr(open + 1, close - open - 1);
    while (!dims.empty()) {
      const size_t comma = dims.find(',');
      if (auto v = parseInt(dims.substr(0, comma))) shape.push_back(*v);
      if (comma == std::string_view::npos) break;
      dims.remove_prefix(comma + 1);
    }
    out.push_back(std::move(shape));
    i = close + 1;
  }
  return out;
}

// "[(723,0), (0,0)]" -> {{723, 0}, {0, 0}}.
std::vector<std::pair<uint64_t, int32_t>> parseInputOps(std::string_view s) {
  std::vector<std::pair<uint64_t, int32_t>> out;
  size_t i = 0;
  while ((i = s.find('(', i)) != std::string_view::npos) {
    const size_t comma = s.find(',', i), close = s.find(')', i);
    if (comma == std::string_view::npos || close == std::string_view::npos || comma > close) break;
    const auto id = parseInt(s.substr(i + 1, comma - i - 1));
    const auto nr = parseInt(s.substr(comma + 1, close - comma - 1));
    out.emplace_back(id && *id > 0 ? static_cast<uint64_t>(*id) : 0, nr ? static_cast<int32_t>(*nr) : 0);
    i = close + 1;
  }
  return out;
}

// emit_nvtx's suffixes, in the order PyTorch writes them (getNvtxStr).
constexpr std::string_view kSeq = ", seq = ", kOpId = ", op_id = ", kSizes = ", sizes = ",
                           kInputOps = ", input_op_ids = ";

// How much of a range is read: everything; all but its shapes and input ops; or only what tells
// its kind and op id (no name either, so no allocation on emit_nvtx's ranges of a hundred
// characters).
enum class RangeDetail { kAll, kWithoutShapes, kKindAndId };

constexpr std::array<std::string_view, 4> kTorchKeys{kSeq, kOpId, kSizes, kInputOps};
enum TorchKey : size_t { kSeqKey, kOpIdKey, kSizesKey, kInputOpsKey };  // indices into kTorchKeys

// Where each of emit_nvtx's keys occurs in a message (npos: nowhere), found in one pass over its
// commas, since every key starts with one; none where a key occurs twice.
std::optional<std::array<size_t, 4>> torchKeysOnce(std::string_view message) {
  std::array<size_t, 4> at{};
  at.fill(std::string_view::npos);
  for (size_t c = message.find(','); c != std::string_view::npos; c = message.find(',', c + 1)) {
    for (size_t k = 0; k < kTorchKeys.size(); ++k) {
      if (message.compare(c, kTorchKeys[k].size(), kTorchKeys[k]) != 0) continue;
      if (at[k] != std::string_view::npos) return std::nullopt;
      at[k] = c;
    }
  }
  return at;
}

bool parseTorch(std::string_view message, RangeDetail detail, FrameworkRange& r) {
  // Each key's first place at or after `from`: from the one pass where every key occurs at most
  // once (emit_nvtx's own texts), else searched for.
  const std::optional<std::array<size_t, 4>> once = torchKeysOnce(message);
  auto find = [&](size_t k, size_t from) {
    if (!once) return message.find(kTorchKeys[k], from);
    return (*once)[k] != std::string_view::npos && (*once)[k] >= from ? (*once)[k] : std::string_view::npos;
  };
  size_t first = std::string_view::npos;
  for (size_t k = 0; k < kTorchKeys.size(); ++k) first = std::min(first, find(k, 0));
  if (first == std::string_view::npos || first == 0) return false;
  std::string_view name = message.substr(0, first);
  // Each value runs to the next key.
  auto value = [&](TorchKey k) -> std::optional<std::string_view> {
    const size_t at = find(k, 0);
    if (at == std::string_view::npos) return std::nullopt;
    const size_t from = at + kTorchKeys[k].size();
    size_t end = message.size();
    for (size_t o = 0; o < kTorchKeys.size(); ++o) end = std::min(end, find(o, from));
    return message.substr(from, end - from);
  };
  if (auto v = value(kSeqKey)) r.seq = parseInt(*v);
  if (auto v = value(kOpIdKey)) {
    if (auto id = parseInt(*v); id && *id > 0) r.op_id = static_cast<uint64_t>(*id);
  }
  if (detail == RangeDetail::kAll) {
    if (auto v = value(kSizesKey)) r.sizes = parseShapes(*v);
    if (auto v = value(kInputOpsKey)) r.input_ops = parseInputOps(*v);
  }
  if (detail != RangeDetail::kKindAndId) {
    constexpr std::string_view kBackward = "autograd::engine::evaluate_function: ";
    if (startsWith(name, kBackward)) name.remove_prefix(kBackward.size());
    r.name = std::string(name);
  }
  // Dispatcher ops live in a namespace (aten::, prim::, a library's own); record_function scopes
  // under emit_nvtx carry the same suffixes but are regions the program named.
  const bool op = message.substr(0, first).find("::") != std::string_view::npos;
  r.kind = op ? FrameworkRangeKind::kTorchOp : FrameworkRangeKind::kUserRange;
  return true;
}

// "Thunk:#name=...,hlo_op=fusion.3,unique_hlo_op_id=42#" and "XlaModule:#hlo_module=jit_f,program_id=3#".
bool parseXla(std::string_view message, FrameworkRange& r) {
  const bool thunk = startsWith(message, "Thunk:#"), module = startsWith(message, "XlaModule:#");
  if (!thunk && !module) return false;
  std::string_view body = message.substr(message.find('#') + 1);
  if (!body.empty() && body.back() == '#') body.remove_suffix(1);
  while (!body.empty()) {
    const size_t comma = body.find(',');
    const std::string_view item = body.substr(0, comma);
    const size_t eq = item.find('=');
    if (eq != std::string_view::npos) {
      const std::string_view key = item.substr(0, eq), v = item.substr(eq + 1);
      if ((thunk && key == "hlo_op") || (module && key == "hlo_module")) r.name = std::string(v);
      if ((thunk && key == "unique_hlo_op_id") || (module && key == "program_id")) {
        if (auto id = parseInt(v); id && *id >= 0) r.op_id = static_cast<uint64_t>(*id);
      }
    }
    if (comma == std::string_view::npos) break;
    body.remove_prefix(comma + 1);
  }
  if (r.name.empty()) return false;
  r.kind = thunk ? FrameworkRangeKind::kXlaOp : FrameworkRangeKind::kXlaModule;
  return true;
}

FrameworkRange parseRange(std::string_view domain, std::string_view message, RangeDetail detail) {
  FrameworkRange r;
  if (domain == kNvtxDomain || (domain.empty() && startsWith(message, "op="))) return r;
  if (parseXla(message, r)) return r;
  if (parseTorch(message, detail, r)) return r;
  if (message.empty()) return r;
  r.kind = FrameworkRangeKind::kUserRange;
  if (detail != RangeDetail::kKindAndId) r.name = std::string(message);
  return r;
}

}  // namespace

FrameworkRange parseFrameworkRange(std::string_view domain, std::string_view message) {
  return parseRange(domain, message, RangeDetail::kAll);
}

namespace {

// One segment of a recorded path: a framework range by its name; a range of a named domain
// ("TSL::Thunk:#...#") by what its message says; anything else as recorded.
std::string segmentOpName(std::string_view segment) {
  if (const size_t colons = segment.find("::"); colons != std::string_view::npos) {
    const std::string_view message = segment.substr(colons + 2);
    if (startsWith(message, "Thunk:#") || startsWith(message, "XlaModule:#")) {
      FrameworkRange xla;
      if (parseXla(message, xla)) return xla.name;
    }
  }
  const FrameworkRange r = parseFrameworkRange("", segment);
  return r.kind == FrameworkRangeKind::kNone || r.name.empty() ? std::string(segment) : r.name;
}

// Where the segment starting at `start` ends: at the next '/', except that an XLA range runs to
// its closing '#' first (its name= holds the JAX scope, "jit(step)/dot_general").
size_t segmentEnd(std::string_view path, size_t start) {
  const size_t slash = path.find('/', start);
  for (std::string_view marker : {std::string_view("Thunk:#"), std::string_view("XlaModule:#")}) {
    const size_t at = path.find(marker, start);
    if (at == std::string_view::npos || (slash != std::string_view::npos && at > slash)) continue;
    const size_t close = path.find('#', at + marker.size());
    if (close != std::string_view::npos) return path.find('/', close);
  }
  return slash;
}

}  // namespace

std::string nvtxPathOpNames(std::string_view path) {
  std::string out;
  for (size_t start = 0;;) {
    const size_t slash = segmentEnd(path, start);
    if (start > 0) out += '/';
    out += segmentOpName(path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) return out;
    start = slash + 1;
  }
}

namespace {

// Every range's kind and op id, kept from one parse; the rest of what a range says (name, shapes,
// input ops) is parsed again where it is needed, for the few ranges that own kernels or pass a
// producer on. Kept whole, the parsed ranges of a PyTorch run under emit_nvtx (several a kernel,
// each with its shapes) took more memory than the run itself. Ranges are read whole only until
// one with input ops is seen (opGraph); the others only for their kind and op id.
class RangeKindParser {
 public:
  explicit RangeKindParser(size_t ranges) { k_.kind.assign(ranges, FrameworkRangeKind::kNone); }
  FrameworkRangeKind see(size_t i, uint32_t process_id, std::string_view domain, std::string_view message) {
    const FrameworkRange r = parseRange(domain, message, k_.op_graph ? RangeDetail::kKindAndId : RangeDetail::kAll);
    k_.kind[i] = r.kind;
    if (r.kind == FrameworkRangeKind::kNone) return r.kind;
    k_.any = true;
    k_.pytorch = k_.pytorch || r.kind == FrameworkRangeKind::kTorchOp;
    k_.op_graph = k_.op_graph || !r.input_ops.empty();
    k_.xla = k_.xla || r.kind == FrameworkRangeKind::kXlaOp;
    if (r.kind == FrameworkRangeKind::kTorchOp && r.op_id) {
      k_.torch_op_ids.push_back({process_id, static_cast<uint32_t>(i), *r.op_id});
    }
    return r.kind;
  }
  // Sorted by (process, op id, range), exactly sized: a PyTorch run has about one a range.
  NvtxRangeKinds finish() {
    k_.torch_op_ids.shrink_to_fit();
    std::sort(k_.torch_op_ids.begin(), k_.torch_op_ids.end(), opIdLess);
    return std::move(k_);
  }
  static bool opIdLess(const TorchOpRange& a, const TorchOpRange& b) {
    if (a.process_id != b.process_id) return a.process_id < b.process_id;
    if (a.op_id != b.op_id) return a.op_id < b.op_id;
    return a.range < b.range;
  }

 private:
  NvtxRangeKinds k_;
};

NvtxRangeKinds parseRangeKinds(const core::Profile& p) {
  RangeKindParser parser(p.nvtx_ranges.size());
  for (size_t i = 0; i < p.nvtx_ranges.size(); ++i) {
    const core::NvtxRangeRow& row = p.nvtx_ranges[i];
    parser.see(i, row.process_id, row.domain, row.message);
  }
  return parser.finish();
}

// The ranges' kinds and op ids (parsed from the messages, or as readNvtxMessages read them), and
// the rest of a range parsed from its message where asked.
class ParsedRanges {
 public:
  explicit ParsedRanges(const core::Profile& p) : ParsedRanges(p, parseRangeKinds(p)) {}
  ParsedRanges(const core::Profile& p, NvtxRangeKinds kinds) : p_(p), k_(std::move(kinds)) {}
  size_t size() const { return k_.kind.size(); }
  FrameworkRangeKind kind(size_t range_index) const { return k_.kind[range_index]; }
  FrameworkRange parse(size_t range_index, RangeDetail detail = RangeDetail::kAll) const {
    const core::NvtxRangeRow& r = p_.nvtx_ranges[range_index];
    return parseRange(r.domain, r.message, detail);
  }
  bool any() const { return k_.any; }
  bool pytorch() const { return k_.pytorch; }
  bool opGraph() const { return k_.op_graph; }
  bool xla() const { return k_.xla; }
  // The PyTorch op range with this op id in this process (the last one, should the id repeat).
  std::optional<size_t> rangeOfOpId(uint32_t process_id, uint64_t op_id) const {
    const TorchOpRange last{process_id, UINT32_MAX, op_id};
    const auto after = std::upper_bound(k_.torch_op_ids.begin(), k_.torch_op_ids.end(), last, RangeKindParser::opIdLess);
    if (after == k_.torch_op_ids.begin()) return std::nullopt;
    const TorchOpRange& found = *std::prev(after);
    if (found.process_id != process_id || found.op_id != op_id) return std::nullopt;
    return found.range;
  }

 private:
  const core::Profile& p_;
  NvtxRangeKinds k_;
};

// Per range, the range that owns kernels launched inside it: the outermost PyTorch op around it
// (itself included), else the innermost XLA op; -1 if neither. Memoized along parent links.
class Owners {
 public:
  Owners(const core::Profile& p, const ParsedRanges& ranges, const NvtxRangeLookup& lookup)
      : p_(p), ranges_(ranges), lookup_(lookup), torch_(ranges.size(), kUnset) {}

  int64_t owner(size_t r) {
    const int64_t t = outermostTorch(r);
    return t >= 0 ? t : innermostXla(r);
  }
  // A PyTorch op range inside another PyTorch op: it owns no kernels, and a tensor it made is
  // the outer op's.
  bool nestedTorchOp(size_t r) {
    return ranges_.kind(r) == FrameworkRangeKind::kTorchOp && outermostTorch(r) != static_cast<int32_t>(r);
  }

 private:
  // Range indices fit 32 bits (the lookup holds them so, nvtx_ranges.h); -1: none, kUnset: not
  // walked yet.
  static constexpr int32_t kUnset = -2;
  // Both walks are iterative: nesting can be deep.
  int32_t outermostTorch(size_t r) {
    std::vector<size_t> path;
    int32_t above = -1;
    for (std::optional<size_t> at = r; at; at = lookup_.parent(*at)) {
      if (torch_[*at] != kUnset) {
        above = torch_[*at];
        break;
      }
      path.push_back(*at);
      if (path.size() > p_.nvtx_ranges.size()) break;  // a cycle in a broken file
    }
    for (size_t i = path.size(); i-- > 0;) {
      if (above < 0 && ranges_.kind(path[i]) == FrameworkRangeKind::kTorchOp) above = static_cast<int32_t>(path[i]);
      torch_[path[i]] = above;
    }
    return torch_[r];
  }
  int32_t innermostXla(size_t r) {
    // Made when first walked: the walk for nested PyTorch ops never is.
    if (xla_.empty()) xla_.assign(ranges_.size(), kUnset);
    std::vector<size_t> path;
    int32_t found = -1;
    for (std::optional<size_t> at = r; at; at = lookup_.parent(*at)) {
      if (xla_[*at] != kUnset) {
        found = xla_[*at];
        break;
      }
      path.push_back(*at);
      if (ranges_.kind(*at) == FrameworkRangeKind::kXlaOp) {
        found = static_cast<int32_t>(*at);
        break;
      }
      if (path.size() > p_.nvtx_ranges.size()) break;
    }
    for (size_t x : path) xla_[x] = found;
    return xla_[r];
  }

  const core::Profile& p_;
  const ParsedRanges& ranges_;
  const NvtxRangeLookup& lookup_;
  std::vector<int32_t> torch_, xla_;  // xla_ empty until innermostXla is first called
};

// Kernels in no framework op: the user range they were launched in, one name per distinct text
// (a region repeated every step is one region).
void nameRegions(const core::Profile& p, const ParsedRanges& ranges, const NvtxRangeLookup& lookup, FrameworkOps& out) {
  std::unordered_map<size_t, int32_t> region_of_range;
  std::unordered_map<std::string, int32_t> region_of_name;
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const std::optional<size_t> range = lookup.ofKernel(p.kernels[k]);
    if (!range || ranges.kind(*range) != FrameworkRangeKind::kUserRange) continue;
    auto [r, inserted] = region_of_range.emplace(*range, 0);
    if (inserted) {
      std::string name = ranges.parse(*range, RangeDetail::kWithoutShapes).name;
      auto [named, added] = region_of_name.emplace(name, static_cast<int32_t>(out.region_names.size()));
      if (added) out.region_names.push_back(std::move(name));
      r->second = named->second;
    }
    out.kernel_region[k] = r->second;
  }
}

// Each kernel to the op that owns its range; returns owning range -> op. The ops (in the order of
// their first kernels) and their kernel lists are counted before they are filled: grown one entry
// at a time, a vector holds up to twice what it needs, and a PyTorch run has about one op a kernel.
std::unordered_map<size_t, size_t> assignOwners(const core::Profile& p, const ParsedRanges& ranges, Owners& owners,
                                                const NvtxRangeLookup& lookup, FrameworkOps& out) {
  std::unordered_map<size_t, size_t> op_of_range;
  std::vector<uint32_t> kernels_of_op;
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const std::optional<size_t> range = lookup.ofKernel(p.kernels[k]);
    if (!range) continue;
    const int64_t owner = owners.owner(*range);
    if (owner < 0) continue;
    auto [op, inserted] = op_of_range.emplace(static_cast<size_t>(owner), kernels_of_op.size());
    if (inserted) kernels_of_op.push_back(0);
    ++kernels_of_op[op->second];
    out.kernel_op[k] = static_cast<int32_t>(op->second);
  }
  out.ops.resize(kernels_of_op.size());
  for (const auto& [range, op] : op_of_range) {
    out.ops[op].range_index = range;
    // Without its shapes and inputs: they are read again where the ops are linked (and then kept
    // on the links), since a PyTorch run holds about one op a kernel.
    out.ops[op].range = ranges.parse(range, RangeDetail::kWithoutShapes);
    out.ops[op].kernels.reserve(kernels_of_op[op]);
  }
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    if (out.kernel_op[k] >= 0) out.ops[static_cast<size_t>(out.kernel_op[k])].kernels.push_back(k);
  }
  return op_of_range;
}

std::optional<std::vector<int64_t>> inputShape(const FrameworkRange& consumer, size_t input) {
  if (consumer.sizes.size() != consumer.input_ops.size() || input >= consumer.sizes.size()) return std::nullopt;
  return consumer.sizes[input];
}

// The links emit_nvtx's input_op_ids declare. A producer that owns no kernels (a view: aten::t,
// aten::view, aten::transpose, ...) passes its own inputs' producers on.
void linkOps(const core::Profile& p, const ParsedRanges& ranges, Owners& owners,
             const std::unordered_map<size_t, size_t>& op_of_range, FrameworkOps& out) {
  std::vector<std::pair<size_t, int32_t>> producers;
  std::unordered_set<size_t> visited;
  auto collect = [&](auto&& self, uint32_t process, uint64_t op_id, int32_t output, int depth) -> void {
    if (op_id == 0 || depth > 16) return;
    const std::optional<size_t> range = ranges.rangeOfOpId(process, op_id);
    if (!range || !visited.insert(*range).second) return;
    int64_t r = owners.owner(*range);
    if (r < 0) r = static_cast<int64_t>(*range);
    if (const auto op = op_of_range.find(static_cast<size_t>(r)); op != op_of_range.end()) {
      producers.emplace_back(op->second, output);
      return;
    }
    for (const auto& [id, nr] : ranges.parse(static_cast<size_t>(r)).input_ops) self(self, process, id, nr, depth + 1);
  };
  for (size_t c = 0; c < out.ops.size(); ++c) {
    const size_t range_index = out.ops[c].range_index;
    const FrameworkRange consumer = ranges.parse(range_index);
    const uint32_t process = p.nvtx_ranges[range_index].process_id;
    for (size_t in = 0; in < consumer.input_ops.size(); ++in) {
      producers.clear();
      visited.clear();
      collect(collect, process, consumer.input_ops[in].first, consumer.input_ops[in].second, 0);
      for (const auto& [prod, nr] : producers) {
        if (prod == c) continue;
        out.links.push_back({prod, c, nr, static_cast<int32_t>(in), 0, inputShape(consumer, in)});
      }
    }
  }
}

// Readers of each (producer, output): distinct consumer ops.
void countReaders(FrameworkOps& out) {
  std::unordered_map<uint64_t, std::unordered_set<size_t>> readers;
  for (const FrameworkOpLink& l : out.links) readers[(uint64_t{l.producer} << 20) ^ static_cast<uint32_t>(l.output)].insert(l.consumer);
  for (FrameworkOpLink& l : out.links) {
    l.readers = static_cast<int32_t>(readers[(uint64_t{l.producer} << 20) ^ static_cast<uint32_t>(l.output)].size());
  }
}

}  // namespace

// Ops and regions are named, and links read, from the messages of outer ranges only: once every
// range's kind is known, the messages of PyTorch op ranges nested in another op are let go and
// the others moved into one block. The walk has owners of its own, so that the index's own walks
// (and, in a file whose parent links loop, what they find) are those of a run that keeps its
// messages.
void letNestedOpMessagesGo(const core::Profile& p, const ParsedRanges& ranges, const NvtxRangeLookup& lookup,
                           const NestedMessageRelease& release) {
  release.others_done();
  std::vector<core::NvtxRangeRow>& rows = release.run->nvtx_ranges;
  std::vector<core::PackedText*> kept;
  size_t kept_bytes = 0;
  {
    Owners walk(p, ranges, lookup);
    for (size_t r = 0; r < ranges.size(); ++r) {
      if (walk.nestedTorchOp(r)) {
        rows[r].message = core::PackedText();
      } else if (!rows[r].message.empty()) {
        kept.push_back(&rows[r].message);
        kept_bytes += core::TextBlock::bytesFor(rows[r].message);
      }
    }
  }
  // The reader's blocks, where no other profile shares them: the kept messages move down in them.
  std::shared_ptr<core::TextArena>& read = release.run->nvtx_messages;
  if (read && read.use_count() == 1) {
    read->keepOnly(kept);
    return;
  }
  // Else into one block of their own, and this run's share of the reader's goes.
  *release.kept = core::TextBlock(kept_bytes);
  for (core::PackedText* text : kept) *text = release.kept->hold(*text);
  read.reset();
}

FrameworkOps indexOpsOf(const core::Profile& p, const NestedMessageRelease* release) {
  FrameworkOps out;
  out.kernel_op.assign(p.kernels.size(), -1);
  out.kernel_region.assign(p.kernels.size(), -1);
  // Kinds read with the messages (readNvtxMessages) come with the lookup made then, and without the
  // nested ops' messages: there are none to let go.
  const bool read_with_messages = release && release->kinds;
  const std::shared_ptr<const NvtxRangeLookup> read_lookup = read_with_messages ? release->kinds->lookup : nullptr;
  const ParsedRanges ranges = read_with_messages ? ParsedRanges(p, std::move(*release->kinds)) : ParsedRanges(p);
  out.pytorch = ranges.pytorch();
  out.op_graph = ranges.opGraph();
  out.xla = ranges.xla();
  if (!ranges.any()) return out;  // only fprof's own convention, or no ranges
  std::optional<NvtxRangeLookup> made;
  const NvtxRangeLookup& lookup = read_lookup ? *read_lookup : made.emplace(p);
  nameRegions(p, ranges, lookup, out);
  if (!out.pytorch && !out.xla) return out;
  if (release && out.pytorch && !read_with_messages) letNestedOpMessagesGo(p, ranges, lookup, *release);
  Owners owners(p, ranges, lookup);
  const std::unordered_map<size_t, size_t> op_of_range = assignOwners(p, ranges, owners, lookup, out);
  if (out.op_graph) {
    linkOps(p, ranges, owners, op_of_range, out);
    countReaders(out);
  }
  out.links.shrink_to_fit();  // grown one link at a time: up to twice its size otherwise
  return out;
}

FrameworkOps indexFrameworkOps(const core::Profile& p) { return indexOpsOf(p, nullptr); }

FrameworkOps indexFrameworkOps(const core::Profile& p, const NestedMessageRelease& release) {
  return indexOpsOf(p, &release);
}

namespace {

// Whether each range lies inside a PyTorch op range, as far as the ranges read so far tell. The
// file hands ranges over in key order, and a range's key is above its parent's (a parent starts
// first), so the answer is known as each range comes; where a parent comes later (a file written
// otherwise), it is unknown.
class InsideTorchOp {
 public:
  enum class Answer : uint8_t { kUnread, kNo, kYes, kUnknown };
  explicit InsideTorchOp(const core::Profile& run)
      : lookup_(std::make_shared<const NvtxRangeLookup>(run)), covered_(run.nvtx_ranges.size(), Answer::kUnread) {}
  std::shared_ptr<const NvtxRangeLookup> lookup() const { return lookup_; }

  // Range r, of this kind, read: whether it is inside a PyTorch op.
  Answer see(size_t r, FrameworkRangeKind kind) {
    const Answer inside = insideOf(r);
    covered_[r] = kind == FrameworkRangeKind::kTorchOp ? Answer::kYes : inside;
    return inside;
  }

 private:
  Answer insideOf(size_t r) const {
    const std::optional<size_t> parent = lookup_->parent(r);
    if (!parent) return Answer::kNo;
    const Answer above = covered_[*parent];
    return above == Answer::kUnread ? Answer::kUnknown : above;
  }

  std::shared_ptr<const NvtxRangeLookup> lookup_;
  std::vector<Answer> covered_;  // the range is a PyTorch op or inside one
};

}  // namespace

// One pass parses every message for its kind and holds all but those of PyTorch ops nested in
// another PyTorch op (most of them, under emit_nvtx): those are known nested as they come, their
// parents read before them. Where nesting is not known yet, the message is held: a few more than
// indexing needs, never fewer.
core::Expected<NvtxRangeKinds> readNvtxMessages(core::Profile& run) {
  auto messages = std::make_shared<core::TextArena>();
  RangeKindParser parser(run.nvtx_ranges.size());
  InsideTorchOp nesting(run);
  core::Status read = core::forEachNvtxMessage(run, [&](size_t i, std::string_view message) {
    core::NvtxRangeRow& r = run.nvtx_ranges[i];
    const FrameworkRangeKind kind = parser.see(i, r.process_id, r.domain, message);
    const InsideTorchOp::Answer inside = nesting.see(i, kind);
    if (kind != FrameworkRangeKind::kTorchOp || inside != InsideTorchOp::Answer::kYes) r.message = messages->hold(message);
  });
  if (!read) return core::Error{read.error()};
  run.nvtx_messages = std::move(messages);
  run.nvtx_messages_loaded = true;
  NvtxRangeKinds kinds = parser.finish();
  kinds.lookup = nesting.lookup();
  return kinds;
}

std::string frameworkOpName(const core::Profile& /*p*/, const FrameworkOps& ops, size_t k) {
  if (k < ops.kernel_op.size() && ops.kernel_op[k] >= 0) return ops.ops[static_cast<size_t>(ops.kernel_op[k])].range.name;
  if (k < ops.kernel_region.size() && ops.kernel_region[k] >= 0) {
    return ops.region_names[static_cast<size_t>(ops.kernel_region[k])];
  }
  return "";
}

std::optional<int> elementBytesFromKernelName(std::string_view n) {
  // cuBLAS Hopper GEMMs: nvjet_sm90_<A><compute><C>_...: h = fp16, b = bf16, s = fp32, t = tf32.
  if (startsWith(n, "nvjet_")) {
    const size_t u = n.find('_', 6);
    if (u != std::string_view::npos && u + 4 <= n.size()) {
      switch (n[u + 3]) {
        case 'h':
        case 'b': return 2;
        case 's':
        case 't': return 4;
        default: break;
      }
    }
    return std::nullopt;
  }
  struct Type {
    std::string_view spelling;
    int bytes;
  };
  static constexpr Type kTypes[] = {{"c10::Half", 2},     {"c10::BFloat16", 2}, {"__half", 2},  {"__nv_bfloat16", 2},
                                    {"c10::Float8", 1},   {"double", 8},        {"float", 4},   {"_f16", 2},
                                    {"_bf16", 2},         {"_fp16", 2},         {"_f32", 4}};
  size_t best = std::string_view::npos;
  int bytes = 0;
  for (const Type& t : kTypes) {
    const size_t at = n.find(t.spelling);
    if (at < best) {
      best = at;
      bytes = t.bytes;
    }
  }
  if (best == std::string_view::npos) return std::nullopt;
  return bytes;
}

}  // namespace fprof::analysis
