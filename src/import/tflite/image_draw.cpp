// Drawing primitives for overlays: anti-aliased thick lines and discs, filled rectangles and
// short labels in a 3x5 pixel font on RGB images.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "import/tflite/image.h"

namespace tessera::tflite {

void blend_pixel(Image& img, int x, int y, Rgb c, float alpha) {
  if (x < 0 || y < 0 || x >= img.width || y >= img.height || img.channels != 3) return;
  alpha = std::clamp(alpha, 0.0f, 1.0f);
  uint8_t* p = img.at(x, y);
  p[0] = static_cast<uint8_t>(std::lround(p[0] * (1 - alpha) + c.r * alpha));
  p[1] = static_cast<uint8_t>(std::lround(p[1] * (1 - alpha) + c.g * alpha));
  p[2] = static_cast<uint8_t>(std::lround(p[2] * (1 - alpha) + c.b * alpha));
}

void draw_line(Image& img, float x0, float y0, float x1, float y1, Rgb c, float thickness) {
  float half = thickness / 2;
  int xa = static_cast<int>(std::floor(std::min(x0, x1) - half - 1));
  int xb = static_cast<int>(std::ceil(std::max(x0, x1) + half + 1));
  int ya = static_cast<int>(std::floor(std::min(y0, y1) - half - 1));
  int yb = static_cast<int>(std::ceil(std::max(y0, y1) + half + 1));
  float dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
  for (int y = std::max(ya, 0); y <= std::min(yb, img.height - 1); ++y)
    for (int x = std::max(xa, 0); x <= std::min(xb, img.width - 1); ++x) {
      float t = len2 > 0 ? std::clamp(((x - x0) * dx + (y - y0) * dy) / len2, 0.0f, 1.0f) : 0.0f;
      float px = x0 + t * dx - x, py = y0 + t * dy - y;
      float d = std::sqrt(px * px + py * py);
      // One pixel of coverage falloff at the edge.
      blend_pixel(img, x, y, c, half + 0.5f - d);
    }
}

void draw_disc(Image& img, float cx, float cy, float radius, Rgb c) {
  for (int y = static_cast<int>(cy - radius - 1); y <= static_cast<int>(cy + radius + 1); ++y)
    for (int x = static_cast<int>(cx - radius - 1); x <= static_cast<int>(cx + radius + 1); ++x) {
      float d = std::hypot(x - cx, y - cy);
      blend_pixel(img, x, y, c, radius + 0.5f - d);
    }
}

void fill_rect(Image& img, int x0, int y0, int x1, int y1, Rgb c) {
  for (int y = std::max(y0, 0); y < std::min(y1, img.height); ++y)
    for (int x = std::max(x0, 0); x < std::min(x1, img.width); ++x) blend_pixel(img, x, y, c, 1.0f);
}

namespace {

// A 3x5 pixel font: 5 rows of 3 characters per glyph, '#' set. Letters are drawn in capitals.
struct Glyph {
  char ch;
  const char* rows;  // 15 characters, row by row
};
constexpr Glyph kFont[] = {
    {'A', ".#.#.#####.##.#"}, {'B', "##.#.###.#.###."}, {'C', ".###..#..#...##"}, {'D', "##.#.##.##.###."},
    {'E', "####..####..###"}, {'F', "####..####..#.."}, {'G', ".###..#.##.#.##"}, {'H', "#.##.#####.##.#"},
    {'I', "###.#..#..#.###"}, {'J', "..#..#..##.#.#."}, {'K', "#.##.###.#.##.#"}, {'L', "#..#..#..#..###"},
    {'M', "#.#####.##.##.#"}, {'N', "##.#.##.##.##.#"}, {'O', ".#.#.##.##.#.#."}, {'P', "##.#.###.#..#.."},
    {'Q', ".#.#.##.###..##"}, {'R', "##.#.###.#.##.#"}, {'S', ".###...#...###."}, {'T', "###.#..#..#..#."},
    {'U', "#.##.##.##.####"}, {'V', "#.##.##.##.#.#."}, {'W', "#.##.########.#"}, {'X', "#.##.#.#.#.##.#"},
    {'Y', "#.##.#.#..#..#."}, {'Z', "###..#.#.#..###"}, {'0', "####.##.##.####"}, {'1', ".#.##..#..#.###"},
    {'2', "###..#####..###"}, {'3', "###..####..####"}, {'4', "#.##.####..#..#"}, {'5', "####..###..####"},
    {'6', "####..####.####"}, {'7', "###..#..#..#..#"}, {'8', "####.#####.####"}, {'9', "####.####..####"},
    {'.', "............#.."}, {'_', "............###"}, {'-', "......###......"}, {':', "....#.....#...."},
    {'%', "#.#..#.#.#..#.#"}, {'(', ".#.#..#..#...#."}, {')', ".#...#..#..#.#."}, {'/', "..#..#.#..#.#.."},
};

const char* glyph_rows(char ch) {
  const char up = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  for (const Glyph& g : kFont)
    if (g.ch == up && std::strlen(g.rows) == 15) return g.rows;
  return nullptr;  // a space, or a character the font lacks: left blank
}

}  // namespace

int text_width(const std::string& text, int scale) { return static_cast<int>(text.size()) * 4 * scale; }

void draw_text(Image& img, int x, int y, const std::string& text, Rgb c, int scale) {
  for (size_t i = 0; i < text.size(); ++i) {
    const char* rows = glyph_rows(text[i]);
    if (!rows) continue;
    const int gx = x + static_cast<int>(i) * 4 * scale;
    for (int r = 0; r < 5; ++r)
      for (int col = 0; col < 3; ++col)
        if (rows[r * 3 + col] == '#')
          fill_rect(img, gx + col * scale, y + r * scale, gx + (col + 1) * scale, y + (r + 1) * scale, c);
  }
}

}  // namespace tessera::tflite
