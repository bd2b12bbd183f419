// llama-perplexity's base log-probability files and its KL-divergence statistics (kld.h).
#include "kld.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

namespace tessera::cli::kld {

namespace {

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};
constexpr int64_t kHeaderBytes = 8 + 3 * 4;

// The log-probabilities below max - 16 share the floor; llama-perplexity's choice.
constexpr float kRange = 16.0f;

// Bytes of the whole file a header implies, or -1 past 2^62.
int64_t file_bytes(const Header& h) {
  const __int128 tokens = static_cast<__int128>(h.n_ctx) * h.n_chunk * 4;
  const __int128 records =
      static_cast<__int128>(h.n_chunk) * scored_per_chunk(h.n_ctx) * record_values(h.n_vocab) * 2;
  const __int128 total = kHeaderBytes + tokens + records;
  return total > (static_cast<__int128>(1) << 62) ? -1 : static_cast<int64_t>(total);
}

int32_t read_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

float read_f32(const uint16_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

// As llama-perplexity's percentile: linear between the two nearest sorted values.
float percentile(const std::vector<float>& v, float fraction) {
  if (fraction <= 0) return v.front();
  if (fraction >= 1) return v.back();
  float p = fraction * static_cast<float>(v.size() - 1);
  const size_t ip = static_cast<size_t>(p);
  p -= static_cast<float>(ip);
  return (1 - p) * v[ip] + p * v[std::min(ip + 1, v.size() - 1)];
}

float median(const std::vector<float>& v) {
  const size_t n = v.size();
  return n % 2 == 0 ? 0.5f * (v[n / 2] + v[n / 2 - 1]) : v[n / 2];
}

// Mean and its standard error, as llama-perplexity computes them (0 below 11 values).
std::pair<double, double> mean_and_uncertainty(double sum, double sum2, int64_t count) {
  if (count < 1) return {0.0, 0.0};
  const double f = sum / count;
  double df = sum2 / count - f * f;
  df = df > 0 && count > 10 ? std::sqrt(df / (count - 1)) : 0.0;
  return {f, df};
}

double covariance(double a, double b, double ab, int64_t count) {
  if (count < 10) return 0.0;
  return (ab / count - (a / count) * (b / count)) / (count - 1);
}

}  // namespace

void encode(std::span<const float> logits, uint16_t* out) {
  const int64_t n = static_cast<int64_t>(logits.size());
  float max = logits[0], min = logits[0];
  for (float v : logits) {
    max = std::max(max, v);
    min = std::min(min, v);
  }
  min = std::max(min, max - kRange);
  double sum_exp = 0;
  for (float v : logits) sum_exp += std::exp(v - max);
  const float log_sum_exp = static_cast<float>(std::log(sum_exp));
  const float min_log_prob = min - max - log_sum_exp;
  const float scale = (max - min) / 65535.f;
  std::memcpy(out, &scale, 4);
  std::memcpy(out + 2, &min_log_prob, 4);
  uint16_t* code = out + 4;
  std::fill(code, out + record_values(n), uint16_t{0});
  if (scale > 0) {
    const float inv = 1 / scale;
    for (int64_t i = 0; i < n; ++i)
      if (logits[static_cast<size_t>(i)] > min)
        code[i] = static_cast<uint16_t>(std::min(65535.0f, std::nearbyint(inv * (logits[static_cast<size_t>(i)] - min))));
  }
}

Status Writer::open(const std::string& path, const Header& h, std::span<const int32_t> tokens) {
  path_ = path;
  h_ = h;
  if (static_cast<int64_t>(tokens.size()) != h.n_ctx * h.n_chunk)
    return error(StatusCode::internal, "kl-divergence base: ", tokens.size(), " tokens for ", h.n_chunk,
                 " chunks of ", h.n_ctx);
  out_.open(path, std::ios::binary | std::ios::trunc);
  if (!out_) return error(StatusCode::not_found, "cannot write the kl-divergence base file '", path, "'");
  const uint32_t n_ctx = static_cast<uint32_t>(h.n_ctx);
  const int32_t n_vocab = static_cast<int32_t>(h.n_vocab), n_chunk = static_cast<int32_t>(h.n_chunk);
  out_.write(kMagic, 8);
  out_.write(reinterpret_cast<const char*>(&n_ctx), 4);
  out_.write(reinterpret_cast<const char*>(&n_vocab), 4);
  out_.write(reinterpret_cast<const char*>(&n_chunk), 4);
  out_.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 4));
  rec_.assign(static_cast<size_t>(record_values(h.n_vocab)), 0);
  return out_ ? Status::Ok() : error(StatusCode::internal, "writing '", path, "' failed");
}

