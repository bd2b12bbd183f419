// Corrupted models made from real ones, the way a hostile user would make them: truncated,
// bit-flipped, shapes edited so that their element counts wrap, dtypes changed. Used by the
// regression tests (tests/import, tests/tools) and by the corpus generator that the fuzz
// targets replay under ASan/UBSan (fuzz/hostile_corpus.cpp, scripts/fuzz.sh).
//
// Header-only so that the generator, built on its own, shares it. Every variant is a pure
// function of the model's bytes and a seed.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

// The TFLite helpers need the header generated from the schema in ../shared (absent in a
// checkout without the fixtures, where the TFLite importer is not built either).
#if __has_include("tflite_schema_generated.h")
#include "tflite_schema_generated.h"
#define TESSERA_HOSTILE_TFLITE 1
#endif

namespace tessera::testing::hostile {

using Bytes = std::vector<uint8_t>;

struct Variant {
  std::string name;  // what was done, e.g. "shape-t16-wrap" (used as a file name)
  Bytes bytes;
};

#ifdef TESSERA_HOSTILE_TFLITE

// Where a TFLite tensor's shape and type live in the file.
struct TfliteTensorSite {
  int index = 0;
  std::string name;
  size_t shape_offset = 0;  // byte offset of the first int32 dim
  int rank = 0;
  std::optional<size_t> type_offset;  // the type byte, when the file stores it (not the default)
};

// The tensors of subgraph 0, located in `model` (which must pass the flatbuffer verifier).
inline std::vector<TfliteTensorSite> tflite_tensor_sites(const Bytes& model) {
  std::vector<TfliteTensorSite> out;
  flatbuffers::Verifier v(model.data(), model.size());
  if (!::tflite::VerifyModelBuffer(v)) return out;
  const auto* m = ::tflite::GetModel(model.data());
  if (!m->subgraphs() || m->subgraphs()->size() == 0 || !m->subgraphs()->Get(0)->tensors()) return out;
  const auto* tensors = m->subgraphs()->Get(0)->tensors();
  for (flatbuffers::uoffset_t i = 0; i < tensors->size(); ++i) {
    const auto* t = tensors->Get(i);
    TfliteTensorSite s;
    s.index = static_cast<int>(i);
    s.name = t->name() ? t->name()->str() : "";
    if (t->shape() && t->shape()->size() > 0) {
      s.shape_offset = static_cast<size_t>(t->shape()->Data() - model.data());
      s.rank = static_cast<int>(t->shape()->size());
    }
    // Generated tables derive privately from flatbuffers::Table, which holds the field lookup.
    const auto* table = reinterpret_cast<const flatbuffers::Table*>(t);
    if (const uint8_t* p = table->GetAddressOf(::tflite::Tensor::VT_TYPE)) s.type_offset = static_cast<size_t>(p - model.data());
    out.push_back(s);
  }
  return out;
}

// A copy of `model` with tensor `s`'s shape replaced by `dims` (at most its rank).
inline Bytes with_tflite_shape(const Bytes& model, const TfliteTensorSite& s, const std::vector<int32_t>& dims) {
  Bytes b = model;
  for (size_t k = 0; k < dims.size() && static_cast<int>(k) < s.rank; ++k)
    std::memcpy(&b[s.shape_offset + 4 * k], &dims[k], 4);
  return b;
}

// Issue 18's edit to mobilenet_v1_0.25_128_quant.tflite: the [64,1,1,32] weights of
// Conv2d_4_pointwise (tensor 46 of the file) become
// [64,160465489,898107057,32], whose element count wraps modulo 2^64 to 2048.
inline const std::vector<int32_t> kWrapOriginal = {64, 1, 1, 32};
inline const std::vector<int32_t> kWrapShape = {64, 160465489, 898107057, 32};

// The first tensor of `model` whose shape is `dims`, if any.
inline std::optional<TfliteTensorSite> find_tflite_tensor(const Bytes& model, const std::vector<int32_t>& dims) {
  for (const auto& s : tflite_tensor_sites(model)) {
    if (s.rank != static_cast<int>(dims.size())) continue;
    std::vector<int32_t> d(dims.size());
    std::memcpy(d.data(), &model[s.shape_offset], 4 * d.size());
    if (d == dims) return s;
  }
  return std::nullopt;
}

#endif  // TESSERA_HOSTILE_TFLITE

// Where a GGUF tensor's dims and type live in the file.
struct GgufTensorSite {
  std::string name;
  size_t dims_offset = 0;  // first uint64 dim (ggml order: innermost first)
  uint32_t n_dims = 0;
  size_t type_offset = 0;  // uint32 ggml type
};

namespace detail {
// A minimal GGUF header walk (version 2/3): enough to find the tensor infos.
struct GgufWalk {
  const Bytes& b;
  size_t pos = 0;
  bool ok = true;
  template <typename T>
  T get() {
    T v{};
    if (pos + sizeof(T) > b.size()) {
      ok = false;
      return v;
    }
    std::memcpy(&v, &b[pos], sizeof(T));
    pos += sizeof(T);
    return v;
  }
  void skip_string() {
    uint64_t n = get<uint64_t>();
    if (!ok || n > b.size() - pos) ok = false;
    else pos += n;
  }
  void skip_value(uint32_t type, int depth) {
    static const int kSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (!ok || type > 12 || depth > 2) {
      ok = false;
      return;
    }
    if (type == 8) return skip_string();
    if (type == 9) {
      uint32_t et = get<uint32_t>();
      uint64_t n = get<uint64_t>();
      for (uint64_t k = 0; ok && k < n; ++k) skip_value(et, depth + 1);
      return;
    }
    if (pos + kSizes[type] > b.size()) ok = false;
    else pos += kSizes[type];
  }
};
}  // namespace detail

inline std::vector<GgufTensorSite> gguf_tensor_sites(const Bytes& file) {
  std::vector<GgufTensorSite> out;
  detail::GgufWalk w{file};
  if (w.get<uint32_t>() != 0x46554747) return out;  // "GGUF"
  w.get<uint32_t>();
  uint64_t n_tensors = w.get<uint64_t>(), n_kv = w.get<uint64_t>();
  for (uint64_t k = 0; w.ok && k < n_kv; ++k) {
    w.skip_string();
    w.skip_value(w.get<uint32_t>(), 0);
  }
  for (uint64_t k = 0; w.ok && k < n_tensors; ++k) {
    GgufTensorSite s;
    size_t at = w.pos;
    w.skip_string();
    if (!w.ok) break;
    s.name.assign(reinterpret_cast<const char*>(&file[at + 8]), w.pos - at - 8);
    s.n_dims = w.get<uint32_t>();
    s.dims_offset = w.pos;
    for (uint32_t d = 0; w.ok && d < s.n_dims && d < 8; ++d) w.get<uint64_t>();
    s.type_offset = w.pos;
    w.get<uint32_t>();
    w.get<uint64_t>();  // offset
    if (w.ok) out.push_back(s);
  }
  return out;
}

inline Bytes with_gguf_dims(const Bytes& file, const GgufTensorSite& s, const std::vector<uint64_t>& dims) {
  Bytes b = file;
  for (size_t k = 0; k < dims.size() && k < s.n_dims; ++k) std::memcpy(&b[s.dims_offset + 8 * k], &dims[k], 8);
  return b;
}

inline Bytes with_u32(const Bytes& file, size_t offset, uint32_t v) {
  Bytes b = file;
  std::memcpy(&b[offset], &v, 4);
  return b;
}

// Generic corruptions of any file: `count` truncations spread over the file (denser near
// the start, where the headers are) and `count` single-bit flips at seeded offsets.
inline void add_truncations(const Bytes& file, int count, std::vector<Variant>& out) {
  for (int k = 0; k < count; ++k) {
    // Quadratic spacing: many cuts inside the first few KB, fewer in the weights.
    double f = static_cast<double>(k + 1) / (count + 1);
    size_t len = static_cast<size_t>(f * f * static_cast<double>(file.size()));
    out.push_back({"trunc-" + std::to_string(len), Bytes(file.begin(), file.begin() + static_cast<long>(len))});
  }
}

inline void add_bit_flips(const Bytes& file, int count, uint32_t seed, std::vector<Variant>& out) {
  std::mt19937 rng(seed);
  // Half the flips land in the first 4 KB (tables, headers), half anywhere.
  std::uniform_int_distribution<size_t> head(0, std::min<size_t>(file.size(), 4096) - 1), any(0, file.size() - 1);
  std::uniform_int_distribution<int> bit(0, 7);
  for (int k = 0; k < count; ++k) {
    size_t at = k % 2 ? any(rng) : head(rng);
    int which = bit(rng);
    Bytes b = file;
    b[at] ^= static_cast<uint8_t>(1u << which);
    out.push_back({"flip-" + std::to_string(at) + "-" + std::to_string(which), std::move(b)});
  }
}

#ifdef TESSERA_HOSTILE_TFLITE
// Dims that make a rank-r element count overflow, vanish or exceed any sane size.
inline std::vector<std::vector<int32_t>> hostile_tflite_shapes(int rank) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  std::vector<std::vector<int32_t>> s;
  s.push_back(std::vector<int32_t>(rank, kMax));  // (2^31 - 1)^r
  s.push_back(std::vector<int32_t>(rank, 0));     // empty
  s.push_back(std::vector<int32_t>(rank, -1));    // negative
  std::vector<int32_t> big_first(rank, 1);
  big_first[0] = 1 << 30;
  s.push_back(big_first);
  if (rank == 4) s.push_back(kWrapShape);
  if (rank >= 2) {
    std::vector<int32_t> swapped(rank, 1);
    swapped[rank - 1] = 3;
    swapped[0] = 7;
    s.push_back(swapped);  // consistent-looking but not the buffer's size
  }
  return s;
}

