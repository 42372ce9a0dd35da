// fprof-view: opens a window (GLFW + OpenGL 3) on a .fprof database and runs the ImGui viewer.
// --screenshot/--frames render a fixed number of frames and exit, for tests and benchmarks.
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <stb_image_write.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "fprof/core/output.h"
#include "fprof/core/text.h"
#include "fprof/gui/viewer.h"

namespace {

std::string g_glfw_error;

void glfwError(int code, const char* description) {
  g_glfw_error = fmt::format("GLFW error {}: {}", code, description ? description : "?");
}

// Reads back a region of the back buffer (display pixels, y down) and writes it as a PNG, by the
// output rules (core/output.h): encoded in memory, written beside the target, put in place whole.
fprof::core::Status writePng(const std::string& path, const fprof::core::OutputRules& rules,
                             fprof::gui::Rect region, float scale, int fb_w, int fb_h) {
  const int x0 = std::clamp(static_cast<int>(std::floor(region.x0 * scale)), 0, fb_w);
  const int x1 = std::clamp(static_cast<int>(std::ceil(region.x1 * scale)), 0, fb_w);
  const int y0 = std::clamp(static_cast<int>(std::floor(region.y0 * scale)), 0, fb_h);
  const int y1 = std::clamp(static_cast<int>(std::ceil(region.y1 * scale)), 0, fb_h);
  const int w = x1 - x0, h = y1 - y0;
  if (w <= 0 || h <= 0) return fprof::core::makeError(path + ": nothing to capture (empty region)");
  std::vector<unsigned char> pixels(static_cast<size_t>(w) * static_cast<size_t>(h) * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  // GL's origin is the bottom-left corner.
  glReadPixels(x0, fb_h - y1, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  if (const GLenum err = glGetError(); err != GL_NO_ERROR) {
    return fprof::core::makeError(fmt::format("{}: glReadPixels failed (GL error 0x{:x})", path, err));
  }
  std::vector<unsigned char> flipped(pixels.size());
  const size_t row = static_cast<size_t>(w) * 4;
  for (int y = 0; y < h; ++y) {
    std::copy_n(pixels.data() + static_cast<size_t>(h - 1 - y) * row, row, flipped.data() + static_cast<size_t>(y) * row);
  }
  std::string png;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  if (!stbi_write_png_to_func(append, &png, w, h, 4, flipped.data(), static_cast<int>(row))) {
    return fprof::core::makeError(path + ": cannot encode the PNG image");
  }
  auto out = fprof::core::OutputFile::create(path, rules);
  if (!out) return fprof::core::Error{out.error()};
  if (fprof::core::Status s = (*out)->write(png); !s) return s;
  return (*out)->commit();
}

fprof::core::Status writeGeometry(const std::string& path, const fprof::core::OutputRules& rules,
                                  const fprof::gui::Viewer& v) {
  const fprof::gui::Rect& r = v.plotRect();
  std::string text = fmt::format("plot {:.1f} {:.1f} {:.1f} {:.1f}\n", r.x0, r.y0, r.x1, r.y1);
  text += fmt::format("points_plotted {}\npoints_drawn {}\narrows {}\napplied_fusions {}\n", v.pointsPlotted(),
                      v.pointsDrawn(), v.arrowsDrawn(), v.appliedFusionsDrawn());
  for (const fprof::gui::DrawnRoof& roof : v.drawnRoofs()) {
    // IM_COL32 packs ABGR: red in the low byte.
    text += fmt::format("roof {} {} {} {} {} {:.1f} {:.1f} {:.1f} {:.1f}\n", roof.label,
                        roof.datasheet ? "datasheet" : "measured", roof.colour & 0xFF, roof.colour >> 8 & 0xFF,
                        roof.colour >> 16 & 0xFF, roof.screen.a.x, roof.screen.a.y, roof.screen.b.x, roof.screen.b.y);
  }
  auto out = fprof::core::OutputFile::create(path, rules);
  if (!out) return fprof::core::Error{out.error()};
  if (fprof::core::Status s = (*out)->write(text); !s) return s;
  return (*out)->commit();
}

// --tab's names (checked by CLI11 against the same list).
fprof::gui::Tab tabNamed(const std::string& name) {
  static const std::map<std::string, fprof::gui::Tab> names = {{"kernels", fprof::gui::Tab::kKernels},
                                                               {"fusion", fprof::gui::Tab::kFusion},
                                                               {"diff", fprof::gui::Tab::kDiff},
                                                               {"ranks", fprof::gui::Tab::kRanks}};
  return names.at(name);
}

struct Options {
  std::string run;
  std::string baseline;
  std::string screenshot;
  std::string geometry;
  int frames = 0;
  std::string size = "1600x1000";
  bool frame_stats = false;
  bool animate = false;
  int fusion = 0;  // 1-based rank of a fusion pair to open with selected; 0 = none
  int rank = -1;   // global rank to open on (databases of several processes); -1 = all
  std::string tab;  // the tab under the plot to open on; "" = the first
  bool force = false;
};

// The rules every file the viewer writes follows: the databases shown are inputs.
fprof::core::OutputRules outputRules(const Options& opt, std::string what) {
  fprof::core::OutputRules rules;
  rules.replace = opt.force;
  rules.inputs = {opt.run};
  if (!opt.baseline.empty()) rules.inputs.push_back(opt.baseline);
  rules.what = std::move(what);
  return rules;
}

// Checked before a window opens: a name that cannot be written is said at once (exit 2).
fprof::core::Status checkOutputs(const Options& opt) {
  using fprof::core::Status;
  const Status distinct =
      fprof::core::checkDistinctOutputs({{"--screenshot", opt.screenshot}, {"--geometry", opt.geometry}});
  if (!distinct) return distinct;
  if (!opt.screenshot.empty()) {
    if (Status s = fprof::core::checkOutputPath(opt.screenshot, outputRules(opt, "the screenshot")); !s) return s;
  }
  if (!opt.geometry.empty()) return fprof::core::checkOutputPath(opt.geometry, outputRules(opt, "the geometry"));
  return {};
}

int runViewer(const Options& opt) {
  using fprof::gui::Document;
  const auto t_open = std::chrono::steady_clock::now();
  auto run = Document::open(opt.run);
  const double open_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_open).count();
  // Messages may quote a damaged file: cleaned to one line each (core/text.h).
  auto say = [](const std::string& message) {
    std::fprintf(stderr, "fprof-view: %s\n", fprof::core::cleanText(message).c_str());
  };
  auto warn = [&](const fprof::core::Expected<std::shared_ptr<Document>>& d) {
    if (d) {
      for (const std::string& w : (*d)->profile().warnings) say("warning: " + w);
    }
  };
  if (!run) say(run.error());
  warn(run);
  std::optional<fprof::core::Expected<std::shared_ptr<Document>>> base;
  if (!opt.baseline.empty()) {
    base = Document::open(opt.baseline);
    if (!*base) say("baseline: " + base->error());
    warn(*base);
  }
  const bool load_failed = !run || (base && !*base);

  int width = 1600, height = 1000;
  if (std::sscanf(opt.size.c_str(), "%dx%d", &width, &height) != 2 || width < 320 || height < 240) {
    std::fprintf(stderr, "fprof-view: --size wants WIDTHxHEIGHT of at least 320x240, got '%s'\n", opt.size.c_str());
    return 2;
  }

  glfwSetErrorCallback(glfwError);
  if (!glfwInit()) {
    std::fprintf(stderr, "fprof-view: cannot open a window (%s); is DISPLAY set?\n", g_glfw_error.c_str());
    return 2;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  const std::string title = "fprof view: " + opt.run;
  GLFWwindow* window = glfwCreateWindow(width, height, title.c_str(), nullptr, nullptr);
  if (!window) {
    std::fprintf(stderr, "fprof-view: cannot create an OpenGL 3 window (%s)\n", g_glfw_error.c_str());
    glfwTerminate();
    return 2;
  }
  glfwMakeContextCurrent(window);
  // Benchmarks and screenshots run unthrottled; an interactive window follows the display.
  glfwSwapInterval(opt.frames > 0 ? 0 : 1);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;  // no imgui.ini litter in the user's directory
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 130");

  fprof::gui::Viewer viewer(std::move(run), std::move(base));
  viewer.setOutputRules(outputRules(opt, "the export"));
  if (opt.rank >= 0 && viewer.document()) {
    if (const fprof::core::Status st = viewer.setRank(opt.rank); !st) {
      std::fprintf(stderr, "fprof-view: --rank %d: %s\n", opt.rank, st.error().c_str());
      glfwDestroyWindow(window);
      glfwTerminate();
      return 2;
    }
  }
  if (!opt.tab.empty()) viewer.openTab(tabNamed(opt.tab));
  if (opt.fusion > 0) {
    const size_t pairs = viewer.document() ? viewer.document()->fusionViews().size() : 0;
    if (static_cast<size_t>(opt.fusion) > pairs) {
      std::fprintf(stderr, "fprof-view: --fusion %d: the run has %zu fusion candidate(s)\n", opt.fusion, pairs);
    } else {
      viewer.selectFusion(static_cast<size_t>(opt.fusion - 1));
    }
  }
  std::vector<double> frame_ms;
  std::vector<double> build_ms;  // input + the viewer's ImGui calls + ImGui::Render: our CPU side
  int exit_code = load_failed ? 2 : 0;
  int vertices = 0;
  for (int frame = 1; !glfwWindowShouldClose(window); ++frame) {
    const auto t0 = std::chrono::steady_clock::now();
    if (opt.frames > 0) {
      glfwPollEvents();
    } else {
      // Interactive: sleep until input (or a tenth of a second, for ImGui's timed effects) instead
      // of redrawing an unchanged window at the display rate.
      glfwWaitEventsTimeout(0.1);
    }
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    if (opt.animate) {
      // A slow circular pan: every frame re-maps and re-culls all points, as a drag does.
      fprof::gui::View v = viewer.view();
      const double a = frame * 0.05, step = 0.01 * (v.x_hi - v.x_lo);
      v.x_lo += step * std::cos(a);
      v.x_hi += step * std::cos(a);
      v.y_lo += step * std::sin(a);
      v.y_hi += step * std::sin(a);
      viewer.setView(v);
    }
    viewer.frame();
    ImGui::Render();
    build_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    int fb_w = 0, fb_h = 0;
    glfwGetFramebufferSize(window, &fb_w, &fb_h);
    glViewport(0, 0, fb_w, fb_h);
    glClearColor(0.08f, 0.08f, 0.10f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    vertices = ImGui::GetDrawData()->TotalVtxCount;
    const float scale = ImGui::GetIO().DisplayFramebufferScale.x;
    if (auto req = viewer.takePngRequest()) {
      const fprof::core::Status st = writePng(req->path, outputRules(opt, "the plot"), req->region, scale, fb_w, fb_h);
      viewer.setStatus(st ? "wrote " + req->path : st.error());
    }
    const bool last = opt.frames > 0 && frame >= opt.frames;
    if (last && !opt.screenshot.empty()) {
      const ImVec2 d = ImGui::GetIO().DisplaySize;
      const fprof::core::Status st =
          writePng(opt.screenshot, outputRules(opt, "the screenshot"), {0, 0, d.x, d.y}, scale, fb_w, fb_h);
      if (!st) {
        std::fprintf(stderr, "fprof-view: %s\n", fprof::core::cleanText(st.error()).c_str());
        exit_code = 2;
      }
    }
    glfwSwapBuffers(window);
    if (opt.frame_stats) glFinish();  // count the rendering, not just its submission
    frame_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (last) break;
  }
  if (!opt.geometry.empty()) {
    if (const fprof::core::Status st = writeGeometry(opt.geometry, outputRules(opt, "the geometry"), viewer); !st) {
      std::fprintf(stderr, "fprof-view: %s\n", fprof::core::cleanText(st.error()).c_str());
      exit_code = 2;
    }
  }
  if (opt.frame_stats && frame_ms.size() > 5) {
    // The first frames build the font atlas and lay out tables: leave them out.
    struct Stats {
      double mean, p50, p95, max;
    };
    auto stats = [](std::vector<double> v) {
      v.erase(v.begin(), v.begin() + 5);
      std::sort(v.begin(), v.end());
      auto pct = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))]; };
      return Stats{std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()), pct(0.5), pct(0.95), v.back()};
    };
    const Stats f = stats(frame_ms), b = stats(build_ms);
    std::printf("frames %zu (after 5 warm-up): frame mean %.2f ms, p50 %.2f, p95 %.2f, max %.2f; UI build (CPU, before GL) "
                "mean %.2f ms, p95 %.2f; open and analyse %.0f ms, first frame %.1f ms; points plotted %zu, drawn %zu; %d vertices; renderer %s\n",
                frame_ms.size() - 5, f.mean, f.p50, f.p95, f.max, b.mean, b.p95, open_ms, frame_ms.front(), viewer.pointsPlotted(),
                viewer.pointsDrawn(), vertices, reinterpret_cast<const char*>(glGetString(GL_RENDERER)));
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"fprof-view: desktop roofline viewer for .fprof databases (also run as 'fprof view')."};
  app.name("fprof-view");
  app.add_option("run", opt.run, "The .fprof database to show")->required();
  app.add_option("baseline", opt.baseline, "A baseline .fprof: diff mode (arrows from baseline to current)");
  app.add_option("--screenshot", opt.screenshot, "Write the window as a PNG after --frames frames, then exit");
  app.add_option("--frames", opt.frames, "Render this many frames, then exit (default with --screenshot: 5)")
      ->check(CLI::PositiveNumber);
  app.add_option("--size", opt.size, "Window size WIDTHxHEIGHT (default 1600x1000)");
  app.add_option("--geometry", opt.geometry, "After the last frame, write the plot area and roof lines in pixels (tests)");
  app.add_flag("--frame-stats", opt.frame_stats, "Print frame-time statistics on exit (benchmarks)");
  app.add_option("--fusion", opt.fusion, "Open with the fusion candidate of this rank selected (1 = best payoff)")
      ->check(CLI::PositiveNumber);
  app.add_option("--rank", opt.rank, "Open on this global rank of a database of several processes (fprof merge)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--tab", opt.tab, "Open on this tab under the plot: kernels, fusion, diff (applied fusions, kernel "
                                   "changes), ranks")
      ->check(CLI::IsMember({"kernels", "fusion", "diff", "ranks"}));
  app.add_flag("--animate", opt.animate, "Pan the view a little every frame (benchmarks the cost of interaction)");
  app.add_flag("--force", opt.force,
               "Replace the files --screenshot, --geometry and the window's exports name, if they exist (never an "
               "input)");
  app.footer("Output files: an existing file is replaced only with --force, an input never; each is written to a "
             "temporary file beside it and put in place only once complete (docs/outputs.md).");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!opt.screenshot.empty() && opt.frames == 0) opt.frames = 5;
  if (const fprof::core::Status s = checkOutputs(opt); !s) {
    std::fprintf(stderr, "fprof-view: %s\n", fprof::core::cleanText(s.error()).c_str());
    return 2;
  }
  fprof::core::removeTemporaryOutputsOnSignals();
  try {
    const int code = runViewer(opt);
    if (const fprof::core::Status s = fprof::core::finishStandardOutput(); !s) {
      std::fprintf(stderr, "fprof-view: %s\n", s.error().c_str());
      return 2;
    }
    return code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fprof-view: internal error: %s\n", e.what());
    return 3;
  }
}
