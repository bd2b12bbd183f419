// The device model: buffer objects in a 32-bit NPU address space, and an executor that
// decodes each task's register command buffer (never the compiler's structures) and runs
// the CNA/CORE (convolution), DPU (bias, scale, ReLU, element-wise, output conversion) and
// PPU (pooling) semantics in int8/int16/int32, with a modelled time per task and job.
// The register conventions are those emit.cpp documents (docs/rknpu.md "Register streams").
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <map>
#include <vector>

#include "backend/rknpu/hw.h"
#include "backend/rknpu/lower.h"
#include "backend/rknpu/regcmd.h"
#include "backend/rknpu/transport.h"
#include "convert/dtype.h"
#include "convert/rk_weights.h"

namespace tessera::rknpu {

namespace {
namespace R = regs;
constexpr int64_t kAddrUnit = 16;


class Memory {
 public:
  explicit Memory(uint64_t space) : space_(space) {}

  Result<BoInfo> create(int64_t size) {
    int64_t bytes = (std::max<int64_t>(size, 1) + kPageBytes - 1) / kPageBytes * kPageBytes;
    // First fit above page 0 (address 0 is never handed out: the hardware treats it specially).
    uint64_t addr = kPageBytes;
    for (const auto& [a, h] : by_addr_) {
      if (a >= addr + bytes) break;
      addr = std::max<uint64_t>(addr, a + bos_.at(h).size);
    }
    if (addr + bytes > space_)
      return error(StatusCode::out_of_memory, "no room for a ", size, "-byte buffer object in the ", space_ >> 20,
                   " MiB NPU address space");
    BoInfo info;
    info.handle = next_handle_++;
    info.dma_address = static_cast<uint32_t>(addr);
    info.size = bytes;
    // calloc: the OS hands out zero pages lazily, so a large, sparsely used BO costs
    // address space here, not memory.
    uint8_t* mem = static_cast<uint8_t*>(std::calloc(static_cast<size_t>(bytes), 1));
    if (!mem) return error(StatusCode::out_of_memory, "host memory for a ", bytes, "-byte buffer object");
    Bo& bo = bos_[info.handle];
    bo.addr = info.dma_address;
    bo.bytes.reset(mem);
    bo.size = bytes;
    info.cpu = mem;
    by_addr_[addr] = info.handle;
    return info;
  }

  Status destroy(uint32_t handle) {
    auto it = bos_.find(handle);
    if (it == bos_.end()) return error(StatusCode::invalid_argument, "unknown buffer object ", handle);
    by_addr_.erase(it->second.addr);
    bos_.erase(it);
    return Status::Ok();
  }

  bool exists(uint32_t handle) const { return bos_.count(handle) != 0; }

  // The host bytes behind NPU addresses [addr, addr + len), which must lie in one BO.
  Result<uint8_t*> translate(uint64_t addr, int64_t len, const char* what) {
    auto it = by_addr_.upper_bound(addr);
    if (it != by_addr_.begin()) {
      --it;
      Bo& bo = bos_.at(it->second);
      if (addr >= bo.addr && addr + len <= bo.addr + bo.size) return bo.bytes.get() + (addr - bo.addr);
    }
    return error(StatusCode::out_of_range, what, ": NPU address 0x", std::hex, addr, std::dec, " (+", len,
                 " bytes) is outside every buffer object");
  }

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  struct Bo {
    uint32_t addr = 0;
    int64_t size = 0;
    std::unique_ptr<uint8_t, FreeDeleter> bytes;
  };
  uint64_t space_;
  std::map<uint32_t, Bo> bos_;
  std::map<uint64_t, uint32_t> by_addr_;
  uint32_t next_handle_ = 1;
};

// A feature cube in NC1HWC2: [ceil(C/16)][H][W][16] int8 at `base`.
struct Cube {
  uint8_t* base = nullptr;
  int64_t line = 0, surf = 0;
  int8_t& at(int64_t c, int64_t y, int64_t x) const {
    return reinterpret_cast<int8_t*>(base)[(c / kC2) * surf + y * line + x * kC2 + c % kC2];
  }
};

// The bytes of an NC1HWC2 cube at `addr`, which must lie in one BO. Lines and surfaces must
// not overlap (line >= w * 16, surf >= h * line when there are several surfaces): the model
// does not define aliasing strides, and they would let a small BO stand for a huge cube.
// `c2`: channels per 16-byte atom (16 int8, 8 fp16, 4 fp32).
Result<Cube> map_cube(Memory& m, uint64_t addr, int64_t channels, int64_t h, int64_t w, int64_t line, int64_t surf,
                      const char* what, int64_t c2 = kC2) {
  constexpr int64_t kAtom = 16;
  if (channels < 1 || h < 1 || w < 1) return error(StatusCode::invalid_argument, what, ": empty cube");
  if ((h > 1 && line < w * kAtom) || (channels > c2 && surf < h * line))
    return error(StatusCode::invalid_argument, what, ": line stride ", line, " / surface stride ", surf,
                 " overlap a ", channels, "x", h, "x", w, " cube");
  int64_t len = ((channels + c2 - 1) / c2 - 1) * surf + (h - 1) * line + w * kAtom;
  TS_ASSIGN_OR_RETURN(uint8_t * p, m.translate(addr, len, what));
  return Cube{p, line, surf};
}

class Executor {
 public:
  Executor(Memory& m, const RegisterFile& r) : m_(m), r_(r) {}

  Result<TaskTiming> run() {
    TaskTiming t;
    bool cna = r_.get(R::CNA::OPERATION_ENABLE__OP_EN), dpu = r_.get(R::DPU::OPERATION_ENABLE__OP_EN),
         ppu = r_.get(R::PPU::OPERATION_ENABLE__OP_EN);
    if (!r_.get(R::PC::OPERATION_ENABLE__OP_EN))
      return error(StatusCode::invalid_argument, "task never writes PC.OPERATION_ENABLE");
    if (cna) {
      if (!dpu || r_.get(R::DPU::FEATURE_MODE_CFG__FLYING_MODE))
        return error(StatusCode::invalid_argument, "convolution task without the DPU on the fly");
      if (r_.get(R::CNA::CONV_CON1__PROC_PRECISION) == kPrecisionFp16) {
        TS_RETURN_IF_ERROR(matmul_fp16(t));
        TS_RETURN_IF_ERROR(post_process_float(t));
      } else if (r_.get(R::DPU::DATA_FORMAT__OUT_PRECISION) == kPrecisionInt32) {
        // int8 x int8 -> int32 (a matmul, rknpu-matmul.md): the int8 convolution's MACs,
        // the raw int32 sums written as (N/4, M, 4).
        TS_RETURN_IF_ERROR(check_int8_matmul());
        int32_out_ = true;
        TS_RETURN_IF_ERROR(convolve(t));
        TS_RETURN_IF_ERROR(post_process_int32(t));
      } else {
        TS_RETURN_IF_ERROR(convolve(t));
        TS_RETURN_IF_ERROR(post_process(t));
      }
    } else if (dpu) {
      TS_RETURN_IF_ERROR(read_mrdma(t));
      TS_RETURN_IF_ERROR(post_process(t));
    }
    if (ppu) TS_RETURN_IF_ERROR(pool(t));
    if (!cna && !dpu && !ppu) return error(StatusCode::invalid_argument, "task enables no block");
    return t;  // MAC time and DRAM bytes; the timeline gives the DRAM time (Timeline::place)
  }

