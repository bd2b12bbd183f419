// The order in which TFLite's float GEMM adds the terms of one dot product, so that the
// float CONV_2D reference kernel gives the interpreter's bits (a hybrid convolution later in
// a model quantizes those floats to int8 codes, where one ulp can move a code a whole
// step). Measured against the interpreter (tests/oracle/float_conv_order_oracle_test.cpp),
// whose float GEMM (Eigen's blocked kernel) adds:
//   - the depth in blocks: depth <= kMaxBlock is one block; a deeper one is cut into
//     blocks of `block` terms (the last shorter), block chosen to balance them (below);
//   - within a block, its first multiple of kPeel terms into two sums, even terms and odd
//     terms (counted from the block's start), then those two sums added, then the rest one
//     by one;
//   - the blocks' results one after another onto 0;
//   - except for the GEMM's last (columns % 4) columns (output pixels), whose blocks add
//     every term in turn (its one-column kernel).
// Files that use it are compiled with -ffp-contract=off (cmake/components.cmake): every
// product is rounded before it is added, as in the interpreter (WebAssembly has no fma).
#pragma once

#include <algorithm>
#include <cstdint>

namespace tessera::cpu {

struct GemmDepthBlocks {
  static constexpr int64_t kMaxBlock = 816;  // measured: depth 816 is one block, 820 two
  static constexpr int64_t kPeel = 8;        // terms per step of the GEMM's inner loop
  int64_t depth = 0;
  int64_t block = 0;  // terms per block (every block but the last)
  explicit GemmDepthBlocks(int64_t d) : depth(d), block(d) {
    if (d > kMaxBlock) {
      // Balanced blocks with as many sweeps as kMaxBlock needs (fits depths 820-1800 measured).
      const int64_t rem = d % kMaxBlock;
      block = rem == 0 ? kMaxBlock : kMaxBlock - kPeel * ((kMaxBlock - 1 - rem) / (kPeel * (d / kMaxBlock + 1)));
    }
    block = std::max<int64_t>(block, 1);
  }
};

// The GEMM's columns (output pixels) handled four at a time; the rest one by one.
constexpr int64_t kGemmColumnGroup = 4;
// Whether column `index` of `columns` is one of the last, one-by-one columns.
inline bool gemm_single_column(int64_t index, int64_t columns) {
  return index >= columns - columns % kGemmColumnGroup;
}

// Accumulates terms k = 0 .. depth-1 given in increasing k (terms known to be zero, such as
// padding taps, may be skipped: adding a zero changes nothing but the sign of a zero).
// `single_column`: the order of the one-column kernel (gemm_single_column).
class GemmSum {
 public:
  GemmSum(const GemmDepthBlocks& b, bool single_column) : b_(b), single_column_(single_column) {}

  // Adds x[i] * w[i] as term k0 + i, i < n.
  void add(int64_t k0, const float* x, const float* w, int64_t n) {
    int64_t i = 0;
    while (i < n) {
      const int64_t k = k0 + i;
      enter(k);
      if (k < peeled_end_) {
        const int64_t end = std::min(k0 + n, peeled_end_) - k0;
        if (((k0 + i - start_) & 1) != 0) {  // an odd term first, then even / odd pairs
          odd_ += x[i] * w[i];
          ++i;
        }
        for (; i + 1 < end; i += 2) {
          even_ += x[i] * w[i];
          odd_ += x[i + 1] * w[i + 1];
        }
        if (i < end) {
          even_ += x[i] * w[i];
          ++i;
        }
      } else {
        if (!in_rest_) {
          rest_ = even_ + odd_;
          in_rest_ = true;
        }
        const int64_t end = std::min(k0 + n, block_end_) - k0;
        for (; i < end; ++i) rest_ += x[i] * w[i];
      }
    }
  }

  float total() {
    flush();
    return total_;
  }

 private:
  void enter(int64_t k) {
    const int64_t bi = k / b_.block;
    if (bi == current_) return;
    flush();
    current_ = bi;
    start_ = bi * b_.block;
    block_end_ = std::min(b_.depth, start_ + b_.block);
    peeled_end_ = single_column_ ? start_ : start_ + ((block_end_ - start_) / GemmDepthBlocks::kPeel) * GemmDepthBlocks::kPeel;
  }
  void flush() {
    if (current_ < 0) return;
    total_ += in_rest_ ? rest_ : even_ + odd_;
    even_ = odd_ = rest_ = 0.0f;
    in_rest_ = false;
    current_ = -1;
  }

  const GemmDepthBlocks& b_;
  const bool single_column_;
  int64_t current_ = -1, start_ = 0, block_end_ = 0, peeled_end_ = 0;
  float even_ = 0.0f, odd_ = 0.0f, rest_ = 0.0f, total_ = 0.0f;
  bool in_rest_ = false;
};

}  // namespace tessera::cpu
