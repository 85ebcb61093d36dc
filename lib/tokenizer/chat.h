// Chat formatting: a conversation -> the prompt string, as transformers'
// apply_chat_template(tokenize=False) makes it. The prompt is then tokenized with
// add_special=false (apply_chat_template(tokenize=True) does the same).
//
//   ChatFormat::Template    the tokenizer's own chat template, run by lib/jinja (docs/jinja.md)
//   ChatFormat::ChatML      <|im_start|>{role}\n{content}<|im_end|>\n ... <|im_start|>assistant\n
//   ChatFormat::DeepSeekR1  {bos}{system}<｜User｜>{user}<｜Assistant｜>{answer}<｜end▁of▁sentence｜>
//                           ... <｜Assistant｜><think>\n
//   ChatFormat::Gemma       Gemma 3's own template (chat_templates/gemma3.jinja, run by lib/jinja):
//                           {bos}<start_of_turn>user\n{system}\n\n{user}<end_of_turn>\n
//                           <start_of_turn>model\n{answer}<end_of_turn>\n ... <start_of_turn>model\n
//                           (the system prompt merged into the first user turn; "model" for the
//                           assistant; roles must alternate), for a Gemma file without a template
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

enum class ChatFormat { Template, ChatML, DeepSeekR1, Gemma };

// "template", "chatml", "deepseek-r1", "gemma"; anything else is an error naming --chat-format.
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
// Gemma 3's chat template: the chat_template of google/gemma-3-270m-it's tokenizer_config.json
// (huggingface.co/google/gemma-3-270m-it; the same in every Gemma 3 -it model), as
// lib/tokenizer/chat_templates/gemma3.jinja carries it.
const std::string& gemma3_chat_template();

std::string format_chat(const Tokenizer& t, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                        ChatFormat format = ChatFormat::Template, const std::string& template_text = "");

}  // namespace lmscope::tok
