// Image decoding (stb_image), PNG writing (stb_image_write), resizing and conversion to a
// model input tensor.
#include "import/tflite/image.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "core/file_io.h"

#include <stb_image.h>
#include <stb_image_write.h>

namespace tessera::tflite {

namespace {

// stb sizes its PNG data buffer from each IDAT chunk's declared length before it reads the
// data: a 67-byte file can ask for a gigabyte. Every chunk must fit in the bytes that remain.
Status check_png_chunks(const uint8_t* data, size_t size, const std::string& what) {
  static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size < 8 || std::memcmp(data, kSignature, 8) != 0) return Status::Ok();  // not a PNG
  size_t at = 8;
  // Every chunk whose length and type are present (the decoder acts on those before it
  // reads the data, even at the very end of a truncated file): length, type, data, CRC.
  while (size - at >= 8) {
    const uint32_t length = (uint32_t{data[at]} << 24) | (uint32_t{data[at + 1]} << 16) |
                            (uint32_t{data[at + 2]} << 8) | uint32_t{data[at + 3]};
    if (length > size - at - 8)
      return error(StatusCode::invalid_argument, "cannot decode image ", what, ": PNG chunk at byte ", at,
                   " claims ", length, " bytes but only ", size - at - 8, " remain");
    if (std::memcmp(data + at + 4, "IEND", 4) == 0) break;
    if (size - at - 8 - length < 4) break;  // no room for the CRC: nothing follows
    at += 12 + length;
  }
  return Status::Ok();
}

}  // namespace

Result<Image> decode_image(const uint8_t* data, size_t size, const std::string& what, int64_t max_pixels) {
  if (size > static_cast<size_t>(kMaxImageFileBytes))
    return error(StatusCode::out_of_memory, "image ", what, " has ", size, " bytes, more than the ",
                 kMaxImageFileBytes, " allowed");
  TS_RETURN_IF_ERROR(check_png_chunks(data, size, what));
  const int len = static_cast<int>(size);
  int w = 0, h = 0, c = 0;
  // The header alone: refuse what would be too large before decoding a pixel.
  if (!stbi_info_from_memory(data, len, &w, &h, &c)) {
    const char* why = stbi_failure_reason();
    return error(StatusCode::invalid_argument, "cannot decode image ", what, ": ", why ? why : "unknown reason");
  }
  auto check = [&](int width, int height) -> Status {
    if (width < 1 || height < 1)
      return error(StatusCode::invalid_argument, "image ", what, " is ", width, "x", height, ": a side is zero");
    if (static_cast<int64_t>(width) * height > max_pixels)
      return error(StatusCode::out_of_memory, "image ", what, " is ", width, "x", height, " = ",
                   static_cast<int64_t>(width) * height, " pixels, more than the ", max_pixels, " allowed");
    return Status::Ok();
  };
  TS_RETURN_IF_ERROR(check(w, h));
  stbi_uc* pixels = stbi_load_from_memory(data, len, &w, &h, &c, 3);
  if (!pixels) {
    const char* why = stbi_failure_reason();
    return error(StatusCode::invalid_argument, "cannot decode image ", what, ": ", why ? why : "unknown reason");
  }
  std::unique_ptr<stbi_uc, void (*)(void*)> owner(pixels, stbi_image_free);
  TS_RETURN_IF_ERROR(check(w, h));  // the decoder's own dimensions, in case they differ from the header's
  Image img;
  img.width = w;
  img.height = h;
  img.channels = 3;
  img.pixels.assign(pixels, pixels + static_cast<size_t>(w) * h * 3);
  return img;
}

Result<Image> read_image(const std::string& path, int64_t max_pixels) {
  TS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file_bounded(path, kMaxImageFileBytes, "image file"));
  return decode_image(bytes.data(), bytes.size(), "'" + path + "'", max_pixels);
}

