// Short kernel names (see kernel_names.h). A small scanner over the demangler's output: it knows
// brackets, `::` scopes, `(anonymous namespace)` and `{lambda(...)#n}`, and nothing of C++ beyond.
#include "fprof/analysis/kernel_names.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

namespace fprof::analysis {
namespace {

constexpr std::string_view kAnonymous = "(anonymous namespace)";
constexpr std::string_view kEllipsis = "...";

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$'; }
bool isIdentChar(char c) { return isIdentStart(c) || (c >= '0' && c <= '9'); }

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && isSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && isSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool opens(char c) { return c == '<' || c == '(' || c == '[' || c == '{'; }
bool closes(char c) { return c == '>' || c == ')' || c == ']' || c == '}'; }

// Index one past the bracket group that opens at `i` (any of <([{ nested); s.size() if unclosed.
// A '>' right after '-' is an arrow, not a bracket.
size_t groupEnd(std::string_view s, size_t i) {
  int depth = 0;
  for (size_t j = i; j < s.size(); ++j) {
    const char c = s[j];
    if (opens(c)) {
      ++depth;
    } else if (closes(c) && !(c == '>' && j > 0 && s[j - 1] == '-')) {
      if (--depth == 0) return j + 1;
    }
  }
  return s.size();
}

// Splits at `sep` where no bracket is open.
std::vector<std::string_view> splitTopLevel(std::string_view s, std::string_view sep) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (opens(c)) {
      ++depth;
    } else if (closes(c) && !(c == '>' && i > 0 && s[i - 1] == '-')) {
      depth = std::max(0, depth - 1);
    } else if (depth == 0 && s.compare(i, sep.size(), sep) == 0) {
      parts.push_back(s.substr(start, i - start));
      start = i + sep.size();
      i += sep.size() - 1;
    }
  }
  parts.push_back(s.substr(start));
  return parts;
}

bool startsWith(std::string_view s, size_t at, std::string_view prefix) {
  return s.compare(at, prefix.size(), prefix) == 0;
}

// One `::`-separated part of a qualified name: `ReduceOp<float, 4>`, `{lambda(int)#1}`,
// `operator()`, `(anonymous namespace)`, or a function scope `foo(int)` that a lambda sits in.
struct Component {
  std::string_view name;
  std::optional<std::vector<std::string_view>> template_args;
};

bool isLambda(const Component& c) { return !c.name.empty() && c.name.front() == '{'; }
bool isAnonymous(const Component& c) { return c.name == kAnonymous; }
bool isOperator(const Component& c) { return startsWith(c.name, 0, "operator"); }

// How much of a name to show. The default is the short name; KernelNames adds detail, tier by
// tier, only where two kernels would otherwise look the same.
struct Detail {
  bool lambdas = false;  // a lambda argument as `gelu_kernel::lambda(float)`, not `gelu_kernel`
  bool params = false;   // the parameter list
  bool scopes = false;   // the function's namespaces and classes
};

// Template arguments nested deeper than this are kept as written: names come from programs, and
// a hostile one must not exhaust the stack or take quadratic time.
constexpr int kMaxNesting = 24;

std::string shortenExpr(std::string_view s, const Detail& d, int nesting);

std::string renderComponent(const Component& c, const Detail& d, int nesting) {
  std::string out(c.name);
  if (c.template_args) {
    out += '<';
    for (size_t i = 0; i < c.template_args->size(); ++i) {
      if (i) out += ", ";
      out += shortenExpr(trim((*c.template_args)[i]), d, nesting + 1);
    }
    out += '>';
  }
  return out;
}

// Reads a qualified name starting at `i`; advances `i` past it. Parameter lists are consumed
// only where a scope follows (`f(int)::{lambda()#1}`): elsewhere they belong to the caller.
std::vector<Component> readChain(std::string_view s, size_t& i) {
  std::vector<Component> chain;
  while (i < s.size()) {
    Component c;
    const size_t begin = i;
    if (startsWith(s, i, kAnonymous)) {
      i += kAnonymous.size();
    } else if (s[i] == '{') {
      i = groupEnd(s, i);
    } else if (isIdentStart(s[i])) {
      while (i < s.size() && isIdentChar(s[i])) ++i;
      if (s.substr(begin, i - begin) == "operator") {
        if (startsWith(s, i, "()")) {
          i += 2;
        } else {
          while (i < s.size() && std::string_view("<>=!+-*/%&|^~,[]").find(s[i]) != std::string_view::npos) ++i;
        }
      }
    } else {
      break;
    }
    c.name = s.substr(begin, i - begin);
    if (i < s.size() && s[i] == '<' && !isOperator(c)) {
      const size_t end = groupEnd(s, i);
      c.template_args = splitTopLevel(s.substr(i + 1, end > i + 1 ? end - i - 2 : 0), ",");
      i = end;
    }
    if (i < s.size() && s[i] == '(') {
      size_t end = groupEnd(s, i);
      for (std::string_view q : {" const", " volatile", " &&", " &"}) {
        if (startsWith(s, end, q)) end += q.size();
      }
      if (startsWith(s, end, "::")) i = end;
    }
    chain.push_back(c);
    if (!startsWith(s, i, "::")) break;
    i += 2;
  }
  return chain;
}

