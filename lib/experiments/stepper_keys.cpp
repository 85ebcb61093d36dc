// The stepper's keys (experiments/stepper.h): the loop after each page, the jumps through the
// walk and through the pages kept in memory.
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>

#include "experiments/stepper.h"

namespace lmscope {

const char* stepper_key_line() {
  return "-- [Enter] next  [n] next layer  [l] logits  [s] next step  [g] layer N  [b] back  [?] keys  [q] quit --";
}

const char* stepper_keys_help() {
  return "keys:\n"
         "  Enter, space   the next page\n"
         "  n              the next layer (the rest of this layer's pages skipped)\n"
         "  l              this step's logits page (the layers left skipped)\n"
         "  s              the next step: this step's layers skipped; its logits and sampling pages still shown\n"
         "  g N Enter      layer N of this step (digits + Enter alone do the same); a layer passed is shown again\n"
         "  b              the page before (again from memory); Enter then moves forward through the pages shown\n"
         "  ?              these keys\n"
         "  q              quit\n";
}

void Stepper::show_again(size_t i) {
  view_ = i;
  std::fprintf(opt_.out, "\n=== %s (again) ===\n%s", shown_[i].head.c_str(), shown_[i].body.c_str());
}

// The first page shown of the on-screen page's step at layer `target` (exact, for `g`) or at
// the first layer >= target shown (n, l, s). None: on the live step the walk skips ahead to
// it; on an earlier step (whose later pages were skipped) the first page shown after that
// step comes instead.
bool Stepper::jump(int target, bool exact) {
  const int step = shown_[view_].step;
  for (size_t i = 0; i < shown_.size(); ++i)
    if (shown_[i].step == step && (exact ? shown_[i].layer == target : shown_[i].layer >= target)) {
      show_again(i);
      return true;
    }
  if (step == info_.step && target > shown_.back().layer) {
    skip_below_layer_ = target;
    return false;
  }
  if (exact || step == info_.step) {   // passed without being shown; the walk cannot go back
    std::fprintf(opt_.out, "(layer %d of %s was skipped, so it is not in memory)\n", target,
                 step == info_.step ? "this step" : ("step " + std::to_string(step)).c_str());
    return true;
  }
  for (size_t i = view_ + 1; i < shown_.size(); ++i)
    if (shown_[i].step != step) {
      show_again(i);
      return true;
    }
  return false;   // not reached: the live step's pages come after an earlier step's
}

void Stepper::navigate() {
  std::FILE* o = opt_.out;
  const int L = cfg_.num_layers;
  bool typing = false;   // after `g` or a digit: the layer number until Enter
  std::string number;
  auto prompt = [&] {
    std::fprintf(o, "%s", stepper_key_line());
    std::fflush(o);
  };
  prompt();
  for (;;) {
    char c = 0;
    if (::read(opt_.in_fd, &c, 1) <= 0) {   // the keyboard went away: print the rest
      std::fprintf(o, "\n");
      opt_.interactive = false;
      return;
    }
    const bool enter = c == '\n' || c == '\r';
    if (typing) {
      if (std::isdigit(static_cast<unsigned char>(c)) && number.size() < 6) {
        number += c;
        std::fputc(c, o);
        std::fflush(o);
        continue;
      }
      if ((c == 127 || c == 8) && !number.empty()) {
        number.pop_back();
        std::fprintf(o, "\b \b");
        std::fflush(o);
        continue;
      }
      typing = false;
      std::fprintf(o, "\n");
      if (!enter || number.empty()) {   // anything else cancels
        prompt();
        continue;
      }
      const int target = std::stoi(number);
      if (target >= L) {
        std::fprintf(o, "(layers are 0..%d)\n", L - 1);
        prompt();
        continue;
      }
      if (!jump(target, /*exact=*/true)) return;
      prompt();
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == 'g' || c == 'G') {
      typing = true;
      number = c == 'g' || c == 'G' ? "" : std::string(1, c);
      std::fprintf(o, "\nlayer: %s", number.c_str());
      std::fflush(o);
      continue;
    }
    std::fprintf(o, "\n");
    // On the logits or sampling page no layer is left: n, l and s go to the next page.
    if (c && std::strchr("nNlLsS", c) && shown_[view_].layer >= L) c = '\n';
    switch (c) {
      case 'q': case 'Q': throw StepperQuit();
      case 'n': case 'N':
        if (!jump(shown_[view_].layer + 1, false)) return;
        break;
      case 'l': case 'L': case 's': case 'S':
        if (!jump(L, false)) return;
        break;
      case 'b': case 'B':
        if (view_ == 0) std::fprintf(o, "(this is the first page)\n");
        else show_again(view_ - 1);
        break;
      case '?': std::fprintf(o, "%s", stepper_keys_help()); break;
      default:
        if (c != '\n' && c != '\r' && c != ' ') {
          std::fprintf(o, "(key '%c' does nothing; ? lists the keys)\n", std::isprint(static_cast<unsigned char>(c)) ? c : '?');
          break;
        }
        if (view_ + 1 == shown_.size()) return;   // the newest page: the walk goes on
        show_again(view_ + 1);
    }
    prompt();
  }
}

}  // namespace lmscope
