// Format: names, sizes and parsing. Core knows the generic formats only (row_major and the
// encodings of the logical dtypes); every other layout and encoding answers through the
// format registry (src/core/format_registry.cpp), where its family registered its rules.
#include "tessera/format.h"

#include <algorithm>
#include <sstream>

#include "core/checked.h"
#include "tessera/format_registry.h"

namespace tessera {

const char* encoding_name(Encoding e) {
  const EncodingInfo* i = find_encoding(e);
  return i ? i->name.c_str() : "?";
}

std::optional<Encoding> encoding_from_name(const std::string& name) {
  for (Encoding e : registered_encodings()) {
    const EncodingInfo& i = *find_encoding(e);
    if (i.name == name) return e;
    for (const std::string& a : i.aliases)
      if (a == name) return e;
  }
  return std::nullopt;
}

const char* layout_name(Layout l) {
  const LayoutInfo* i = find_layout(l);
  return i ? i->name.c_str() : "?";
}

std::optional<Layout> layout_from_name(const std::string& name) {
  for (Layout l : registered_layouts()) {
    const LayoutInfo& i = *find_layout(l);
    if (i.name == name) return l;
    for (const std::string& a : i.aliases)
      if (a == name) return l;
  }
  return std::nullopt;
}

Encoding encoding_of(DType t) {
  // The generic encodings share the logical dtypes' ids (f32 ... iq4_xs).
  return static_cast<Encoding>(static_cast<int>(t));
}

std::optional<DType> dtype_of(Encoding e) {
  const EncodingInfo* i = find_encoding(e);
  return i ? i->dtype : std::nullopt;
}

bool encoding_is_gguf_block(Encoding e) {
  return static_cast<int>(e) >= static_cast<int>(Encoding::q8_0) && static_cast<int>(e) <= static_cast<int>(Encoding::iq4_xs);
}

bool encoding_is_block(Encoding e) {
  const EncodingInfo* i = find_encoding(e);
  return i && i->block;
}

Shape nc1hwc2_nhwc(const Shape& s) {
  if (s.size() == 2) return {1, 1, s[0], s[1]};
  return s;
}

Shape Format::padded_shape() const {
  if (layout == Layout::row_major) return shape;
  const LayoutInfo* li = find_layout(layout);
  if (!li) return shape;
  auto p = li->padded_shape(*this);
  return p.ok() ? *p : shape;  // callers size the format with byte_size() first, which fails instead
}

Result<int64_t> Format::byte_size() const {
  const EncodingInfo* ei = find_encoding(encoding);
  if (!ei) return error(StatusCode::invalid_argument, "encoding id ", static_cast<int>(encoding), " is not registered");
  Size elements = 1;
  for (int64_t d : shape) {
    if (d < 0) return error(StatusCode::invalid_argument, "negative dim in ", shape_str(shape));
    elements *= d;
  }
  if (!elements.ok())
    return error(StatusCode::invalid_argument, "format ", to_string(), ": the byte size overflows 64 bits");
  if (layout == Layout::row_major) {
    if (!ei->has_row_major || !ei->dtype)
      return error(StatusCode::unsupported, "encoding ", ei->name, " exists only in the tile32 layout");
    const int64_t inner = shape.empty() ? 1 : shape.back();
    TS_ASSIGN_OR_RETURN(int64_t row, dtype_row_bytes(*ei->dtype, inner));
    Size bytes = Size(inner == 0 ? 0 : elements.value_or_zero() / inner) * row;
    if (bytes.ok()) return bytes.value_or_zero();
    return error(StatusCode::invalid_argument, "format ", to_string(), ": the byte size overflows 64 bits");
  }
  const LayoutInfo* li = find_layout(layout);
  if (!li) return error(StatusCode::invalid_argument, "layout id ", static_cast<int>(layout), " is not registered");
  return li->byte_size(*this);
}

int64_t Format::page_size() const {
  if (layout == Layout::row_major) {
    auto dt = dtype_of(encoding);
    if (!dt) return 1;
    auto r = dtype_row_bytes(*dt, shape.empty() ? 1 : shape.back());
    return r.ok() ? std::max<int64_t>(*r, 1) : 1;
  }
  const LayoutInfo* li = find_layout(layout);
  if (li && li->page_size) return li->page_size(*this);
  auto b = byte_size();
  return b.ok() ? *b : 1;
}

int64_t Format::alignment() const {
  if (layout != Layout::row_major)
    if (const LayoutInfo* li = find_layout(layout); li && li->alignment) return li->alignment(*this);
  return std::max(encoding_element_bytes(encoding), 1);
}

std::string Format::to_string() const {
  std::ostringstream os;
  os << encoding_name(encoding) << '/' << layout_name(layout) << ' ' << shape_str(shape);
  return os.str();
}

Result<Format> Format::parse(const std::string& text, Shape s) {
  std::string enc = text, lay = "row_major";
  if (auto slash = text.find('/'); slash != std::string::npos) {
    enc = text.substr(0, slash);
    lay = text.substr(slash + 1);
  }
  auto e = encoding_from_name(enc);
  if (!e) {
    std::string known;
    for (Encoding k : registered_encodings()) known += (known.empty() ? "" : " ") + find_encoding(k)->name;
    return error(StatusCode::invalid_argument, "unknown encoding '", enc, "' in format '", text, "' (known: ", known,
                 ")");
  }
  auto l = layout_from_name(lay);
  if (!l) {
    std::string known;
    for (Layout k : registered_layouts()) {
      const LayoutInfo& i = *find_layout(k);
      known += (known.empty() ? "" : ", ") + i.name;
      for (const std::string& a : i.aliases) known += "|" + a;
    }
    return error(StatusCode::invalid_argument, "unknown layout '", lay, "' in format '", text, "' (known: ", known,
                 ")");
  }
  Format f{*e, *l, std::move(s)};
  if (auto b = f.byte_size(); !b.ok()) return b.status().with_context("format '" + text + "'");
  return f;
}

}  // namespace tessera
