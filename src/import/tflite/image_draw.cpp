// Drawing primitives for overlays: anti-aliased thick lines and discs on RGB images.
#include <algorithm>
#include <cmath>

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

}  // namespace tessera::tflite
