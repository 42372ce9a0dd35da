// Argument roles: measured, from the signature, or by position (see arg_roles.h).
#include "fprof/analysis/arg_roles.h"

#include <algorithm>
#include <array>

namespace fprof::analysis {

std::string_view argRoleName(ArgRole r) {
  switch (r) {
    case ArgRole::kRead: return "read";
    case ArgRole::kWrite: return "write";
    case ArgRole::kUnknown: return "unknown";
  }
  return "unknown";
}

std::string_view roleSourceName(RoleSource s) {
  switch (s) {
    case RoleSource::kMeasured: return "measured";
    case RoleSource::kSignature: return "kernel signature";
    case RoleSource::kPosition: return "argument position";
  }
  return "argument position";
}

void MeasuredRoles::add(uint32_t process_id, uint32_t name_id, int32_t arg_index, std::string_view role,
                        std::optional<int32_t> word_offset) {
  Entry e;
  if (role == "write") {
    e.role = ArgRole::kWrite;
  } else if (role == "read") {
    e.role = ArgRole::kRead;
  } else if (role == "not_pointer") {
    e.pointer = false;
  } else {
    return;
  }
  if (arg_index < 0) return;
  auto& args = by_function_[key(process_id, name_id)];
  for (Measured& m : args) {
    if (m.slot.index == arg_index && m.slot.word_offset == word_offset) {
      m.entry = e;
      return;
    }
  }
  args.push_back({{arg_index, word_offset}, e});
}

std::optional<MeasuredRoles::Entry> MeasuredRoles::find(uint32_t process_id, uint32_t name_id,
                                                        const ArgSlot& slot) const {
  const auto it = by_function_.find(key(process_id, name_id));
  if (it == by_function_.end()) return std::nullopt;
  for (const Measured& m : it->second) {
    if (covers(m.slot, slot)) return m.entry;
  }
  return std::nullopt;
}

bool MeasuredRoles::covers(const ArgSlot& measured, const ArgSlot& slot) {
  if (measured.index != slot.index) return false;
  // A word of a larger parameter: only the role measured at that word. An 8-byte parameter is one
  // word: any role of its index (files before the offset column store 0 for every row).
  return slot.word_offset ? measured.word_offset == slot.word_offset : true;
}

std::optional<MeasuredRoles::Writes> MeasuredRoles::writes(uint32_t process_id, uint32_t name_id) const {
  const auto it = by_function_.find(key(process_id, name_id));
  if (it == by_function_.end()) return std::nullopt;
  Writes w;
  for (const Measured& m : it->second) {
    if (m.entry.pointer && m.entry.role == ArgRole::kWrite) w.push_back(m.slot);
  }
  return w;
}

MeasuredRoles measuredRoles(const core::Profile& p) {
  MeasuredRoles m;
  for (const core::FunctionArgRow& a : p.function_args) {
    m.add(a.process_id, a.name_id, a.arg_index, a.role, a.offset_bytes);
  }
  return m;
}

bool Signature::anyConstPointer() const {
  return std::find(params.begin(), params.end(), ParamKind::kConstPointer) != params.end();
}

size_t Signature::pointerCount() const {
  return static_cast<size_t>(std::count_if(params.begin(), params.end(), [](ParamKind k) {
    return k == ParamKind::kConstPointer || k == ParamKind::kMutablePointer;
  }));
}

bool Signature::anyAggregate() const {
  return std::find(params.begin(), params.end(), ParamKind::kAggregate) != params.end();
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Builtin and half-precision scalars, and CUDA's vector types (float4, int2, ...): a parameter of
// one of these types cannot carry a device address.
bool isScalarType(std::string_view t) {
  if (t.substr(0, 6) == "const ") t = trim(t.substr(6));
  if (endsWith(t, " const")) t = trim(t.substr(0, t.size() - 6));
  static constexpr std::array<std::string_view, 30> kScalars = {
      "bool",         "char",          "signed char",       "unsigned char",      "short",
      "unsigned short", "int",         "unsigned int",      "unsigned",           "long",
      "unsigned long", "long long",    "unsigned long long", "float",             "double",
      "long double",  "wchar_t",       "char16_t",          "char32_t",           "__half",
      "half",         "__half2",       "__nv_bfloat16",     "__nv_bfloat162",     "c10::Half",
      "c10::BFloat16", "at::Half",     "at::BFloat16",      "std::nullptr_t",     "decltype(nullptr)"};
  if (std::find(kScalars.begin(), kScalars.end(), t) != kScalars.end()) return true;
  // Vector types: a base name and a width 1-4.
  if (t.size() >= 2 && t.back() >= '1' && t.back() <= '4') {
    const std::string_view base = t.substr(0, t.size() - 1);
    static constexpr std::array<std::string_view, 12> kVectorBases = {
        "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong", "ulonglong", "float", "double"};
    return std::find(kVectorBases.begin(), kVectorBases.end(), base) != kVectorBases.end();
  }
  return false;
}

ParamKind classifyParam(std::string_view p) {
  p = trim(p);
  for (std::string_view suffix : {std::string_view("__restrict__"), std::string_view("__restrict")}) {
    if (endsWith(p, suffix)) p = trim(p.substr(0, p.size() - suffix.size()));
  }
  // "float* const" is a const pointer to mutable data.
  if (endsWith(p, " const") && p.size() > 6 && trim(p.substr(0, p.size() - 6)).back() == '*') {
    p = trim(p.substr(0, p.size() - 6));
  }
  if (!p.empty() && p.back() == '*') {
    // "float const*" and "const float*" point to const data; "float* const*" does not.
    const std::string_view pointee = p.substr(0, p.size() - 1);
    const size_t c = pointee.rfind("const");
    const bool const_pointee = c != std::string_view::npos && pointee.find('*', c) == std::string_view::npos;
    return const_pointee ? ParamKind::kConstPointer : ParamKind::kMutablePointer;
  }
  return isScalarType(p) ? ParamKind::kScalar : ParamKind::kAggregate;
}

}  // namespace

Signature parseSignature(std::string_view name) {
  Signature sig;
  if (name.empty() || name.back() != ')') return sig;
  // The parameter list is the last top-level parenthesis group.
  int depth = 0;
  size_t open = std::string_view::npos;
  for (size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++depth;
    if (name[i] == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  if (open == std::string_view::npos) return sig;
  sig.parsed = true;
  const std::string_view params = name.substr(open + 1, name.size() - open - 2);
  if (trim(params).empty() || trim(params) == "void") return sig;
  size_t start = 0;
  depth = 0;
  for (size_t i = 0; i <= params.size(); ++i) {
    const char ch = i < params.size() ? params[i] : ',';
    if (ch == '<' || ch == '(' || ch == '[' || ch == '{') ++depth;
    if (ch == '>' || ch == ')' || ch == ']' || ch == '}') --depth;
    if (ch == ',' && depth == 0) {
      sig.params.push_back(classifyParam(params.substr(start, i - start)));
      start = i + 1;
    }
  }
  return sig;
}

std::vector<std::optional<ArgRoleResult>> argumentRoles(const MeasuredRoles& measured, const Signature& sig,
                                                        uint32_t process_id, uint32_t name_id,
                                                        const std::vector<ArgSlot>& args) {
  std::vector<std::optional<ArgRoleResult>> out;
  argumentRoles(measured, sig, process_id, name_id, args, out);
  return out;
}

void argumentRoles(const MeasuredRoles& measured, const Signature& sig, uint32_t process_id, uint32_t name_id,
                   const std::vector<ArgSlot>& args, std::vector<std::optional<ArgRoleResult>>& out) {
  out.assign(args.size(), std::nullopt);
  // The signature speaks only if it covers every resolved argument (a parameter list that does
  // not match the launch is not this kernel's).
  int32_t max_index = -1;
  bool negative = false;
  for (const ArgSlot& a : args) {
    max_index = std::max(max_index, a.index);
    negative = negative || a.index < 0;
  }
  const bool by_signature = sig.parsed && !args.empty() && !negative && static_cast<size_t>(max_index) < sig.params.size();
  // A kernel that marks its inputs const declares its outputs by leaving them mutable; so does one
  // whose only pointer parameter is mutable (fill, arange).
  const bool const_correct = by_signature && (sig.anyConstPointer() || sig.pointerCount() == 1);
  const bool any_measured = !measured.empty();
  for (size_t i = 0; i < args.size(); ++i) {
    if (auto m = any_measured ? measured.find(process_id, name_id, args[i]) : std::nullopt) {
      if (m->pointer) out[i] = ArgRoleResult{m->role, RoleSource::kMeasured};
      continue;
    }
    if (by_signature) {
      switch (sig.params[static_cast<size_t>(args[i].index)]) {
        case ParamKind::kScalar: break;  // an 8-byte value that happens to look like an address
        case ParamKind::kConstPointer: out[i] = ArgRoleResult{ArgRole::kRead, RoleSource::kSignature}; break;
        case ParamKind::kMutablePointer:
          out[i] = ArgRoleResult{const_correct ? ArgRole::kWrite : ArgRole::kUnknown, RoleSource::kSignature};
          break;
        case ParamKind::kAggregate: out[i] = ArgRoleResult{ArgRole::kUnknown, RoleSource::kSignature}; break;
      }
      continue;
    }
    out[i] = ArgRoleResult{i + 1 == args.size() ? ArgRole::kWrite : ArgRole::kRead, RoleSource::kPosition};
  }
}

bool launchIsOpaque(const Signature& sig, const core::KernelArgRecord* args, size_t arg_count,
                    size_t resolved_pointers, bool words_recorded) {
  if (resolved_pointers == 0) return true;
  if (sig.parsed) {
    // A by-value aggregate hides pointers unless its words were recorded.
    for (size_t i = 0; i < sig.params.size(); ++i) {
      if (sig.params[i] != ParamKind::kAggregate) continue;
      bool recorded = false;
      for (size_t a = 0; a < arg_count && !recorded; ++a) recorded = args[a].index == static_cast<int32_t>(i);
      if (!recorded && !words_recorded) return true;
    }
    return false;
  }
  // Offsets of the recorded arguments: a gap wider than 8 bytes per missing parameter holds a
  // parameter larger than 8 bytes. Words of one parameter follow each other.
  int32_t next_index = 0;
  int64_t next_offset = 0;
  for (size_t i = 0; i < arg_count; ++i) {
    const bool same_parameter = i > 0 && args[i].index == args[i - 1].index;
    const int64_t missing = args[i].index - next_index;
    if (!same_parameter && missing >= 0 && args[i].offset_bytes - next_offset > 8 * missing) return true;
    next_index = args[i].index + 1;
    next_offset = int64_t{args[i].offset_bytes} + 8;
  }
  return false;
}

}  // namespace fprof::analysis
