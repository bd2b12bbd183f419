// RESIZE_NEAREST_NEIGHBOR x2 on the PPU (docs/rknpu.md "Nearest x2 resize").
//
// The register sources give the DPU no pixel stride (its destination has only a surface
// stride, DST_SURF_STRIDE; lines are width x 16 bytes) and neither does the PPU's
// destination, but PPU_RDMA reads with a free line and surface stride
// (RDMA_SRC_LINE_STRIDE, RDMA_SRC_SURF_STRIDE) and the PPU writes each surface at a free
// stride (PPU DST_SURF_STRIDE). Nearest x2 (out[2y+dy][2x+dx] = in[y][x]) is then a max
// pooling of a re-shaped view of the same bytes:
//  - input view: width 1, height W (one line per input column x, line stride 16 bytes), one
//    surface per (channel block c1, input row y): s = c1 * H + y at W * 16 bytes apart,
//    which is exactly the NC1HWC2 order of the input;
//  - kernel 2 x 1, stride 1, left and right padding 1 with the pad value -128: each
//    1-wide line becomes two equal atoms (max(pad, v) = max(v, pad) = v for every int8 v),
//    so the output view is width 2, height W, i.e. output atoms 2x and 2x + 1 (line stride
//    32 bytes, the PPU's width x 16);
//  - output surface s at 4 * W * 16 bytes apart, starting at output row 2y + dy: one task
//    for dy = 0 and one for dy = 1.
// Two PPU tasks move every byte unchanged (the codes are copied, as TFLite's kernel does),
// so the result equals the cpu's byte for byte. The tasks are split where the surfaces
// exceed the 13-bit channel fields (8192 channels = 512 surfaces per task).
#include "backend/rknpu/lower_internal.h"

#include "backend/rknpu/hw.h"
#include "backend/rknpu/regcmd.h"
#include "backend/rknpu/tiling.h"

namespace tessera::rknpu::detail {

Result<NpuOp> lower_resize_nearest(const Graph& g, const Node& n) {
  const Tensor& x = g.tensor(n.inputs[0]);
  const Tensor& y = g.tensor(n.outputs[0]);
  TS_RETURN_IF_ERROR(check_feature(n, x, "input"));
  TS_RETURN_IF_ERROR(check_feature(n, y, "output"));
  if (x.dtype != y.dtype || x.quant != y.quant) return no(n, "resize that changes the quantization");
  const int64_t h = x.shape[1], w = x.shape[2], c = x.shape[3];
  if (y.shape[3] != c || y.shape[1] != 2 * h || y.shape[2] != 2 * w)
    return no(n, "resize " + shape_str(x.shape) + " -> " + shape_str(y.shape) +
                     " is not x2 in H and W (the PPU path duplicates each pixel into a 2x2 block; other factors run on the cpu)");
  // align_corners samples at (out - 1) / (in - 1) spacing, not a 2x2 block per pixel.
  // half_pixel_centers picks floor((o + 0.5) / 2) = floor(o / 2): the same pixels.
  if (n.get(attr::align_corners) != 0) return no(n, "resize with align_corners (not a 2x2 block per input pixel)");
  NpuOp op;
  op.type = NpuOpType::resize;
  op.label = n.label();
  op.input = n.inputs[0];
  op.output = n.outputs[0];
  op.in_h = h, op.in_w = w, op.in_c = c;
  op.out_h = 2 * h, op.out_w = 2 * w, op.out_c = c;
  op.kh = 1, op.kw = 2, op.pad_left = 1;
  // Field limits (register database): the view's height W in CUBE_IN_HEIGHT / CUBE_OUT_HEIGHT
  // (13 bits), the output surface stride 4 * W * 16 bytes in DST_SURF_STRIDE (in 16-byte units).
  if (!fits(regs::PPU::DATA_CUBE_IN_HEIGHT__CUBE_IN_HEIGHT, w - 1) ||
      !fits(regs::PPU::DST_SURF_STRIDE__DST_SURF_STRIDE, 4 * w))
    return no(n, "resize input width " + std::to_string(w) + " exceeds the PPU's fields");
  TS_RETURN_IF_ERROR(check_tiling(op).status());
  return op;
}

}  // namespace tessera::rknpu::detail
