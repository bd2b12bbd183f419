// `tessera chat-template TEMPLATE.jinja --messages FILE.json`: prints a conversation rendered
// by a chat template (the Jinja engine, runtime/llm/jinja.h), exactly, with no newline
// added. FILE.json is an array of {"role": ..., "content": ...} objects (any JSON values
// are passed through). The variables: messages, add_generation_prompt (true unless
// --no-generation-prompt), bos_token, eos_token, and tools when --tools FILE.json (a JSON
// array of tool descriptions) is given.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

#include "cli.h"
#include "runtime/llm/jinja.h"

namespace tessera::cli {

namespace {

namespace jinja = tessera::llm::jinja;

// JSON nested deeper than the engine's values may nest is refused before it is converted.
bool nesting_within(const nlohmann::ordered_json& j, uint32_t depth) {
  if (!j.is_structured()) return true;
  if (depth >= jinja::kMaxNesting) return false;
  for (const auto& x : j)
    if (!nesting_within(x, depth + 1)) return false;
  return true;
}

jinja::Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return jinja::Value::none();
    case nlohmann::ordered_json::value_t::boolean: return jinja::Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return jinja::Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: return jinja::Value(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return jinja::Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return jinja::Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      jinja::List l;
      for (const auto& x : j) l.push_back(from_json(x));
      return jinja::Value(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      jinja::Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.emplace_back(it.key(), from_json(it.value()));
      return jinja::Value(std::move(d));
    }
    default: return jinja::Value::none();
  }
}

Result<std::string> read_text(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return error(StatusCode::not_found, "[chat-template] cannot read the ", what, " '", path, "'");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// --now "YYYY-MM-DD[ HH:MM:SS]": the time strftime_now() sees (tests fix it).
Result<std::tm> parse_now(const std::string& text) {
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  const int n = std::sscanf(text.c_str(), "%d-%d-%d %d:%d:%d", &y, &mo, &d, &h, &mi, &s);
  if (n != 3 && n != 6) return error(StatusCode::invalid_argument, "[chat-template] --now: expected YYYY-MM-DD[ HH:MM:SS], got '", text, "'");
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  std::tm copy = tm;
  timegm(&copy);  // fills the weekday and day of the year
  tm.tm_wday = copy.tm_wday;
  tm.tm_yday = copy.tm_yday;
  return tm;
}

struct Args {
  std::string template_path;
  std::string messages_path;
  std::string tools_path;
  std::string bos_token;
  std::string eos_token;
  std::string now;
  bool no_generation_prompt = false;
};

void run(const Args& args) {
  const std::string source = take(read_text(args.template_path, "template"));
  const std::string messages_text = take(read_text(args.messages_path, "messages file"));
  nlohmann::ordered_json messages = nlohmann::ordered_json::parse(messages_text, nullptr, false);
  if (messages.is_discarded() || !messages.is_array())
    take(error(StatusCode::invalid_argument, "[chat-template] '", args.messages_path, "' is not a JSON array of messages"));
  if (!nesting_within(messages, 1))
    take(error(StatusCode::invalid_argument, "[chat-template] '", args.messages_path, "' nests deeper than ", jinja::kMaxNesting, " levels"));
  jinja::Value vars{jinja::Dict{}};
  vars.set("messages", from_json(messages));
  if (!args.tools_path.empty()) {
    nlohmann::ordered_json tools =
        nlohmann::ordered_json::parse(take(read_text(args.tools_path, "tools file")), nullptr, false);
    if (tools.is_discarded() || !tools.is_array())
      take(error(StatusCode::invalid_argument, "[chat-template] '", args.tools_path, "' is not a JSON array of tools"));
    if (!nesting_within(tools, 1))
      take(error(StatusCode::invalid_argument, "[chat-template] '", args.tools_path, "' nests deeper than ", jinja::kMaxNesting, " levels"));
    vars.set("tools", from_json(tools));
  }
  vars.set("add_generation_prompt", jinja::Value(!args.no_generation_prompt));
  vars.set("bos_token", jinja::Value(args.bos_token));
  vars.set("eos_token", jinja::Value(args.eos_token));
  jinja::RenderOptions opts;
  if (!args.now.empty()) opts.now = take(parse_now(args.now));
  const std::string out = take(jinja::render(source, vars, opts));
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

void add_chat_template_command(CLI::App& app) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("chat-template", "Render a conversation with a chat template (Jinja)");
  cmd->add_option("template", args->template_path, "The template's Jinja source (.jinja)")->required();
  cmd->add_option("--messages", args->messages_path, "JSON array of {role, content} messages")->required();
  cmd->add_option("--tools", args->tools_path, "JSON array of tool descriptions (the variable tools)");
  cmd->add_option("--bos-token", args->bos_token, "The value of bos_token");
  cmd->add_option("--eos-token", args->eos_token, "The value of eos_token");
  cmd->add_flag("--no-generation-prompt", args->no_generation_prompt, "add_generation_prompt = false");
  cmd->add_option("--now", args->now, "The time strftime_now() formats: YYYY-MM-DD[ HH:MM:SS] (default: now)");
  cmd->callback([args] { run(*args); });
}

}  // namespace tessera::cli