 private:
  // CNA + CORE: acc_[c][y][x] = sum over the window of input * weight, saturated to int32.
  Status convolve(TaskTiming& t) {
    const bool dw = r_.get(R::CNA::CONV_CON1__CONV_MODE) == kConvModeDepthwise;
    if (dw != (r_.get(R::CORE::MISC_CFG__DW_EN) != 0)) return error(StatusCode::invalid_argument, "CNA and CORE disagree on depthwise");
    const uint32_t prec = r_.get(R::CNA::CONV_CON1__PROC_PRECISION);
    if (prec != kPrecisionInt8 && prec != kPrecisionInt16)
      return error(StatusCode::unsupported, "processing precision ", prec, " is not modelled");
    const int eb = prec == kPrecisionInt16 ? 2 : 1;
    const int64_t in_w = r_.get(R::CNA::DATA_SIZE0__DATAIN_WIDTH), in_h = r_.get(R::CNA::DATA_SIZE0__DATAIN_HEIGHT);
    const int64_t icp = r_.get(R::CNA::DATA_SIZE1__DATAIN_CHANNEL), ic = r_.get(R::CNA::DATA_SIZE1__DATAIN_CHANNEL_REAL) + 1;
    const int64_t kw = r_.get(R::CNA::WEIGHT_SIZE2__WEIGHT_WIDTH), kh = r_.get(R::CNA::WEIGHT_SIZE2__WEIGHT_HEIGHT);
    const int64_t sx = r_.get(R::CNA::CONV_CON3__CONV_X_STRIDE), sy = r_.get(R::CNA::CONV_CON3__CONV_Y_STRIDE);
    const int64_t pad_t = r_.get(R::CNA::PAD_CON0__PAD_TOP), pad_l = r_.get(R::CNA::PAD_CON0__PAD_LEFT);
    const int32_t pad_value = r_.get_signed(R::CNA::PAD_CON1__PAD_VALUE);
    oh_ = r_.get(R::CORE::DATAOUT_SIZE_0__DATAOUT_HEIGHT) + 1;
    ow_ = r_.get(R::CORE::DATAOUT_SIZE_0__DATAOUT_WIDTH) + 1;
    oc_ = r_.get(R::CORE::DATAOUT_SIZE_1__DATAOUT_CHANNEL) + 1;
    if (ow_ != r_.get(R::CNA::DATA_SIZE2__DATAOUT_WIDTH) || oc_ != r_.get(R::CNA::WEIGHT_SIZE2__WEIGHT_KERNELS))
      return error(StatusCode::invalid_argument, "CNA and CORE output sizes disagree");
    if (sx == 0 || sy == 0 || kw == 0 || kh == 0 || in_w == 0 || in_h == 0)
      return error(StatusCode::invalid_argument, "zero stride, kernel or input size");
    if (dw && ic != oc_) return error(StatusCode::invalid_argument, "depthwise with ", ic, " inputs and ", oc_, " outputs");
    // The output cube must fit its BO before any work is done for it (post_process writes it).
    TS_RETURN_IF_ERROR((int32_out_ ? map_float_destination() : map_destination()).status());
    const bool bypass = r_.get(R::CNA::CVT_CON0__CVT_BYPASS);
    const int32_t cvt_off = r_.get_signed(R::CNA::CVT_CON1__CVT_OFFSET0);
    const int32_t cvt_scale = static_cast<int32_t>(r_.get(R::CNA::CVT_CON1__CVT_SCALE0));
    const int cvt_trunc = static_cast<int>(r_.get(R::CNA::CVT_CON0__CVT_TRUNCATE_0));
    TS_ASSIGN_OR_RETURN(Cube in, map_cube(m_, r_.get(R::CNA::FEATURE_DATA_ADDR__FEATURE_BASE_ADDR), ic, in_h, in_w,
                                          r_.get(R::CNA::DMA_CON1__LINE_STRIDE), r_.get(R::CNA::DMA_CON2__SURF_STRIDE),
                                          "CNA feature data"));
    // The converted input band: [in_h][in_w][ic] for a conv (channels innermost, as in the
    // weights' rows, so that the MAC loop reads both contiguously), [ic][in_h][in_w] for a
    // depthwise conv (one channel's window at a time); padding applied at fetch.
    std::vector<int32_t> x(static_cast<size_t>(ic * in_h * in_w));
    for (int64_t c = 0; c < ic; ++c)
      for (int64_t y = 0; y < in_h; ++y)
        for (int64_t xx = 0; xx < in_w; ++xx) {
          int32_t v = in.at(c, y, xx);
          if (!bypass) v = static_cast<int32_t>((int64_t(v + cvt_off) * cvt_scale) >> cvt_trunc);
          x[dw ? (c * in_h + y) * in_w + xx : (y * in_w + xx) * ic + c] = v;
        }
    // Weights, [oc][kh][kw][ic or 1].
    const int64_t wbytes = r_.get(R::CNA::WEIGHT_SIZE0__WEIGHT_BYTES);
    TS_ASSIGN_OR_RETURN(uint8_t * wp, m_.translate(r_.get(R::CNA::DCOMP_ADDR0__DECOMPRESS_ADDR0), wbytes, "CNA weights"));
    const int64_t wic = dw ? 1 : ic;
    if (oc_ * kh * kw * wic * eb > wbytes)
      return error(StatusCode::invalid_argument, "WEIGHT_BYTES ", wbytes, " hold fewer than the ", oc_, "x", kh, "x", kw, "x", wic,
                   " weights");
    std::vector<int32_t> w(static_cast<size_t>(oc_ * kh * kw * wic));
    auto elem = [&](int64_t index) -> Result<int32_t> {
      if ((index + 1) * eb > wbytes) return error(StatusCode::out_of_range, "weight index beyond WEIGHT_BYTES");
      if (eb == 1) return int32_t(static_cast<int8_t>(wp[index]));
      int16_t s;
      std::memcpy(&s, wp + index * 2, 2);
      return int32_t(s);
    };
    if (dw) {
      convert::RkDwGeometry g{kh, kw, oc_, (oc_ + kC2 - 1) / kC2 * kC2};
      for (int64_t c = 0; c < oc_; ++c)
        for (int64_t y = 0; y < kh; ++y)
          for (int64_t xx = 0; xx < kw; ++xx) {
            TS_ASSIGN_OR_RETURN(w[(c * kh + y) * kw + xx], elem(convert::rk_dw_weight_index(g, y, xx, c)));
          }
    } else {
      if (icp != convert::rk_conv_padded_ic(ic)) return error(StatusCode::invalid_argument, "DATAIN_CHANNEL is not the padded channel count");
      convert::RkConvGeometry g{oc_, kh, kw, ic, (oc_ + 1) / 2 * 2, icp};
      for (int64_t o = 0; o < oc_; ++o)
        for (int64_t y = 0; y < kh; ++y)
          for (int64_t xx = 0; xx < kw; ++xx)
            for (int64_t i = 0; i < ic; ++i) {
              TS_ASSIGN_OR_RETURN(w[((o * kh + y) * kw + xx) * ic + i], elem(convert::rk_conv_weight_index(g, o, y, xx, i)));
            }
    }
    // When every input and weight fits 16 bits and no tap's channel sum can pass 32 bits (the
    // compiler's streams always), the channel sums use 16-bit operands and a 32-bit sum,
    // which the host vectorizes: the same integers, several times faster.
    int64_t xmax = 0, wmax = 0;
    for (int32_t v : x) xmax = std::max<int64_t>(xmax, std::abs(int64_t(v)));
    for (int32_t v : w) wmax = std::max<int64_t>(wmax, std::abs(int64_t(v)));
    const bool narrow = !dw && xmax <= INT16_MAX && wmax <= INT16_MAX && ic * xmax * wmax <= INT32_MAX;
    std::vector<int16_t> x16, w16;
    if (narrow) {
      x16.assign(x.begin(), x.end());
      w16.assign(w.begin(), w.end());
    }
    const int clip_shift = static_cast<int>(r_.get(R::CORE::CLIP_TRUNCATE__CLIP_TRUNCATE));
    acc_.assign(static_cast<size_t>(oc_ * oh_ * ow_), 0);
    for (int64_t o = 0; o < oc_; ++o)
      for (int64_t oy = 0; oy < oh_; ++oy)
        for (int64_t ox = 0; ox < ow_; ++ox) {
          int64_t sum = 0;
          for (int64_t ky = 0; ky < kh; ++ky) {
            int64_t iy = oy * sy - pad_t + ky;
            for (int64_t kx = 0; kx < kw; ++kx) {
              int64_t ix = ox * sx - pad_l + kx;
              bool inside = iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
              const int64_t wo = ((o * kh + ky) * kw + kx) * wic;
              const int32_t* wr = &w[wo];
              if (dw) {
                sum += int64_t(inside ? x[(o * in_h + iy) * in_w + ix] : pad_value) * wr[0];
              } else if (inside && narrow) {
                const int16_t *xr = &x16[(iy * in_w + ix) * ic], *wr16 = &w16[wo];
                int32_t s = 0;
                for (int64_t i = 0; i < ic; ++i) s += int32_t(xr[i]) * wr16[i];
                sum += s;
              } else if (inside) {
                const int32_t* xr = &x[(iy * in_w + ix) * ic];
                for (int64_t i = 0; i < ic; ++i) sum += int64_t(xr[i]) * wr[i];
              } else {
                for (int64_t i = 0; i < ic; ++i) sum += int64_t(pad_value) * wr[i];
              }
            }
          }
          // The 34-bit accumulator is saturated to 32 bits (CLIP_TRUNCATE 0: no shift).
          acc_[(o * oh_ + oy) * ow_ + ox] = sat32(sum >> clip_shift);
        }
    // Time: the MAC array works on padded atoms (16 output channels, padded input channels).
    const int64_t oc16 = (oc_ + kC2 - 1) / kC2 * kC2;
    double rate = double(kMacsPerCycle) * (eb == 2 ? kInt16MacRateFactor : 1.0) * (dw ? kDepthwiseMacEfficiency : 1.0);
    t.hw_macs = oh_ * ow_ * oc16 * kh * kw * (dw ? 1 : icp);
    t.mac_seconds = double(t.hw_macs) / rate / kClockHz;
    t.dram_bytes += (ic + kC2 - 1) / kC2 * in_h * in_w * kC2;                 // input band
    if (!r_.get(R::CNA::CBUF_CON0__WEIGHT_REUSE)) t.dram_bytes += wbytes;   // weights unless resident
    return Status::Ok();
  }

