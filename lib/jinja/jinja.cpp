#include "jinja/jinja.h"

#include "jinja/evaluator.h"
#include "jinja/parser.h"

namespace lmscope::jinja {

Template::Template(const std::string& source, std::string name) : name_(std::move(name)) {
  try {
    body_ = parse(Source(source));
  } catch (const JinjaError& e) {
    throw JinjaError(name_ + " " + e.what());
  }
}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const std::map<std::string, Value>& variables) const {
  Ctx ctx;
  ctx.scopes.push_back(variables);
  ctx.scopes.emplace_back();   // the template's own top-level sets
  Evaluator ev(ctx);
  try {
    ev.exec(body_);   // Break/Continue cannot come back: the parser refuses them outside a loop
  } catch (const RaisedError& e) {
    throw RaisedError(name_ + " raised an exception: " + e.what());
  } catch (const JinjaError& e) {
    throw JinjaError(name_ + " " + e.what());
  }
  return ctx.out;
}

}  // namespace lmscope::jinja
