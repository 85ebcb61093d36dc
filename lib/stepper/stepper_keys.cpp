// The stepper's keys (stepper/stepper.h): the loop after each page, the jumps through the
// walk and through the pages kept in memory, and drawing a page on a screen.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>

#include "stepper/stepper.h"

namespace lmscope {

const char* stepper_key_line() {
  return "-- [Enter] next  [n] next layer  [l] logits  [s] next step  [g] layer N  [b] back  [?] keys  [q] quit --";
}

namespace {

// The footer of a screen: the keys most used, short enough for 80 columns.
const char* kScreenKeys = "Enter next  b back  n/p layer  h/H head  </> keys  s step  ? keys  q quit";

}  // namespace

const char* stepper_keys_help() {
  return "keys:\n"
         "  Enter, space   the next page\n"
         "  n              the next layer (the rest of this layer's pages skipped)\n"
         "  p              the previous layer of this step (when it was shown)\n"
         "  l              this step's logits page (the layers left skipped)\n"
         "  s              the next step: this step's layers skipped; its logits and sampling pages still shown\n"
         "  g N Enter      layer N of this step (digits + Enter alone do the same); a layer passed is shown again\n"
         "  t N Enter      step N: a step shown again, a later one by skipping to it\n"
         "  h, H           the next, previous attention head (on a screen one head is drawn)\n"
         "  r N Enter      query position N: its row is drawn last and its strongest keys named\n"
         "  <, >           move the key window (the first 4 keys, the sink, stay in view)\n"
         "  j, k           scroll a page taller than the screen\n"
         "  b              the page before (again from memory); Enter then moves forward through the pages shown\n"
         "  ?              these keys\n"
         "  q              quit\n";
}

void Stepper::draw(const std::string& head, const std::string& body) {
  std::FILE* o = opt_.out;
  const int rows = opt_.screen_rows, cols = opt_.screen_cols;
  const std::vector<std::string> lines = wrap_lines(body, cols);
  const int room = std::max(1, rows - 2);   // the title and the footer
  view_now_.top = std::clamp(view_now_.top, 0, std::max(0, int(lines.size()) - room));
  std::string title = "=== " + head + " ===";
  title = wrap_lines(title, cols).front();
  std::fprintf(o, "\x1b[H\x1b[2J%s\n", title.c_str());   // home, clear
  const int end = std::min(int(lines.size()), view_now_.top + room);
  for (int i = view_now_.top; i < end; ++i) std::fprintf(o, "%s\n", lines[size_t(i)].c_str());
  for (int i = end - view_now_.top; i < room; ++i) std::fputc('\n', o);
  std::string foot = notice_.empty() ? kScreenKeys : notice_;
  if (int(lines.size()) > room)
    foot = "lines " + std::to_string(view_now_.top + 1) + "-" + std::to_string(end) + " of " + std::to_string(lines.size()) +
           " (j/k)  " + foot;
  notice_.clear();
  std::fprintf(o, "%s", wrap_lines(foot, cols - 1).front().c_str());
  std::fflush(o);
}

void Stepper::redraw() {
  const Shown& p = shown_[view_];
  if (screen()) {
    PageView v = view_now_;
    v.rows = opt_.screen_rows, v.cols = opt_.screen_cols;
    draw(p.head, p.render(v));
  } else {
    std::fprintf(opt_.out, "\n=== %s ===\n%s", p.head.c_str(), p.render(view_now_).c_str());
  }
}

void Stepper::say(const std::string& line) {
  if (!screen()) {
    std::fprintf(opt_.out, "%s\n", line.c_str());
    return;
  }
  notice_ = line;
  redraw();
}

void Stepper::show_again(size_t i) {
  view_ = i;
  view_now_.top = 0;
  if (screen()) {
    redraw();
    return;
  }
  std::fprintf(opt_.out, "\n=== %s (again) ===\n%s", shown_[i].head.c_str(), shown_[i].render(view_now_).c_str());
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
    say("(layer " + std::to_string(target) + " of " + (step == info_.step ? "this step" : "step " + std::to_string(step)) +
        " was skipped, so it is not in memory)");
    return true;
  }
  for (size_t i = view_ + 1; i < shown_.size(); ++i)
    if (shown_[i].step != step) {
      show_again(i);
      return true;
    }
  return false;   // not reached: the live step's pages come after an earlier step's
}

// Step `target`: its first page shown, else (a later step) the walk skips to it.
bool Stepper::jump_step(int target) {
  for (size_t i = 0; i < shown_.size(); ++i)
    if (shown_[i].step == target) {
      show_again(i);
      return true;
    }
  if (target > info_.step) {
    skip_below_step_ = target;
    return false;
  }
  say("(step " + std::to_string(target) + " was skipped, so it is not in memory)");
  return true;
}

