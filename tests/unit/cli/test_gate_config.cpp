// The gate's configuration file in JSON and in TOML: the same keys give the same options, and
// every mistake gives the same message in both formats (docs/gate.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gate_config.h"

namespace fprof::cli {
namespace {

using analysis::GateOptions;

core::Status apply(const std::string& text, GateConfigFormat format, GateOptions& g) {
  return applyGateConfigText(text, format, "gate.cfg", g);
}

std::string errorOf(const std::string& text, GateConfigFormat format) {
  GateOptions g;
  const core::Status s = apply(text, format, g);
  EXPECT_FALSE(s) << text;
  return s ? std::string() : s.error();
}

TEST(GateConfig, JsonAndTomlGiveTheSameOptions) {
  const std::string json = R"({
    "time_threshold": "2%",
    "counter_threshold": 0.5,
    "alpha": 0.001,
    "min_share": 1,
    "ignore": ["relu_kernel", "warmup_"],
    "fail_on_new": true,
    "fail_on_vanished": true
  })";
  const std::string toml = R"(
time_threshold = "2%"
counter_threshold = 0.5
alpha = 0.001
min_share = 1
ignore = ["relu_kernel", "warmup_"]
fail_on_new = true
fail_on_vanished = true
)";
  GateOptions a, b;
  ASSERT_TRUE(apply(json, GateConfigFormat::kJson, a));
  ASSERT_TRUE(apply(toml, GateConfigFormat::kToml, b));
  for (const GateOptions* g : {&a, &b}) {
    EXPECT_DOUBLE_EQ(g->time_threshold, 0.02);
    EXPECT_DOUBLE_EQ(g->counter_threshold, 0.005);
    EXPECT_DOUBLE_EQ(g->alpha, 0.001);
    EXPECT_DOUBLE_EQ(g->min_share, 0.01);
    EXPECT_EQ(g->ignore, (std::vector<std::string>{"relu_kernel", "warmup_"}));
    EXPECT_TRUE(g->fail_on_new);
    EXPECT_TRUE(g->fail_on_vanished);
  }
}

TEST(GateConfig, KeysLeftOutKeepTheirDefaults) {
  GateOptions g;
  ASSERT_TRUE(apply("alpha = 0.05\n", GateConfigFormat::kToml, g));
  EXPECT_DOUBLE_EQ(g.alpha, 0.05);
  EXPECT_DOUBLE_EQ(g.time_threshold, GateOptions{}.time_threshold);
  GateOptions empty;
  ASSERT_TRUE(apply("", GateConfigFormat::kToml, empty));
  ASSERT_TRUE(apply("{}", GateConfigFormat::kJson, empty));
  ASSERT_TRUE(apply("ignore = []", GateConfigFormat::kToml, empty));
  EXPECT_TRUE(empty.ignore.empty());
}

// Each mistake, written in both formats, and the one message both must give.
struct Mistake {
  const char* json;
  const char* toml;
  const char* message;
};

TEST(GateConfig, EveryMistakeGivesTheSameMessageInBothFormats) {
  const Mistake mistakes[] = {
      {R"({"time_treshold": "5%"})", R"(time_treshold = "5%")",
       "gate.cfg: unknown key 'time_treshold' (known: time_threshold, counter_threshold, alpha, min_share, "
       "fail_on_new, fail_on_vanished, ignore)"},
      {R"({"time_threshold": "fast"})", R"(time_threshold = "fast")",
       "gate.cfg: time_threshold 'fast' is not a percentage (e.g. 5%)"},
      {R"({"counter_threshold": -1})", R"(counter_threshold = -1)",
       "gate.cfg: counter_threshold '-1' is not a percentage (e.g. 5%)"},
      {R"({"min_share": true})", R"(min_share = true)", "gate.cfg: 'min_share' has the wrong type"},
      {R"({"alpha": 1.5})", R"(alpha = 1.5)", "gate.cfg: alpha must be between 0 and 1"},
      {R"({"alpha": 0})", R"(alpha = 0)", "gate.cfg: alpha must be between 0 and 1"},
      {R"({"alpha": "0.01"})", R"(alpha = "0.01")", "gate.cfg: 'alpha' has the wrong type"},
      {R"({"fail_on_new": 1})", R"(fail_on_new = 1)", "gate.cfg: 'fail_on_new' has the wrong type"},
      {R"({"fail_on_vanished": "yes"})", R"(fail_on_vanished = "yes")",
       "gate.cfg: 'fail_on_vanished' has the wrong type"},
      {R"({"ignore": "relu"})", R"(ignore = "relu")", "gate.cfg: 'ignore' has the wrong type"},
      {R"({"ignore": ["relu", 3]})", R"(ignore = ["relu", 3])", "gate.cfg: 'ignore' has the wrong type"},
      {R"({"ignore": {"name": "relu"}})", "[ignore]\nname = \"relu\"", "gate.cfg: 'ignore' has the wrong type"},
      // Several mistakes: the first key in name order is reported, whatever the file's order.
      {R"({"zeta": 1, "alpha": 2})", "zeta = 1\nalpha = 2", "gate.cfg: alpha must be between 0 and 1"},
  };
  for (const Mistake& m : mistakes) {
    EXPECT_EQ(errorOf(m.json, GateConfigFormat::kJson), m.message) << m.json;
    EXPECT_EQ(errorOf(m.toml, GateConfigFormat::kToml), m.message) << m.toml;
  }
}

