#include "serve/openai.h"

#include <algorithm>

#include "serve/api_error.h"

namespace tessera::serve {

using nlohmann::json;

namespace {

// The OpenAI API allows at most four stop sequences.
constexpr size_t kMaxStops = 4;

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw ApiError(400, "'" + field + "': " + why);
}

double number_field(const json& j, const char* key, double lo, double hi) {
  const json& v = j.at(key);
  if (!v.is_number()) bad(key, std::string("must be a number, got ") + v.type_name());
  const double d = v.get<double>();
  if (!(d >= lo && d <= hi)) bad(key, v.dump() + " outside [" + json(lo).dump() + ", " + json(hi).dump() + "]");
  return d;
}

int64_t integer_field(const json& j, const char* key, int64_t lo, int64_t hi) {
  const json& v = j.at(key);
  if (!v.is_number_integer()) bad(key, std::string("must be an integer, got ") + v.dump());
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
    bad(key, v.dump() + " is larger than " + std::to_string(hi));
  const int64_t i = v.get<int64_t>();
  if (i < lo || i > hi) bad(key, v.dump() + " outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return i;
}

bool has(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && !it->is_null();
}

}  // namespace

CompletionRequest parse_completion_request(const json& j, bool chat) {
  CompletionRequest r;
  r.chat = chat;
  if (!has(j, "model") || !j["model"].is_string()) bad("model", "required, a string");
  r.model = j["model"].get<std::string>();
  if (chat) {
    if (!has(j, "messages") || !j["messages"].is_array() || j["messages"].empty())
      bad("messages", "required, a non-empty array of {role, content}");
    for (size_t i = 0; i < j["messages"].size(); ++i) {
      const json& m = j["messages"][i];
      const std::string f = "messages[" + std::to_string(i) + "]";
      if (!m.is_object() || !has(m, "role") || !m["role"].is_string()) bad(f, "needs a string 'role'");
      Message msg{m["role"].get<std::string>(), ""};
      if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "developer")
        bad(f + ".role", "'" + msg.role + "' is not system, developer, user or assistant");
      const json c = m.value("content", json());
      if (c.is_string()) {
        msg.content = c.get<std::string>();
      } else if (c.is_array()) {  // content parts: only text parts
        for (const auto& part : c) {
          if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
            bad(f + ".content", "only text parts {type: \"text\", text} are supported");
          msg.content += part["text"].get<std::string>();
        }
      } else if (!c.is_null()) {
        bad(f + ".content", std::string("must be a string or an array of text parts, got ") + c.type_name());
      }
      r.messages.push_back(std::move(msg));
    }
  } else {
    if (!has(j, "prompt")) bad("prompt", "required");
    const json& p = j["prompt"];
    if (p.is_string()) {
      r.prompt = p.get<std::string>();
    } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
      r.prompt = p[0].get<std::string>();
    } else {
      bad("prompt", "must be a string (or an array of one string; batched prompts are not supported)");
    }
  }
  const char* max_key = has(j, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  if (has(j, max_key)) r.max_tokens = integer_field(j, max_key, 0, int64_t{1} << 30);
  if (!chat && !r.max_tokens) r.max_tokens = 16;
  r.sampling.temperature = 1.0f;
  r.sampling.top_p = 1.0f;
  r.sampling.top_k = 0;
  r.sampling.repeat_penalty = 1.0f;
  if (has(j, "temperature")) r.sampling.temperature = static_cast<float>(number_field(j, "temperature", 0, 2));
  if (has(j, "top_p")) {
    r.sampling.top_p = static_cast<float>(number_field(j, "top_p", 0, 1));
    if (r.sampling.top_p <= 0) bad("top_p", "must be greater than 0");
  }
  if (has(j, "top_k")) r.sampling.top_k = static_cast<int>(integer_field(j, "top_k", 0, 1 << 30));
  if (has(j, "repeat_penalty"))
    r.sampling.repeat_penalty = static_cast<float>(number_field(j, "repeat_penalty", 1e-3, 100));
  if (has(j, "seed")) {
    const json& s = j["seed"];
    if (!s.is_number_integer()) bad("seed", "must be an integer, got " + s.dump());
    r.sampling.seed = s.is_number_unsigned() ? s.get<uint64_t>() : static_cast<uint64_t>(s.get<int64_t>());
    r.seeded = true;
  }
  if (has(j, "n") && integer_field(j, "n", 1, 1) != 1) bad("n", "only 1 choice per request");
  if (has(j, "stop")) {
    const json& s = j["stop"];
    if (s.is_string()) {
      r.stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      if (s.size() > kMaxStops) bad("stop", "at most 4 strings");
      for (const auto& e : s) {
        if (!e.is_string()) bad("stop", "must be a string or an array of strings");
        r.stop.push_back(e.get<std::string>());
      }
    } else {
      bad("stop", "must be a string or an array of strings");
    }
    for (const auto& s2 : r.stop)
      if (s2.empty()) bad("stop", "stop strings must not be empty");
  }
  if (has(j, "stream")) {
    if (!j["stream"].is_boolean()) bad("stream", "must be true or false");
    r.stream = j["stream"].get<bool>();
  }
  if (has(j, "stream_options")) {
    const json& o = j["stream_options"];
    if (!o.is_object()) bad("stream_options", "must be an object");
    if (has(o, "include_usage")) {
      if (!o["include_usage"].is_boolean()) bad("stream_options.include_usage", "must be true or false");
      r.include_usage = o["include_usage"].get<bool>();
    }
  }
  return r;
}