  // fp16 1x1 convolution (a matrix multiplication, rknpu-matmul.md): the CNA reads fp16
  // NC1HWC2 data (C2 = 8: 16-byte atoms) and rk_matmul_weight fp16 blocks; the CORE
  // multiplies in fp16 (products exact in fp32) and accumulates in fp32, into facc_.
  // Accumulation order (an assumption, docs/rknpu.md): one fp32 partial sum per lane of a
  // 16-byte atom (k mod 8), each summed in K order, then the eight lanes added in order.
  Status matmul_fp16(TaskTiming& t) {
    if (r_.get(R::CNA::CONV_CON1__IN_PRECISION) != kPrecisionFp16 || r_.get(R::CORE::MISC_CFG__PROC_PRECISION) != kPrecisionFp16)
      return error(StatusCode::unsupported, "fp16 processing with CNA input precision ", r_.get(R::CNA::CONV_CON1__IN_PRECISION),
                   " and CORE precision ", r_.get(R::CORE::MISC_CFG__PROC_PRECISION), " is not modelled");
    if (r_.get(R::CNA::CONV_CON1__CONV_MODE) != kConvModeDirect || r_.get(R::CORE::MISC_CFG__DW_EN))
      return error(StatusCode::unsupported, "fp16 processing is modelled for direct convolution only");
    const int64_t in_w = r_.get(R::CNA::DATA_SIZE0__DATAIN_WIDTH), in_h = r_.get(R::CNA::DATA_SIZE0__DATAIN_HEIGHT);
    const int64_t kp = r_.get(R::CNA::DATA_SIZE1__DATAIN_CHANNEL), k = r_.get(R::CNA::DATA_SIZE1__DATAIN_CHANNEL_REAL) + 1;
    if (r_.get(R::CNA::WEIGHT_SIZE2__WEIGHT_WIDTH) != 1 || r_.get(R::CNA::WEIGHT_SIZE2__WEIGHT_HEIGHT) != 1 ||
        r_.get(R::CNA::CONV_CON3__CONV_X_STRIDE) != 1 || r_.get(R::CNA::CONV_CON3__CONV_Y_STRIDE) != 1 ||
        r_.get(R::CNA::PAD_CON0__PAD_TOP) != 0 || r_.get(R::CNA::PAD_CON0__PAD_LEFT) != 0)
      return error(StatusCode::unsupported, "fp16 processing is modelled for 1x1 kernels, stride 1, no padding (matmul)");
    oh_ = r_.get(R::CORE::DATAOUT_SIZE_0__DATAOUT_HEIGHT) + 1;
    ow_ = r_.get(R::CORE::DATAOUT_SIZE_0__DATAOUT_WIDTH) + 1;
    oc_ = r_.get(R::CORE::DATAOUT_SIZE_1__DATAOUT_CHANNEL) + 1;
    if (ow_ != r_.get(R::CNA::DATA_SIZE2__DATAOUT_WIDTH) || oc_ != r_.get(R::CNA::WEIGHT_SIZE2__WEIGHT_KERNELS) ||
        oh_ != in_h || ow_ != in_w)
      return error(StatusCode::invalid_argument, "CNA and CORE sizes disagree (a 1x1 kernel keeps the input's size)");
    if (kp != (k + kMatmulKGroup - 1) / kMatmulKGroup * kMatmulKGroup)
      return error(StatusCode::invalid_argument, "DATAIN_CHANNEL ", kp, " is not K = ", k, " rounded up to 32");
    TS_RETURN_IF_ERROR(map_float_destination().status());
    TS_ASSIGN_OR_RETURN(Cube in, map_cube(m_, r_.get(R::CNA::FEATURE_DATA_ADDR__FEATURE_BASE_ADDR), k, in_h, in_w,
                                          r_.get(R::CNA::DMA_CON1__LINE_STRIDE), r_.get(R::CNA::DMA_CON2__SURF_STRIDE),
                                          "CNA feature data", kFp16C2));
    const int64_t per_kernel = r_.get(R::CNA::WEIGHT_SIZE1__WEIGHT_BYTES_PER_KERNEL);
    const int64_t wbytes = r_.get(R::CNA::WEIGHT_SIZE0__WEIGHT_BYTES);
    const convert::RkMatmulGeometry g = convert::rk_matmul_geometry(oc_, k, 2);
    if (per_kernel != kp * 2 || wbytes < g.elements() * 2)
      return error(StatusCode::invalid_argument, "WEIGHT_BYTES ", wbytes, " / per kernel ", per_kernel, " do not hold ", oc_,
                   " kernels of ", kp, " fp16 values");
    TS_ASSIGN_OR_RETURN(uint8_t * wp, m_.translate(r_.get(R::CNA::DCOMP_ADDR0__DECOMPRESS_ADDR0), wbytes, "CNA weights"));
    // A row of fp32 values per position (K padded with zeros to a whole atom) and per kernel.
    const int64_t k8 = (k + kFp16C2 - 1) / kFp16C2 * kFp16C2;
    std::vector<float> a(static_cast<size_t>(in_h * in_w * k8), 0.0f), b(static_cast<size_t>(oc_ * k8), 0.0f);
    for (int64_t y = 0; y < in_h; ++y)
      for (int64_t x = 0; x < in_w; ++x)
        for (int64_t c = 0; c < k; ++c) {
          uint16_t h;
          std::memcpy(&h, in.base + (c / kFp16C2) * in.surf + y * in.line + x * 16 + (c % kFp16C2) * 2, 2);
          a[(y * in_w + x) * k8 + c] = convert::f16_to_f32(h);
        }
    for (int64_t o = 0; o < oc_; ++o)
      for (int64_t c = 0; c < k; ++c) {
        uint16_t h;
        std::memcpy(&h, wp + convert::rk_matmul_weight_index(g, o, c) * 2, 2);
        b[o * k8 + c] = convert::f16_to_f32(h);
      }
    facc_.assign(static_cast<size_t>(oc_ * oh_ * ow_), 0.0f);
    for (int64_t p = 0; p < in_h * in_w; ++p) {
      const float* ar = &a[p * k8];
      for (int64_t o = 0; o < oc_; ++o) {
        const float* br = &b[o * k8];
        float lane[kFp16C2] = {};
        for (int64_t c = 0; c < k8; c += kFp16C2)
          for (int64_t j = 0; j < kFp16C2; ++j) lane[j] += ar[c + j] * br[c + j];
        float sum = 0.0f;
        for (int64_t j = 0; j < kFp16C2; ++j) sum += lane[j];
        facc_[o * oh_ * ow_ + p] = sum;  // [oc][oh][ow]
      }
    }
    // Time: padded atoms (16 kernels, K to 32) at the fp16 rate.
    const int64_t oc16 = (oc_ + kMatmulFp16Kernels - 1) / kMatmulFp16Kernels * kMatmulFp16Kernels;
    t.hw_macs = oh_ * ow_ * oc16 * kp;
    t.mac_seconds = double(t.hw_macs) / double(kFp16MacsPerCycle) / kClockHz;
    t.weight_stream = true;
    t.dram_bytes += (k + kFp16C2 - 1) / kFp16C2 * in_h * in_w * 16;
    if (!r_.get(R::CNA::CBUF_CON0__WEIGHT_REUSE)) t.dram_bytes += wbytes;
    return Status::Ok();
  }

  // The DPU's fp32 destination cube (C2 = 4: 16-byte atoms), oc_ x oh_ x ow_ at DST_BASE_ADDR.
  Result<Cube> map_float_destination() {
    const int64_t surf = int64_t(r_.get(R::DPU::DST_SURF_STRIDE__DST_SURF_STRIDE)) * kAddrUnit;
    return map_cube(m_, r_.get(R::DPU::DST_BASE_ADDR__DST_BASE_ADDR), oc_, oh_, ow_, ow_ * 16, surf, "DPU destination",
                    kFp32OutC2);
  }

