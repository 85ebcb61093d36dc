// Python's text rules, as the templates see them through Jinja: str() and repr() of numbers
// and strings, json.dumps strings, and the str methods that need Unicode (isspace, upper,
// lower, strip, split). Strings are UTF-8; code points come from utf8proc.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lmscope::jinja::py {

// UTF-8 <-> code points. to_u32 throws ValueError on bytes that are not valid UTF-8.
std::u32string to_u32(const std::string& s);
std::string from_u32(const std::u32string& s);
void append_utf8(std::string& out, char32_t c);
// The characters of s, each as its own UTF-8 string (iterating a str in Python).
std::vector<std::string> chars(const std::string& s);

bool isspace(char32_t c);                        // str.isspace() for one character
std::string float_repr(double v);                // repr(1.5) "1.5", repr(1e16) "1e+16"
std::string str_repr(const std::string& s);      // repr('a') "'a'", with Python's quoting
std::string json_string(const std::string& s);   // json.dumps(s, ensure_ascii=False)
std::string upper(const std::string& s);
std::string lower(const std::string& s);
std::string capitalize(const std::string& s);    // str.capitalize()
std::string title(const std::string& s);         // str.title()
// str.strip/lstrip/rstrip(chars): chars empty and `whitespace` true strips str.isspace().
std::string strip(const std::string& s, bool whitespace, const std::string& chars, bool left, bool right);
// str.split(sep, maxsplit): `whitespace` true splits on runs of str.isspace() (sep=None);
// maxsplit < 0 is no limit. An empty sep throws ValueError, as Python does.
std::vector<std::string> split(const std::string& s, bool whitespace, const std::string& sep, int64_t maxsplit);
// str.replace(old, new, count): count < 0 replaces all. An empty `old` throws ValueError (not
// supported here).
std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count);

}  // namespace lmscope::jinja::py