Status Writer::add(std::span<const float> logits) {
  if (static_cast<int64_t>(logits.size()) != h_.n_vocab)
    return error(StatusCode::internal, "kl-divergence base: ", logits.size(), " logits, vocabulary ", h_.n_vocab);
  encode(logits, rec_.data());
  out_.write(reinterpret_cast<const char*>(rec_.data()), static_cast<std::streamsize>(rec_.size() * 2));
  ++written_;
  return out_ ? Status::Ok() : error(StatusCode::internal, "writing '", path_, "' failed (disk full?)");
}

Status Writer::close() {
  const int64_t want = h_.n_chunk * scored_per_chunk(h_.n_ctx);
  out_.close();
  if (written_ != want)
    return error(StatusCode::internal, "kl-divergence base '", path_, "': ", written_, " of ", want, " records written");
  return out_ ? Status::Ok() : error(StatusCode::internal, "writing '", path_, "' failed");
}

Status Reader::parse_header(const uint8_t* p, int64_t size) {
  if (size < kHeaderBytes || std::memcmp(p, kMagic, 8) != 0)
    return error(StatusCode::invalid_argument, "'", name_,
                 "' is not a file of base log-probabilities (llama-perplexity --kl-divergence-base): no '_logits_' header");
  uint32_t n_ctx;
  std::memcpy(&n_ctx, p + 8, 4);
  const int32_t n_vocab = read_i32(p + 12), n_chunk = read_i32(p + 16);
  if (n_ctx < 4 || n_ctx > kMaxCtx)
    return error(StatusCode::invalid_argument, "'", name_, "': context ", n_ctx, " is outside 4..", kMaxCtx);
  if (n_vocab < 1 || n_vocab > kMaxVocab)
    return error(StatusCode::invalid_argument, "'", name_, "': vocabulary ", n_vocab, " is outside 1..", kMaxVocab);
  if (n_chunk < 1 || n_chunk > kMaxChunks)
    return error(StatusCode::invalid_argument, "'", name_, "': chunk count ", n_chunk, " is outside 1..", kMaxChunks);
  h_ = Header{n_ctx, n_vocab, n_chunk};
  const int64_t want = file_bytes(h_);
  if (want != size)
    return error(StatusCode::invalid_argument, "'", name_, "' holds ", size, " bytes, but ", n_chunk, " chunks of ",
                 n_ctx, " tokens over a vocabulary of ", n_vocab, " need ", want, " (truncated or not this format)");
  return Status::Ok();
}

Status Reader::check_tokens() {
  records_at_ = kHeaderBytes + h_.n_ctx * h_.n_chunk * 4;
  for (size_t i = 0; i < tokens_.size(); ++i)
    if (tokens_[i] < 0 || tokens_[i] >= h_.n_vocab)
      return error(StatusCode::invalid_argument, "'", name_, "': token ", i, " is ", tokens_[i],
                   ", outside the vocabulary of ", h_.n_vocab);
  return Status::Ok();
}

Status Reader::open(const std::string& path) {
  name_ = path;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  in_.open(path, std::ios::binary);
  if (ec || !in_) return error(StatusCode::not_found, "cannot read the kl-divergence base file '", path, "'");
  uint8_t head[kHeaderBytes] = {};
  in_.read(reinterpret_cast<char*>(head), kHeaderBytes);
  TS_RETURN_IF_ERROR(parse_header(head, in_ ? static_cast<int64_t>(size) : 0));
  tokens_.resize(static_cast<size_t>(h_.n_ctx * h_.n_chunk));
  if (!in_.read(reinterpret_cast<char*>(tokens_.data()), static_cast<std::streamsize>(tokens_.size() * 4)))
    return error(StatusCode::invalid_argument, "'", path, "': reading the tokens failed");
  return check_tokens();
}

Status Reader::open_bytes(std::vector<uint8_t> bytes, const std::string& name) {
  name_ = name;
  bytes_ = std::move(bytes);
  TS_RETURN_IF_ERROR(parse_header(bytes_.data(), static_cast<int64_t>(bytes_.size())));
  tokens_.resize(static_cast<size_t>(h_.n_ctx * h_.n_chunk));
  std::memcpy(tokens_.data(), bytes_.data() + kHeaderBytes, tokens_.size() * 4);
  return check_tokens();
}

