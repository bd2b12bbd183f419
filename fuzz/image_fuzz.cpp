// libFuzzer target: the image decoders (BMP, JPEG, PNG through stb, behind the header
// checks of decode_image) and the conversion of a decoded image to a model input. Any
// bytes give an image within the pixel limit or a message; crashes, sanitizer reports,
// hangs and allocations past the limit are bugs.
#include <cstddef>
#include <cstdint>

#include "import/tflite/image.h"

namespace {
// Small enough that every accepted image decodes in milliseconds under ASan.
constexpr int64_t kFuzzMaxPixels = int64_t{1} << 16;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  auto img = tflite::decode_image(data, size, "fuzz input", kFuzzMaxPixels);
  if (!img.ok()) {
    if (img.status().message().empty()) __builtin_trap();
    return 0;
  }
  if (img->width < 1 || img->height < 1 || static_cast<int64_t>(img->width) * img->height > kFuzzMaxPixels ||
      img->pixels.size() != static_cast<size_t>(img->width) * img->height * 3)
    __builtin_trap();
  // Into an NHWC u8 input and an NCHW grayscale f32 one (resize, luma, layouts).
  Tensor rgb;
  rgb.name = "rgb";
  rgb.shape = {1, 17, 9, 3};
  rgb.dtype = DType::u8;
  Tensor gray;
  gray.name = "gray";
  gray.shape = {1, 1, 5, 23};
  gray.dtype = DType::f32;
  for (const Tensor* t : {&rgb, &gray}) {
    auto in = tflite::image_to_input(*img, *t);
    if (!in.ok() || static_cast<int64_t>(in->size()) != *t->host_bytes()) __builtin_trap();
  }
  return 0;
}