size_t incomplete_utf8_tail(const std::string& s) {
  // Walk back over at most 3 continuation bytes (10xxxxxx) to a lead byte.
  const size_t n = s.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    size_t len = 1;
    if ((c & 0xE0) == 0xC0) len = 2;
    else if ((c & 0xF0) == 0xE0) len = 3;
    else if ((c & 0xF8) == 0xF0) len = 4;
    return len > back ? back : 0;
  }
  return 0;
}

std::string TextStream::push(const std::string& piece) {
  std::string out = partial_ + scanner_.add(piece);
  partial_.clear();
  if (!scanner_.stopped()) {  // after a stop nothing follows: send what there is
    const size_t hold = incomplete_utf8_tail(out);
    partial_ = out.substr(out.size() - hold);
    out.resize(out.size() - hold);
  }
  text_ += out;
  return out;
}

std::string TextStream::finish() {
  std::string out = partial_ + (scanner_.stopped() ? std::string() : scanner_.flush());
  partial_.clear();
  text_ += out;
  return out;
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

namespace {
json finish_json(const std::string& reason) { return reason.empty() ? json(nullptr) : json(reason); }
}  // namespace

json completion_response(const CompletionRequest& req, const std::string& id, int64_t created, const std::string& text,
                         const std::string& finish_reason, const Usage& usage) {
  json choice = {{"index", 0}, {"finish_reason", finish_json(finish_reason)}, {"logprobs", nullptr}};
  if (req.chat)
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  else
    choice["text"] = text;
  return {{"id", id},
          {"object", req.chat ? "chat.completion" : "text_completion"},
          {"created", created},
          {"model", req.model},
          {"choices", json::array({choice})},
          {"usage", usage_json(usage)}};
}

json completion_chunk(const CompletionRequest& req, const std::string& id, int64_t created, const std::string& text,
                      const std::string& finish_reason, bool first) {
  json choice = {{"index", 0}, {"finish_reason", finish_json(finish_reason)}, {"logprobs", nullptr}};
  if (req.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || finish_reason.empty()) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  return {{"id", id},
          {"object", req.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created},
          {"model", req.model},
          {"choices", json::array({choice})}};
}

json usage_chunk(const CompletionRequest& req, const std::string& id, int64_t created, const Usage& u) {
  return {{"id", id},
          {"object", req.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created},
          {"model", req.model},
          {"choices", json::array()},
          {"usage", usage_json(u)}};
}

CompletionRequest parse_v2_text_request(const json& j, const std::string& model, std::string& id) {
  const std::string what = "model '" + model + "' infer request";
  if (has(j, "id")) {
    if (!j["id"].is_string()) throw ApiError(400, what + ": \"id\" must be a string");
    id = j["id"].get<std::string>();
  }
  if (!has(j, "inputs") || !j["inputs"].is_array()) throw ApiError(400, what + ": \"inputs\" must be an array of tensors");
  if (j["inputs"].size() != 1 || !j["inputs"][0].is_object() || j["inputs"][0].value("name", "") != kV2TextInput)
    throw ApiError(422, what + ": a GGUF model takes one input, '" + std::string(kV2TextInput) + "' (BYTES, shape [1])");
  const json& in = j["inputs"][0];
  if (in.value("datatype", "") != "BYTES")
    throw ApiError(422, what + ", input 'text_input': datatype " + in.value("datatype", json("")).dump() +
                            " but the model takes BYTES");
  if (!in.contains("shape") || in["shape"] != json::array({1}))
    throw ApiError(422, what + ", input 'text_input': shape " + in.value("shape", json()).dump() +
                            " but the model takes [1]");
  const json data = in.value("data", json());
  const json* text = data.is_array() && data.size() == 1 ? &data[0] : nullptr;
  if (text && text->is_array() && text->size() == 1) text = &(*text)[0];
  if (!text || !text->is_string())
    throw ApiError(422, what + ", input 'text_input': data must hold one string");
  json c = json::object();
  if (has(j, "parameters")) {
    if (!j["parameters"].is_object()) throw ApiError(400, what + ": \"parameters\" must be an object");
    for (const char* key : {"max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "repeat_penalty"})
      if (j["parameters"].contains(key)) c[key] = j["parameters"][key];
  }
  c["model"] = model;
  c["prompt"] = *text;
  return parse_completion_request(c, false);
}

json v2_text_response(const std::string& model, const std::string& id, const std::string& text) {
  json j = {{"model_name", model},
            {"model_version", "1"},
            {"outputs", json::array({{{"name", kV2TextOutput}, {"datatype", "BYTES"}, {"shape", {1}}, {"data", {text}}}})}};
  if (!id.empty()) j["id"] = id;
  return j;
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& j) { return "data: " + dump_json(j) + "\n\n"; }
std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace tessera::serve
