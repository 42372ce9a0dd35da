// A kernel's short name for naming pairs: its own name without return type, namespaces,
// parameter list or long template arguments. A stand-in for the analysis layer's short-name
// function (kernel_names.h), which replaces it once it lands.
#pragma once

#include <string>
#include <string_view>

namespace fprof::analysis::detail {

inline std::string shortKernelName(std::string_view s) {
  if (s.substr(0, 5) == "void ") s.remove_prefix(5);
  // The parameter list: the last top-level parenthesis group.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) {
        s = s.substr(0, i);
        break;
      }
    }
  }
  // Namespaces: everything up to the last "::" outside template arguments and parentheses.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] == '<' || s[i] == '(') ++depth;
    if (s[i] == '>' || s[i] == ')') --depth;
    if (depth == 0 && s[i] == ':' && s[i + 1] == ':') start = i + 2;
  }
  s.remove_prefix(start);
  const size_t open = s.find('<');
  if (open != std::string_view::npos && s.size() - open > 40) return std::string(s.substr(0, open)) + "<...>";
  return std::string(s);
}

}  // namespace fprof::analysis::detail
