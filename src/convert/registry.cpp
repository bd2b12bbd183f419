// The conversion registry: finds the rule or the chain of rules between two formats and
// runs it. Chains go through row-major staging formats:
//   from -> row-major (decode the layout) -> row-major of the target's element encoding
//   (recode / dequantize) -> to (encode the layout).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "convert/rules.h"
#include "tessera/format_registry.h"

namespace tessera::convert {

namespace {

struct Family {
  std::string name;
  std::span<const Rule> rules;
  int order = 0;
};
// Every registered family of conversions, in match order (first match wins).
std::vector<Family>& families() {
  static std::vector<Family> f;
  return f;
}

struct Step {
  const Rule* rule = nullptr;  // null: identity copy
  Format from, to;
};

const Rule* find_rule(const Format& from, const Format& to) {
  for (const Family& f : families())
    for (const Rule& r : f.rules)
      if (r.matches(from, to)) return &r;
  return nullptr;
}

std::string fmt_name(const Format& f) {
  return std::string(encoding_name(f.encoding)) + "/" + layout_name(f.layout);
}

Status validate(const Format& f, const char* which) {
  auto bytes = f.byte_size();
  if (!bytes.ok()) return bytes.status().with_context(std::string(which) + " format " + f.to_string());
  if (f.layout != Layout::row_major)
    if (const LayoutInfo* li = find_layout(f.layout); li && li->check)
      if (Status st = li->check(f); !st.ok()) return Status(st.code(), std::string(which) + " " + st.message());
  return Status::Ok();
}

// The row-major format that `f` decodes to in one step: bfp tiles decode to f32.
Format decoded(const Format& f) {
  const EncodingInfo* i = find_encoding(f.encoding);
  return row_major_of(i ? i->decodes_to : f.encoding, f.shape);
}

Result<std::vector<Step>> build_chain(const Format& from, const Format& to) {
  TS_RETURN_IF_ERROR(validate(from, "source"));
  TS_RETURN_IF_ERROR(validate(to, "destination"));
  auto fail = [&](const std::string& why) {
    return error(StatusCode::unsupported, "no conversion from ", from.to_string(), " to ", to.to_string(),
                 why.empty() ? "" : ": ", why);
  };
  if (from.shape != to.shape) return fail("logical shapes differ");
  if (from == to) return std::vector<Step>{{nullptr, from, to}};
  if (const Rule* r = find_rule(from, to)) return std::vector<Step>{{r, from, to}};

  // Waypoints: decode the source layout, change the element encoding, encode the layout.
  std::vector<Format> points{from};
  if (from.layout != Layout::row_major) points.push_back(decoded(from));
  Format staging = to.layout == Layout::row_major ? to : decoded(to);
  if (staging.encoding != points.back().encoding) {
    Encoding e = points.back().encoding;
    // GGUF blocks dequantize to f32 first, then cast.
    if (encoding_is_gguf_block(e) && staging.encoding != Encoding::f32)
      points.push_back(row_major_of(Encoding::f32, from.shape));
    points.push_back(staging);
  }
  if (!(points.back() == to)) points.push_back(to);

  // From each waypoint take the longest hop one rule covers (fused steps such as
  // recode_tilize skip a staging format).
  std::vector<Step> chain;
  for (size_t i = 0; i + 1 < points.size();) {
    size_t j = points.size() - 1;
    const Rule* r = nullptr;
    for (; j > i; --j)
      if ((r = find_rule(points[i], points[j]))) break;
    if (!r) return fail("no step from " + fmt_name(points[i]) + " to " + fmt_name(points[i + 1]));
    chain.push_back({r, points[i], points[j]});
    i = j;
  }
  return chain;
}

StepInfo info_of(const Step& s) {
  if (!s.rule) return {"identity", true, ""};
  bool exact = s.rule->exact_for ? s.rule->exact_for(s.from, s.to) : s.rule->exact;
  return {std::string(s.rule->name) + " " + fmt_name(s.from) + "->" + fmt_name(s.to), exact,
          exact ? "" : s.rule->bound};
}

Status run_step(const Step& s, const uint8_t* src, uint8_t* dst, const StepContext& ctx) {
  if (!s.rule) {
    TS_ASSIGN_OR_RETURN(int64_t bytes, s.from.byte_size());
    if (bytes) std::memmove(dst, src, bytes);
    return Status::Ok();
  }
  return s.rule->run(s.from, src, s.to, dst, ctx);
}

}  // namespace

// The shared families' flags, referred to from this object (which every conversion links):
// a static link then keeps their objects, whose registrars run before main. External
// linkage, so that the compiler keeps the table and its references.
extern const bool* const kSharedFamilies[];
const bool* const kSharedFamilies[] = {&kDtypeFamily, &kTileFamily, &kBfpFamily, &kChannelFamily, &kRkWeightFamily};

bool register_rules(const char* family, std::span<const Rule> rules, int order) {
  std::vector<Family>& fs = families();
  for (const Family& f : fs)
    if (f.name == family) return false;
  Family add{family, rules, order};
  auto at = std::upper_bound(fs.begin(), fs.end(), add, [](const Family& a, const Family& b) {
    return a.order != b.order ? a.order < b.order : a.name < b.name;
  });
  fs.insert(at, std::move(add));
  return true;
}

Result<std::vector<StepInfo>> plan(const Format& from, const Format& to) {
  TS_ASSIGN_OR_RETURN(std::vector<Step> chain, build_chain(from, to));
  std::vector<StepInfo> out;
  for (const Step& s : chain) out.push_back(info_of(s));
  return out;
}

Status convert(const Format& from, const void* src, const Format& to, void* dst, Stats* stats) {
  return convert(from, src, to, dst, Options{}, stats);
}

Status convert(const Format& from, const void* src, const Format& to, void* dst, const Options& options,
               Stats* stats) {
  if (from == to) {
    // The identity, a copy: built without a chain, so that a token loop's step inputs and
    // outputs (host format = device format on the cpu) allocate nothing.
    TS_RETURN_IF_ERROR(validate(from, "source"));
    TS_ASSIGN_OR_RETURN(int64_t bytes, from.byte_size());
    if (bytes) std::memmove(dst, src, static_cast<size_t>(bytes));
    if (stats) stats->bytes_in += bytes, stats->bytes_out += bytes;
    return Status::Ok();
  }
  TS_ASSIGN_OR_RETURN(std::vector<Step> chain, build_chain(from, to));
  const StepContext ctx{&options, stats};
  const uint8_t* in = static_cast<const uint8_t*>(src);
  std::vector<uint8_t> staging[2];
  for (size_t i = 0; i < chain.size(); ++i) {
    uint8_t* out = static_cast<uint8_t*>(dst);
    if (i + 1 < chain.size()) {
      TS_ASSIGN_OR_RETURN(int64_t bytes, chain[i].to.byte_size());
      staging[i % 2].resize(bytes);
      out = staging[i % 2].data();
    }
    if (Status st = run_step(chain[i], in, out, ctx); !st.ok())
      return st.with_context("converting " + from.to_string() + " to " + to.to_string());
    in = out;
  }
  if (stats) {
    stats->bytes_in += *from.byte_size();
    stats->bytes_out += *to.byte_size();
    if (chain.size() != 1 || chain[0].rule) stats->identity = false;
  }
  return Status::Ok();
}

}  // namespace tessera::convert