  // DPU after an fp16 matmul: BS's ALU may add an fp32 operand per channel (the table's
  // first 4 bytes, or the register's bits); the fp32 sums are written as fp32. Every other
  // stage must be bypassed: their float behaviour is not documented, so it is not modelled.
  Status post_process_float(TaskTiming& t) {
    if (ow_ != r_.get(R::DPU::DATA_CUBE_WIDTH__WIDTH) + 1 || oh_ != r_.get(R::DPU::DATA_CUBE_HEIGHT__HEIGHT) + 1 ||
        oc_ != r_.get(R::DPU::DATA_CUBE_CHANNEL__CHANNEL) + 1)
      return error(StatusCode::invalid_argument, "DPU cube size differs from its source");
    if (r_.get(R::DPU::DATA_FORMAT__IN_PRECISION) != kPrecisionFp16 || r_.get(R::DPU::DATA_FORMAT__PROC_PRECISION) != kPrecisionFp16 ||
        r_.get(R::DPU::DATA_FORMAT__OUT_PRECISION) != kPrecisionFp32)
      return error(StatusCode::unsupported, "DPU precisions in ", r_.get(R::DPU::DATA_FORMAT__IN_PRECISION), " proc ",
                   r_.get(R::DPU::DATA_FORMAT__PROC_PRECISION), " out ", r_.get(R::DPU::DATA_FORMAT__OUT_PRECISION),
                   " after an fp16 matmul are not modelled (fp16 in, fp32 out)");
    const bool bs = !r_.get(R::DPU::BS_CFG__BS_BYPASS);
    const bool bs_alu = bs && !r_.get(R::DPU::BS_CFG__BS_ALU_BYPASS);
    if (bs && (!r_.get(R::DPU::BS_CFG__BS_MUL_BYPASS) || !r_.get(R::DPU::BS_CFG__BS_RELU_BYPASS) || r_.get(R::DPU::BS_CFG__BS_RELUX_EN)))
      return error(StatusCode::unsupported, "BS multiplier / ReLU on fp32 sums are not modelled");
    if (bs_alu && r_.get(R::DPU::BS_CFG__BS_ALU_ALGO) != kAluAlgoAdd)
      return error(StatusCode::unsupported, "BS ALU algorithm ", r_.get(R::DPU::BS_CFG__BS_ALU_ALGO), " is not modelled");
    if (!r_.get(R::DPU::BN_CFG__BN_BYPASS) || !r_.get(R::DPU::EW_CFG__EW_BYPASS))
      return error(StatusCode::unsupported, "BN / EW stages on fp32 sums are not modelled");
    if (r_.get(R::DPU::OUT_CVT_SCALE__OUT_CVT_SCALE) != 1 || r_.get(R::DPU::OUT_CVT_SHIFT__OUT_CVT_SHIFT) != 0 ||
        r_.get(R::DPU::OUT_CVT_SCALE__FP32TOFP16_EN) || r_.get(R::DPU::OUT_CVT_OFFSET__OUT_CVT_OFFSET) != 0)
      return error(StatusCode::unsupported, "an fp32 output conversion other than scale 1, shift 0, offset 0 is not modelled");
    const bool alu_table = bs_alu && r_.get(R::DPU::BS_CFG__BS_ALU_SRC);
    if (alu_table && !(r_.get(R::DPU_RDMA::RDMA_BRDMA_CFG__BRDMA_DATA_USE) & 1u))
      return error(StatusCode::invalid_argument, "BS reads its operands from memory but BRDMA does not fetch them");
    const uint8_t* table = nullptr;
    if (alu_table) {
      TS_ASSIGN_OR_RETURN(uint8_t * p, m_.translate(r_.get(R::DPU_RDMA::RDMA_BS_BASE_ADDR__BS_BASE_ADDR), oc_ * kBsEntryBytes, "BS table"));
      table = p;
      t.dram_bytes += oc_ * kBsEntryBytes;
    }
    const uint32_t reg_bits = r_.get(R::DPU::BS_ALU_CFG__BS_ALU_OPERAND);
    TS_ASSIGN_OR_RETURN(Cube dst, map_float_destination());
    for (int64_t c = 0; c < oc_; ++c) {
      uint32_t bits = reg_bits;
      if (table) std::memcpy(&bits, table + c * kBsEntryBytes, 4);
      float add;
      std::memcpy(&add, &bits, 4);
      for (int64_t y = 0; y < oh_; ++y)
        for (int64_t x = 0; x < ow_; ++x) {
          float v = facc_[(c * oh_ + y) * ow_ + x];
          if (bs_alu) v += add;
          std::memcpy(dst.base + (c / kFp32OutC2) * dst.surf + y * dst.line + x * 16 + (c % kFp32OutC2) * 4, &v, 4);
        }
    }
    t.dram_bytes += (oc_ + kFp32OutC2 - 1) / kFp32OutC2 * oh_ * ow_ * 16;
    return Status::Ok();
  }

  // An int8 x int8 -> int32 task (DPU OUT_PRECISION int32): every precision field must say
  // int8 ([S1] gen_matmul_int8), the kernel 1x1, stride 1, no padding, no input conversion.
  Status check_int8_matmul() {
    struct Field {
      const char* name;
      uint32_t value;
    };
    const Field fields[] = {{"CNA CONV_CON1.IN_PRECISION", r_.get(R::CNA::CONV_CON1__IN_PRECISION)},
                            {"CNA CONV_CON1.PROC_PRECISION", r_.get(R::CNA::CONV_CON1__PROC_PRECISION)},
                            {"CORE MISC_CFG.PROC_PRECISION", r_.get(R::CORE::MISC_CFG__PROC_PRECISION)},
                            {"DPU DATA_FORMAT.IN_PRECISION", r_.get(R::DPU::DATA_FORMAT__IN_PRECISION)},
                            {"DPU DATA_FORMAT.PROC_PRECISION", r_.get(R::DPU::DATA_FORMAT__PROC_PRECISION)}};
    for (const Field& f : fields)
      if (f.value != kPrecisionInt8)
        return error(StatusCode::unsupported, f.name, " = ", f.value, " with DPU OUT_PRECISION int32 (4) is not modelled (int8 = 0 only)");
    if (r_.get(R::CNA::CONV_CON1__CONV_MODE) != kConvModeDirect || r_.get(R::CORE::MISC_CFG__DW_EN))
      return error(StatusCode::unsupported, "CNA CONV_MODE ", r_.get(R::CNA::CONV_CON1__CONV_MODE),
                   " with int32 output is not modelled (direct convolution only)");
    if (r_.get(R::CNA::WEIGHT_SIZE2__WEIGHT_WIDTH) != 1 || r_.get(R::CNA::WEIGHT_SIZE2__WEIGHT_HEIGHT) != 1 ||
        r_.get(R::CNA::CONV_CON3__CONV_X_STRIDE) != 1 || r_.get(R::CNA::CONV_CON3__CONV_Y_STRIDE) != 1 ||
        r_.get(R::CNA::PAD_CON0__PAD_TOP) != 0 || r_.get(R::CNA::PAD_CON0__PAD_LEFT) != 0 ||
        r_.get(R::CNA::DATA_SIZE0__DATAIN_WIDTH) != 1)
      return error(StatusCode::unsupported, "int32 output is modelled for the matmul only (CNA WEIGHT_WIDTH/HEIGHT 1, "
                                            "stride 1, no padding, DATAIN_WIDTH 1)");
    if (!r_.get(R::CNA::CVT_CON0__CVT_BYPASS))
      return error(StatusCode::unsupported, "CNA CVT_CON0.CVT_BYPASS = 0 with int32 output is not modelled");
    if (r_.get(R::CORE::CLIP_TRUNCATE__CLIP_TRUNCATE) != 0)
      return error(StatusCode::unsupported, "CORE CLIP_TRUNCATE ", r_.get(R::CORE::CLIP_TRUNCATE__CLIP_TRUNCATE),
                   " with int32 output is not modelled");
    return Status::Ok();
  }

  // DPU after int8 MACs with int32 output: every stage bypassed, the CORE's int32 sums
  // written as int32 (N/4, M, 4): 16-byte atoms of 4 channels ([S1]; the scales and the
  // bias are the host's). The empirical SIZE_E and SURFACE_ADD values of [S1] are checked.
  Status post_process_int32(TaskTiming& t) {
    if (ow_ != r_.get(R::DPU::DATA_CUBE_WIDTH__WIDTH) + 1 || oh_ != r_.get(R::DPU::DATA_CUBE_HEIGHT__HEIGHT) + 1 ||
        oc_ != r_.get(R::DPU::DATA_CUBE_CHANNEL__CHANNEL) + 1)
      return error(StatusCode::invalid_argument, "DPU cube size differs from its source");
    if (!r_.get(R::DPU::BS_CFG__BS_BYPASS) || !r_.get(R::DPU::BN_CFG__BN_BYPASS) || !r_.get(R::DPU::EW_CFG__EW_BYPASS))
      return error(StatusCode::unsupported, "DPU BS/BN/EW stages on int32 output are not modelled (BS_BYPASS ",
                   r_.get(R::DPU::BS_CFG__BS_BYPASS), ", BN_BYPASS ", r_.get(R::DPU::BN_CFG__BN_BYPASS), ", EW_BYPASS ",
                   r_.get(R::DPU::EW_CFG__EW_BYPASS), ")");
    if (r_.get(R::DPU::OUT_CVT_SCALE__OUT_CVT_SCALE) != 1 || r_.get(R::DPU::OUT_CVT_SHIFT__OUT_CVT_SHIFT) != 0 ||
        r_.get(R::DPU::OUT_CVT_SCALE__FP32TOFP16_EN) || r_.get(R::DPU::OUT_CVT_OFFSET__OUT_CVT_OFFSET) != 0)
      return error(StatusCode::unsupported, "DPU OUT_CVT other than scale 1, shift 0, offset 0 on int32 output is not modelled");
    for (auto f : {R::DPU::BS_OW_CFG__SIZE_E_0, R::DPU::BS_OW_CFG__SIZE_E_1, R::DPU::BS_OW_CFG__SIZE_E_2})
      if (r_.get(f) != kMatmulSizeEInt32)
        return error(StatusCode::unsupported, "DPU BS_OW_CFG.SIZE_E = ", r_.get(f), " with int32 output ([S1]: ",
                     kMatmulSizeEInt32, ")");
    const int64_t surf = int64_t(r_.get(R::DPU::DST_SURF_STRIDE__DST_SURF_STRIDE)) * kAddrUnit;
    if (int64_t(r_.get(R::DPU::SURFACE_ADD__SURF_ADD)) != surf / 16 * kMatmulSurfAddInt32)
      return error(StatusCode::unsupported, "DPU SURFACE_ADD ", r_.get(R::DPU::SURFACE_ADD__SURF_ADD),
                   " is not rows x ", kMatmulSurfAddInt32, " for int32 output ([S1])");
    TS_ASSIGN_OR_RETURN(Cube dst, map_float_destination());
    for (int64_t c = 0; c < oc_; ++c)
      for (int64_t y = 0; y < oh_; ++y)
        for (int64_t x = 0; x < ow_; ++x) {
          const int32_t v = acc_[(c * oh_ + y) * ow_ + x];
          std::memcpy(dst.base + (c / kFp32OutC2) * dst.surf + y * dst.line + x * 16 + (c % kFp32OutC2) * 4, &v, 4);
        }
    t.weight_stream = true;
    t.dram_bytes += (oc_ + kFp32OutC2 - 1) / kFp32OutC2 * oh_ * ow_ * 16;
    return Status::Ok();
  }

