#include "backend/rknpu/tiling.h"

#include <algorithm>

#include "backend/rknpu/hw.h"
#include "backend/rknpu/regcmd.h"
#include "convert/rk_weights.h"

namespace tessera::rknpu {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Weight bytes of output channels [oc0, oc0 + ocn) (their packed blocks).
int64_t chunk_weight_bytes(const NpuOp& op, int64_t ocn) {
  const int64_t eb = op.int16 ? 2 : 1;
  if (op.type == NpuOpType::depthwise) return op.kh * op.kw * ((ocn + kC2 - 1) / kC2 * kC2) * eb;
  return ((ocn + 1) / 2 * 2) * op.kh * op.kw * convert::rk_conv_padded_ic(op.in_c) * eb;
}

Status cbuf_error(const NpuOp& op, const std::string& what) {
  return error(StatusCode::unsupported, what);
}
}  // namespace

int64_t matmul_max_task_k(bool int8) {
  const int64_t eb = int8 ? 1 : 2, kernels = int8 ? kMatmulInt8Kernels : kMatmulFp16Kernels;
  const int64_t by_bank = kCbufBankBytes / eb;                                   // one kernel in one bank ([S1])
  const int64_t by_group = (kCbufBanks - 1) * kCbufBankBytes / (kernels * eb);  // a group beside one data bank
  int64_t k = std::min(by_bank, by_group);
  k = std::min<int64_t>(k, static_cast<int64_t>(regs::CNA::DATA_SIZE1__DATAIN_CHANNEL.max()));
  k = std::min<int64_t>(k, static_cast<int64_t>(regs::CNA::WEIGHT_SIZE1__WEIGHT_BYTES_PER_KERNEL.max()) / eb);
  return k / kMatmulKGroup * kMatmulKGroup;
}

int64_t matmul_segment_weight_offset(const NpuOp& op, const Tiling& t, int seg) {
  const int64_t eb = op.mm_int8 ? 1 : 2, kernels = op.mm_int8 ? kMatmulInt8Kernels : kMatmulFp16Kernels;
  const int64_t np = ceil_div(op.out_c, kernels) * kernels;
  return np * t.k_chunk * eb * seg;
}