Status write_png(const std::string& path, const Image& img) {
  if (img.channels != 1 && img.channels != 3)
    return error(StatusCode::invalid_argument, "write_png: ", img.channels, " channels (expected 1 or 3)");
  if (!stbi_write_png(path.c_str(), img.width, img.height, img.channels, img.pixels.data(),
                      img.width * img.channels))
    return error(StatusCode::io_error, "cannot write PNG '", path, "'");
  return Status::Ok();
}

Image resize_bilinear(const Image& img, int width, int height) {
  Image out;
  out.width = width;
  out.height = height;
  out.channels = img.channels;
  out.pixels.resize(static_cast<size_t>(width) * height * img.channels);
  float sy = static_cast<float>(img.height) / height, sx = static_cast<float>(img.width) / width;
  for (int y = 0; y < height; ++y) {
    float fy = std::clamp((y + 0.5f) * sy - 0.5f, 0.0f, static_cast<float>(img.height - 1));
    int y0 = static_cast<int>(fy), y1 = std::min(y0 + 1, img.height - 1);
    float wy = fy - y0;
    for (int x = 0; x < width; ++x) {
      float fx = std::clamp((x + 0.5f) * sx - 0.5f, 0.0f, static_cast<float>(img.width - 1));
      int x0 = static_cast<int>(fx), x1 = std::min(x0 + 1, img.width - 1);
      float wx = fx - x0;
      for (int c = 0; c < img.channels; ++c) {
        float top = img.at(x0, y0)[c] * (1 - wx) + img.at(x1, y0)[c] * wx;
        float bottom = img.at(x0, y1)[c] * (1 - wx) + img.at(x1, y1)[c] * wx;
        float v = top * (1 - wy) + bottom * wy;
        out.at(x, y)[c] = static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
      }
    }
  }
  return out;
}

LetterboxGeometry letterbox_geometry(int image_width, int image_height, int width, int height) {
  LetterboxGeometry g;
  g.ratio = std::min(static_cast<float>(width) / static_cast<float>(image_width),
                     static_cast<float>(height) / static_cast<float>(image_height));
  g.scaled_width = std::clamp(static_cast<int>(std::lround(image_width * g.ratio)), 1, width);
  g.scaled_height = std::clamp(static_cast<int>(std::lround(image_height * g.ratio)), 1, height);
  g.left = static_cast<int>(std::lround((width - g.scaled_width) / 2.0 - 0.1));
  g.top = static_cast<int>(std::lround((height - g.scaled_height) / 2.0 - 0.1));
  return g;
}

Image letterbox(const Image& img, int width, int height) {
  const LetterboxGeometry g = letterbox_geometry(img.width, img.height, width, height);
  const Image scaled = resize_bilinear(img, g.scaled_width, g.scaled_height);
  Image out;
  out.width = width;
  out.height = height;
  out.channels = img.channels;
  out.pixels.assign(static_cast<size_t>(width) * height * img.channels, 114);
  for (int y = 0; y < g.scaled_height; ++y)
    std::memcpy(out.at(g.left, g.top + y), scaled.at(0, y), static_cast<size_t>(g.scaled_width) * img.channels);
  return out;
}

Image to_gray(const Image& img) {
  if (img.channels == 1) return img;
  Image out;
  out.width = img.width;
  out.height = img.height;
  out.channels = 1;
  out.pixels.resize(static_cast<size_t>(img.width) * img.height);
  for (size_t i = 0; i < out.pixels.size(); ++i) {
    const uint8_t* p = &img.pixels[i * img.channels];
    float v = 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2];
    out.pixels[i] = static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
  }
  return out;
}