  // The DPU's destination cube, oc_ x oh_ x ow_ at DST_BASE_ADDR.
  Result<Cube> map_destination() {
    const int64_t surf = int64_t(r_.get(R::DPU::DST_SURF_STRIDE__DST_SURF_STRIDE)) * kAddrUnit;
    return map_cube(m_, r_.get(R::DPU::DST_BASE_ADDR__DST_BASE_ADDR), oc_, oh_, ow_, ow_ * kC2, surf, "DPU destination");
  }

  // DPU_RDMA main operand (element-wise tasks): the int8 cube becomes the DPU's input.
  Status read_mrdma(TaskTiming& t) {
    if (!r_.get(R::DPU::FEATURE_MODE_CFG__FLYING_MODE) || r_.get(R::DPU_RDMA::RDMA_FEATURE_MODE_CFG__MRDMA_DISABLE) ||
        !r_.get(R::DPU_RDMA::RDMA_OPERATION_ENABLE__OP_EN))
      return error(StatusCode::invalid_argument, "DPU task without a source (neither CORE nor MRDMA)");
    ow_ = r_.get(R::DPU::DATA_CUBE_WIDTH__WIDTH) + 1;
    oh_ = r_.get(R::DPU::DATA_CUBE_HEIGHT__HEIGHT) + 1;
    oc_ = r_.get(R::DPU::DATA_CUBE_CHANNEL__CHANNEL) + 1;
    const int64_t surf = int64_t(r_.get(R::DPU::DST_SURF_STRIDE__DST_SURF_STRIDE)) * kAddrUnit;
    TS_ASSIGN_OR_RETURN(Cube src, map_cube(m_, r_.get(R::DPU_RDMA::RDMA_SRC_BASE_ADDR__SRC_BASE_ADDR), oc_, oh_, ow_,
                                           ow_ * kC2, surf, "DPU_RDMA source"));
    acc_.assign(static_cast<size_t>(oc_ * oh_ * ow_), 0);
    for (int64_t c = 0; c < oc_; ++c)
      for (int64_t y = 0; y < oh_; ++y)
        for (int64_t x = 0; x < ow_; ++x) acc_[(c * oh_ + y) * ow_ + x] = src.at(c, y, x);
    t.dram_bytes += (oc_ + kC2 - 1) / kC2 * oh_ * ow_ * kC2;
    return Status::Ok();
  }