Status Reader::chunk(int64_t c, std::vector<uint16_t>& records) {
  if (c < 0 || c >= h_.n_chunk) return error(StatusCode::out_of_range, "'", name_, "' has no chunk ", c + 1);
  const int64_t per = scored_per_chunk(h_.n_ctx), nv = record_values(h_.n_vocab);
  records.resize(static_cast<size_t>(per * nv));
  const int64_t at = records_at_ + c * per * nv * 2, bytes = per * nv * 2;
  if (!bytes_.empty()) {
    std::memcpy(records.data(), bytes_.data() + at, static_cast<size_t>(bytes));
  } else {
    in_.seekg(at);
    if (!in_.read(reinterpret_cast<char*>(records.data()), bytes))
      return error(StatusCode::invalid_argument, "'", name_, "': reading chunk ", c + 1, " failed");
  }
  for (int64_t j = 0; j < per; ++j) {
    const uint16_t* r = records.data() + j * nv;
    const float scale = read_f32(r), min_log_prob = read_f32(r + 2);
    if (!std::isfinite(scale) || scale < 0 || !std::isfinite(min_log_prob) || min_log_prob > 0)
      return error(StatusCode::invalid_argument, "'", name_, "': chunk ", c + 1, " position ", h_.n_ctx / 2 + j,
                   " has scale ", scale, " and minimum log-probability ", min_log_prob,
                   " (want a finite scale >= 0 and a log-probability <= 0)");
  }
  return Status::Ok();
}

void Stats::add(std::span<const float> logits, const uint16_t* base, int32_t tok) {
  const int64_t n = static_cast<int64_t>(logits.size());
  float max = logits[0];
  int64_t imax = 0;
  for (int64_t i = 1; i < n; ++i)
    if (logits[static_cast<size_t>(i)] > max) max = logits[static_cast<size_t>(i)], imax = i;
  double sum_exp = 0;
  for (float v : logits) sum_exp += std::exp(v - max);
  const float log_sum_exp = static_cast<float>(std::log(sum_exp));
  const float scale = read_f32(base), min_log_prob = read_f32(base + 2);
  const uint16_t* code = base + 4;

  const float nll = max + log_sum_exp - logits[static_cast<size_t>(tok)];
  const float nll_base = -(scale * code[tok] + min_log_prob);
  sum_nll_ += nll, sum_nll2_ += static_cast<double>(nll) * nll;
  sum_nll_base_ += nll_base, sum_nll_base2_ += static_cast<double>(nll_base) * nll_base;
  sum_nll_nll_base_ += static_cast<double>(nll) * nll_base;

  // KL(base || model) over the base's tokens above its floor: sum p_base (log p_base - log p).
  const float log_norm = max + log_sum_exp;
  double kld = 0;
  int64_t imax_base = 0;
  float base_max = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float lp_base = scale * code[i] + min_log_prob;
    if (i == 0 || lp_base > base_max) base_max = lp_base, imax_base = i;
    if (lp_base > -kRange) kld += std::exp(lp_base) * (lp_base - logits[static_cast<size_t>(i)] + log_norm);
  }
  sum_kld_ += kld, sum_kld2_ += kld * kld;
  same_top_ += imax == imax_base;
  ++count_;
  const float p_diff = std::exp(-nll) - std::exp(-nll_base);
  const double d2 = static_cast<double>(p_diff) * p_diff;
  sum_p_diff_ += p_diff, sum_p_diff2_ += d2, sum_p_diff4_ += d2 * d2;
  kld_.push_back(static_cast<float>(kld));
  p_diff_.push_back(p_diff);
}

std::string Stats::chunk_header() {
  return "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p\n";
}

std::string Stats::chunk_line(int64_t chunk) const {
  const auto lp = mean_and_uncertainty(sum_nll_, sum_nll2_, count_);
  const auto lpb = mean_and_uncertainty(sum_nll_base_, sum_nll_base2_, count_);
  const double cov = covariance(sum_nll_, sum_nll_base_, sum_nll_nll_base_, count_);
  const double ppl = std::exp(lp.first);
  const double ratio_unc = std::sqrt(std::max(0.0, lp.second * lp.second + lpb.second * lpb.second - 2 * cov));
  const auto kl = mean_and_uncertainty(sum_kld_, sum_kld2_, count_);
  const auto mse = mean_and_uncertainty(sum_p_diff2_, sum_p_diff4_, count_);
  const double rms = std::sqrt(mse.first), rms_unc = rms > 0 ? 0.5 / rms * mse.second : 0.0;
  const double top = count_ > 0 ? static_cast<double>(same_top_) / count_ : 0.0;
  const double top_unc = count_ > 1 ? std::sqrt(top * (1 - top) / (count_ - 1)) : 0.0;
  return fmt::format("{:4d}    {:9.4f} ± {:9.4f}    {:10.5f} ± {:10.5f}    {:10.5f} ± {:10.5f}    {:6.3f} ± {:6.3f} %    "
                     "{:6.3f} ± {:6.3f} %\n",
                     chunk, ppl, ppl * lp.second, lp.first - lpb.first, ratio_unc, kl.first, kl.second, 100 * rms,
                     100 * rms_unc, 100 * top, 100 * top_unc);
}

