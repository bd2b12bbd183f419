// Flat tensors on the rknpu device (flat.cpp, docs/rknpu.md "Flat tensors"): 8-bit
// activations outside the NHWC feature maps (YOLOv8's head on [1, C, 8400]), held in
// row-major order, which element-wise tasks read as [1, H, W, 16] cubes.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/graph.h"
#include "tessera/status.h"

namespace tessera::rknpu {

// Which tensors of `g` the NPU holds flat: 8-bit per-tensor activations of batch 1 whose
// element count is a multiple of 16, that no spatial op (conv, pooling, resize, fully
// connected) reads or writes, of a rank other than 2 and 4 or joined to such a tensor
// through reshapes and element-wise ops (LOGISTIC, TANH, HARD_SWISH, QUANTIZE, ADD, SUB, MUL).
std::vector<bool> flat_tensors(const Graph& g);
bool is_flat(const Graph& g, TensorId id);

// `atoms` 16-byte atoms as an H x W cube within the DPU's field limits.
struct FlatCube {
  int64_t h = 0, w = 0;
};
Result<FlatCube> flat_cube(int64_t atoms);

// A run of `len` bytes from byte `src` of a flat tensor of `in_bytes` to byte `dst` of one of
// `out_bytes`, as a copy of whole surfaces: both tensors seen as cubes of h x w atoms per
// surface (surface = h * w * 16 bytes), channels [src_c0, src_c0 + channels) -> [dst_c0, ...).
struct FlatRun {
  int64_t h = 0, w = 0, surface = 0;
  int64_t src_c0 = 0, dst_c0 = 0, channels = 0;
};
Result<FlatRun> flat_run(int64_t in_bytes, int64_t src, int64_t out_bytes, int64_t dst, int64_t len);

}  // namespace tessera::rknpu