  // DPU: BS (ALU, MUL, ReLU, ReLU-X) -> EW (operand conversion, ALU, ReLU) -> OUT_CVT -> int8.
  Status post_process(TaskTiming& t) {
    if (ow_ != r_.get(R::DPU::DATA_CUBE_WIDTH__WIDTH) + 1 || oh_ != r_.get(R::DPU::DATA_CUBE_HEIGHT__HEIGHT) + 1 ||
        oc_ != r_.get(R::DPU::DATA_CUBE_CHANNEL__CHANNEL) + 1)
      return error(StatusCode::invalid_argument, "DPU cube size differs from its source");
    if (r_.get(R::DPU::DATA_FORMAT__OUT_PRECISION) != kPrecisionInt8)
      return error(StatusCode::unsupported, "DPU output precision ", r_.get(R::DPU::DATA_FORMAT__OUT_PRECISION), " is not modelled");
    const int64_t line = ow_ * kC2;
    TS_ASSIGN_OR_RETURN(Cube dst, map_destination());
    const bool bs = !r_.get(R::DPU::BS_CFG__BS_BYPASS);
    const bool bs_alu = bs && !r_.get(R::DPU::BS_CFG__BS_ALU_BYPASS), bs_mul = bs && !r_.get(R::DPU::BS_CFG__BS_MUL_BYPASS);
    const bool bs_relu = bs && !r_.get(R::DPU::BS_CFG__BS_RELU_BYPASS), bs_relux = bs && r_.get(R::DPU::BS_CFG__BS_RELUX_EN);
    if (bs_alu && r_.get(R::DPU::BS_CFG__BS_ALU_ALGO) != kAluAlgoAdd)
      return error(StatusCode::unsupported, "BS ALU algorithm ", r_.get(R::DPU::BS_CFG__BS_ALU_ALGO), " is not modelled");
    const uint32_t use = r_.get(R::DPU_RDMA::RDMA_BRDMA_CFG__BRDMA_DATA_USE);
    const bool alu_table = bs_alu && r_.get(R::DPU::BS_CFG__BS_ALU_SRC), mul_table = bs_mul && r_.get(R::DPU::BS_MUL_CFG__BS_MUL_SRC);
    if ((alu_table && !(use & 1u)) || (mul_table && !(use & 2u)))
      return error(StatusCode::invalid_argument, "BS reads its operands from memory but BRDMA does not fetch them");
    const uint8_t* table = nullptr;
    if (alu_table || mul_table) {
      TS_ASSIGN_OR_RETURN(uint8_t * p, m_.translate(r_.get(R::DPU_RDMA::RDMA_BS_BASE_ADDR__BS_BASE_ADDR), oc_ * kBsEntryBytes, "BS table"));
      table = p;
      t.dram_bytes += oc_ * kBsEntryBytes;
    }
    // BN: ALU (add) and multiplier, each from a register or the NRDMA table, as in BS.
    const bool bn = !r_.get(R::DPU::BN_CFG__BN_BYPASS);
    const bool bn_alu = bn && !r_.get(R::DPU::BN_CFG__BN_ALU_BYPASS), bn_mul = bn && !r_.get(R::DPU::BN_CFG__BN_MUL_BYPASS);
    const bool bn_relu = bn && !r_.get(R::DPU::BN_CFG__BN_RELU_BYPASS), bn_relux = bn && r_.get(R::DPU::BN_CFG__BN_RELUX_EN);
    const int32_t bn_relux_v = r_.get_signed(R::DPU::BN_RELUX_CMP_VALUE__BN_RELUX_CMP_DAT);
    if (bn_alu && r_.get(R::DPU::BN_CFG__BN_ALU_ALGO) != kAluAlgoAdd)
      return error(StatusCode::unsupported, "BN ALU algorithm ", r_.get(R::DPU::BN_CFG__BN_ALU_ALGO), " is not modelled");
    if (bn_mul && !r_.get(R::DPU::BN_MUL_CFG__BN_MUL_SRC)) return error(StatusCode::unsupported, "BN multiplier from a register is not modelled");
    const uint32_t bn_use = r_.get(R::DPU_RDMA::RDMA_NRDMA_CFG__NRDMA_DATA_USE);
    const bool bn_alu_table = bn_alu && r_.get(R::DPU::BN_CFG__BN_ALU_SRC);
    if ((bn_alu_table && !(bn_use & 1u)) || (bn_mul && !(bn_use & 2u)))
      return error(StatusCode::invalid_argument, "BN reads its operands from memory but NRDMA does not fetch them");
    const int32_t bn_alu_reg = r_.get_signed(R::DPU::BN_ALU_CFG__BN_ALU_OPERAND);
    const uint8_t* bn_table = nullptr;
    if (bn_alu_table || bn_mul) {
      TS_ASSIGN_OR_RETURN(uint8_t * p, m_.translate(r_.get(R::DPU_RDMA::RDMA_BN_BASE_ADDR__BN_BASE_ADDR), oc_ * kBsEntryBytes, "BN table"));
      bn_table = p;
      t.dram_bytes += oc_ * kBsEntryBytes;
    }
    const bool ew = !r_.get(R::DPU::EW_CFG__EW_BYPASS);
    const bool ew_op = ew && !r_.get(R::DPU::EW_CFG__EW_OP_BYPASS);
    const bool lut = ew && !r_.get(R::DPU::EW_CFG__EW_LUT_BYPASS);
    // EW_OP_TYPE 1: the EW multiplier, v * operand / 2^EW_TRUNCATE rounded half away from
    // zero (as the DPU's other multipliers), the operand either EW_OP_VALUE_0 (EW_OP_SRC 0,
    // converter bypassed) or the ERDMA operand through the converter (EW_OP_SRC 1,
    // converter on: NVDLA SDP's Y/EW multiplier with a DMA operand, docs/rknpu.md "SUB, MUL
    // and constant operands"); 0: the ALU (add) with the ERDMA operand, EW_TRUNCATE 0.
    const bool ew_mul = ew_op && r_.get(R::DPU::EW_CFG__EW_OP_TYPE) == kEwOpMul;
    const bool ew_from_memory = ew_op && r_.get(R::DPU::EW_CFG__EW_OP_SRC);
    const int32_t ew_mul_operand = r_.get_signed(R::DPU::EW_OP_VALUE_0__EW_OPERAND_0);
    const int ew_truncate = static_cast<int>(r_.get(R::DPU::EW_CVT_SCALE_VALUE__EW_TRUNCATE));
    if (ew_mul && ew_from_memory == bool(r_.get(R::DPU::EW_CFG__EW_OP_CVT_BYPASS)))
      return error(StatusCode::unsupported, "DPU.EW_CFG.EW_OP_SRC = ", r_.get(R::DPU::EW_CFG__EW_OP_SRC), ", EW_OP_CVT_BYPASS = ",
                   r_.get(R::DPU::EW_CFG__EW_OP_CVT_BYPASS),
                   " with the EW multiplier is not modelled (a register operand unconverted, or the ERDMA operand converted)");
    if (ew_mul && r_.get(R::DPU::EW_CFG__EW_MUL_PRELU))
      return error(StatusCode::unsupported, "DPU.EW_CFG.EW_MUL_PRELU = 1 is not modelled");
    if (ew_op && !ew_mul && ew_truncate != 0)
      return error(StatusCode::unsupported, "DPU.EW_CVT_SCALE_VALUE.EW_TRUNCATE = ", ew_truncate, " with the EW ALU is not modelled (0 only)");
    Cube ewc;
    if (ew_op && (!ew_mul || ew_from_memory)) {
      if (r_.get(R::DPU_RDMA::RDMA_ERDMA_CFG__ERDMA_DISABLE) || !r_.get(R::DPU::EW_CFG__EW_OP_SRC))
        return error(StatusCode::invalid_argument, "EW stage without an ERDMA operand");
      if (!ew_mul && r_.get(R::DPU::EW_CFG__EW_ALU_ALGO) != kAluAlgoAdd)
        return error(StatusCode::unsupported, "EW ALU algorithm not modelled");
      TS_ASSIGN_OR_RETURN(ewc, map_cube(m_, r_.get(R::DPU_RDMA::RDMA_EW_BASE_ADDR__EW_BASE_ADDR), oc_, oh_, ow_, line,
                                        int64_t(r_.get(R::DPU_RDMA::RDMA_EW_SURF_STRIDE__EW_SURF_STRIDE)) * kAddrUnit, "EW operand"));
      t.dram_bytes += (oc_ + kC2 - 1) / kC2 * oh_ * ow_ * kC2;
    }
    const int32_t alu_reg = r_.get_signed(R::DPU::BS_ALU_CFG__BS_ALU_OPERAND);
    const int32_t mul_reg = r_.get_signed(R::DPU::BS_MUL_CFG__BS_MUL_OPERAND);
    const int shift_reg = static_cast<int>(r_.get(R::DPU::BS_MUL_CFG__BS_MUL_SHIFT_VALUE));
    const int32_t relux = r_.get_signed(R::DPU::BS_RELUX_CMP_VALUE__BS_RELUX_CMP_DAT);
    const bool ew_cvt = ew_from_memory && !r_.get(R::DPU::EW_CFG__EW_OP_CVT_BYPASS);
    const int32_t ew_off = r_.get_signed(R::DPU::EW_CVT_OFFSET_VALUE__EW_OP_CVT_OFFSET);
    const int32_t ew_scale = static_cast<int32_t>(r_.get(R::DPU::EW_CVT_SCALE_VALUE__EW_OP_CVT_SCALE));
    const int ew_shift = static_cast<int>(r_.get(R::DPU::EW_CVT_SCALE_VALUE__EW_OP_CVT_SHIFT));
    const bool ew_relu = ew && !r_.get(R::DPU::EW_CFG__EW_RELU_BYPASS), ew_relux = ew && r_.get(R::DPU::EW_CFG__EW_RELUX_EN);
    const int32_t ew_relux_v = r_.get_signed(R::DPU::EW_RELUX_CMP_VALUE__EW_RELUX_CMP_DAT);
    Lut tables;
    if (lut) {
      if (ew_relu || ew_relux)
        return error(StatusCode::unsupported, "DPU EW ReLU / ReLU-X together with the LUT (EW_CFG.EW_LUT_BYPASS = 0) is not modelled");
      TS_ASSIGN_OR_RETURN(tables, read_lut());
      tables.le.entries = tables.le_entries.data();  // the copy's own entries
      tables.lo.entries = tables.lo_entries.data();
      t.dram_bytes += r_.lut_writes * int64_t(sizeof(uint64_t));  // the table's command entries
    }
    const int32_t out_off = r_.get_signed(R::DPU::OUT_CVT_OFFSET__OUT_CVT_OFFSET);
    const int32_t out_scale = static_cast<int32_t>(r_.get(R::DPU::OUT_CVT_SCALE__OUT_CVT_SCALE));
    const int out_shift = static_cast<int>(r_.get(R::DPU::OUT_CVT_SHIFT__OUT_CVT_SHIFT));
    for (int64_t c = 0; c < oc_; ++c) {
      int32_t bias = alu_reg, mul = mul_reg;
      int shift = shift_reg;
      if (table) {
        const uint8_t* e = table + c * kBsEntryBytes;
        if (alu_table) std::memcpy(&bias, e, 4);
        if (mul_table) {
          int16_t m16;
          std::memcpy(&m16, e + 4, 2);
          mul = m16;
          shift = e[6];
        }
      }
      int32_t bn_a = bn_alu_reg, bn_m = 1;
      int bn_s = 0;
      if (bn_alu_table) std::memcpy(&bn_a, bn_table + c * kBsEntryBytes, 4);
      if (bn_mul) {
        int16_t m16;
        std::memcpy(&m16, bn_table + c * kBsEntryBytes + 4, 2);
        bn_m = m16;
        bn_s = bn_table[c * kBsEntryBytes + 6];
      }
      for (int64_t y = 0; y < oh_; ++y)
        for (int64_t x = 0; x < ow_; ++x) {
          int32_t v = acc_[(c * oh_ + y) * ow_ + x];
          if (bs_alu) v = sat32(int64_t(v) + bias);
          if (bs_mul) v = scale_round(v, mul, shift);
          if (bs_relu) v = std::max(v, 0);
          if (bs_relux) v = std::min(v, relux);
          if (bn_alu) v = sat32(int64_t(v) + bn_a);
          if (bn_mul) v = scale_round(v, bn_m, bn_s);
          if (bn_relu) v = std::max(v, 0);
          if (bn_relux) v = std::min(v, bn_relux_v);
          if (ew_op) {
            int32_t e = ew_mul_operand;
            if (ew_from_memory) e = ewc.at(c, y, x);
            if (ew_cvt) e = scale_round(int64_t(e) + ew_off, ew_scale, ew_shift);
            v = ew_mul ? scale_round(v, e, ew_truncate) : sat32(int64_t(v) + e);
          }
          if (ew_relu) v = std::max(v, 0);
          if (ew_relux) v = std::min(v, ew_relux_v);
          if (lut) v = lut_lookup(tables.le, tables.lo, tables.hybrid_lo, tables.uflow_lo, tables.oflow_lo, v);
          int64_t o = int64_t(scale_round(v, out_scale, out_shift)) + out_off;
          dst.at(c, y, x) = static_cast<int8_t>(std::clamp<int64_t>(o, -128, 127));
        }
    }
    t.dram_bytes += (oc_ + kC2 - 1) / kC2 * oh_ * ow_ * kC2;  // output
    return Status::Ok();
  }

