// fprof view: opens the desktop roofline viewer (fprof-view, installed beside fprof) on a database.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "paths.h"

namespace fprof::cli {
namespace {

struct ViewOptions {
  std::string run;
  std::string baseline;
  std::string screenshot;
  int frames = 0;
  std::string size;
  std::string geometry;
  bool frame_stats = false;
  int fusion = 0;
  int rank = -1;
  bool force = false;
};

// The viewer writes its files itself; they are checked here too, so that a name it could not
// write is said before a window opens.
int checkViewOutputs(const ViewOptions& opt) {
  std::vector<std::string> inputs = {opt.run};
  if (!opt.baseline.empty()) inputs.push_back(opt.baseline);
  const core::Status distinct =
      core::checkDistinctOutputs({{"--screenshot", opt.screenshot}, {"--geometry", opt.geometry}});
  if (!distinct) return inputError(distinct.error());
  for (const auto& [path, what] :
       {std::pair{&opt.screenshot, "the screenshot"}, std::pair{&opt.geometry, "the geometry"}}) {
    if (path->empty()) continue;
    const core::Status s = core::checkOutputPath(*path, outputRules(opt.force, inputs, what));
    if (!s) return inputError(s.error());
  }
  return 0;
}

int runView(const ViewOptions& opt) {
  if (int code = checkViewOutputs(opt); code != 0) return code;
  const std::string viewer = findSibling("fprof-view");
  if (viewer.empty()) {
    return inputError("the viewer is not built: no fprof-view beside " + selfDirectory() +
                      "/fprof. Install libimgui-dev, libglfw3-dev and libstb-dev, then configure with "
                      "-DFPROF_ENABLE_GUI=ON and rebuild. 'fprof info' and 'fprof report' work without it.");
  }
  std::vector<std::string> args = {viewer, opt.run};
  if (!opt.baseline.empty()) args.push_back(opt.baseline);
  if (!opt.screenshot.empty()) args.insert(args.end(), {"--screenshot", opt.screenshot});
  if (opt.frames > 0) args.insert(args.end(), {"--frames", std::to_string(opt.frames)});
  if (!opt.size.empty()) args.insert(args.end(), {"--size", opt.size});
  if (!opt.geometry.empty()) args.insert(args.end(), {"--geometry", opt.geometry});
  if (opt.frame_stats) args.emplace_back("--frame-stats");
  if (opt.force) args.emplace_back("--force");
  if (opt.fusion > 0) args.insert(args.end(), {"--fusion", std::to_string(opt.fusion)});
  if (opt.rank >= 0) args.insert(args.end(), {"--rank", std::to_string(opt.rank)});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execv(viewer.c_str(), argv.data());
  return inputError("cannot start " + viewer + ": " + core::systemCause(errno));
}

}  // namespace

Command addViewCommand(CLI::App& root) {
  auto opt = std::make_shared<ViewOptions>();
  CLI::App* app = root.add_subcommand(
      "view", "Open the desktop roofline viewer (fprof-view) on a .fprof database; with a baseline, show the diff.");
  app->add_option("run", opt->run, "The .fprof database to show")->required();
  app->add_option("baseline", opt->baseline, "A baseline .fprof: arrows from baseline to current, regressions in red");
  app->add_option("--screenshot", opt->screenshot, "Write the window as a PNG after --frames frames, then exit");
  app->add_option("--frames", opt->frames, "Render this many frames, then exit")->check(CLI::PositiveNumber);
  app->add_option("--size", opt->size, "Window size WIDTHxHEIGHT (default 1600x1000)");
  app->add_option("--geometry", opt->geometry, "After the last frame, write the plot area and roof lines in pixels");
  app->add_flag("--force", opt->force,
                "Replace the files --screenshot and --geometry name, and those the window's PNG and CSV exports "
                "name, if they exist (never an input)");
  app->add_flag("--frame-stats", opt->frame_stats, "Print frame-time statistics on exit");
  app->add_option("--fusion", opt->fusion, "Open with the fusion candidate of this rank selected (1 = best payoff)")
      ->check(CLI::PositiveNumber);
  app->add_option("--rank", opt->rank,
                  "Open on this global rank of a database of several processes (fprof merge); the window's rank "
                  "filter switches between ranks")
      ->check(CLI::NonNegativeNumber);
  app->footer(kOutputRulesFooter);
  return {app, [opt] { return runView(*opt); }};
}

}  // namespace fprof::cli