// All the structured edits of a TFLite model: every tensor's shape to each hostile shape
// (strided over tensors so that large models give `max_tensors` at most), and every stored
// tensor type to each other type.
inline void add_tflite_edits(const Bytes& model, int max_tensors, std::vector<Variant>& out) {
  auto sites = tflite_tensor_sites(model);
  const size_t stride = sites.size() > static_cast<size_t>(max_tensors) ? sites.size() / max_tensors : 1;
  for (size_t i = 0; i < sites.size(); i += stride) {
    const auto& s = sites[i];
    if (s.rank > 0) {
      auto shapes = hostile_tflite_shapes(s.rank);
      for (size_t k = 0; k < shapes.size(); ++k)
        out.push_back({"shape-t" + std::to_string(s.index) + "-" + std::to_string(k), with_tflite_shape(model, s, shapes[k])});
    }
    if (s.type_offset) {
      // FLOAT32, FLOAT16, INT32, UINT8, INT64, BOOL, INT16, INT8, FLOAT64 (unsupported), 200 (unknown).
      for (uint8_t t : {0, 1, 2, 3, 4, 6, 7, 9, 10, 200}) {
        Bytes b = model;
        if (b[*s.type_offset] == t) continue;
        b[*s.type_offset] = t;
        out.push_back({"type-t" + std::to_string(s.index) + "-" + std::to_string(t), std::move(b)});
      }
    }
  }
}

