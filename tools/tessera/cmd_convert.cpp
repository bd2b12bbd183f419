// `tessera convert --shape D0,D1,... --from FMT --to FMT IN OUT`: raw tensor files between
// host and device formats through the conversion registry (docs/formats.md).
//
// FMT is <encoding>[/<layout>], e.g. f32, bf16/tile, bfp8_b/tile, u8/nc1hwc2, i8/nhwc.
// OUT gets exactly the device bytes (tiles in order; per bfp tile the exponents, then the
// codes) or the row-major values when converting back to a host format.
// With --region B0:E0,B1:E1,... only a box of the tensor moves: if --to is the stored
// (non-row-major) side, IN holds the box's values and OUT, which must already hold the
// whole tensor, is updated in place; otherwise IN holds the whole tensor and OUT gets the box.
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "cli.h"
#include "core/file_io.h"
#include "tessera/backend/convert.h"

namespace tessera::cli {

namespace {

Result<std::vector<int64_t>> parse_ints(const std::string& text, const char* what) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (...) {
      used = 0;
    }
    if (used != item.size() || item.empty() || v < 0)
      return error(StatusCode::invalid_argument, what, " '", text, "': '", item, "' is not a non-negative integer");
    out.push_back(v);
  }
  return out;
}

// "B0:E0,B1:E1,..." -> a Region.
Result<Region> parse_region(const std::string& text) {
  Region r;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto colon = item.find(':');
    if (colon == std::string::npos)
      return error(StatusCode::invalid_argument, "--region '", text, "': '", item, "' is not BEGIN:END");
    TS_ASSIGN_OR_RETURN(auto b, parse_ints(item.substr(0, colon), "--region begin"));
    TS_ASSIGN_OR_RETURN(auto e, parse_ints(item.substr(colon + 1), "--region end"));
    if (b.size() != 1 || e.size() != 1)
      return error(StatusCode::invalid_argument, "--region '", text, "': '", item, "' is not BEGIN:END");
    r.begin.push_back(b[0]);
    r.end.push_back(e[0]);
  }
  return r;
}

// Largest tensor file read or written: padding (a [N,1,1] tensor tiles into N 32x32 tiles)
// can make an output far larger than its input, so both sides are bounded.
constexpr int64_t kMaxConvertBytes = int64_t{4} << 30;

Status write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) return error(StatusCode::io_error, "cannot write '", path, "'");
  return Status::Ok();
}

// The byte size of `f`, refused past kMaxConvertBytes.
Result<int64_t> sized(const Format& f) {
  TS_ASSIGN_OR_RETURN(int64_t bytes, f.byte_size());
  if (bytes > kMaxConvertBytes)
    return error(StatusCode::out_of_memory, f.to_string(), " needs ", bytes, " bytes, more than the ",
                 kMaxConvertBytes, " allowed");
  return bytes;
}

// The file at `path`, which must hold exactly the bytes of `f`.
Result<std::vector<uint8_t>> read_tensor(const std::string& path, const Format& f) {
  TS_ASSIGN_OR_RETURN(int64_t want, sized(f));
  return read_file_exact(path, want, f.to_string() + " file");
}

Format parse_format(const std::string& text, const Shape& shape, const char* option) {
  auto f = Format::parse(text, shape);
  if (!f.ok()) take(f.status().with_context(option));
  return *f;
}

struct Args {
  std::string shape, from, to, in, out, region, nonfinite = "reject";
  int64_t pad_value = 0;
};

void run(const Args& a) {
  Shape shape = take(parse_ints(a.shape, "--shape"));
  Format from = parse_format(a.from, shape, "--from");
  Format to = parse_format(a.to, shape, "--to");
  from.pad_value = to.pad_value = a.pad_value;
  convert::Options opt;
  if (a.nonfinite == "pack") opt.bfp_nonfinite = convert::Options::NonFinite::pack;
  else if (a.nonfinite != "reject")
    take(error(StatusCode::invalid_argument, "--nonfinite must be 'reject' or 'pack', got '", a.nonfinite, "'"));
  auto steps = take(convert::plan(from, to));
  convert::Stats st;
  std::vector<uint8_t> in, out;
  if (a.region.empty()) {
    in = take(read_tensor(a.in, from));
    out.resize(take(sized(to)));
    take(convert::convert(from, in.data(), to, out.data(), opt, &st));
  } else {
    Region r = take(parse_region(a.region));
    take(r.validate(shape).with_context("--region " + a.region));
    const bool write = to.layout != Layout::row_major;
    Format& whole = write ? to : from;
    Format box = write ? from : to;
    box.shape = r.extent(shape);
    if (write) {
      in = take(read_tensor(a.in, box));
      auto existing = read_tensor(a.out, whole);
      if (!existing.ok())
        take(existing.status().with_context("--region writes into OUT in place (it must hold the whole tensor)"));
      out = std::move(*existing);
      take(convert::write_region(whole, out.data(), r, box, in.data(), opt, &st));
    } else {
      in = take(read_tensor(a.in, whole));
      out.resize(take(sized(box)));
      take(convert::read_region(whole, in.data(), r, box, out.data(), &st));
    }
  }
  take(write_file(a.out, out));
  fmt::print("{} -> {}: read {} bytes, wrote {} bytes to {}", from.to_string(), to.to_string(), in.size(), out.size(),
             a.out);
  if (st.rmw_bytes) fmt::print(" ({} bytes read back for read-modify-write)", st.rmw_bytes);
  if (st.nonfinite_rows) fmt::print(" ({} face rows held Inf/NaN)", st.nonfinite_rows);
  fmt::print("\n");
  for (const auto& s : steps)
    fmt::print("  {}: {}{}\n", s.name, s.exact ? "exact" : "lossy", s.exact ? "" : " (" + s.bound + ")");
}

}  // namespace

void add_convert_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("convert", "Convert a raw tensor file between host and device formats");
  auto a = std::make_shared<Args>();
  cmd->add_option("--shape", a->shape, "Logical shape D0,D1,... (tile layouts use the last two dims as H, W)")
      ->required();
  cmd->add_option("--from", a->from, "Source format <encoding>[/<layout>], e.g. f32, u8/nhwc, bfp8_b/tile")
      ->required();
  cmd->add_option("--to", a->to, "Destination format, e.g. bf16/tile, bfp4_b/tile, i8/nc1hwc2, f32")->required();
  cmd->add_option("in", a->in, "Input file")->required();
  cmd->add_option("out", a->out, "Output file")->required();
  cmd->add_option("--region", a->region, "Only the box B0:E0,B1:E1,... (see the file header for the direction)");
  cmd->add_option("--pad-value", a->pad_value, "Value of padded nc1hwc2 channels (the zero point), in its encoding");
  cmd->add_option("--nonfinite", a->nonfinite, "Inf/NaN in a bfp face row: reject (default) or pack");
  cmd->callback([a] { run(*a); });
}

}  // namespace tessera::cli
