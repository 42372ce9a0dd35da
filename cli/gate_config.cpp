// The gate's configuration file: JSON (nlohmann) or TOML (toml++), read into one neutral list of
// key/value pairs and checked once, so both formats accept the same keys and say the same thing.
#include "gate_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <toml++/toml.h>
#include <utility>
#include <vector>

#include "fprof/core/output.h"

namespace fprof::cli {
namespace {

// One configuration value, whatever the format wrote it as.
struct ConfigValue {
  enum class Kind { kString, kNumber, kBool, kStringList, kOther };
  Kind kind = Kind::kOther;
  std::string text;
  double number = 0;
  bool flag = false;
  std::vector<std::string> list;
};
using ConfigEntries = std::vector<std::pair<std::string, ConfigValue>>;

ConfigValue fromJson(const nlohmann::json& v) {
  ConfigValue c;
  if (v.is_string()) {
    c.kind = ConfigValue::Kind::kString;
    c.text = v.get<std::string>();
  } else if (v.is_boolean()) {
    c.kind = ConfigValue::Kind::kBool;
    c.flag = v.get<bool>();
  } else if (v.is_number()) {
    c.kind = ConfigValue::Kind::kNumber;
    c.number = v.get<double>();
  } else if (v.is_array() && std::all_of(v.begin(), v.end(), [](const nlohmann::json& e) { return e.is_string(); })) {
    c.kind = ConfigValue::Kind::kStringList;
    for (const auto& e : v) c.list.push_back(e.get<std::string>());
  }
  return c;
}

ConfigValue fromToml(const toml::node& v) {
  ConfigValue c;
  if (const auto* s = v.as_string()) {
    c.kind = ConfigValue::Kind::kString;
    c.text = s->get();
  } else if (const auto* b = v.as_boolean()) {
    c.kind = ConfigValue::Kind::kBool;
    c.flag = b->get();
  } else if (const auto* i = v.as_integer()) {
    c.kind = ConfigValue::Kind::kNumber;
    c.number = static_cast<double>(i->get());
  } else if (const auto* f = v.as_floating_point()) {
    c.kind = ConfigValue::Kind::kNumber;
    c.number = f->get();
  } else if (const auto* a = v.as_array(); a && (a->empty() || a->is_homogeneous(toml::node_type::string))) {
    c.kind = ConfigValue::Kind::kStringList;
    for (const auto& e : *a) c.list.push_back(e.as_string()->get());
  }
  return c;
}

core::Expected<ConfigEntries> parseEntries(const std::string& text, GateConfigFormat format, const std::string& source) {
  ConfigEntries entries;
  if (format == GateConfigFormat::kJson) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const std::exception& e) {
      return core::makeError(source + ": not valid JSON: " + e.what());
    }
    if (!j.is_object()) return core::makeError(source + ": the gate configuration must be a JSON object");
    for (const auto& [key, value] : j.items()) entries.emplace_back(key, fromJson(value));
  } else {
    toml::table t;
    try {
      t = toml::parse(text, source);
    } catch (const toml::parse_error& e) {
      return core::makeError(fmt::format("{}: not valid TOML: {} (line {}, column {})", source, e.description(),
                                         e.source().begin.line, e.source().begin.column));
    }
    for (const auto& [key, value] : t) entries.emplace_back(std::string(key.str()), fromToml(value));
  }
  // Keys in name order in both formats, so the first error reported is the same.
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return entries;
}

}  // namespace

GateConfigFormat gateConfigFormat(const std::string& path, const std::string& text) {
  auto endsWith = [&](const char* ext) {
    const std::string e(ext);
    return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  if (endsWith(".toml")) return GateConfigFormat::kToml;
  if (endsWith(".json")) return GateConfigFormat::kJson;
  const auto first = std::find_if(text.begin(), text.end(), [](char c) { return !std::isspace(static_cast<unsigned char>(c)); });
  return first != text.end() && *first == '{' ? GateConfigFormat::kJson : GateConfigFormat::kToml;
}

core::Expected<double> parsePercent(const std::string& text, const std::string& what) {
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  try {
    size_t used = 0;
    const double v = std::stod(t, &used);
    if (used != t.size() || v < 0) throw std::invalid_argument(t);
    return v / 100.0;
  } catch (const std::exception&) {
    return core::makeError(fmt::format("{} '{}' is not a percentage (e.g. 5%)", what, text));
  }
}

core::Status applyGateConfigText(const std::string& text, GateConfigFormat format, const std::string& source,
                                 analysis::GateOptions& g) {
  auto entries = parseEntries(text, format, source);
  if (!entries) return core::makeError(entries.error());
  using Kind = ConfigValue::Kind;
  for (const auto& [key, value] : *entries) {
    const auto wrongType = [&, k = key] { return core::makeError(source + ": '" + k + "' has the wrong type"); };
    if (key == "time_threshold" || key == "counter_threshold" || key == "min_share") {
      if (value.kind != Kind::kString && value.kind != Kind::kNumber) return wrongType();
      auto v = parsePercent(value.kind == Kind::kString ? value.text : fmt::format("{}", value.number), key);
      if (!v) return core::makeError(source + ": " + v.error());
      (key == "time_threshold" ? g.time_threshold : key == "counter_threshold" ? g.counter_threshold : g.min_share) = *v;
    } else if (key == "alpha") {
      if (value.kind != Kind::kNumber) return wrongType();
      if (value.number <= 0 || value.number >= 1) return core::makeError(source + ": alpha must be between 0 and 1");
      g.alpha = value.number;
    } else if (key == "fail_on_new" || key == "fail_on_vanished") {
      if (value.kind != Kind::kBool) return wrongType();
      (key == "fail_on_new" ? g.fail_on_new : g.fail_on_vanished) = value.flag;
    } else if (key == "ignore") {
      if (value.kind != Kind::kStringList) return wrongType();
      g.ignore = value.list;
    } else {
      return core::makeError(source + ": unknown key '" + key +
                             "' (known: time_threshold, counter_threshold, alpha, min_share, fail_on_new, "
                             "fail_on_vanished, ignore)");
    }
  }
  return {};
}

core::Status applyGateConfigFile(const std::string& path, analysis::GateOptions& g) {
  // A directory, an unreadable or an empty file is an error: a configuration given is meant to apply.
  auto text = core::readInputFile(path, "the gate configuration");
  if (!text) return core::Error{text.error()};
  return applyGateConfigText(*text, gateConfigFormat(path, *text), path, g);
}

core::Expected<analysis::GateOptions> gateOptionsOf(const GateCommandOptions& given) {
  analysis::GateOptions g;
  if (!given.config.empty()) {
    if (core::Status s = applyGateConfigFile(given.config, g); !s) return core::Error{s.error()};
  }
  if (!given.time_threshold.empty()) {
    auto v = parsePercent(given.time_threshold, "--time-threshold");
    if (!v) return core::Error{v.error()};
    g.time_threshold = *v;
  }
  if (!given.counter_threshold.empty()) {
    auto v = parsePercent(given.counter_threshold, "--counter-threshold");
    if (!v) return core::Error{v.error()};
    g.counter_threshold = *v;
  }
  if (given.alpha > 0) g.alpha = given.alpha;
  return g;
}

}  // namespace fprof::cli