#endif  // TESSERA_HOSTILE_TFLITE

// The same for a GGUF file: dims that wrap (2^32 x 2^32), vanish, or claim the whole
// address space, and types that are other, unsupported or unknown ggml types.
inline void add_gguf_edits(const Bytes& file, int max_tensors, std::vector<Variant>& out) {
  auto sites = gguf_tensor_sites(file);
  const size_t stride = sites.size() > static_cast<size_t>(max_tensors) ? sites.size() / max_tensors : 1;
  const uint64_t kBig = uint64_t{1} << 32;
  for (size_t i = 0; i < sites.size(); i += stride) {
    const auto& s = sites[i];
    const std::string t = "t" + std::to_string(i);
    std::vector<std::vector<uint64_t>> dims = {{kBig, kBig}, {0}, {~uint64_t{0}}, {uint64_t{1} << 63, 2}, {32, kBig}};
    for (size_t k = 0; k < dims.size(); ++k) out.push_back({"dims-" + t + "-" + std::to_string(k), with_gguf_dims(file, s, dims[k])});
    out.push_back({"ndims-" + t + "-0", with_u32(file, s.dims_offset - 4, 0)});
    out.push_back({"ndims-" + t + "-9", with_u32(file, s.dims_offset - 4, 9)});
    // f32, f16, q4_0, q8_0, q4_K (unsupported here), bf16, unknown.
    for (uint32_t ty : {0u, 1u, 2u, 8u, 12u, 30u, 4000u})
      out.push_back({"type-" + t + "-" + std::to_string(ty), with_u32(file, s.type_offset, ty)});
  }
}

}  // namespace tessera::testing::hostile