Result<InputLayout> input_layout(const Tensor& t) {
  auto bad = [&] {
    return error(StatusCode::unsupported, "input '", t.name, "' ", shape_str(t.shape),
                 " is not an image tensor ([1,H,W,C] or [1,C,H,W] with C = 1 or 3)");
  };
  if (t.shape.size() != 4 || t.shape[0] != 1) return bad();
  for (int64_t d : t.shape)
    if (d > kMaxImagePixels) return bad();
  InputLayout l;
  if (t.shape[3] == 1 || t.shape[3] == 3) {
    l = {static_cast<int>(t.shape[1]), static_cast<int>(t.shape[2]), static_cast<int>(t.shape[3]), false};
  } else if (t.shape[1] == 1 || t.shape[1] == 3) {
    l = {static_cast<int>(t.shape[2]), static_cast<int>(t.shape[3]), static_cast<int>(t.shape[1]), true};
  } else {
    return bad();
  }
  if (l.height < 1 || l.width < 1) return bad();
  if (static_cast<int64_t>(l.height) * l.width > kMaxImagePixels)
    return error(StatusCode::unsupported, "input '", t.name, "' ", shape_str(t.shape), " is larger than the ",
                 kMaxImagePixels, " pixels an image may have");
  return l;
}

Result<std::vector<uint8_t>> image_to_input(const Image& img, const Tensor& t, PixelRange range) {
  TS_ASSIGN_OR_RETURN(InputLayout l, input_layout(t));
  if (img.width < 1 || img.height < 1 || (img.channels != 1 && img.channels != 3) ||
      img.pixels.size() != static_cast<size_t>(img.width) * img.height * img.channels)
    return error(StatusCode::invalid_argument, "image of ", img.width, "x", img.height, "x", img.channels, " with ",
                 img.pixels.size(), " bytes is not a valid 1- or 3-channel image");
  Image src = l.channels == 1 ? to_gray(img) : img;
  Image r = range == PixelRange::yolo ? letterbox(src, l.width, l.height) : resize_bilinear(src, l.width, l.height);
  int64_t n = static_cast<int64_t>(l.height) * l.width * l.channels;
  int esize = dtype_size(t.dtype);
  if (t.dtype != DType::u8 && t.dtype != DType::i8 && t.dtype != DType::f32)
    return error(StatusCode::unsupported, "input '", t.name, "': images convert to u8, i8 or f32, not ",
                 dtype_name(t.dtype));
  const bool unit = range == PixelRange::yolo;
  float q_scale = 1.0f, q_zero = 0.0f;
  if (unit && t.dtype != DType::f32) {
    if (t.quant.scale.size() != 1 || !(t.quant.scale[0] > 0) || !std::isfinite(t.quant.scale[0]))
      return error(StatusCode::unsupported, "input '", t.name, "' is ", dtype_name(t.dtype),
                   " without one positive scale: pixels in [0, 1] cannot be quantized for it");
    q_scale = t.quant.scale[0];
    q_zero = static_cast<float>(t.quant.zero_point_at(0));
  }
  const int lo = t.dtype == DType::i8 ? -128 : 0, hi = t.dtype == DType::i8 ? 127 : 255;
  std::vector<uint8_t> out(static_cast<size_t>(n * esize));
  for (int y = 0; y < l.height; ++y)
    for (int x = 0; x < l.width; ++x)
      for (int c = 0; c < l.channels; ++c) {
        int64_t k = l.nchw ? (static_cast<int64_t>(c) * l.height + y) * l.width + x
                           : (static_cast<int64_t>(y) * l.width + x) * l.channels + c;
        uint8_t p = r.at(x, y)[c];
        if (unit) {
          const float v = static_cast<float>(p) / 255.0f;
          if (t.dtype == DType::f32) {
            std::memcpy(&out[k * 4], &v, 4);
          } else {
            const long qv = std::clamp<long>(std::lround(v / q_scale + q_zero), lo, hi);
            out[k] = static_cast<uint8_t>(static_cast<int>(qv) & 0xff);
          }
        } else if (t.dtype == DType::u8) {
          out[k] = p;
        } else if (t.dtype == DType::i8) {
          out[k] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(p) - 128));
        } else {
          float v = (p - 127.5f) / 127.5f;
          std::memcpy(&out[k * 4], &v, 4);
        }
      }
  return out;
}

}  // namespace tessera::tflite
