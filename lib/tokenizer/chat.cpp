#include "tokenizer/chat.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

#include "io/json_error.h"
#include "jinja/jinja.h"
#include "tokenizer/json_field.h"
#include "tokenizer/tokenizer.h"

namespace lmscope::tok {

namespace {

const char* kFormatHint = "choose a built-in format with --chat-format chatml, deepseek-r1 or gemma";

void check_roles(const std::vector<ChatMessage>& messages, const char* format) {
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& r = messages[i].role;
    if (r != "system" && r != "user" && r != "assistant")
      throw std::runtime_error(std::string("--chat-format ") + format + ": message " + std::to_string(i) +
                               " has role '" + r + "' (only system, user and assistant)");
  }
}

// <|im_start|>{role}\n{content}<|im_end|>\n per message (Qwen2, SmolLM2 without a default
// system prompt).
std::string chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  check_roles(messages, "chatml");
  std::string s;
  for (const ChatMessage& m : messages) s += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (add_generation_prompt) s += "<|im_start|>assistant\n";
  return s;
}

// DeepSeek-R1: the system prompts (joined by a blank line) right after BOS, then
// <｜User｜>… and <｜Assistant｜>…<｜end▁of▁sentence｜> turns; an assistant turn keeps only
// what follows its last </think>; the generation prompt opens the reasoning with <think>\n.
std::string deepseek_r1(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                        const std::map<std::string, std::string>& special) {
  check_roles(messages, "deepseek-r1");
  std::string system;
  bool first_system = true;
  for (const ChatMessage& m : messages) {
    if (m.role != "system") continue;
    system += (first_system ? "" : "\n\n") + m.content;
    first_system = false;
  }
  auto bos = special.find("bos_token");
  std::string s = (bos == special.end() ? "" : bos->second) + system;
  for (const ChatMessage& m : messages) {
    if (m.role == "user") {
      s += "<｜User｜>" + m.content;
    } else if (m.role == "assistant") {
      std::string content = m.content;
      size_t think = content.rfind("</think>");
      if (think != std::string::npos) content = content.substr(think + 8);
      s += "<｜Assistant｜>" + content + "<｜end▁of▁sentence｜>";
    }
  }
  if (add_generation_prompt) s += "<｜Assistant｜><think>\n";
  return s;
}

}  // namespace

ChatFormat parse_chat_format(const std::string& name) {
  if (name == "template") return ChatFormat::Template;
  if (name == "chatml") return ChatFormat::ChatML;
  if (name == "deepseek-r1") return ChatFormat::DeepSeekR1;
  if (name == "gemma") return ChatFormat::Gemma;
  throw std::runtime_error("--chat-format: unknown format '" + name + "' (template, chatml, deepseek-r1, gemma)");
}

const char* chat_format_name(ChatFormat f) {
  switch (f) {
    case ChatFormat::Template: return "template";
    case ChatFormat::ChatML: return "chatml";
    case ChatFormat::DeepSeekR1: return "deepseek-r1";
    case ChatFormat::Gemma: return "gemma";
  }
  return "?";
}

std::vector<ChatMessage> parse_chat_json(const std::string& json_text, const std::string& label) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const std::exception& e) {
    throw std::runtime_error(label + ": not valid JSON: " + json_error_text(e));
  }
  Field root(j, label);
  // Either a list of messages or {"messages": [...]}.
  Field list = j.is_object() ? root.at("messages") : root;
  list.expect_array();
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < list.size(); ++i) {
    Field m = list.at(i);
    m.expect_object();
    out.push_back({m.at("role").str(), m.at("content").str()});
  }
  return out;
}

std::string render_chat_template(const std::string& template_text, const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt,
                                 const std::map<std::string, std::string>& special_tokens) {
  if (template_text.empty()) throw std::runtime_error(std::string("the tokenizer has no chat template; ") + kFormatHint);
  std::unique_ptr<jinja::Template> tmpl;
  try {
    tmpl = std::make_unique<jinja::Template>(template_text, "chat template");
  } catch (const jinja::JinjaError& e) {
    throw std::runtime_error(std::string(e.what()) + "; " + kFormatHint);
  }
  jinja::List msgs;
  for (const ChatMessage& m : messages)
    msgs.push_back(jinja::Value(jinja::Dict{{"role", jinja::Value(m.role)}, {"content", jinja::Value(m.content)}}));
  std::map<std::string, jinja::Value> vars;
  for (const auto& [k, v] : special_tokens) vars[k] = jinja::Value(v);
  vars["messages"] = jinja::Value(std::move(msgs));
  vars["add_generation_prompt"] = jinja::Value(add_generation_prompt);
  vars["tools"] = jinja::Value::none();
  vars["documents"] = jinja::Value::none();
  try {
    return tmpl->render(vars);
  } catch (const jinja::RaisedError& e) {
    throw std::runtime_error(e.what());   // the template refuses this conversation: no hint
  } catch (const jinja::JinjaError& e) {
    throw std::runtime_error(std::string(e.what()) + "; " + kFormatHint);
  }
}

const std::string& gemma3_chat_template() {
  static const std::string text =
#include "gemma3_chat_template.inc"
      ;
  return text;
}

// A built-in format writes its special tokens as text, and the encoder makes each of them one
// id only where the vocabulary has it; elsewhere it would be split into pieces without a word.
static void require_single_tokens(const Tokenizer& t, ChatFormat format, std::initializer_list<const char*> tokens) {
  for (const char* token : tokens)
    if (t.encode(token, false).size() != 1)
      throw std::runtime_error(std::string("--chat-format ") + chat_format_name(format) + ": the vocabulary has no token '" +
                               token + "' (its text would be split into pieces); use a tokenizer that has it, or "
                               "--chat-format template");
}

std::string format_chat(const Tokenizer& t, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                        ChatFormat format, const std::string& template_text) {
  switch (format) {
    case ChatFormat::ChatML:
      require_single_tokens(t, format, {"<|im_start|>", "<|im_end|>"});
      return chatml(messages, add_generation_prompt);
    case ChatFormat::DeepSeekR1:
      require_single_tokens(t, format, {"<｜User｜>", "<｜Assistant｜>", "<｜end▁of▁sentence｜>"});
      return deepseek_r1(messages, add_generation_prompt, t.special_token_strings());
    case ChatFormat::Gemma:
      require_single_tokens(t, format, {"<start_of_turn>", "<end_of_turn>"});
      return render_chat_template(gemma3_chat_template(), messages, add_generation_prompt, t.special_token_strings());
    case ChatFormat::Template:
      return render_chat_template(template_text.empty() ? t.chat_template() : template_text, messages,
                                  add_generation_prompt, t.special_token_strings());
  }
  return "";
}

}  // namespace lmscope::tok
