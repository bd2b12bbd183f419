// The format registry (tessera/format_registry.h): every layout and encoding by id.
//
// The tables are built on first use with core's generic formats (the row_major layout and
// the encodings of the logical dtypes); the families of the conversion library and of the
// devices add theirs at static initialization. Lookups index an array: a Format's size is
// asked on every tensor write, so it costs no search.
#include "tessera/format_registry.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "core/checked.h"

namespace tessera {

namespace {

constexpr int kIds = 256;                // ids are one byte (format.h)
constexpr int kFirstFreeLayout = 32;     // ids below: the built-in families' (format.h names 0..6)
constexpr int kFirstFreeEncoding = 64;   // ids below: the built-in encodings' (0..22)

Result<Shape> row_major_padded(const Format& f) { return f.shape; }
Result<int64_t> row_major_bytes(const Format&) { return int64_t{0}; }  // format.cpp sizes row_major itself

struct Tables {
  std::array<std::unique_ptr<LayoutInfo>, kIds> layouts;
  std::array<std::unique_ptr<EncodingInfo>, kIds> encodings;

  Tables() {
    LayoutInfo rm;
    rm.name = "row_major";
    rm.aliases = {"row", "nhwc"};
    rm.summary = "dense, last dim fastest (NHWC for 4-D feature maps)";
    rm.padded_shape = row_major_padded;
    rm.byte_size = row_major_bytes;
    layouts[static_cast<int>(Layout::row_major)] = std::make_unique<LayoutInfo>(std::move(rm));
    // The encodings of the logical dtypes (same ids as DType, f32 ... iq4_xs).
    struct Plain {
      Encoding e;
      const char* name;
      int bytes;
    };
    constexpr Plain kGeneric[] = {
        {Encoding::f32, "f32", 4},       {Encoding::f16, "f16", 2},       {Encoding::bf16, "bf16", 2},
        {Encoding::i8, "i8", 1},         {Encoding::u8, "u8", 1},         {Encoding::i16, "i16", 2},
        {Encoding::i32, "i32", 4},       {Encoding::i64, "i64", 8},       {Encoding::boolean, "bool", 1},
        {Encoding::q8_0, "q8_0", 0},     {Encoding::q4_0, "q4_0", 0},     {Encoding::q4_1, "q4_1", 0},
        {Encoding::q5_0, "q5_0", 0},     {Encoding::q5_1, "q5_1", 0},     {Encoding::q2_k, "q2_K", 0},
        {Encoding::q3_k, "q3_K", 0},     {Encoding::q4_k, "q4_K", 0},     {Encoding::q5_k, "q5_K", 0},
        {Encoding::q6_k, "q6_K", 0},     {Encoding::iq4_nl, "iq4_nl", 0}, {Encoding::iq4_xs, "iq4_xs", 0},
    };
    for (const Plain& p : kGeneric) {
      EncodingInfo i;
      i.name = p.name;
      i.element_bytes = p.bytes;
      i.block = p.bytes == 0;
      i.dtype = static_cast<DType>(static_cast<int>(p.e));
      i.decodes_to = p.e;
      encodings[static_cast<int>(p.e)] = std::make_unique<EncodingInfo>(std::move(i));
    }
  }
};

Tables& tables() {
  static Tables t;
  return t;
}

template <typename Info>
bool name_taken(const std::array<std::unique_ptr<Info>, kIds>& table, const Info& info) {
  auto taken = [&](const std::string& n) {
    for (const auto& i : table) {
      if (!i) continue;
      if (i->name == n) return true;
      for (const std::string& a : i->aliases)
        if (a == n) return true;
    }
    return false;
  };
  if (taken(info.name)) return true;
  for (const std::string& a : info.aliases)
    if (taken(a)) return true;
  return false;
}

template <typename Id, typename Info>
Result<Id> add(std::array<std::unique_ptr<Info>, kIds>& table, Info info, std::optional<Id> id, int first_free,
               const char* what) {
  if (info.name.empty()) return error(StatusCode::invalid_argument, what, " registered without a name");
  if (name_taken(table, info))
    return error(StatusCode::invalid_argument, what, " '", info.name, "': the name (or an alias) is registered already");
  int slot = -1;
  if (id) {
    slot = static_cast<int>(*id);
    if (table[slot]) return error(StatusCode::invalid_argument, what, " '", info.name, "': id ", slot, " is taken");
  } else {
    for (int i = first_free; i < kIds && slot < 0; ++i)
      if (!table[i]) slot = i;
    if (slot < 0) return error(StatusCode::out_of_range, what, " '", info.name, "': no free id left");
  }
  table[slot] = std::make_unique<Info>(std::move(info));
  return static_cast<Id>(slot);
}

template <typename Id>
Id must(Result<Id> r) {
  if (!r.ok()) {
    std::fprintf(stderr, "tessera: format registration failed: %s\n", r.status().to_string().c_str());
    std::abort();
  }
  return *r;
}

}  // namespace

Result<Layout> register_layout(LayoutInfo info, std::optional<Layout> id) {
  if (!info.padded_shape || !info.byte_size)
    return error(StatusCode::invalid_argument, "layout '", info.name, "' registered without its size rules");
  return add(tables().layouts, std::move(info), id, kFirstFreeLayout, "layout");
}

Result<Encoding> register_encoding(EncodingInfo info, std::optional<Encoding> id) {
  auto r = add(tables().encodings, std::move(info), id, kFirstFreeEncoding, "encoding");
  // An encoding with a row-major form decodes to itself.
  if (r.ok() && tables().encodings[static_cast<int>(*r)]->has_row_major)
    tables().encodings[static_cast<int>(*r)]->decodes_to = *r;
  return r;
}

Layout must_register(Result<Layout> r) { return must(std::move(r)); }
Encoding must_register(Result<Encoding> r) { return must(std::move(r)); }

const LayoutInfo* find_layout(Layout l) { return tables().layouts[static_cast<int>(l)].get(); }
const EncodingInfo* find_encoding(Encoding e) { return tables().encodings[static_cast<int>(e)].get(); }

std::vector<Layout> registered_layouts() {
  std::vector<Layout> v;
  for (int i = 0; i < kIds; ++i)
    if (tables().layouts[i]) v.push_back(static_cast<Layout>(i));
  return v;
}

std::vector<Encoding> registered_encodings() {
  std::vector<Encoding> v;
  for (int i = 0; i < kIds; ++i)
    if (tables().encodings[i]) v.push_back(static_cast<Encoding>(i));
  return v;
}

int encoding_element_bytes(Encoding e) {
  const EncodingInfo* i = find_encoding(e);
  return i ? i->element_bytes : 0;
}

int64_t tile_bytes_of(Encoding e) {
  const EncodingInfo* i = find_encoding(e);
  if (!i) return 0;
  if (i->tile_bytes) return i->tile_bytes;
  return i->block ? 0 : int64_t{i->element_bytes} * 1024;
}

Result<int64_t> dense_byte_size(const Format& f, const Shape& padded) {
  Size n = encoding_element_bytes(f.encoding);
  for (int64_t d : padded) n *= d;
  if (n.ok()) return n.value_or_zero();
  return error(StatusCode::invalid_argument, "format ", f.to_string(), ": the byte size overflows 64 bits");
}

}  // namespace tessera