// Matrix multiplication (rknpu-matmul.md "Limits"): a task holds `rows` rows of A (K values
// of 2 bytes (fp16) or 1 (int8) each) in the data banks and whole weight blocks (16 fp16 or
// 32 int8 kernels of K values: the same bytes) of `chunk` output channels in the weight
// banks. Every split of the 12 banks is tried; the one with the fewest tasks wins (then the
// fewest N chunks: each re-reads A). Tasks run N-chunk-major so that the rows of one chunk
// reuse its weights (WEIGHT_REUSE after the chunk's first task).
// K split: one kernel's K values must fit one bank and one kernel group the weight banks
// beside one data bank, i.e. K <= 11264 for fp16 and int8 alike. A larger K is cut into
// equal segments (multiples of 32) that fit; each segment's tasks write a partial result
// of their own, which the host sums (docs/rknpu.md "K split"): fp32 partials added in
// segment order, int32 partials added exactly.
Result<Tiling> plan_matmul_tiling(const NpuOp& op) {
  Tiling t;
  const bool int8 = op.mm_int8;
  const int64_t eb = int8 ? 1 : 2;
  const int64_t kernels = int8 ? kMatmulInt8Kernels : kMatmulFp16Kernels;
  const int64_t m = op.in_h, k = op.in_c, n = op.out_c;
  if (m < 1 || k < 1 || n < 1) return cbuf_error(op, "empty matmul");
  const int64_t kp = ceil_div(k, kMatmulKGroup) * kMatmulKGroup;
  const int64_t kmax = matmul_max_task_k(int8);
  const int64_t segments = ceil_div(kp, kmax);
  if (segments > 64)
    return cbuf_error(op, "K = " + std::to_string(k) + " would need " + std::to_string(segments) +
                              " K segments (at most 64 partial results are summed)");
  const int64_t kc = ceil_div(ceil_div(kp, segments), kMatmulKGroup) * kMatmulKGroup;
  t.k_segments = static_cast<int>(segments);
  t.k_chunk = kc;
  t.data_row_bytes = kc * eb;
  const int64_t per_kernel = kc * eb;
  const int64_t group_bytes = kernels * per_kernel;
  // Rows per task: the data banks, FEATURE_GRAINS (rows + 1, 10 bits), DATAIN_HEIGHT (11 bits).
  const int64_t max_rows = std::min<int64_t>(static_cast<int64_t>(regs::CNA::CONV_CON2__FEATURE_GRAINS.max()) - 1,
                                             static_cast<int64_t>(regs::CNA::DATA_SIZE0__DATAIN_HEIGHT.max()));
  // Output channels per task: the DPU's 13-bit channel field and the CNA's 14-bit kernel count.
  // Split across `lanes` cores: at most a lane's share of N (whole kernel groups) per chunk.
  const int64_t lane_share = ceil_div(ceil_div(n, std::max(op.lanes, 1)), kernels) * kernels;
  const int64_t max_chunk = std::min({static_cast<int64_t>(regs::DPU::DATA_CUBE_CHANNEL__CHANNEL.max()) + 1,
                                      static_cast<int64_t>(regs::CNA::WEIGHT_SIZE2__WEIGHT_KERNELS.max()), lane_share}) /
                            kernels * kernels;
  int best_db = -1;
  int64_t best_tasks = 0, best_chunks = 0, best_rows = 0, best_chunk = 0;
  for (int64_t db = 1; db < kCbufBanks; ++db) {
    const int64_t wb = kCbufBanks - db;
    const int64_t rows = std::min({m, db * kCbufBankBytes / t.data_row_bytes, max_rows});
    const int64_t chunk = std::min({wb * kCbufBankBytes / group_bytes * kernels, n, max_chunk});
    if (rows < 1 || chunk < 1) continue;
    const int64_t chunks = ceil_div(n, chunk), tasks = chunks * ceil_div(m, rows);
    if (best_db < 0 || tasks < best_tasks || (tasks == best_tasks && chunks < best_chunks)) {
      best_db = static_cast<int>(db);
      best_tasks = tasks;
      best_chunks = chunks;
      best_rows = rows;
      best_chunk = chunk;
    }
  }
  if (best_db < 0)
    return cbuf_error(op, "K = " + std::to_string(k) + ": one " + std::to_string(kernels) + "-kernel weight group (" +
                              std::to_string(group_bytes) + " bytes) and one row of A (" + std::to_string(t.data_row_bytes) +
                              " bytes) do not fit the 12 CBUF banks");
  t.data_banks = best_db;
  t.weight_banks = kCbufBanks - best_db;
  t.weights_resident = best_chunk >= n && segments == 1;
  for (int64_t oc0 = 0; oc0 < n; oc0 += best_chunk)
    for (int64_t s = 0; s < segments; ++s)
      for (int64_t r0 = 0; r0 < m; r0 += best_rows) {
        TaskTile tile;
        tile.out_row0 = tile.in_row0 = r0;
        tile.out_rows = tile.in_rows = std::min(best_rows, m - r0);
        tile.oc0 = oc0;
        tile.ocn = std::min(best_chunk, n - oc0);
        tile.k0 = s * kc;
        tile.kn = std::min(kc, k - s * kc);
        tile.kseg = static_cast<int>(s);
        t.tiles.push_back(tile);
      }
  return t;
}

int64_t cbuf_row_bytes(const NpuOp& op) {
  const int64_t eb = op.int16 ? 2 : 1;
  return op.in_w * ceil_div(op.in_c, kC2) * kC2 * eb;
}

