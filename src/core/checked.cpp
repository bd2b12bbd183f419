#include "core/checked.h"

namespace tessera {

Result<int64_t> Size::get(std::string_view what) const {
  if (bad_)
    return error(StatusCode::invalid_argument, what, ": size overflows 64 bits (or a factor is negative)");
  return value_;
}

Result<int64_t> checked_mul(int64_t a, int64_t b, std::string_view what) { return (Size(a) * b).get(what); }

Result<int64_t> checked_add(int64_t a, int64_t b, std::string_view what) { return (Size(a) + b).get(what); }

Result<int64_t> checked_elements(const Shape& shape, std::string_view what) {
  Size n = 1;
  for (int64_t d : shape) {
    if (d < 0) return error(StatusCode::invalid_argument, what, ": negative dimension in ", shape_str(shape));
    n *= d;
  }
  if (!n.ok())
    return error(StatusCode::invalid_argument, what, ": the element count of ", shape_str(shape),
                 " overflows 64 bits");
  return n.get(what);
}

Result<int64_t> checked_host_bytes(const Shape& shape, DType t, std::string_view what) {
  TS_ASSIGN_OR_RETURN(int64_t n, checked_elements(shape, what));
  const int64_t inner = shape.empty() ? 1 : shape.back();
  if (dtype_is_block(t)) {
    auto row = dtype_row_bytes(t, inner);
    if (!row.ok()) return row.status().with_context(std::string(what));
    return inner == 0 ? 0 : (Size(n / inner) * *row).get(what);
  }
  Size bytes = Size(n) * dtype_size(t);
  if (!bytes.ok())
    return error(StatusCode::invalid_argument, what, ": the byte size of ", dtype_name(t), shape_str(shape),
                 " overflows 64 bits");
  return bytes.get(what);
}

Result<int64_t> checked_round_up(int64_t a, int64_t b, std::string_view what) {
  if (a < 0 || b <= 0) return error(StatusCode::invalid_argument, what, ": cannot round ", a, " up to a multiple of ", b);
  TS_ASSIGN_OR_RETURN(int64_t sum, checked_add(a, b - 1, what));
  return sum / b * b;
}

}  // namespace tessera
