#include "tessera/types.h"

#include <limits>
#include <sstream>

#include "core/checked.h"

namespace tessera {

namespace {
struct DTypeInfo {
  DType type;
  const char* name;
  int size;  // bytes per element; 0 for block types
  int block_values;  // values per block (1 for element types)
  int block_bytes;   // bytes per block (size for element types)
};
constexpr DTypeInfo kDTypes[kNumDTypes] = {
    {DType::f32, "f32", 4, 1, 4},    {DType::f16, "f16", 2, 1, 2},   {DType::bf16, "bf16", 2, 1, 2},
    {DType::i8, "i8", 1, 1, 1},      {DType::u8, "u8", 1, 1, 1},     {DType::i16, "i16", 2, 1, 2},
    {DType::i32, "i32", 4, 1, 4},    {DType::i64, "i64", 8, 1, 8},   {DType::boolean, "bool", 1, 1, 1},
    {DType::q8_0, "q8_0", 0, kQBlock, kQ8_0BlockBytes},
    {DType::q4_0, "q4_0", 0, kQBlock, kQ4_0BlockBytes},
    {DType::q4_1, "q4_1", 0, kQBlock, kQ4_1BlockBytes},
    {DType::q5_0, "q5_0", 0, kQBlock, kQ5_0BlockBytes},
    {DType::q5_1, "q5_1", 0, kQBlock, kQ5_1BlockBytes},
    {DType::q2_k, "q2_K", 0, kQKBlock, kQ2_KBlockBytes},
    {DType::q3_k, "q3_K", 0, kQKBlock, kQ3_KBlockBytes},
    {DType::q4_k, "q4_K", 0, kQKBlock, kQ4_KBlockBytes},
    {DType::q5_k, "q5_K", 0, kQKBlock, kQ5_KBlockBytes},
    {DType::q6_k, "q6_K", 0, kQKBlock, kQ6_KBlockBytes},
    {DType::iq4_nl, "iq4_nl", 0, kQBlock, kIQ4_NLBlockBytes},
    {DType::iq4_xs, "iq4_xs", 0, kQKBlock, kIQ4_XSBlockBytes},
};
}  // namespace

const char* dtype_name(DType t) { return kDTypes[static_cast<int>(t)].name; }

std::optional<DType> dtype_from_name(const std::string& name) {
  for (const auto& d : kDTypes)
    if (name == d.name) return d.type;
  return std::nullopt;
}

bool dtype_is_block(DType t) { return kDTypes[static_cast<int>(t)].block_values > 1; }
int64_t dtype_block_values(DType t) { return kDTypes[static_cast<int>(t)].block_values; }
int64_t dtype_block_bytes(DType t) { return kDTypes[static_cast<int>(t)].block_bytes; }
bool dtype_is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
bool dtype_is_quantized_int(DType t) { return t == DType::i8 || t == DType::u8 || t == DType::i16; }
int dtype_size(DType t) { return kDTypes[static_cast<int>(t)].size; }

Result<int64_t> dtype_row_bytes(DType t, int64_t n) {
  if (n < 0) return error(StatusCode::invalid_argument, "negative element count ", n);
  const int64_t bv = dtype_block_values(t), bb = dtype_block_bytes(t);
  if (n % bv != 0)
    return error(StatusCode::invalid_argument, "a ", dtype_name(t), " row of ", n,
                 " values is not a multiple of the block size ", bv);
  if (n / bv > std::numeric_limits<int64_t>::max() / bb)
    return error(StatusCode::invalid_argument, "a ", dtype_name(t), " row of ", n, " values overflows a byte count");
  return n / bv * bb;
}

// Unchecked: only for shapes already checked (Graph::validate, checked_elements).
int64_t num_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  os << ']';
  return os.str();
}

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

Result<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      return error(StatusCode::invalid_argument, "shapes ", shape_str(a), " and ", shape_str(b),
                   " do not broadcast (dim ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::string quant_str(const QuantParams& q) {
  if (q.empty()) return "";
  std::ostringstream os;
  if (q.scale.size() == 1) {
    os << "scale " << q.scale[0] << " zp " << q.zero_point_at(0);
  } else {
    os << "per-axis(" << q.axis << ") x" << q.scale.size() << " scale[0] " << q.scale[0];
  }
  return os.str();
}

const char* role_name(Role r) {
  switch (r) {
    case Role::weight: return "weight";
    case Role::input: return "input";
    case Role::output: return "output";
    case Role::activation: return "activation";
    case Role::state: return "state";
  }
  return "?";
}

}  // namespace tessera
