// Channel-blocked and channel-major layouts of NHWC tensors (rknpu.md "Data formats"):
//   nc1hwc2: logical NHWC [N, H, W, C] stored as [N][ceil(C/C2)][H][W][C2]; the padded
//            channels C..C1*C2-1 of the last block hold the pad value (the zero point).
//   nchw:    logical NHWC [N, H, W, C] stored as [N][C][H][W].
// Elements are `esize` bytes (1, 2, 4 or 8); the relayouts are exact. With flip = true
// every byte is XORed with 0x80 on the way (u8 <-> i8, rknpu.md: "uint8 tensors are offset
// by 0x80 on the way in and back on the way out"); flip needs esize 1.
#pragma once

#include <cstdint>

#include "tessera/types.h"

namespace tessera::convert {

struct Nhwc {
  int64_t n = 1, h = 1, w = 1, c = 1;
};
// `pad` points to one element (esize bytes) written into every padded channel.
void nhwc_to_nc1hwc2(const uint8_t* src, uint8_t* dst, const Nhwc& s, int64_t c2, int esize, const uint8_t* pad,
                     bool flip);
void nc1hwc2_to_nhwc(const uint8_t* src, uint8_t* dst, const Nhwc& s, int64_t c2, int esize, bool flip);
void nhwc_to_nchw(const uint8_t* src, uint8_t* dst, const Nhwc& s, int esize);
void nchw_to_nhwc(const uint8_t* src, uint8_t* dst, const Nhwc& s, int esize);

}  // namespace tessera::convert
