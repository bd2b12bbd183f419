// Reference kernels: elementwise binary ops (add, sub, mul, div, maximum, minimum,
// squared_difference, pow, prelu) with numpy broadcasting and a fused activation, on f32 and on
// i32 (integer division truncates toward zero; division by zero is an error).
#include <atomic>
#include <cmath>
#include <limits>
#include <type_traits>

#include "backend/cpu/kernels/kernel_util.h"

namespace tessera::cpu {

namespace {

// y[i] = apply(a[ia], b[ib]) over the broadcast output; T is float or int32_t.
template <typename T, typename Apply>
Status binary_rows(KernelContext& c, Apply apply) {
  const Shape& out = c.out[0].shape();
  const T* a = c.in[0].as<T>();
  const T* b = c.in[1].as<T>();
  T* y = c.out[0].as<T>();
  if (c.in[0].shape() == out && c.in[1].shape() == out) {  // no broadcast (residual adds, gating)
    // Element by element, so any split over the pool gives the same values.
    parallel_rows(c, num_elements(out), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) y[i] = apply(a[i], b[i]);
    }, int64_t{1} << 14);
    return Status::Ok();
  }
  // Broadcasting: the output as rows of its last dimension, each input read along a row
  // with stride 0 or 1; a row's input offsets come from its multi-index. Rows are split
  // over the pool (element by element again, so any split gives the same values). The
  // strides live in per-thread buffers that keep their size, so a broadcast in a decode
  // step allocates nothing either.
  thread_local std::vector<int64_t> as, bs;
  broadcast_strides_into(out, c.in[0].shape(), as);
  broadcast_strides_into(out, c.in[1].shape(), bs);
  const int rank = static_cast<int>(out.size());
  if (rank == 0) {
    y[0] = apply(a[0], b[0]);
    return Status::Ok();
  }
  const int64_t inner = out[rank - 1], total = num_elements(out);
  if (total == 0) return Status::Ok();
  const int64_t rows = total / inner, sa = as[rank - 1], sb = bs[rank - 1];
  const int64_t* asp = as.data();
  const int64_t* bsp = bs.data();
  parallel_rows(c, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t ia = 0, ib = 0, rem = r;
      for (int d = rank - 2; d >= 0; --d) {
        const int64_t idx = rem % out[d];
        rem /= out[d];
        ia += idx * asp[d];
        ib += idx * bsp[d];
      }
      T* yr = y + r * inner;
      if (sa == 1 && sb == 1) {
        for (int64_t i = 0; i < inner; ++i) yr[i] = apply(a[ia + i], b[ib + i]);
      } else if (sa == 1) {
        const T bv = b[ib];
        for (int64_t i = 0; i < inner; ++i) yr[i] = apply(a[ia + i], bv);
      } else if (sb == 1) {
        const T av = a[ia];
        for (int64_t i = 0; i < inner; ++i) yr[i] = apply(av, b[ib + i]);
      } else {
        const T v = apply(a[ia], b[ib]);
        for (int64_t i = 0; i < inner; ++i) yr[i] = v;
      }
    }
  }, std::max<int64_t>(1, (int64_t{1} << 14) / inner));
  return Status::Ok();
}

// y = act(f(a, b)); without an activation the loops are plain (and vectorise).
template <typename T, typename F>
Status binary_loop(KernelContext& c, F f, Activation act) {
  if (act == Activation::none) return binary_rows<T>(c, [&](T x0, T x1) { return f(x0, x1); });
  return binary_rows<T>(c, [&](T x0, T x1) {
    T v = f(x0, x1);
    if constexpr (std::is_same_v<T, float>) v = activate(v, act);
    else if (act == Activation::relu) v = std::max<T>(v, 0);
    return v;
  });
}

template <typename Op>
Status binary(KernelContext& c) {
  DType ta = c.in[0].dtype(), tb = c.in[1].dtype(), ty = c.out[0].dtype();
  if (ta != tb || ta != ty)
    return kernel_error(c.n, std::string("operands must share one dtype, got ") + dtype_name(ta) + ", " +
                                 dtype_name(tb) + " -> " + dtype_name(ty));
  Activation act = Activation::none;
  if constexpr (!requires { Op::kNoActivation; }) {
    TS_ASSIGN_OR_RETURN(act, activation_of(c.n));
  }
  if (ta == DType::f32) return binary_loop<float>(c, [](float x0, float x1) { return Op::template apply<float>(x0, x1); }, act);
  if (ta == DType::i32) {
    if (act != Activation::none && act != Activation::relu)
      return kernel_error(c.n, "i32 operands support only activation none or relu");
    if constexpr (Op::kDivides) {
      const int32_t* b = c.in[1].as<int32_t>();
      for (int64_t i = 0, n = c.in[1].elements(); i < n; ++i)
        if (b[i] == 0) return kernel_error(c.n, "integer division by zero in '" + c.in[1].t->name + "'");
      // INT32_MIN / -1 does not fit int32 (the interpreter's i32.div_s traps on it): an
      // error naming the operands, never the undefined C++ division.
      std::atomic<bool> overflow{false};
      TS_RETURN_IF_ERROR(binary_loop<int32_t>(c, [&overflow](int32_t x0, int32_t x1) {
        if (x0 == std::numeric_limits<int32_t>::min() && x1 == -1) {
          overflow.store(true, std::memory_order_relaxed);
          return x0;
        }
        return Op::template apply<int32_t>(x0, x1);
      }, act));
      if (overflow.load())
        return kernel_error(c.n, "integer division overflow: " + std::to_string(std::numeric_limits<int32_t>::min()) +
                                     " / -1 does not fit int32 ('" + c.in[0].t->name + "' / '" + c.in[1].t->name + "')");
      return Status::Ok();
    }
    return binary_loop<int32_t>(c, [](int32_t x0, int32_t x1) { return Op::template apply<int32_t>(x0, x1); }, act);
  }
  return kernel_error(c.n, std::string("plain kernel takes f32 or i32, got ") + dtype_name(ta));
}