void Stepper::navigate() {
  std::FILE* o = opt_.out;
  const int L = cfg_.num_layers;
  char typing = 0;   // after g, t, r or a digit: the number until Enter
  std::string number;
  auto prompt = [&] {
    if (screen()) return;   // the footer is the prompt
    std::fprintf(o, "%s", stepper_key_line());
    std::fflush(o);
  };
  auto redraw_with = [&](auto change) {
    change(view_now_);
    redraw();
  };
  prompt();
  for (;;) {
    char c = 0;
    if (::read(opt_.in_fd, &c, 1) <= 0) {   // the keyboard went away: print the rest
      std::fprintf(o, "\n");
      opt_.interactive = false;
      return;
    }
    if (c == 27) {   // an arrow key: ESC [ A..D
      char seq[2] = {0, 0};
      if (::read(opt_.in_fd, seq, 1) == 1 && seq[0] == '[' && ::read(opt_.in_fd, seq + 1, 1) == 1)
        c = seq[1] == 'A' ? 'k' : seq[1] == 'B' ? 'j' : seq[1] == 'C' ? '>' : seq[1] == 'D' ? '<' : 0;
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
      const char what = typing;
      typing = 0;
      if (!screen()) std::fprintf(o, "\n");
      if (!enter || number.empty()) {   // anything else cancels
        if (screen()) redraw();
        prompt();
        continue;
      }
      const int target = std::stoi(number);
      if (what == 'g' && target >= L) {
        say("(layers are 0.." + std::to_string(L - 1) + ")");
      } else if (what == 'g') {
        if (!jump(target, /*exact=*/true)) return;
      } else if (what == 't') {
        if (!jump_step(target)) return;
      } else {
        redraw_with([&](PageView& v) { v.query = target; });
      }
      prompt();
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || (c && std::strchr("gGtTr", c))) {
      typing = std::isdigit(static_cast<unsigned char>(c)) ? 'g' : char(std::tolower(static_cast<unsigned char>(c)));
      number = std::isdigit(static_cast<unsigned char>(c)) ? std::string(1, c) : "";
      const char* what = typing == 'g' ? "layer" : typing == 't' ? "step" : "query position";
      std::fprintf(o, screen() ? "\r\x1b[K%s: %s" : "\n%s: %s", what, number.c_str());
      std::fflush(o);
      continue;
    }
    if (!screen()) std::fprintf(o, "\n");
    // On the logits or sampling page no layer is left: n, l and s go to the next page.
    if (c && std::strchr("nNlLsS", c) && shown_[view_].layer >= L) c = '\n';
    const int layer = shown_[view_].layer;
    switch (c) {
      case 'q': case 'Q': throw StepperQuit();
      case 'n': case 'N':
        if (!jump(layer + 1, false)) return;
        break;
      case 'p': case 'P':
        if (layer <= 0) say("(no layer before this page's)");
        else if (!jump(std::min(layer, L) - 1, true)) return;
        break;
      case 'l': case 'L': case 's': case 'S':
        if (!jump(L, false)) return;
        break;
      case 'h': case 'H':   // the next, previous head (the page wraps the number around)
        if (screen()) redraw_with([c](PageView& v) { v.head = c == 'h' ? v.head + 1 : std::max(0, v.head - 1); });
        else say("(every head is drawn when the output is not a terminal)");
        break;
      case '<': case ',':
        redraw_with([](PageView& v) { v.key_back += 10; });
        break;
      case '>': case '.':
        redraw_with([](PageView& v) { v.key_back = std::max<int64_t>(0, v.key_back - 10); });
        break;
      case 'j': redraw_with([](PageView& v) { v.top += 5; }); break;
      case 'k': redraw_with([](PageView& v) { v.top = std::max(0, v.top - 5); }); break;
      case 'b': case 'B':
        if (view_ == 0) say("(this is the first page)");
        else show_again(view_ - 1);
        break;
      case '?':
        if (screen()) draw("keys", stepper_keys_help());
        else std::fprintf(o, "%s", stepper_keys_help());
        break;
      default:
        if (c != '\n' && c != '\r' && c != ' ') {
          say(std::string("(key '") + (std::isprint(static_cast<unsigned char>(c)) ? c : '?') + "' does nothing; ? lists the keys)");
          break;
        }
        if (view_ + 1 == shown_.size()) return;   // the newest page: the walk goes on
        show_again(view_ + 1);
    }
    prompt();
  }
}

}  // namespace lmscope