// A qualified name as one short word: the last named part, or for a lambda the function it was
// written in (`at::native::gelu_kernel(...)::{lambda()#1}` -> `gelu_kernel`).
// With lambda detail, the innermost lambda follows: `gelu_kernel::lambda(Half)`.
std::string renderChain(const std::vector<Component>& chain, const Detail& d, int nesting) {
  std::vector<const Component*> named;
  for (const Component& c : chain) {
    if (isLambda(c)) break;
    if (!isAnonymous(c)) named.push_back(&c);
  }
  while (!named.empty() && isOperator(*named.back()) && named.back()->name.find("()") != std::string_view::npos) {
    named.pop_back();
  }
  const bool lambda = !chain.empty() && isLambda(chain.back());
  std::string out = named.empty() ? std::string() : renderComponent(*named.back(), d, nesting);
  if (lambda && (d.lambdas || out.empty())) {
    // `{lambda(c10::Half)#1}` -> `lambda(Half)`
    std::string_view inner = chain.back().name.substr(1, chain.back().name.size() - 2);
    if (const size_t hash = inner.rfind('#'); hash != std::string_view::npos) inner = inner.substr(0, hash);
    out += (out.empty() ? "" : "::") + shortenExpr(inner, d, nesting + 1);
  }
  return out;
}

// Every qualified name in a type or value expression becomes its short word; the rest is kept,
// with `> >` closed up.
std::string shortenExpr(std::string_view s, const Detail& d, int nesting) {
  if (nesting > kMaxNesting) return std::string(s);
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (isIdentStart(c) || startsWith(s, i, kAnonymous) || c == '{') {
      const size_t before = i;
      const std::vector<Component> chain = readChain(s, i);
      if (i == before) {
        out += s[i++];
        continue;
      }
      out += renderChain(chain, d, nesting);
    } else if (c == ' ' && i + 1 < s.size() && s[i + 1] == '>' && !out.empty() && out.back() == '>') {
      ++i;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// A demangled function name cut into its parts: scopes, the function itself, its parameters.
struct Signature {
  std::vector<Component> scopes;
  Component function;
  std::string_view params;  // inside the parentheses; empty when there are none
  bool has_params = false;
};

std::optional<Signature> parseSignature(std::string_view s) {
  // The parameter list: the last top-level parenthesis group, if it closes the name.
  size_t name_end = s.size();
  int depth = 0;
  std::optional<size_t> last_paren;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' && depth == 0) last_paren = i;
    if (opens(c)) {
      ++depth;
    } else if (closes(c) && !(c == '>' && i > 0 && s[i - 1] == '-')) {
      depth = std::max(0, depth - 1);
    }
  }
  Signature sig;
  if (last_paren) {
    const size_t end = groupEnd(s, *last_paren);
    std::string_view rest = trim(s.substr(end));
    for (std::string_view q : {"const", "volatile", "&&", "&"}) {
      if (startsWith(rest, 0, q)) rest = trim(rest.substr(q.size()));
    }
    if (rest.empty() && !startsWith(s, *last_paren, kAnonymous)) {
      name_end = *last_paren;
      sig.has_params = true;
      sig.params = s.substr(*last_paren + 1, end - *last_paren - 2);
    }
  }
  // The return type ends at the last top-level space before the name; without a parameter list
  // this is no C++ function name, and a space means the text is something else: kept whole.
  std::string_view name = trim(s.substr(0, name_end));
  const std::vector<std::string_view> words = splitTopLevel(name, " ");
  if (words.size() > 1 && !sig.has_params) return std::nullopt;
  name = trim(words.back());
  size_t i = 0;
  std::vector<Component> chain = readChain(name, i);
  if (chain.empty() || i != name.size()) return std::nullopt;
  sig.function = chain.back();
  chain.pop_back();
  sig.scopes = std::move(chain);
  return sig;
}

// `kernel`, `Kernel2`, `device_kernel`: a name that says nothing without its scope.
bool isGenericName(std::string_view name) {
  if (startsWith(name, 0, "device_")) name.remove_prefix(7);
  if (name.size() < 6) return false;
  const std::string_view head = name.substr(0, 6);
  if (head != "kernel" && head != "Kernel") return false;
  return std::all_of(name.begin() + 6, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The named scopes of a function, `a::b::`; only the innermost one unless `all`.
std::string scopePrefix(const std::vector<Component>& scopes, bool all, const Detail& d) {
  std::string out;
  for (size_t k = scopes.size(); k-- > 0;) {
    const Component& c = scopes[k];
    if (isAnonymous(c) || isLambda(c)) continue;
    out = renderComponent(c, d, 0) + "::" + out;
    if (!all) break;
  }
  return out;
}

// The short name before fitting it to a width.
std::string renderName(std::string_view demangled, const Detail& d) {
  const std::string_view s = trim(demangled);
  const std::optional<Signature> sig = parseSignature(s);
  if (!sig || sig->function.name.empty()) return std::string(s);
  std::string out;
  if (d.scopes || isGenericName(sig->function.name)) out = scopePrefix(sig->scopes, d.scopes, d);
  out += renderComponent(sig->function, d, 0);
  if (d.params && sig->has_params) out += "(" + shortenExpr(sig->params, d, 1) + ")";
  return out;
}

// The name with template argument lists nested deeper than `depth` shown as `<...>`.
std::string collapseBelow(std::string_view s, int depth) {
  std::string out;
  int level = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<') {
      if (level >= depth) {
        out += "<...>";
        const size_t end = groupEnd(s, i);
        i = end - 1;
        continue;
      }
      ++level;
    } else if (c == '>' && !(i > 0 && s[i - 1] == '-')) {
      level = std::max(0, level - 1);
    }
    out += c;
  }
  return out;
}

int maxDepth(std::string_view s) {
  int level = 0, deepest = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') deepest = std::max(deepest, ++level);
    if (s[i] == '>' && !(i > 0 && s[i - 1] == '-')) level = std::max(0, level - 1);
  }
  return deepest;
}

