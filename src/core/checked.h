// Checked arithmetic for every size computed from untrusted numbers: element counts, byte
// sizes, strides, offsets and padded shapes read from model files, image headers and
// command-line options. Overflow (or a negative size) is an error naming what was being
// sized, never a value that wrapped modulo 2^64.
//
// Write sizes with Size, whose operators carry an overflow flag along, and unwrap once:
//   TS_ASSIGN_OR_RETURN(int64_t bytes, (Size(rows) * row_bytes + header).get("tensor 'w'"));
// Plain int64 products of file data (`a * b`) are the form to avoid; num_elements() and
// the kernels may multiply freely only because Graph::validate() has checked every tensor
// of the graph with checked_elements() and checked_host_bytes() first.
#pragma once

#include <cstdint>
#include <string_view>

#include "tessera/types.h"

namespace tessera {

// A non-negative int64 size that remembers whether any step of its computation overflowed
// or started from a negative number.
class Size {
 public:
  constexpr Size(int64_t v = 0) : value_(v), bad_(v < 0) {}  // NOLINT: implicit by design

  friend constexpr Size operator*(Size a, Size b) {
    Size r;
    r.bad_ = a.bad_ || b.bad_ || __builtin_mul_overflow(a.value_, b.value_, &r.value_);
    return r;
  }
  friend constexpr Size operator+(Size a, Size b) {
    Size r;
    r.bad_ = a.bad_ || b.bad_ || __builtin_add_overflow(a.value_, b.value_, &r.value_);
    return r;
  }
  // Rounded up to a multiple of m > 0.
  constexpr Size rounded_up(int64_t m) const {
    Size r = *this + (m - 1);
    if (m <= 0) r.bad_ = true;
    if (r.ok()) r.value_ = r.value_ / m * m;
    return r;
  }
  // The value for a size known to be valid (ok()); 0 otherwise.
  constexpr int64_t value_or_zero() const { return bad_ ? 0 : value_; }
  Size& operator*=(Size o) { return *this = *this * o; }
  Size& operator+=(Size o) { return *this = *this + o; }

  constexpr bool ok() const { return !bad_; }
  // The value, or an error "<what>: size overflows int64 (or is negative)".
  Result<int64_t> get(std::string_view what) const;

 private:
  int64_t value_ = 0;
  bool bad_ = false;
};

// a * b and a + b for non-negative sizes; errors name `what`.
Result<int64_t> checked_mul(int64_t a, int64_t b, std::string_view what);
Result<int64_t> checked_add(int64_t a, int64_t b, std::string_view what);

// The element count of `shape` (dims must be non-negative; rank 0 has one element).
Result<int64_t> checked_elements(const Shape& shape, std::string_view what);
// Bytes of a row-major tensor of `shape` and `t` (block dtypes need whole blocks per row).
Result<int64_t> checked_host_bytes(const Shape& shape, DType t, std::string_view what);

// (a + b - 1) / b * b without overflow, for padding a dim up to a multiple of b > 0.
Result<int64_t> checked_round_up(int64_t a, int64_t b, std::string_view what);

}  // namespace tessera
