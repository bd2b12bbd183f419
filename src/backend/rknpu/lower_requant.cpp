// Requantization on the DPU (docs/rknpu.md "Arithmetic", "Exact requantization"): the two
// 16-bit multipliers of BS and BN that stand for TFLite's 31-bit one (encode_scale_pair,
// scale_pair_candidates), each channel's pair searched and proven on its accumulator range
// (encode_requant), the single-rounding lift, and the split of a linear per-channel layer
// into a positive and a negative pass (split_by_sign). lower.cpp's conv lowering calls them.
#include "backend/rknpu/lower.h"
#include "backend/rknpu/lower_internal.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backend/rknpu/hw.h"
#include "ops/quant_math.h"

namespace tessera::rknpu {

using namespace detail;

Scale16 split_mantissa(double m, int bits, int dir) {
  int e = 0;
  const double f = std::ldexp(std::frexp(m, &e), bits);  // m = f * 2^(e - bits), f in [2^(bits-1), 2^bits)
  int64_t mant = dir < 0 ? static_cast<int64_t>(std::floor(f)) : dir > 0 ? static_cast<int64_t>(std::ceil(f)) : std::llround(f);
  int shift = bits - e;
  if (mant == (int64_t{1} << bits)) mant >>= 1, --shift;  // rounded up to 2^bits
  return Scale16{static_cast<int32_t>(mant), shift};
}

Result<Scale16> encode_scale16(double m, int max_shift) {
  if (!(m > 0) || !std::isfinite(m)) return error(StatusCode::unsupported, "multiplier ", m, " is not positive");
  const Scale16 s = split_mantissa(m, kMantissaBits, 0);
  int64_t mant = s.mantissa;
  int shift = s.shift;
  // Too small a multiplier for the shift field: lose mantissa bits instead.
  while (shift > max_shift && mant > 0) {
    mant = (mant + 1) >> 1;
    --shift;
  }
  if (shift < 0) return error(StatusCode::unsupported, "multiplier ", m, " is too large for a 16-bit mantissa");
  if (mant == 0) return error(StatusCode::unsupported, "multiplier ", m, " is too small for the shift field");
  return Scale16{static_cast<int32_t>(mant), shift};
}

namespace {
// 2^e for e in [-1022, 1023], exactly (as std::ldexp(1.0, e), without the library call).
double pow2(int e) { return std::bit_cast<double>(static_cast<uint64_t>(1023 + e) << 52); }
// The exponent std::frexp gives a positive normal x (x = f * 2^e, f in [0.5, 1)).
int frexp_exponent(double x) { return static_cast<int>((std::bit_cast<uint64_t>(x) >> 52) & 0x7FF) - 1022; }
}  // namespace

std::vector<ScalePair> scale_pair_candidates(double m, double vmax, int max_shift1, int max_shift2) {
  std::vector<ScalePair> out;
  // s1 keeps |v| * A / 2^s1 inside the 31-bit datapath.
  const int s1 = std::max(0, static_cast<int>(std::ceil(std::log2(std::max(vmax, 1.0)))) + kMantissaBits - 30);
  if (s1 > max_shift1 || !encode_scale16(m, max_shift2).ok()) return out;
  const double target = m * pow2(s1);  // A * B * 2^-s2 must come near it
  constexpr int32_t a_lo = 1 << (kMantissaBits - 1), a_hi = (1 << kMantissaBits) - 1;
  // Each A's pair (B rounded to nearest: positive, so floor(x + 1/2), exact at these
  // magnitudes) and its error; no pair: an infinite error.
  auto pair_of = [&](int32_t a, double& err) {
    const double r = target / a;  // what B * 2^-s2 must be
    const int s2 = std::min(kMantissaBits - frexp_exponent(r), max_shift2);
    err = std::numeric_limits<double>::infinity();
    if (s2 < 0) return ScalePair{};
    const int64_t b = static_cast<int64_t>(std::floor(r * pow2(s2) + 0.5));
    if (b <= 0 || b >= (int64_t{1} << kMantissaBits)) return ScalePair{};
    err = std::abs(double(a) * double(b) * pow2(-(s1 + s2)) - m);
    return ScalePair{Scale16{a, s1}, Scale16{static_cast<int32_t>(b), s2}};
  };
  std::vector<double> errs(static_cast<size_t>(a_hi - a_lo + 1));
  for (int32_t a = a_hi; a >= a_lo; --a) pair_of(a, errs[static_cast<size_t>(a - a_lo)]);
  // The kPairsKept-th smallest error bounds the pairs kept.
  std::vector<double> sorted = errs;
  const size_t keep = std::min(sorted.size(), kPairsKept);
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(keep - 1), sorted.end());
  const double bound = sorted[keep - 1];
  std::vector<std::pair<double, ScalePair>> found;
  for (int32_t a = a_hi; a >= a_lo && found.size() < keep; --a) {
    if (!(errs[static_cast<size_t>(a - a_lo)] <= bound)) continue;
    double err = 0;
    found.push_back({err, pair_of(a, err)});
  }
  // Closest first; equal errors keep the search order (larger A first).
  std::stable_sort(found.begin(), found.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  out.reserve(found.size());
  for (const auto& f : found)
    if (std::isfinite(f.first)) out.push_back(f.second);
  return out;
}

Result<ScalePair> encode_scale_pair(double m, double vmax, int max_shift1, int max_shift2) {
  TS_RETURN_IF_ERROR(encode_scale16(m, max_shift2).status());
  ScalePair best{};
  double best_err = 1e300;
  // s1 keeps |v| * A / 2^s1 inside the 31-bit datapath.
  const int s1 = std::max(0, static_cast<int>(std::ceil(std::log2(std::max(vmax, 1.0)))) + kMantissaBits - 30);
  if (s1 <= max_shift1) {
    const double target = m * pow2(s1);  // A * B * 2^-s2 must come near it
    for (int32_t a = (1 << kMantissaBits) - 1; a >= (1 << kMantissaBits) - kPairSearch; --a) {
      const double r = target / a;  // what B * 2^-s2 must be
      int s2 = kMantissaBits - frexp_exponent(r);
      if (s2 < 0) continue;
      s2 = std::min(s2, max_shift2);
      const int64_t b = static_cast<int64_t>(std::floor(r * pow2(s2) + 0.5));  // positive: llround, without the call
      if (b <= 0 || b >= (int64_t{1} << kMantissaBits)) continue;
      const double err = std::abs(double(a) * double(b) * pow2(-(s1 + s2)) - m);
      if (err < best_err) {
        best_err = err;
        best = {Scale16{a, s1}, Scale16{static_cast<int32_t>(b), s2}};
      }
    }
  }
  if (best_err == 1e300) return error(StatusCode::unsupported, "multiplier ", m, " cannot be split over two 16-bit stages");
  return best;
}

namespace detail {

// TFLite's rounding point: M = f * 2^e (f in [0.5, 1)); MultiplyByQuantizedMultiplier
// rounds acc * f * 2^max(e,0) to an integer, then divides by 2^max(-e,0) rounding half
// away from zero. Returns the second exponent k = max(-e, 0).
int tflite_shift(double m) {
  int e = 0;
  double f = std::frexp(m, &e);
  if (std::llround(f * double(int64_t{1} << 31)) == (int64_t{1} << 31)) ++e;
  return std::max(-e, 0);
}

// Fills the multiplier halves of the BS and BN table entries so that BN produces
// round(acc * M * 2^k) per channel (the bias halves are already in place).
//
// Per-channel rounding threshold. TFLite rounds each channel at its own shift k_c:
// rdiv(round(r), k_c) with r = acc * M * 2^k_c, which for r >= 0 equals
// floor(r / 2^k_c + 1/2 + 2^-(k_c+1)): a single rounding whose threshold sits 2^-(k_c+1)
// output steps below one half (and symmetrically for r < 0). With the common k > k_c the
// DPU's threshold sits only 2^-(k+1) below, so values in between round the other way. When
// the layer clamps negative outputs away (ReLU, or a zero point at the dtype's minimum),
// only r >= 0 matters and a constant per-channel offset D = 2^(k-k_c-1) - 1/2 (in units of
// 2^-k steps, added by the BN ALU before BN's rounding) moves the threshold exactly to
// TFLite's. Linear layers keep D = 0: the offset TFLite applies has the sign of r, and an
// ALU constant cannot follow the sign.
//
// One rounding (int8 conv / FC: floor(r + 1/2) for either sign) with k > 0: BN yields
// floor(r * 2^k) (an ALU offset of -1/2 BN output unit) and OUT_CVT divides by 2^k rounding
// half away from zero, which is floor(r + 1/2) for r >= 0 but, for r < 0, one step low
// wherever floor(r * 2^k) / 2^k is a negative half: 2^-k of the negative values (k = 6: one
// in 128 of a linear layer's outputs). A linear layer therefore lifts every value by
// kSingleRoundLift output steps in the same ALU offset, so that every output that does not
// clamp is rounded as a positive value, and OUT_CVT's offset takes the lift back off
// (NpuOp::req_lift). Layers that clamp negative outputs need no lift.
constexpr int32_t kSingleRoundLift = 256;  // output steps: r >= -256 covers every code that does not clamp

namespace {

// The BS -> BN -> OUT_CVT path of a plain conv task for one value (model.cpp's order and
// hw.h's arithmetic: BS ALU adds the bias (v already holds it), BS and BN multiply with a
// rounding shift, BN's ReLU / ReLU-X, OUT_CVT divides by 2^k and adds its offset).
//
// `by_sign`: the two passes of split_by_sign instead. The positive pass rounds v >= 0 as above
// (BN's ReLU leaves 0 for v < 0); the negative pass runs BS and BN with the multipliers
// negated and BS's ReLU, so for v < 0 it yields -(the positive pass's BN result for -v)
// (scale_round is odd), to which the merge adds 0, and OUT_CVT rounds that.
int32_t dpu_code(const NpuOp& op, const ScalePair& pr, int32_t alu, int k, int32_t out_offset, int64_t v, bool by_sign) {
  auto bn = [&](int64_t u) {
    const int32_t x = scale_round(sat32(u), pr.first.mantissa, pr.first.shift);
    return scale_round(sat32(int64_t(x) + alu), pr.second.mantissa, pr.second.shift);
  };
  int64_t o = 0;
  if (by_sign) {
    o = v >= 0 ? int64_t(scale_round(bn(v), 1, k)) : -int64_t(scale_round(bn(-v), 1, k));
  } else {
    int32_t x = bn(v);
    if (op.bn_relu) x = std::max(x, 0);
    if (op.bn_relux) x = std::min(x, op.bn_relux_value);
    o = scale_round(x, 1, k);
  }
  return static_cast<int32_t>(std::clamp<int64_t>(o + out_offset, -128, 127));
}

}  // namespace

Status encode_requant(NpuOp& op, int k, const RequantTarget* target, bool by_sign) {
  const int64_t oc = op.out_c;
  op.bn_alu = false;
  // BN's output holds (r + lift) * 2^k for every output step r a stored code can mean
  // (|r| <= 256): the lift only where that stays inside int32 (k <= 22). Then BS's headroom
  // for it (vmax + lift / M, below) and its BN offset (under 2^30 units) fit their fields;
  // were they not to, the channel's error below refuses the layer.
  const bool lift_fits = (int64_t{256} + kSingleRoundLift) << std::min(k, 40) <= std::numeric_limits<int32_t>::max();
  op.req_lift = op.single_round && k > 0 && !op.negatives_clamped && lift_fits ? kSingleRoundLift : 0;
  op.req_inexact_channels = 0;
  for (int64_t c = 0; c < oc; ++c) {
    // The accumulator range BS must carry without saturating: the worst case |sum| of the
    // weights x the largest input + |bias|, but no more than the values whose output lies
    // within 1024 steps of zero. Beyond that every output clamps (an output spans 256
    // steps), and so does a saturated BS result (at least ~500 steps after BN and OUT_CVT),
    // so the bound only costs precision: a smaller range lets BS multiply by up to 2^15
    // (a smaller shift s1), leaving BN a finer multiplier and its ALU offset finer units.
    double vmax = op.req_vmax[c];
    if (op.req_m[c] > 0) vmax = std::min(vmax, 1024.0 / op.req_m[c]);
    // The lift enters BN's input through the ALU: BS must leave it room.
    if (op.req_lift && op.req_m[c] > 0) vmax += op.req_lift / op.req_m[c];
    const int max_s1 = static_cast<int>(regs::DPU::BS_MUL_CFG__BS_MUL_SHIFT_VALUE.max());
    const int max_s2 = static_cast<int>(regs::DPU::BN_MUL_CFG__BN_MUL_SHIFT_VALUE.max());
    auto first = encode_scale_pair(op.req_m[c] * std::ldexp(1.0, k), vmax, max_s1, max_s2);
    if (!first.ok()) return error(StatusCode::unsupported, "scale of channel ", c, ": ", first.status().message());
    // The BN ALU constant of a pair, in units of its BN input.
    auto alu_of = [&](const ScalePair& pr) -> Result<int32_t> {
      if (op.single_round && k > 0) {
        // One rounding (int8 conv / FC in TFLite's builtin kernels): floor(r + 1/2). BN takes
        // (r + lift) * 2^k - 1/2 to the nearest integer, which is floor((r + lift) * 2^k) but
        // at exact integers; OUT_CVT's rounding division by 2^k then gives floor(r + 1/2) + lift
        // for r + lift >= 0 (see above), except at exact ties.
        const double units = (double(op.req_lift) * std::ldexp(1.0, k) - 0.5) * std::ldexp(1.0, pr.second.shift) /
                             pr.second.mantissa;
        if (!(std::abs(units) < 2147483647.0))
          return error(StatusCode::unsupported, "channel ", c, ": the BN offset ", units, " does not fit 32 bits");
        return static_cast<int32_t>(std::llround(units));
      }
      if (op.per_channel && op.negatives_clamped && op.req_shift[c] < k) {
        // A channel with k_c = 0 (M >= 1/2) rounds once, at 1/2: as the single rounding above.
        const double d = op.req_shift[c] > 0 ? std::ldexp(1.0, k - op.req_shift[c] - 1) - 0.5 : -0.5;  // units of 2^-k output steps
        return static_cast<int32_t>(std::llround(d * std::ldexp(1.0, pr.second.shift) / pr.second.mantissa));
      }
      return 0;
    };
    ScalePair pr = *first;
    TS_ASSIGN_OR_RETURN(int32_t alu, alu_of(pr));
    const bool zero_weights = op.req_zero_weights.size() == static_cast<size_t>(oc) && op.req_zero_weights[c];
    if (target && !zero_weights) {
      // TFLite's stored code of v (signed storage), and the v where it first reaches j.
      const q::Multiplier qm = q::quantize_multiplier(op.req_m[c]);
      auto want = [&](int64_t v) {
        const int32_t r = op.single_round ? q::multiply_single_round(sat32(v), qm) : q::multiply(sat32(v), qm);
        return std::clamp<int64_t>(int64_t(r) + target->out_zp, target->act_lo, target->act_hi) - target->off_out;
      };
      const int64_t lo = -static_cast<int64_t>(std::ceil(op.req_vmax[c])), hi = -lo;
      std::vector<int64_t> probes{lo, hi};
      for (int64_t j = want(lo) + 1; j <= want(hi); ++j) {
        // Bracket want(a0) < j <= want(a1) around v = (J - 1/2) / M (J the step before the
        // zero point and storage offset), widened until it holds, then bisected.
        const double guess = std::ceil((double(j + target->off_out - target->out_zp) - 0.5) / op.req_m[c]);
        int64_t a0 = lo, a1 = hi;
        if (std::abs(guess) < double(hi)) {
          const int64_t g = static_cast<int64_t>(guess);
          for (int64_t w = 2;; w *= 2) {
            const int64_t x0 = std::max(lo, g - w), x1 = std::min(hi, g + w);
            if ((x0 == lo || want(x0) < j) && want(x1) >= j) {
              if (x0 > lo || want(lo) < j) a0 = x0;
              a1 = x1;
              break;
            }
            if (x0 == lo && x1 == hi) break;
          }
        }
        while (a1 - a0 > 1) {
          const int64_t mid = a0 + (a1 - a0) / 2;
          (want(mid) >= j ? a1 : a0) = mid;
        }
        probes.push_back(a1 - 1), probes.push_back(a1);
      }
      std::vector<int64_t> wanted(probes.size());
      for (size_t i = 0; i < probes.size(); ++i) wanted[i] = want(probes[i]);
      const int32_t out_offset = target->out_zp - target->off_out - op.req_lift;
      // Probes a candidate missed are tried first on the next ones (most candidates fail on
      // the same near-ties), and counting stops once a candidate cannot beat the best.
      std::vector<size_t> order(probes.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      size_t front = 0;
      auto misses = [&](const ScalePair& p, int32_t a, size_t limit) {
        size_t m = 0;
        for (size_t o = 0; o < order.size() && m < limit; ++o) {
          const size_t i = order[o];
          if (dpu_code(op, p, a, k, out_offset, probes[i], by_sign) == wanted[i]) continue;
          ++m;
          if (o >= front) std::swap(order[o], order[front++]);
        }
        return m;
      };
      size_t best = misses(pr, alu, probes.size());
      auto search = [&](const std::vector<ScalePair>& cands) {
        for (size_t i = 0; best > 0 && i < cands.size(); ++i) {
          Result<int32_t> a = alu_of(cands[i]);
          if (!a.ok()) continue;
          const size_t m = misses(cands[i], *a, best);
          if (m < best) best = m, pr = cands[i], alu = *a;
        }
      };
      // The closest pairs over every 15-bit A, closest first.
      if (best > 0) search(scale_pair_candidates(op.req_m[c] * std::ldexp(1.0, k), vmax, max_s1, max_s2));
      op.req_inexact_channels += best > 0;
    }
    uint8_t* e = op.bs_table.data() + c * kBsEntryBytes;
    int16_t m = static_cast<int16_t>(pr.first.mantissa);
    std::memcpy(e + 4, &m, 2);
    e[6] = static_cast<uint8_t>(pr.first.shift);
    e = op.bs_table.data() + (oc + c) * kBsEntryBytes;
    m = static_cast<int16_t>(pr.second.mantissa);
    std::memcpy(e + 4, &m, 2);
    e[6] = static_cast<uint8_t>(pr.second.shift);
    std::memcpy(e, &alu, 4);
    if (zero_weights) {
      // Every input gives this channel the accumulator 0 + bias: its one value, through the
      // DPU's stages (BS add and multiply, BN add and multiply, OUT_CVT), must be TFLite's.
      // The channel has no other value, so any BS mantissa that gets it there is exact.
      const int32_t b = op.req_bias[c];
      const q::Multiplier qm = q::quantize_multiplier(op.req_m[c]);
      const int32_t want = op.single_round ? q::multiply_single_round(b, qm) : q::multiply(b, qm);
      auto dpu = [&](int32_t a) {
        const int32_t bs = scale_round(b, a, pr.first.shift);
        return scale_round(scale_round(sat32(int64_t(bs) + alu), pr.second.mantissa, pr.second.shift), 1, k) - op.req_lift;
      };
      int32_t a = pr.first.mantissa;
      for (int32_t step = 1; dpu(a) != want && step <= 64; ++step) {
        const int32_t cand = pr.first.mantissa + (step % 2 ? (step + 1) / 2 : -step / 2);
        if (cand > 0 && cand < (1 << kMantissaBits) && dpu(cand) == want) a = cand;
      }
      if (dpu(a) != want)
        return error(StatusCode::unsupported, "channel ", c, " (all weights zero) requantizes its bias ", b, " to ", dpu(a),
                     ", TFLite to ", want);
      m = static_cast<int16_t>(a);
      std::memcpy(op.bs_table.data() + c * kBsEntryBytes + 4, &m, 2);
    }
    op.bn_alu = op.bn_alu || alu != 0;
  }
  return Status::Ok();
}

}  // namespace detail

Result<std::pair<NpuOp, NpuOp>> split_by_sign(const NpuOp& op) {
  if (op.type != NpuOpType::conv && op.type != NpuOpType::depthwise) return error(StatusCode::unsupported, "not a convolution");
  if (!op.per_channel || op.negatives_clamped) return error(StatusCode::unsupported, "no per-channel rounding of negative values");
  if (op.ew_input != kNoTensor || op.bs_table.empty()) return error(StatusCode::unsupported, "already has an EW operand or no table");
  const int k = op.out_scale.shift;
  // The positive part comes back as (stored + 128) * 2^k through the 16-bit EW scale.
  if (k > 15) return error(StatusCode::unsupported, "output shift ", k, " leaves no EW scale for the positive part");
  std::pair<NpuOp, NpuOp> parts{op, op};
  NpuOp& pos = parts.first;
  pos.negatives_clamped = true;
  // Searched as the two passes together: TFLite's linear codes (no fused activation, or the
  // op would clamp its negatives) from the op's own output offset.
  RequantTarget linear;
  linear.out_zp = op.out_offset;
  TS_RETURN_IF_ERROR(encode_requant(pos, k, &linear, true));
  pos.bn_relu = true;
  pos.out_offset = -128;  // stores max(out - zp, 0) - 128: 0..255 steps
  pos.label += " [positive pass]";
  NpuOp& neg = parts.second;
  neg.negatives_clamped = true;
  neg.bs_table = pos.bs_table;
  neg.bn_alu = pos.bn_alu;
  for (int64_t e = 0; e < 2 * op.out_c; ++e) {  // BS and BN multipliers negated
    uint8_t* p = neg.bs_table.data() + e * kBsEntryBytes + 4;
    int16_t m;
    std::memcpy(&m, p, 2);
    m = static_cast<int16_t>(-m);
    std::memcpy(p, &m, 2);
  }
  neg.bs_relu = true;
  neg.bn_relu = neg.bn_relux = false;
  neg.ew_input = op.output;
  neg.ew_offset = 128;
  neg.ew_scale = Scale16{1 << k, 0};
  neg.ew_relu = neg.ew_relux = false;
  neg.label += " [negative pass + merge]";
  return parts;
}

}  // namespace tessera::rknpu