  // The EW stage's lookup table (hw.h lut_lookup, docs/rknpu.md "Lookup tables"): both
  // tables in linear mode, every entry written by this task; any other LUT_CFG value is an
  // error naming the field.
  struct Lut {
    std::vector<int16_t> le_entries, lo_entries;
    LutTable le, lo;
    bool hybrid_lo = false, uflow_lo = false, oflow_lo = false;
  };
  Result<Lut> read_lut() const {
    for (const regs::Field* f : {&R::DPU::LUT_CFG__LUT_EXPAND_EN, &R::DPU::LUT_CFG__LUT_LO_LE_MUX, &R::DPU::LUT_CFG__LUT_CAL_SEL})
      if (r_.get(*f) != 0)
        return error(StatusCode::unsupported, f->name, " = ", r_.get(*f), " is not modelled (0 only)");
    if (r_.get(R::DPU::LUT_CFG__LUT_ROAD_SEL) != kLutLeLinear)
      return error(StatusCode::unsupported, "DPU.LUT_CFG.LUT_ROAD_SEL = ", r_.get(R::DPU::LUT_CFG__LUT_ROAD_SEL),
                   " (the LE table's exponent mode) is not modelled (", kLutLeLinear, ": linear)");
    Lut l;
    l.hybrid_lo = r_.get(R::DPU::LUT_CFG__LUT_HYBRID_PRIORITY) == kLutPriorityLo;
    l.uflow_lo = r_.get(R::DPU::LUT_CFG__LUT_UFLOW_PRIORITY) == kLutPriorityLo;
    l.oflow_lo = r_.get(R::DPU::LUT_CFG__LUT_OFLOW_PRIORITY) == kLutPriorityLo;
    struct Spec {
      const char* name;
      int id, n;
      const regs::Field &select, &start, &end, &uscale, &oscale, &ushift, &oshift;
      std::vector<int16_t>* entries;
      LutTable* table;
    };
    const Spec specs[2] = {
        {"LE", int(kLutTableLe), kLutLeEntries, R::DPU::LUT_INFO__LUT_LE_INDEX_SELECT, R::DPU::LUT_LE_START__LUT_LE_START,
         R::DPU::LUT_LE_END__LUT_LE_END, R::DPU::LUT_LE_SLOPE_SCALE__LUT_LE_SLOPE_UFLOW_SCALE,
         R::DPU::LUT_LE_SLOPE_SCALE__LUT_LE_SLOPE_OFLOW_SCALE, R::DPU::LUT_LE_SLOPE_SHIFT__LUT_LE_SLOPE_UFLOW_SHIFT,
         R::DPU::LUT_LE_SLOPE_SHIFT__LUT_LE_SLOPE_OFLOW_SHIFT, &l.le_entries, &l.le},
        {"LO", int(kLutTableLo), kLutLoEntries, R::DPU::LUT_INFO__LUT_LO_INDEX_SELECT, R::DPU::LUT_LO_START__LUT_LO_START,
         R::DPU::LUT_LO_END__LUT_LO_END, R::DPU::LUT_LO_SLOPE_SCALE__LUT_LO_SLOPE_UFLOW_SCALE,
         R::DPU::LUT_LO_SLOPE_SCALE__LUT_LO_SLOPE_OFLOW_SCALE, R::DPU::LUT_LO_SLOPE_SHIFT__LUT_LO_SLOPE_UFLOW_SHIFT,
         R::DPU::LUT_LO_SLOPE_SHIFT__LUT_LO_SLOPE_OFLOW_SHIFT, &l.lo_entries, &l.lo}};
    for (const Spec& sp : specs) {
      const int select = static_cast<int>(r_.get(sp.select));
      // Index and fraction of a 32-bit input: selects past 31 leave no index bits.
      if (select > 31) return error(StatusCode::unsupported, sp.select.name, " = ", select, " is not modelled (0..31)");
      const int64_t start = r_.get_signed(sp.start), end = r_.get_signed(sp.end);
      if (end != start + (int64_t(sp.n - 1) << select))
        return error(StatusCode::unsupported, sp.end.name, " = ", end, " is not modelled: the ", sp.name,
                     " table in linear mode ends at start + ", sp.n - 1, " << index select = ", start + (int64_t(sp.n - 1) << select));
      const auto& ram = r_.lut[sp.id];
      sp.entries->resize(static_cast<size_t>(sp.n));
      for (int i = 0; i < sp.n; ++i) {
        auto it = ram.find(i);
        if (it == ram.end())
          return error(StatusCode::invalid_argument, "DPU LUT: entry ", i, " of the ", sp.name,
                       " table is read but this task never wrote it (LUT_ACCESS_DATA)");
        (*sp.entries)[static_cast<size_t>(i)] = it->second;
      }
      *sp.table = LutTable{sp.entries->data(), sp.n, start, select, r_.get_signed(sp.uscale), static_cast<int>(r_.get(sp.ushift)),
                           r_.get_signed(sp.oscale), static_cast<int>(r_.get(sp.oshift))};
    }
    return l;
  }

  // PPU: max or average pooling of an int8 cube read by PPU_RDMA.
  Status pool(TaskTiming& t) {
    if (!r_.get(R::PPU_RDMA::RDMA_OPERATION_ENABLE__OP_EN))
      return error(StatusCode::invalid_argument, "PPU task without PPU_RDMA (on-the-fly input is not modelled)");
    const int64_t iw = r_.get(R::PPU_RDMA::RDMA_CUBE_IN_WIDTH__CUBE_IN_WIDTH) + 1, ih = r_.get(R::PPU_RDMA::RDMA_CUBE_IN_HEIGHT__CUBE_IN_HEIGHT) + 1;
    const int64_t c = r_.get(R::PPU_RDMA::RDMA_CUBE_IN_CHANNEL__CUBE_IN_CHANNEL) + 1;
    const int64_t owd = r_.get(R::PPU::DATA_CUBE_OUT_WIDTH__CUBE_OUT_WIDTH) + 1, ohd = r_.get(R::PPU::DATA_CUBE_OUT_HEIGHT__CUBE_OUT_HEIGHT) + 1;
    const int64_t kw = r_.get(R::PPU::POOLING_KERNEL_CFG__KERNEL_WIDTH), kh = r_.get(R::PPU::POOLING_KERNEL_CFG__KERNEL_HEIGHT);
    const int64_t sx = r_.get(R::PPU::POOLING_KERNEL_CFG__KERNEL_STRIDE_WIDTH), sy = r_.get(R::PPU::POOLING_KERNEL_CFG__KERNEL_STRIDE_HEIGHT);
    const int64_t pt = r_.get(R::PPU::POOLING_PADDING_CFG__PAD_TOP), pl = r_.get(R::PPU::POOLING_PADDING_CFG__PAD_LEFT);
    const int32_t padv = r_.get_signed(R::PPU::PADDING_VALUE_1_CFG__PAD_VALUE_0);
    const bool avg = r_.get(R::PPU::OPERATION_MODE_CFG__POOLING_METHOD) == kPoolMethodAverage;
    const int64_t rw = r_.get(R::PPU::RECIP_KERNEL_WIDTH__RECIP_KERNEL_WIDTH), rh = r_.get(R::PPU::RECIP_KERNEL_HEIGHT__RECIP_KERNEL_HEIGHT);
    if (kw == 0 || kh == 0 || sx == 0 || sy == 0) return error(StatusCode::invalid_argument, "zero PPU kernel or stride");
    // Right and bottom padding: 0 leaves the output size to DATA_CUBE_OUT (positions past the
    // input read the pad value); otherwise the output must be exactly what the padded input
    // gives, (in + before + after - kernel) / stride + 1 (NVDLA PDP), else the value is not modelled.
    const int64_t pr = r_.get(R::PPU::POOLING_PADDING_CFG__PAD_RIGHT), pb = r_.get(R::PPU::POOLING_PADDING_CFG__PAD_BOTTOM);
    if (pr != 0 && (iw + pl + pr < kw || (iw + pl + pr - kw) / sx + 1 != owd))
      return error(StatusCode::unsupported, "PPU.POOLING_PADDING_CFG.PAD_RIGHT = ", pr, " with input width ", iw, ", PAD_LEFT ", pl,
                   ", kernel ", kw, ", stride ", sx, " does not give CUBE_OUT_WIDTH + 1 = ", owd, " (not modelled)");
    if (pb != 0 && (ih + pt + pb < kh || (ih + pt + pb - kh) / sy + 1 != ohd))
      return error(StatusCode::unsupported, "PPU.POOLING_PADDING_CFG.PAD_BOTTOM = ", pb, " with input height ", ih, ", PAD_TOP ", pt,
                   ", kernel ", kh, ", stride ", sy, " does not give CUBE_OUT_HEIGHT + 1 = ", ohd, " (not modelled)");
    TS_ASSIGN_OR_RETURN(Cube src, map_cube(m_, r_.get(R::PPU_RDMA::RDMA_SRC_BASE_ADDR__SRC_BASE_ADDR), c, ih, iw,
                                           int64_t(r_.get(R::PPU_RDMA::RDMA_SRC_LINE_STRIDE__SRC_LINE_STRIDE)) * kAddrUnit,
                                           int64_t(r_.get(R::PPU_RDMA::RDMA_SRC_SURF_STRIDE__SRC_SURF_STRIDE)) * kAddrUnit, "PPU_RDMA source"));
    TS_ASSIGN_OR_RETURN(Cube dst, map_cube(m_, int64_t(r_.get(R::PPU::DST_BASE_ADDR__DST_BASE_ADDR)) * kAddrUnit, c, ohd, owd,
                                           owd * kC2, int64_t(r_.get(R::PPU::DST_SURF_STRIDE__DST_SURF_STRIDE)) * kAddrUnit, "PPU destination"));
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t oy = 0; oy < ohd; ++oy)
        for (int64_t ox = 0; ox < owd; ++ox) {
          int64_t sum = 0, best = INT64_MIN;
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx) {
              int64_t iy = oy * sy - pt + ky, ix = ox * sx - pl + kx;
              int64_t v = (iy >= 0 && iy < ih && ix >= 0 && ix < iw) ? src.at(ch, iy, ix) : padv;
              sum += v;
              best = std::max(best, v);
            }
          int64_t o;
          if (avg) {
            // sum * (1/kw) * (1/kh), both 0.16 fixed point, rounded half up. A stream's pad
            // value and reciprocals are arbitrary register values: the product is formed in
            // 128 bits (|sum| < 2^48, rw and rh < 2^16) and clamped, never overflowed.
            constexpr int kBits = 2 * kRecipFractionBits;
            const __int128 p = static_cast<__int128>(sum) * rw * rh + (__int128{1} << (kBits - 1));
            o = static_cast<int64_t>(std::clamp<__int128>(p >> kBits, -(__int128{1} << 40), __int128{1} << 40));
          } else {
            o = best;
          }
          dst.at(ch, oy, ox) = static_cast<int8_t>(std::clamp<int64_t>(o, -128, 127));
        }
    t.dram_bytes += (c + kC2 - 1) / kC2 * (ih * iw + ohd * owd) * kC2;
    return Status::Ok();
  }