TEST(GateConfig, SyntaxErrorsNameTheFormat) {
  const std::string json = errorOf(R"({"alpha": 0.01,})", GateConfigFormat::kJson);
  EXPECT_EQ(json.rfind("gate.cfg: not valid JSON: ", 0), 0u) << json;
  const std::string toml = errorOf("alpha = 0.01\ntime_threshold = \n", GateConfigFormat::kToml);
  EXPECT_EQ(toml.rfind("gate.cfg: not valid TOML: ", 0), 0u) << toml;
  EXPECT_NE(toml.find("(line 2, column "), std::string::npos) << toml;
  EXPECT_EQ(errorOf("[1, 2]", GateConfigFormat::kJson), "gate.cfg: the gate configuration must be a JSON object");
}

TEST(GateConfig, FormatFromTheExtensionElseTheFirstCharacter) {
  EXPECT_EQ(gateConfigFormat("ci/gate.toml", "{"), GateConfigFormat::kToml);
  EXPECT_EQ(gateConfigFormat("ci/gate.json", "alpha = 1"), GateConfigFormat::kJson);
  EXPECT_EQ(gateConfigFormat("gate.conf", "  \n{\"alpha\": 0.01}"), GateConfigFormat::kJson);
  EXPECT_EQ(gateConfigFormat("gate.conf", "# thresholds\nalpha = 0.01"), GateConfigFormat::kToml);
}

TEST(GateConfig, ReadsFiles) {
  const std::filesystem::path dir = std::filesystem::path(FPROF_TEST_TMP) / "gate_config";
  std::filesystem::create_directories(dir);
  const std::string toml = (dir / "gate.toml").string();
  std::ofstream(toml) << "time_threshold = \"3%\"\nignore = [\"nccl\"]\n";
  GateOptions g;
  ASSERT_TRUE(applyGateConfigFile(toml, g));
  EXPECT_DOUBLE_EQ(g.time_threshold, 0.03);
  EXPECT_EQ(g.ignore, std::vector<std::string>{"nccl"});
  const std::string missing = (dir / "missing.toml").string();
  const core::Status s = applyGateConfigFile(missing, g);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error(), missing + ": no such file");
  // A directory or an empty file is an error too, not a configuration of nothing.
  const core::Status d = applyGateConfigFile(dir.string(), g);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error(), dir.string() + ": is a directory; the gate configuration is a file");
  const std::string empty = (dir / "empty.toml").string();
  std::ofstream(empty) << "\n";
  const core::Status e = applyGateConfigFile(empty, g);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error(), empty + ": the gate configuration is empty");
}

TEST(GateConfig, Percentages) {
  EXPECT_DOUBLE_EQ(*parsePercent("5%", "x"), 0.05);
  EXPECT_DOUBLE_EQ(*parsePercent("0.5", "x"), 0.005);
  EXPECT_FALSE(parsePercent("5%%", "x"));
  EXPECT_FALSE(parsePercent("", "x"));
}

}  // namespace
}  // namespace fprof::cli