// Cut at `max_chars` (ellipsis included), never inside a UTF-8 character.
std::string cutAtEnd(std::string_view s, size_t max_chars) {
  if (s.size() <= max_chars) return std::string(s);
  size_t keep = max_chars > kEllipsis.size() ? max_chars - kEllipsis.size() : 0;
  while (keep > 0 && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80) --keep;
  return std::string(s.substr(0, keep)) + std::string(kEllipsis);
}

// Fits a short name into `max_chars`: deeper template arguments go first, then the trailing
// arguments of the function's own list, then the end of the name.
std::string fit(const std::string& s, size_t max_chars) {
  if (s.size() <= max_chars) return s;
  for (int depth = std::min(maxDepth(s) - 1, kMaxNesting); depth >= 1; --depth) {
    std::string t = collapseBelow(s, depth);
    if (t.size() <= max_chars) return t;
  }
  const std::string t = collapseBelow(s, 1);
  const size_t open = t.find('<');
  if (open != std::string::npos && t.back() == '>' && groupEnd(t, open) == t.size()) {
    const std::string head = t.substr(0, open);
    const std::string_view inside = std::string_view(t).substr(open + 1, t.size() - open - 2);
    const std::vector<std::string_view> args = splitTopLevel(inside, ",");
    std::string best = head + "<...>";
    std::string kept;
    for (size_t a = 0; a + 1 < args.size(); ++a) {
      kept += (a ? ", " : "") + std::string(trim(args[a]));
      const std::string candidate = head + "<" + kept + ", ...>";
      if (candidate.size() > max_chars) break;
      best = candidate;
    }
    if (best.size() <= max_chars) return best;
  }
  return cutAtEnd(t, max_chars);
}

std::string renderFitted(std::string_view demangled, const ShortNameOptions& o) {
  const std::string name = renderName(demangled, Detail{});
  const bool plain = name.find('<') == std::string::npos;
  return fit(name, plain ? std::max(o.max_chars, o.max_plain_chars) : o.max_chars);
}

