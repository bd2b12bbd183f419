// The colpad4 format family (colpad4_format.h): its registration with the format registry
// (name, size rules, page, alignment) and its conversion rules, in one file.
#include "device_plugin/colpad4_format.h"

#include <cstring>

#include "convert/rules.h"
#include "tessera/format_registry.h"

namespace tessera::plugin {

Colpad4Geom colpad4_geom(const Shape& s) {
  Colpad4Geom g;
  g.w = s.empty() ? 1 : s.back();
  g.h = s.size() < 2 ? 1 : s[s.size() - 2];
  for (size_t i = 0; i + 2 < s.size(); ++i) g.outer *= s[i];
  g.hp = (g.h + 3) / 4 * 4;
  return g;
}

namespace {

// [outer, W, Hp], every product checked (a shape from a file may be anything).
Result<Shape> padded(const Format& f) {
  const Shape& s = f.shape;
  Size outer = 1;
  for (size_t i = 0; i + 2 < s.size(); ++i) outer *= s[i];
  const int64_t w = s.empty() ? 1 : s.back(), h = s.size() < 2 ? 1 : s[s.size() - 2];
  return convert::checked_shape(f, {outer, w, Size(h).rounded_up(4)});
}

Result<int64_t> bytes(const Format& f) {
  if (encoding_element_bytes(f.encoding) == 0)
    return error(StatusCode::unsupported, "encoding ", encoding_name(f.encoding), " has no colpad4 form");
  TS_ASSIGN_OR_RETURN(Shape p, padded(f));
  return dense_byte_size(f, p);
}

int64_t page(const Format& f) { return (colpad4_geom(f.shape).hp) * encoding_element_bytes(f.encoding); }
int64_t alignment(const Format& f) { return 4 * encoding_element_bytes(f.encoding); }

bool plain_same(const Format& a, const Format& b) {
  return a.encoding == b.encoding && encoding_element_bytes(a.encoding) > 0;
}

bool to_matches(const Format& from, const Format& to) {
  return from.layout == Layout::row_major && to.layout == colpad4() && plain_same(from, to);
}
Status to_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const convert::StepContext&) {
  const Colpad4Geom g = colpad4_geom(from.shape);
  const int64_t e = encoding_element_bytes(from.encoding);
  std::memset(dst, 0, static_cast<size_t>(g.outer * g.w * g.hp * e));  // the padding holds zeros
  for (int64_t s = 0; s < g.outer; ++s)
    for (int64_t r = 0; r < g.h; ++r)
      for (int64_t c = 0; c < g.w; ++c)
        std::memcpy(dst + g.index(s, r, c) * e, src + ((s * g.h + r) * g.w + c) * e, static_cast<size_t>(e));
  return Status::Ok();
}

bool from_matches(const Format& from, const Format& to) { return to_matches(to, from); }
Status from_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const convert::StepContext&) {
  const Colpad4Geom g = colpad4_geom(from.shape);
  const int64_t e = encoding_element_bytes(from.encoding);
  for (int64_t s = 0; s < g.outer; ++s)
    for (int64_t r = 0; r < g.h; ++r)
      for (int64_t c = 0; c < g.w; ++c)
        std::memcpy(dst + ((s * g.h + r) * g.w + c) * e, src + g.index(s, r, c) * e, static_cast<size_t>(e));
  return Status::Ok();
}

const convert::Rule kRules[] = {
    {"to_colpad4", to_matches, to_run, true, ""},
    {"from_colpad4", from_matches, from_run, true, ""},
};

LayoutInfo info() {
  LayoutInfo i;
  i.name = "colpad4";
  i.summary = "test device: [..., H, W] stored column by column, columns zero-padded to a multiple of 4";
  i.padded_shape = padded;
  i.byte_size = bytes;
  i.page_size = page;
  i.alignment = alignment;
  return i;
}

}  // namespace

// Registered on first use, which the registrar below makes static initialization (the
// device refers to colpad4(), so a static link keeps this object).
Layout colpad4() {
  static const Layout l = [] {
    const Layout id = must_register(register_layout(info()));
    convert::register_rules("colpad4", kRules);
    return id;
  }();
  return l;
}

namespace {
[[maybe_unused]] const Layout kRegistered = colpad4();
}  // namespace

}  // namespace tessera::plugin