// int32 sums, differences and products wrap around (two's complement), as the interpreter's
// int32 arithmetic does (WebAssembly's i32.add / sub / mul); in C++ the overflow would be
// undefined, so they are computed on uint32_t.
template <typename T, typename F>
T wrapping(T a, T b, F f) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(f(static_cast<U>(a), static_cast<U>(b)));
  } else {
    return f(a, b);
  }
}
struct AddOp {
  static constexpr bool kDivides = false;
  template <typename T> static T apply(T a, T b) { return wrapping(a, b, [](auto x, auto y) { return x + y; }); }
};
struct SubOp {
  static constexpr bool kDivides = false;
  template <typename T> static T apply(T a, T b) { return wrapping(a, b, [](auto x, auto y) { return x - y; }); }
};
struct MulOp {
  static constexpr bool kDivides = false;
  template <typename T> static T apply(T a, T b) { return wrapping(a, b, [](auto x, auto y) { return x * y; }); }
};
struct DivOp {
  static constexpr bool kDivides = true;
  template <typename T> static T apply(T a, T b) { return a / b; }
};
struct MaxOp {
  static constexpr bool kDivides = false;
  template <typename T> static T apply(T a, T b) { return std::max(a, b); }
};
struct MinOp {
  static constexpr bool kDivides = false;
  template <typename T> static T apply(T a, T b) { return std::min(a, b); }
};

// squared_difference and pow take no fused activation (kNoActivation).
struct SquaredDifferenceOp {
  static constexpr bool kDivides = false, kNoActivation = true;
  template <typename T> static T apply(T a, T b) {
    const T d = wrapping(a, b, [](auto x, auto y) { return x - y; });
    return wrapping(d, d, [](auto x, auto y) { return x * y; });
  }
};
// f32: std::pow, as TFLite's pow.cc (reference_ops::Pow); i32: repeated multiplication
// (pow.cc IntegerPow; the importer takes f32 POW only).
struct PowOp {
  static constexpr bool kDivides = false, kNoActivation = true;
  template <typename T> static T apply(T a, T b) {
    if constexpr (std::is_same_v<T, float>) {
      return std::pow(a, b);
    } else {
      // Wrapping products, by squaring (b up to 2^31 would otherwise be as many steps).
      T r = 1, base = a;
      for (T k = b; k > 0; k >>= 1) {
        if (k & 1) r = wrapping(r, base, [](auto x, auto y) { return x * y; });
        base = wrapping(base, base, [](auto x, auto y) { return x * y; });
      }
      return r;
    }
  }
};

// prelu: a is x, b the slope alpha (activations.cc PreluEval's float form).
struct PreluOp {
  static constexpr bool kDivides = false, kNoActivation = true;
  template <typename T> static T apply(T a, T b) { return a >= 0 ? a : wrapping(a, b, [](auto x, auto y) { return x * y; }); }
};

}  // namespace

void register_elementwise_kernels(KernelTable& t) {
  t.add(OpKind::add, KernelKind::plain, binary<AddOp>);
  t.add(OpKind::sub, KernelKind::plain, binary<SubOp>);
  t.add(OpKind::mul, KernelKind::plain, binary<MulOp>);
  t.add(OpKind::div, KernelKind::plain, binary<DivOp>);
  t.add(OpKind::maximum, KernelKind::plain, binary<MaxOp>);
  t.add(OpKind::minimum, KernelKind::plain, binary<MinOp>);
  t.add(OpKind::squared_difference, KernelKind::plain, binary<SquaredDifferenceOp>);
  t.add(OpKind::pow, KernelKind::plain, binary<PowOp>);
  t.add(OpKind::prelu, KernelKind::plain, binary<PreluOp>);
}

}  // namespace tessera::cpu
