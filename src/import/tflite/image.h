// Images for the vision commands: decode (BMP, JPEG, PNG via stb), bilinear resize,
// conversion to a model's input tensor, PNG output and simple drawing for overlays.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/graph.h"

namespace tessera::tflite {

// An 8-bit image. pixels: [height, width, channels] row-major, channels 1 (gray) or 3 (RGB).
struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;

  uint8_t* at(int x, int y) { return &pixels[(static_cast<size_t>(y) * width + x) * channels]; }
  const uint8_t* at(int x, int y) const { return &pixels[(static_cast<size_t>(y) * width + x) * channels]; }
};

// Largest image decoded: 2^25 pixels (an 8K frame, 7680x4320, is 33.2 M), 96 MiB of RGB.
// The limit is checked from the file's header, before any pixel is decoded.
constexpr int64_t kMaxImagePixels = int64_t{1} << 25;
// Largest image file read (compressed images of kMaxImagePixels are far smaller).
constexpr int64_t kMaxImageFileBytes = int64_t{256} << 20;

// Decodes a BMP, JPEG or PNG file into RGB (3 channels). Errors name the file. Images
// with a zero side, or more than `max_pixels` pixels by their header, are refused.
Result<Image> read_image(const std::string& path, int64_t max_pixels = kMaxImagePixels);
// The same for the file's bytes; `what` names them in errors.
Result<Image> decode_image(const uint8_t* data, size_t size, const std::string& what,
                           int64_t max_pixels = kMaxImagePixels);
// Writes an 8-bit PNG (gray or RGB).
Status write_png(const std::string& path, const Image& img);

// Bilinear resize with half-pixel centres (sample at (x + 0.5) * in / out - 0.5, edges
// clamped), rounding to nearest; the same channel count.
Image resize_bilinear(const Image& img, int width, int height);
// ITU-R BT.601 luma: 0.299 R + 0.587 G + 0.114 B.
Image to_gray(const Image& img);

// The model input tensor's image geometry: NHWC [1,H,W,C] or NCHW [1,C,H,W], C = 1 or 3.
struct InputLayout {
  int height = 0, width = 0, channels = 0;
  bool nchw = false;
};
Result<InputLayout> input_layout(const Tensor& input);

// How an image becomes the input: `model_default` as below; `yolo`, Ultralytics' convention
// for YOLO detectors: letterboxed (below) and pixel / 255 in [0, 1], quantized with the input's
// own parameters for u8 / i8.
enum class PixelRange { model_default, yolo };

// Ultralytics' letterbox onto a width x height input: the image scaled by
// ratio = min(width / w, height / h) to round(w ratio) x round(h ratio) (bilinear), centred
// on a canvas of grey 114 whose padding splits as round(d / 2 - 0.1) before and the rest after.
struct LetterboxGeometry {
  float ratio = 1;
  int scaled_width = 0, scaled_height = 0, left = 0, top = 0;
};
LetterboxGeometry letterbox_geometry(int image_width, int image_height, int width, int height);
Image letterbox(const Image& img, int width, int height);

// Resizes `img` to the input's size and converts it to the input's dtype and layout:
// u8 -> the pixel values (quantized models take 0..255), i8 -> pixel - 128, f32 ->
// (pixel - 127.5) / 127.5; or with PixelRange::yolo as said there. Returns the raw tensor bytes.
Result<std::vector<uint8_t>> image_to_input(const Image& img, const Tensor& input,
                                            PixelRange range = PixelRange::model_default);

// Drawing on RGB images (used for overlays).
struct Rgb {
  uint8_t r, g, b;
};
void draw_line(Image& img, float x0, float y0, float x1, float y1, Rgb c, float thickness);
void draw_disc(Image& img, float cx, float cy, float radius, Rgb c);
// Mixes `c` into pixel (x, y) with weight alpha in [0, 1].
void blend_pixel(Image& img, int x, int y, Rgb c, float alpha);
// Fills [x0, x1) x [y0, y1), clipped to the image.
void fill_rect(Image& img, int x0, int y0, int x1, int y1, Rgb c);
// Draws `text` with its top-left corner at (x, y) in a 3x5 pixel font magnified `scale`
// times (letters in capitals, digits and . _ - : % ( ) /; other characters blank).
void draw_text(Image& img, int x, int y, const std::string& text, Rgb c, int scale);
// The width in pixels that draw_text uses for `text` (4 * scale per character).
int text_width(const std::string& text, int scale);

}  // namespace tessera::tflite
