// Announces a forward to the backend (begin_forward) and, if the forward throws before its
// end, tells it so on the way out (abandon_forward: CUDA drops an unfinished graph capture).
#pragma once
#include <exception>

#include "backend/backend.h"

namespace lmscope {

class ForwardScope {
 public:
  ForwardScope(Backend& be, int64_t B, int64_t T) : be_(be) { be_.begin_forward(B, T); }
  ~ForwardScope() {
    if (std::uncaught_exceptions() > uncaught_) be_.abandon_forward();
  }
  ForwardScope(const ForwardScope&) = delete;
  ForwardScope& operator=(const ForwardScope&) = delete;

 private:
  Backend& be_;
  int uncaught_ = std::uncaught_exceptions();
};

}  // namespace lmscope