std::string Stats::summary() const {
  if (count_ == 0) return "no scored positions\n";
  std::vector<float> kl = kld_, pd = p_diff_;
  std::sort(kl.begin(), kl.end());
  std::sort(pd.begin(), pd.end());
  std::string s = "====== Perplexity statistics ======\n";
  const auto lp = mean_and_uncertainty(sum_nll_, sum_nll2_, count_);
  const auto lpb = mean_and_uncertainty(sum_nll_base_, sum_nll_base2_, count_);
  const double ppl = std::exp(lp.first), ppl_unc = ppl * lp.second;
  const double pplb = std::exp(lpb.first), pplb_unc = pplb * lpb.second;
  const double cov = covariance(sum_nll_, sum_nll_base_, sum_nll_nll_base_, count_);
  s += fmt::format("Mean PPL(Q)                   : {:10.6f} ± {:10.6f}\n", ppl, ppl_unc);
  s += fmt::format("Mean PPL(base)                : {:10.6f} ± {:10.6f}\n", pplb, pplb_unc);
  if (lp.second > 0 && lpb.second > 0)
    s += fmt::format("Cor(ln(PPL(Q)), ln(PPL(base))): {:6.2f}%\n", 100 * cov / (lp.second * lpb.second));
  const double ratio = lp.first - lpb.first;
  const double ratio_unc = std::sqrt(std::max(0.0, lp.second * lp.second + lpb.second * lpb.second - 2 * cov));
  s += fmt::format("Mean ln(PPL(Q)/PPL(base))     : {:10.6f} ± {:10.6f}\n", ratio, ratio_unc);
  s += fmt::format("Mean PPL(Q)/PPL(base)         : {:10.6f} ± {:10.6f}\n", std::exp(ratio), std::exp(ratio) * ratio_unc);
  s += "\n====== KL divergence statistics ======\n";
  const auto k = mean_and_uncertainty(sum_kld_, sum_kld2_, count_);
  s += fmt::format("Mean    KLD: {:10.6f} ± {:10.6f}\n", k.first, k.second);
  s += fmt::format("Maximum KLD: {:10.6f}\n", kl.back());
  for (const auto& [name, f] : {std::pair{"99.9%", 0.999f}, {"99.0%", 0.99f}, {"95.0%", 0.95f}, {"90.0%", 0.9f}})
    s += fmt::format("{}   KLD: {:10.6f}\n", name, percentile(kl, f));
  s += fmt::format("Median  KLD: {:10.6f}\n", median(kl));
  for (const auto& [name, f] : {std::pair{"10.0%", 0.1f}, {" 5.0%", 0.05f}, {" 1.0%", 0.01f}, {" 0.1%", 0.001f}})
    s += fmt::format("{}   KLD: {:10.6f}\n", name, percentile(kl, f));
  s += fmt::format("Minimum KLD: {:10.6f}\n", kl.front());
  s += "\n====== Token probability statistics ======\n";
  const auto pdm = mean_and_uncertainty(sum_p_diff_, sum_p_diff2_, count_);
  s += fmt::format("Mean    Δp: {:6.3f} ± {:5.3f} %\n", 100 * pdm.first, 100 * pdm.second);
  s += fmt::format("Maximum Δp: {:6.3f}%\n", 100 * pd.back());
  for (const auto& [name, f] : {std::pair{"99.9%", 0.999f}, {"99.0%", 0.99f}, {"95.0%", 0.95f}, {"90.0%", 0.9f},
                                {"75.0%", 0.75f}})
    s += fmt::format("{}   Δp: {:6.3f}%\n", name, 100 * percentile(pd, f));
  s += fmt::format("Median  Δp: {:6.3f}%\n", 100 * median(pd));
  for (const auto& [name, f] : {std::pair{"25.0%", 0.25f}, {"10.0%", 0.1f}, {" 5.0%", 0.05f}, {" 1.0%", 0.01f},
                                {" 0.1%", 0.001f}})
    s += fmt::format("{}   Δp: {:6.3f}%\n", name, 100 * percentile(pd, f));
  s += fmt::format("Minimum Δp: {:6.3f}%\n", 100 * pd.front());
  const auto mse = mean_and_uncertainty(sum_p_diff2_, sum_p_diff4_, count_);
  const double rms = std::sqrt(mse.first);
  s += fmt::format("RMS Δp    : {:6.3f} ± {:5.3f} %\n", 100 * rms, rms > 0 ? 100 * 0.5 / rms * mse.second : 0.0);
  const double top = static_cast<double>(same_top_) / count_;
  s += fmt::format("Same top p: {:6.3f} ± {:5.3f} %\n", 100 * top,
                   count_ > 1 ? 100 * std::sqrt(top * (1 - top) / (count_ - 1)) : 0.0);
  return s;
}

}  // namespace tessera::cli::kld
