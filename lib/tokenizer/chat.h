// Chat formatting: a conversation -> the prompt string, as transformers'
// apply_chat_template(tokenize=False) makes it. The prompt is then tokenized with
// add_special=false (apply_chat_template(tokenize=True) does the same).
//
//   ChatFormat::Template    the tokenizer's own chat template, run by lib/jinja (docs/jinja.md)
//   ChatFormat::ChatML      <|im_start|>{role}\n{content}<|im_end|>\n ... <|im_start|>assistant\n
//   ChatFormat::DeepSeekR1  {bos}{system}<｜User｜>{user}<｜Assistant｜>{answer}<｜end▁of▁sentence｜>
//                           ... <｜Assistant｜><think>\n
#pragma once
#include <map>
#include <string>
#include <vector>

namespace lmscope::tok {

class Tokenizer;

struct ChatMessage {
  std::string role;      // "system", "user", "assistant"
  std::string content;
};

enum class ChatFormat { Template, ChatML, DeepSeekR1 };

// "template", "chatml", "deepseek-r1"; anything else is an error naming --chat-format.
ChatFormat parse_chat_format(const std::string& name);
const char* chat_format_name(ChatFormat f);

// [{"role": "...", "content": "..."}, ...] -> messages; errors name the element.
std::vector<ChatMessage> parse_chat_json(const std::string& json_text, const std::string& label);

// Runs a Jinja chat template with HF's variables: messages, add_generation_prompt, and the
// named special tokens that are set (bos_token, eos_token, ...). Template features we do
// not support, and a missing template, are errors that point at --chat-format.
std::string render_chat_template(const std::string& template_text, const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt,
                                 const std::map<std::string, std::string>& special_tokens);

// The prompt for `messages` in the chosen format. Template: `template_text` when given,
// else the tokenizer's chat_template().
std::string format_chat(const Tokenizer& t, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                        ChatFormat format = ChatFormat::Template, const std::string& template_text = "");

}  // namespace lmscope::tok
