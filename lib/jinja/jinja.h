// A small Jinja interpreter: enough of Jinja2 to render the chat templates of the models we
// support (ChatML as in Qwen2/Qwen2.5/Qwen3/SmolLM2, DeepSeek-V3/R1) byte for byte as
// transformers' apply_chat_template does (ImmutableSandboxedEnvironment with trim_blocks,
// lstrip_blocks, loop controls; tojson / raise_exception / namespace as transformers
// defines them; `keep_trailing_newline` off). No C++ Jinja library is packaged in Debian.
//
// docs/jinja.md lists what is supported. Anything else (macros, call blocks, includes, ...)
// is a JinjaError naming the construct and where it is: "chat template 3:14: unsupported
// Jinja tag 'macro'".
//
// The pieces, in the order a template goes through them:
//   lexer.h      template -> text / {{ }} / {% %} segments -> tokens (with line:col)
//   parser.h     tokens -> the statement tree (ast.h)
//   evaluator.h  the tree + variables -> the output (builtins.cpp: functions, methods,
//                filters, tests)
//   value.h      the values (Python's None, bool, int, float, str, list, dict)
//   pystr.h      Python's text rules (repr, isspace, strip, split, ...)
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jinja/error.h"
#include "jinja/value.h"

namespace lmscope::jinja {

struct Node;

// A parsed template. Errors name it: `name` starts every message ("chat template 3:14: ...").
class Template {
 public:
  explicit Template(const std::string& source, std::string name = "template");
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  // Renders with these top-level variables. raise_exception(msg) in the template becomes
  // RaisedError("<name> raised an exception: <msg>").
  std::string render(const std::map<std::string, Value>& variables) const;

 private:
  std::string name_;
  std::vector<std::unique_ptr<Node>> body_;
};

}  // namespace lmscope::jinja