  Memory& m_;
  const RegisterFile& r_;
  int64_t oh_ = 0, ow_ = 0, oc_ = 0;
  std::vector<int32_t> acc_;  // [oc][oh][ow]
  std::vector<float> facc_;   // [oc][oh][ow], fp32 sums of an fp16 matmul
  bool int32_out_ = false;    // an int8 matmul: acc_ is written raw as int32 (N/4, M, 4)
};

// The kernel's scheduling, as the model keeps it on one modelled clock shared by every
// entity (rknpu.md "Kernel interface"; the mainline driver gives each open file one
// drm_sched entity over the three cores' schedulers):
//  - an entity's jobs run in submission order, one at a time; a submit's jobs stay on one
//    core (the entity leaves a core only when idle), chosen as the least loaded: the first
//    idle core, else the one free earliest;
//  - implicit fences: a job waits for the last job that wrote any BO it reads or writes
//    (only writers attach fences, so reads never delay writes);
//  - the host waits for each submit, so an entity's next submit is issued when its previous
//    one ends; a new entity starts at the clock's current end.
// Submits are placed in the order they are made: a later submit never takes a core slot
// before an earlier one's jobs (the real scheduler may interleave entities on one core).
class Timeline {
 public:
  int open_entity() {
    entity_ready_.push_back(end_);
    return static_cast<int>(entity_ready_.size()) - 1;
  }

  // Places a submit of jobs whose tasks' MAC time and DRAM bytes are in st.jobs; fills in
  // each task's DRAM time and time and the clock fields. A task's DRAM bandwidth is the
  // core's own, or an equal share of the SoC's when more cores than that allows are busy
  // as its job starts (kSocDramBytesPerSecond).
  // Submits issued at once on `entities` (one lane each): they start together, each on its
  // own core while cores are idle, share the DRAM as concurrent jobs, and every entity is
  // ready again when the last lane ends (the host waits for all of them).
  void place_lanes(const std::vector<int>& entities, const std::vector<std::vector<JobDesc>>& lanes,
                   std::vector<SubmitTiming>& sts) {
    double start = 0, end = 0;
    for (int e : entities) start = std::max(start, entity_ready_[e]);
    // The lanes write disjoint parts of the same BOs: they fence only on earlier writers.
    const std::map<uint32_t, double> before = last_write_;
    for (size_t i = 0; i < lanes.size(); ++i) {
      entity_ready_[entities[i]] = start;
      place(entities[i], lanes[i], sts[i], static_cast<int>(lanes.size()), &before);
      end = std::max(end, sts[i].end);
    }
    for (int e : entities) entity_ready_[e] = end;
  }

  void place(int entity, const std::vector<JobDesc>& jobs, SubmitTiming& st, int concurrent = 1,
             const std::map<uint32_t, double>* fences = nullptr) {
    if (!fences) fences = &last_write_;
    st.start = entity_ready_[entity];
    // drm_sched_pick_best: the first core with the fewest queued jobs, i.e. the first idle
    // core when one is, else (here) the one free earliest.
    int core = static_cast<int>(std::min_element(core_free_.begin(), core_free_.end()) - core_free_.begin());
    for (int c = kCores - 1; c >= 0; --c)
      if (core_free_[c] <= st.start) core = c;
    double t = st.start;
    st.core_busy.assign(kCores, 0.0);
    for (size_t j = 0; j < jobs.size(); ++j) {
      double ready = std::max(t, core_free_[core]);
      for (const auto* list : {&jobs[j].in_bos, &jobs[j].out_bos})
        for (uint32_t h : *list)
          if (auto it = fences->find(h); it != fences->end()) ready = std::max(ready, it->second);
      JobTiming& jt = st.jobs[j];
      int busy = 1;
      for (int c = 0; c < kCores; ++c) busy += c != core && core_free_[c] > ready;
      busy = std::max(busy, std::min(concurrent, kCores));
      const double bandwidth = std::min(kDramBytesPerSecond, kSocDramBytesPerSecond / busy);
      const double stream_bandwidth = std::min(kMatmulDramBytesPerSecond, kMatmulSocDramBytesPerSecond / busy);
      double duration = kJobOverheadSeconds;
      for (TaskTiming& tt : jt.tasks) {
        tt.dram_seconds = double(tt.dram_bytes) / (tt.weight_stream ? stream_bandwidth : bandwidth);
        tt.seconds = kTaskOverheadSeconds + std::max(tt.mac_seconds, tt.dram_seconds);
        duration += tt.seconds;
      }
      jt.core = core;
      jt.start = ready - st.start;
      jt.end = jt.start + duration;
      t = st.start + jt.end;
      core_free_[core] = t;
      st.core_busy[core] += duration;
      for (uint32_t h : jobs[j].out_bos) last_write_[h] = std::max(last_write_[h], t);
    }
    st.end = t;
    st.seconds = st.end - st.start;
    entity_ready_[entity] = t;
    end_ = std::max(end_, t);
  }

  void forget(uint32_t handle) { last_write_.erase(handle); }
  int entities() const { return static_cast<int>(entity_ready_.size()); }

 private:
  std::vector<double> entity_ready_{0.0};  // entity 0: the transport's own
  std::vector<double> core_free_ = std::vector<double>(kCores, 0.0);
  std::map<uint32_t, double> last_write_;  // BO handle -> end of the last job writing it
  double end_ = 0;
};

class ModelTransport : public Transport {
 public:
  explicit ModelTransport(uint64_t space) : mem_(space) {}
  std::string name() const override { return "model"; }
  Result<BoInfo> create_bo(int64_t size) override { return mem_.create(size); }
  Status destroy_bo(uint32_t h) override {
    TS_RETURN_IF_ERROR(mem_.destroy(h));
    timeline_.forget(h);
    return Status::Ok();
  }
  Status prep_bo(uint32_t h) override { return check(h); }
  Status fini_bo(uint32_t h) override { return check(h); }
  bool modelled() const override { return true; }
  int open_entity() override { return timeline_.open_entity(); }

  Result<std::vector<SubmitTiming>> submit_lanes(const std::vector<int>& entities,
                                                 const std::vector<std::vector<JobDesc>>& lanes) override {
    if (entities.size() != lanes.size()) return error(StatusCode::invalid_argument, "lanes and entities differ in number");
    std::vector<SubmitTiming> sts(lanes.size());
    for (size_t i = 0; i < lanes.size(); ++i) {
      for (size_t k = 0; k < i; ++k)
        if (entities[k] == entities[i]) return error(StatusCode::invalid_argument, "two lanes on entity ", entities[i]);
      TS_ASSIGN_OR_RETURN(sts[i], execute(entities[i], lanes[i]));
    }
    timeline_.place_lanes(entities, lanes, sts);
    return sts;
  }

  Result<SubmitTiming> submit(int entity, const std::vector<JobDesc>& jobs) override {
    TS_ASSIGN_OR_RETURN(SubmitTiming st, execute(entity, jobs));
    timeline_.place(entity, jobs, st);
    return st;
  }

  // Runs the jobs' tasks (the register streams) and returns their MAC time and DRAM bytes;
  // the timeline places them.
  Result<SubmitTiming> execute(int entity, const std::vector<JobDesc>& jobs) {
    if (entity < 0 || entity >= timeline_.entities())
      return error(StatusCode::invalid_argument, "unknown scheduler entity ", entity);
    SubmitTiming st;
    for (size_t j = 0; j < jobs.size(); ++j) {
      const JobDesc& job = jobs[j];
      if (job.tasks.empty()) return error(StatusCode::invalid_argument, "job ", j, " has no tasks (the kernel rejects it)");
      for (uint32_t h : job.in_bos) TS_RETURN_IF_ERROR(check(h).with_context("job " + std::to_string(j)));
      for (uint32_t h : job.out_bos) TS_RETURN_IF_ERROR(check(h).with_context("job " + std::to_string(j)));
      JobTiming jt;
      for (size_t k = 0; k < job.tasks.size(); ++k) {
        const TaskDesc& td = job.tasks[k];
        std::string where = "job " + std::to_string(j) + " task " + std::to_string(k);
        TS_ASSIGN_OR_RETURN(uint8_t * p, mem_.translate(td.regcmd, int64_t(td.regcmd_count) * 8, "register command buffer"));
        if (td.regcmd % kRegcmdAlign) return error(StatusCode::invalid_argument, where, ": command buffer not 64-byte aligned");
        std::vector<uint64_t> entries(td.regcmd_count);
        std::memcpy(entries.data(), p, entries.size() * 8);
        auto rf = decode_regcmd(entries.data(), entries.size());
        if (!rf.ok()) return rf.status().with_context(where);
        Executor ex(mem_, *rf);
        auto tt = ex.run();
        if (!tt.ok()) return tt.status().with_context(where);
        jt.tasks.push_back(*tt);
      }
      st.jobs.push_back(std::move(jt));
    }
    return st;
  }

 private:
  Status check(uint32_t h) const {
    return mem_.exists(h) ? Status::Ok() : error(StatusCode::invalid_argument, "unknown buffer object handle ", h);
  }
  Memory mem_;
  Timeline timeline_;
};

}  // namespace

std::unique_ptr<Transport> make_model_transport(uint64_t space) { return std::make_unique<ModelTransport>(space); }

}  // namespace tessera::rknpu