Result<Tiling> plan_tiling(const NpuOp& op, SchedulePolicy policy) {
  if (op.type == NpuOpType::matmul) return plan_matmul_tiling(op);
  Tiling t;
  if (op.type == NpuOpType::row_copy) {
    // Row copies (lower.cpp lower_row_copies): one PPU task per run of at most 512 rows (the
    // 13-bit channel fields, 16 channels per row).
    const int64_t rows = ceil_div(op.in_c, kC2);
    const int64_t per_task = (int64_t(regs::PPU::DATA_CUBE_IN_CHANNEL__CUBE_IN_CHANNEL.max()) + 1) / kC2;
    for (int64_t r0 = 0; r0 < rows; r0 += per_task) {
      TaskTile tile;
      tile.out_rows = 1;
      tile.oc0 = r0 * kC2, tile.ocn = std::min(per_task, rows - r0) * kC2;
      t.tiles.push_back(tile);
    }
    return t;
  }
  if (op.type == NpuOpType::resize) {
    // Nearest x2 (lower_resize.cpp): per output row parity dy (out_row0) one PPU task per run
    // of at most kResizeSurfaces surfaces of the view (oc0, ocn in channels of that view:
    // 16 per surface, one surface per channel block and input row).
    const int64_t surfaces = ceil_div(op.in_c, kC2) * op.in_h;
    const int64_t per_task = (int64_t(regs::PPU::DATA_CUBE_IN_CHANNEL__CUBE_IN_CHANNEL.max()) + 1) / kC2;
    for (int64_t dy = 0; dy < 2; ++dy)
      for (int64_t s0 = 0; s0 < surfaces; s0 += per_task) {
        TaskTile tile;
        tile.out_row0 = dy, tile.out_rows = 1;
        tile.oc0 = s0 * kC2, tile.ocn = std::min(per_task, surfaces - s0) * kC2;
        t.tiles.push_back(tile);
      }
    return t;
  }
  if (op.type == NpuOpType::add || op.type == NpuOpType::lut || op.type == NpuOpType::copy || op.type == NpuOpType::avg_pool || op.type == NpuOpType::max_pool) {
    // The DPU and PPU read their operands from DRAM; one task covers the whole cube.
    TaskTile whole;
    whole.out_rows = op.out_h;
    whole.in_rows = op.in_h;
    whole.ocn = op.out_c;
    t.tiles.push_back(whole);
    return t;
  }
  t.data_row_bytes = cbuf_row_bytes(op);
  const int64_t entries = ceil_div(t.data_row_bytes, kCbufEntryBytes);
  if (!fits(regs::CNA::CBUF_CON1__DATA_ENTRIES, entries))
    return cbuf_error(op, "one input row needs " + std::to_string(entries) + " CBUF entries, above DATA_ENTRIES' " +
                              std::to_string(regs::CNA::CBUF_CON1__DATA_ENTRIES.max()));
  if (op.type == NpuOpType::conv && !fits(regs::CNA::WEIGHT_SIZE1__WEIGHT_BYTES_PER_KERNEL,
                                          op.kh * op.kw * convert::rk_conv_padded_ic(op.in_c) * (op.int16 ? 2 : 1)))
    return cbuf_error(op, "one kernel's weights exceed WEIGHT_BYTES_PER_KERNEL");

  const int64_t all = chunk_weight_bytes(op, op.out_c);
  const int64_t resident_banks = ceil_div(all, kCbufBankBytes) + kMesaExtraWeightBanks;
  int64_t chunk = op.out_c;
  if (resident_banks <= kCbufBanks - 1) {
    t.weights_resident = true;
    t.weight_banks = static_cast<int>(resident_banks);
    t.data_banks = kCbufBanks - t.weight_banks;
  } else {
    t.weights_resident = false;
    if (op.type == NpuOpType::depthwise)
      return cbuf_error(op, "depthwise weights of " + std::to_string(all) + " bytes do not fit the CBUF");
    // Mesa streams with 7 data + 5 weight banks. Tessera tries every split that holds kh
    // input rows and keeps the one with the fewest tasks (each task costs a fixed overhead),
    // then the fewest output-channel chunks (each chunk re-reads the input).
    const int64_t min_data = std::max<int64_t>(1, ceil_div(op.kh * t.data_row_bytes, kCbufBankBytes));
    if (min_data >= kCbufBanks)
      return cbuf_error(op, "one output row needs " + std::to_string(op.kh * t.data_row_bytes) +
                                " bytes of CBUF input data, leaving no bank for weights");
    auto chunk_for = [&](int64_t weight_banks) {
      int64_t c = 0;
      while (c + kWeightGroupOc <= op.out_c && chunk_weight_bytes(op, c + kWeightGroupOc) <= weight_banks * kCbufBankBytes)
        c += kWeightGroupOc;
      return c;
    };
    int best_db = -1;
    int64_t best_tasks = 0, best_chunks = 0;
    for (int64_t db = min_data; db < kCbufBanks; ++db) {
      if (policy == SchedulePolicy::mesa && db != kMesaStreamDataBanks) continue;
      const int64_t c = chunk_for(kCbufBanks - db);
      if (c == 0) continue;
      const int64_t in_rows = db * kCbufBankBytes / t.data_row_bytes;
      const int64_t rows = std::max<int64_t>(1, (in_rows - op.kh) / op.stride_h + 1);
      const int64_t chunks = ceil_div(op.out_c, c), tasks = chunks * ceil_div(op.out_h, std::min(rows, op.out_h));
      if (best_db < 0 || tasks < best_tasks || (tasks == best_tasks && chunks < best_chunks)) {
        best_db = static_cast<int>(db);
        best_tasks = tasks;
        best_chunks = chunks;
      }
    }
    if (best_db < 0 && policy == SchedulePolicy::mesa) return plan_tiling(op, SchedulePolicy::tessera);
    if (best_db < 0)
      return cbuf_error(op, "the weights of one 32-kernel group (" + std::to_string(chunk_weight_bytes(op, kWeightGroupOc)) +
                                " bytes) exceed the " + std::to_string(kCbufBanks - min_data) +
                                " CBUF weight banks left beside " + std::to_string(min_data) + " data bank(s)");
    t.data_banks = best_db;
    t.weight_banks = kCbufBanks - best_db;
    chunk = chunk_for(t.weight_banks);
  }
  // Rows per task: the input rows of a band must fit the data banks.
  const int64_t data_bytes = t.data_banks * kCbufBankBytes;
  const int64_t max_in_rows = data_bytes / t.data_row_bytes;
  if (max_in_rows < op.kh)
    return cbuf_error(op, "one output row needs " + std::to_string(op.kh) + " input rows of " +
                              std::to_string(t.data_row_bytes) + " bytes, more than the " + std::to_string(t.data_banks) +
                              " CBUF data banks (" + std::to_string(data_bytes) + " bytes)");
  int64_t rows = std::max<int64_t>(1, (max_in_rows - op.kh) / op.stride_h + 1);
  rows = std::min(rows, op.out_h);
  // DATAOUT_ATOMICS (22 bits) bounds the output positions of one task.
  while (rows > 1 && !fits(regs::CNA::DATA_SIZE3__DATAOUT_ATOMICS, rows * op.out_w)) rows /= 2;
  if (!fits(regs::CNA::DATA_SIZE3__DATAOUT_ATOMICS, rows * op.out_w))
    return cbuf_error(op, "output row of " + std::to_string(op.out_w) + " positions exceeds DATAOUT_ATOMICS");
  for (int64_t oc0 = 0; oc0 < op.out_c; oc0 += chunk) {
    for (int64_t r0 = 0; r0 < op.out_h; r0 += rows) {
      TaskTile tile;
      tile.out_row0 = r0;
      tile.out_rows = std::min(rows, op.out_h - r0);
      int64_t first = r0 * op.stride_h - op.pad_top;
      int64_t last = (r0 + tile.out_rows - 1) * op.stride_h - op.pad_top + op.kh - 1;
      tile.in_row0 = std::max<int64_t>(first, 0);
      tile.in_rows = std::min(last, op.in_h - 1) - tile.in_row0 + 1;
      tile.pad_top = tile.in_row0 - first;
      tile.oc0 = oc0;
      tile.ocn = std::min(chunk, op.out_c - oc0);
      if (tile.in_rows <= 0)
        return cbuf_error(op, "an output band reads no input rows (padding larger than the input)");
      t.tiles.push_back(tile);
    }
  }
  return t;
}

}  // namespace tessera::rknpu
