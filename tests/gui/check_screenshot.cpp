// Checks a fprof-view screenshot against the geometry the viewer reported (--geometry): the image
// is not blank, and the named roof is drawn in its colour along its line (and not beside it).
//   gui_screenshot_check SHOT.png GEOMETRY.txt ROOF [measured|datasheet|any]  -> 0 if fine, 1 with the reason
//   gui_screenshot_check SHOT.png --error-text   -> also the error colour is present (bad-file run)
//   gui_screenshot_check SHOT.png --not-blank    -> only the blank check
//   gui_screenshot_check SHOT.png --colour R G B MIN_PIXELS -> also that colour is drawn
#include <stb_image.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace {

struct Image {
  int w = 0, h = 0;
  unsigned char* px = nullptr;
  const unsigned char* at(int x, int y) const { return px + (static_cast<size_t>(y) * w + x) * 4; }
};

bool near(const unsigned char* p, int r, int g, int b, int tol) {
  return std::abs(p[0] - r) <= tol && std::abs(p[1] - g) <= tol && std::abs(p[2] - b) <= tol;
}

// Share of samples along a->b that have a pixel of the colour within `reach` pixels.
double coverage(const Image& im, double ax, double ay, double bx, double by, int r, int g, int b, int reach) {
  int hits = 0, samples = 0;
  for (int i = 5; i <= 95; i += 2) {  // skip the ends: a line's caps and labels sit there
    const double t = i / 100.0;
    const int x = static_cast<int>(std::lround(ax + (bx - ax) * t));
    const int y = static_cast<int>(std::lround(ay + (by - ay) * t));
    ++samples;
    bool hit = false;
    for (int dy = -reach; dy <= reach && !hit; ++dy) {
      for (int dx = -reach; dx <= reach && !hit; ++dx) {
        const int xx = x + dx, yy = y + dy;
        if (xx >= 0 && yy >= 0 && xx < im.w && yy < im.h && near(im.at(xx, yy), r, g, b, 24)) hit = true;
      }
    }
    hits += hit;
  }
  return samples ? static_cast<double>(hits) / samples : 0;
}

int fail(const std::string& why) {
  std::fprintf(stderr, "gui_screenshot_check: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 7) {
    return fail("usage: gui_screenshot_check SHOT.png (GEOMETRY ROOF [SOURCE] | --error-text | --not-blank)");
  }
  Image im;
  int channels = 0;
  im.px = stbi_load(argv[1], &im.w, &im.h, &channels, 4);
  if (!im.px) return fail(std::string(argv[1]) + ": cannot read the PNG");

  // Not blank: a rendered UI has many distinct colours; a black or cleared frame has one or two.
  std::set<unsigned> colours;
  for (int y = 0; y < im.h; y += 2) {
    for (int x = 0; x < im.w; x += 2) {
      const unsigned char* p = im.at(x, y);
      colours.insert(unsigned{p[0]} << 16 | unsigned{p[1]} << 8 | p[2]);
    }
  }
  std::printf("%s: %dx%d, %zu distinct colours\n", argv[1], im.w, im.h, colours.size());
  auto count = [&](int r, int g, int b) {
    int n = 0;
    for (int y = 0; y < im.h; ++y) {
      for (int x = 0; x < im.w; ++x) n += near(im.at(x, y), r, g, b, 12);
    }
    return n;
  };
  if (std::string(argv[2]) == "--error-text") {
    // The error window is text on a plain background: few colours, but the error's red.
    const int red = count(255, 90, 90);
    std::printf("error-coloured pixels: %d\n", red);
    return red >= 50 ? 0 : fail("no error text (red) in the window");
  }
  if (colours.size() < 50) return fail("the screenshot is blank (fewer than 50 distinct colours)");
  if (std::string(argv[2]) == "--not-blank") return 0;
  if (std::string(argv[2]) == "--colour") {
    // --colour R G B: at least 30 pixels of that colour (a regression arrow, say).
    if (argc != 7) return fail("usage: gui_screenshot_check SHOT.png --colour R G B MIN_PIXELS");
    const int n = count(std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]));
    std::printf("pixels of (%s,%s,%s): %d\n", argv[3], argv[4], argv[5], n);
    return n >= std::atoi(argv[6]) ? 0 : fail("too few pixels of the expected colour");
  }

  std::ifstream geo(argv[2]);
  if (!geo) return fail(std::string(argv[2]) + ": cannot read the geometry");
  const std::string want = argc >= 4 ? argv[3] : "dram";
  const std::string want_source = argc == 5 ? argv[4] : "measured";
  std::string line;
  bool found = false;
  while (std::getline(geo, line)) {
    std::istringstream in(line);
    std::string kind, label, source;
    int r = 0, g = 0, b = 0;
    double ax = 0, ay = 0, bx = 0, by = 0;
    if (!(in >> kind) || kind != "roof") continue;
    if (!(in >> label >> source >> r >> g >> b >> ax >> ay >> bx >> by)) return fail("bad geometry line: " + line);
    if (label != want || (want_source != "any" && source != want_source)) continue;
    if (found) continue;  // the first one listed (measured roofs are drawn and listed first)
    found = true;
    // Datasheet roofs are dashed (7 px on, 5 off): fewer samples land on ink.
    const double need = source == "datasheet" ? 0.45 : 0.8;
    const double on = coverage(im, ax, ay, bx, by, r, g, b, 1);
    // The same line moved 25 px down must not be the roof colour: the check can tell where the roof is.
    const double off = coverage(im, ax, ay + 25, bx, by + 25, r, g, b, 1);
    std::printf("roof %s (%d,%d,%d) from (%.0f,%.0f) to (%.0f,%.0f): %.0f%% of samples on the line, %.0f%% 25 px below\n",
                label.c_str(), r, g, b, ax, ay, bx, by, on * 100, off * 100);
    if (std::hypot(bx - ax, by - ay) < 100) return fail("the roof is drawn shorter than 100 px");
    if (on < need) return fail("the roof colour is missing along the roof line");
    if (off > 0.3) return fail("the roof colour is also where no roof is");
  }
  stbi_image_free(im.px);
  if (!found) return fail("the geometry lists no " + want_source + " roof '" + want + "'");
  return 0;
}