// Candidate names of a group of kernels that share a short name, in KernelNames' order of
// preference: more template arguments (deeper first), then lambdas, parameters, scopes.
std::vector<std::vector<std::string>> tiers(const std::vector<std::string_view>& group) {
  std::vector<std::vector<std::string>> out;
  std::vector<std::string> uncut;
  int deepest = 0;
  for (std::string_view full : group) {
    uncut.push_back(renderName(full, Detail{}));
    deepest = std::max(deepest, maxDepth(uncut.back()));
  }
  for (int depth = 1; depth < std::min(deepest, kMaxNesting); ++depth) {
    std::vector<std::string> tier;
    for (const std::string& u : uncut) tier.push_back(collapseBelow(u, depth));
    out.push_back(std::move(tier));
  }
  out.push_back(uncut);
  const Detail more[] = {{true, false, false}, {true, true, false}, {true, true, true}};
  for (const Detail& d : more) {
    std::vector<std::string> tier;
    for (std::string_view full : group) tier.push_back(renderName(full, d));
    out.push_back(std::move(tier));
  }
  return out;
}

}  // namespace

std::string shortKernelName(std::string_view demangled, const ShortNameOptions& options) {
  return renderFitted(demangled, options);
}

KernelNames::KernelNames(std::vector<std::string> full_names, const ShortNameOptions& options) : options_(options) {
  std::sort(full_names.begin(), full_names.end());
  full_names.erase(std::unique(full_names.begin(), full_names.end()), full_names.end());
  std::map<std::string, std::vector<size_t>> by_short;  // short name -> full names (sorted)
  std::vector<std::string> shorts(full_names.size());
  for (size_t i = 0; i < full_names.size(); ++i) {
    shorts[i] = shortKernelName(full_names[i], options_);
    by_short[shorts[i]].push_back(i);
  }
  std::unordered_set<std::string> taken;
  for (const auto& [name, members] : by_short) taken.insert(name);
  const size_t readable_chars = 2 * std::max(options_.max_chars, options_.max_plain_chars);
  for (const auto& [name, members] : by_short) {
    if (members.size() < 2) continue;
    // The first tier that tells every member apart, of a readable length, and free.
    std::vector<std::string_view> group;
    for (size_t m : members) group.push_back(full_names[m]);
    bool separated = false;
    for (const std::vector<std::string>& candidates : tiers(group)) {
      const std::set<std::string> distinct(candidates.begin(), candidates.end());
      const bool readable = std::all_of(candidates.begin(), candidates.end(),
                                        [&](const std::string& c) { return c.size() <= readable_chars; });
      const bool free = std::none_of(candidates.begin(), candidates.end(), [&](const std::string& c) {
        return c != name && taken.count(c) > 0;
      });
      if (distinct.size() != members.size() || !readable || !free) continue;
      for (size_t k = 0; k < members.size(); ++k) {
        shorts[members[k]] = candidates[k];
        taken.insert(candidates[k]);
      }
      separated = true;
      break;
    }
    if (separated) continue;
    int n = 1;
    for (size_t m : members) {
      std::string numbered;
      do {
        numbered = name + " #" + std::to_string(n++);
      } while (taken.count(numbered));
      shorts[m] = numbered;
      taken.insert(numbered);
    }
  }
  short_of_.reserve(full_names.size());
  for (size_t i = 0; i < full_names.size(); ++i) short_of_.emplace(std::move(full_names[i]), std::move(shorts[i]));
}

std::vector<std::string> distinctKernelNames(const core::Profile& p) {
  std::vector<std::string> names;
  std::unordered_set<uint32_t> seen;
  for (const core::KernelRow& k : p.kernels) {
    if (seen.insert(k.demangled_id).second) names.push_back(p.str(k.demangled_id));
  }
  return names;
}

KernelNames KernelNames::of(const std::vector<const core::Profile*>& profiles, const ShortNameOptions& options) {
  std::vector<std::string> names;
  for (const core::Profile* p : profiles) {
    if (!p) continue;
    std::vector<std::string> of_profile = distinctKernelNames(*p);
    names.insert(names.end(), std::make_move_iterator(of_profile.begin()), std::make_move_iterator(of_profile.end()));
  }
  return KernelNames(std::move(names), options);
}

std::string KernelNames::shortName(std::string_view full) const {
  if (auto it = short_of_.find(std::string(full)); it != short_of_.end()) return it->second;
  return shortKernelName(full, options_);
}

std::string KernelNames::chainLabel(const std::vector<std::string>& stages) const {
  std::string out;
  for (const std::string& st : stages) out += (out.empty() ? "" : " -> ") + label(st);
  return out;
}

std::string KernelNames::label(std::string_view text) const {
  if (auto it = short_of_.find(std::string(text)); it != short_of_.end()) return it->second;
  return std::string(text);
}

}  // namespace fprof::analysis
