// The environment table and its parser (core/environment.h), and docs/environment.md made from it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "fprof/core/environment.h"

namespace fprof::core::env {
namespace {

namespace fs = std::filesystem;

Lookup envOf(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

std::string fileText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Environment, UnsetAndEmptyTakeTheDeclaredDefault) {
  Parser p(envOf({{"FPROF_FLUSH_MS", ""}}));
  EXPECT_EQ(p.integer(Var::kFlushMs), std::optional<int64_t>(500));
  EXPECT_FALSE(p.flag(Var::kForce));
  EXPECT_TRUE(p.flag(Var::kCuptiFlushAll));
  EXPECT_EQ(p.choice(Var::kReplay), "auto");
  EXPECT_EQ(p.choice(Var::kCacheControl), "");
  EXPECT_EQ(p.text(Var::kMetrics), "roofline");
  EXPECT_EQ(p.text(Var::kOutput), "");
  EXPECT_FALSE(p.integer(Var::kLaunchCount).has_value());
  EXPECT_EQ(p.list(Var::kActivity), (std::vector<std::string>{"kernel", "memcpy", "memset", "memory"}));
  EXPECT_TRUE(p.list(Var::kOps).empty());
  EXPECT_FALSE(p.isSet(Var::kFlushMs));
  EXPECT_TRUE(p.problems().empty());
}

TEST(Environment, ValuesOfEachKind) {
  Parser p(envOf({{"FPROF_FLUSH_MS", "250"},
                  {"FPROF_FORCE", "1"},
                  {"FPROF_REPLAY", "sass_patching"},
                  {"FPROF_ACTIVITY", "kernel,,memset"},
                  {"FPROF_OPS", "a,b"},
                  {"FPROF_OUTPUT", "/x/run.fprof"}}));
  EXPECT_EQ(p.integer(Var::kFlushMs), std::optional<int64_t>(250));
  EXPECT_TRUE(p.flag(Var::kForce));
  EXPECT_EQ(p.choice(Var::kReplay), "sass_patching");
  EXPECT_EQ(p.list(Var::kActivity), (std::vector<std::string>{"kernel", "memset"}));
  EXPECT_EQ(p.list(Var::kOps), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.text(Var::kOutput), "/x/run.fprof");
  EXPECT_TRUE(p.isSet(Var::kOutput));
  EXPECT_TRUE(p.problems().empty());
}

TEST(Environment, BadValuesAreNamedAndTheDefaultKept) {
  Parser p(envOf({{"FPROF_FLUSH_MS", "5"},
                  {"FPROF_SELF_TIMING", "yes"},
                  {"FPROF_REPLAY", "user"},
                  {"FPROF_ACTIVITY", "kernel,graphs"},
                  {"FPROF_LAUNCH_SKIP", "-3"}}));
  EXPECT_EQ(p.integer(Var::kFlushMs), std::optional<int64_t>(500));
  EXPECT_FALSE(p.flag(Var::kSelfTiming));
  EXPECT_EQ(p.choice(Var::kReplay), "auto");
  EXPECT_EQ(p.list(Var::kActivity).size(), 4u);
  EXPECT_EQ(p.integer(Var::kLaunchSkip), std::optional<int64_t>(0));
  ASSERT_EQ(p.problems().size(), 5u);
  EXPECT_EQ(p.problems()[0], "FPROF_FLUSH_MS='5' is not an integer in 10..3600000; using the default (500)");
  EXPECT_EQ(p.problems()[1], "FPROF_SELF_TIMING='yes' is not 0 or 1; using the default (0)");
  EXPECT_EQ(p.problems()[2],
            "FPROF_REPLAY='user' is not kernel, application, auto or sass_patching; using the default (auto)");
  EXPECT_EQ(p.problems()[3],
            "FPROF_ACTIVITY='kernel,graphs' is not a list of kernel, memcpy, memset, memory or none; using the "
            "default (kernel,memcpy,memset,memory)");
  EXPECT_EQ(p.problems()[4], "FPROF_LAUNCH_SKIP='-3' is not an integer >= 0; using the default (0)");
}

TEST(Environment, RefusedValuesNameNoDefault) {
  Parser p(envOf({{"FPROF_LAUNCH_COUNT", "0"}, {"FPROF_NVTX_SCOPE", "warp"}}), OnBadValue::kRefuse);
  EXPECT_FALSE(p.integer(Var::kLaunchCount).has_value());
  EXPECT_EQ(p.choice(Var::kNvtxScope), "process");
  ASSERT_EQ(p.problems().size(), 2u);
  EXPECT_EQ(p.problems()[0], "FPROF_LAUNCH_COUNT='0' is not an integer >= 1");
  EXPECT_EQ(p.problems()[1], "FPROF_NVTX_SCOPE='warp' is not process or thread");
}

TEST(Environment, AReadOfTheWrongKindIsAProblem) {
  Parser p(envOf({{"FPROF_FLUSH_MS", "250"}}));
  EXPECT_FALSE(p.flag(Var::kFlushMs));
  ASSERT_EQ(p.problems().size(), 1u);
  EXPECT_NE(p.problems()[0].find("FPROF_FLUSH_MS otherwise than it is declared"), std::string::npos);
}

TEST(Environment, ProblemsOfOneReader) {
  const Lookup env = envOf({{"FPROF_NVDISASM_JOBS", "many"}, {"FPROF_FLUSH_MS", "x"}, {"FPROF_OUTPUT", "a"}});
  const std::vector<std::string> fprof = problemsOf(env, kFprof);
  ASSERT_EQ(fprof.size(), 1u);
  EXPECT_EQ(fprof[0].rfind("FPROF_NVDISASM_JOBS='many'", 0), 0u);
  const std::vector<std::string> collector = problemsOf(env, kCollector);
  ASSERT_EQ(collector.size(), 1u);
  EXPECT_EQ(collector[0].rfind("FPROF_FLUSH_MS='x'", 0), 0u);
}

TEST(Environment, AssignmentsUseTheDeclaredNames) {
  Assignments a;
  assign(a, Var::kOutput, "/x/run.fprof");
  assign(a, Var::kSassDuplicate, "1");
  EXPECT_EQ(a, (Assignments{{"FPROF_OUTPUT", "/x/run.fprof"}, {"FPROF_SASS_DUPLICATE", "1"}}));
}

// Each entry is whole: a unique FPROF_ name, a doc sentence, a default its own kind accepts, and
// for internal switches the reason they are kept.
TEST(Environment, EveryEntryIsComplete) {
  std::set<std::string> names;
  for (const Spec& s : variables()) {
    SCOPED_TRACE(s.name);
    EXPECT_EQ(std::string(s.name).rfind("FPROF_", 0), 0u);
    EXPECT_TRUE(names.insert(s.name).second) << "listed twice";
    EXPECT_EQ(find(s.name), &s);
    const std::string doc = s.doc;
    ASSERT_FALSE(doc.empty());
    EXPECT_EQ(doc.back(), '.');
    EXPECT_NE(s.readers, 0u);
    if (s.audience == Audience::kInternal) {
      EXPECT_NE(doc.find("Kept"), std::string::npos) << "say why it is kept";
    }
    EXPECT_TRUE(*s.default_value != '\0' || *s.unset_means != '\0') << "say what unset means";
    // The default read back through the parser, as the variable's own value, raises no problem.
    if (*s.default_value != '\0') {
      Parser p(envOf({{s.name, s.default_value}}));
      switch (s.kind) {
        case Kind::kFlag: (void)p.flag(s.var); break;
        case Kind::kInteger: (void)p.integer(s.var); break;
        case Kind::kChoice: (void)p.choice(s.var); break;
        case Kind::kList: (void)p.list(s.var); break;
        case Kind::kPath:
        case Kind::kText: break;
      }
      EXPECT_TRUE(p.problems().empty()) << p.problems().front();
    }
  }
  EXPECT_EQ(find("FPROF_NO_SUCH_VARIABLE"), nullptr);
}

TEST(Environment, DocsAreGeneratedFromTheTable) {
  const fs::path doc = fs::path(FPROF_SOURCE_DIR) / "docs" / "environment.md";
  EXPECT_EQ(fileText(doc), environmentMarkdown())
      << "docs/environment.md differs from the table in core/src/environment.cpp; regenerate it with "
         "build/bin/fprof-environment-doc > docs/environment.md";
  for (const Spec& s : variables()) EXPECT_NE(environmentMarkdown().find(std::string("`") + s.name + "`"), std::string::npos);
}

// Every FPROF_ name the product's sources mention (a read, a message, a comment) is a variable of
// the table, a macro or build definition, or a test harness variable (tests/README.md); and no
// source reads one past the parser.
TEST(Environment, TheProductMentionsOnlyDeclaredVariables) {
  const std::set<std::string> not_variables = {
      "FPROF_CUPTI_OK", "FPROF_CU_OK", "FPROF_PROFILER_CALL", "FPROF_VERSION_STRING", "FPROF_ENABLE_GUI",
      "FPROF_BUILD",    "FPROF_TEST_TMP", "FPROF_GOLDEN_UPDATE"};
  const std::regex name("FPROF_[A-Z0-9_]+");
  const std::regex direct_read("getenv\\(\\s*\"FPROF_");
  size_t files = 0;
  for (const char* dir : {"core", "collector/src", "collector/preload", "cli", "analysis", "reports", "gui"}) {
    for (const auto& e : fs::recursive_directory_iterator(fs::path(FPROF_SOURCE_DIR) / dir)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".h" && ext != ".cu") continue;
      ++files;
      const std::string text = fileText(e.path());
      EXPECT_FALSE(std::regex_search(text, direct_read)) << e.path() << " reads an FPROF_ variable past the parser";
      for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator(); ++it) {
        const std::string found = it->str();
        EXPECT_TRUE(find(found) != nullptr || not_variables.count(found) > 0)
            << e.path() << " mentions " << found << ", which is not in the environment table";
      }
    }
  }
  EXPECT_GT(files, 100u);
}

}  // namespace
}  // namespace fprof::core::env
