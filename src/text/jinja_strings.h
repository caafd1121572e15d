// Python str semantics on UTF-8 strings, as chat templates observe them: code-point length and
// slicing, str.strip/split/upper/title..., repr() quoting, and json.dumps output byte for byte.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ztvm::jinja {

class Value;

namespace pystr {

std::u32string decode(std::string_view utf8);  // invalid bytes decode as U+FFFD
std::string encode(std::u32string_view cps);
void append_utf8(std::string& out, char32_t cp);
size_t length(std::string_view utf8);          // len(s): code points
bool is_space(char32_t cp);                    // str.isspace()

// str.strip/lstrip/rstrip(chars): chars == nullopt strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split(sep, maxsplit): sep == nullopt splits on whitespace runs and drops empty parts.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);       // str.title()
std::string capitalize(std::string_view s);  // str.capitalize()
int64_t find(std::string_view s, std::string_view sub);  // code-point index or -1
int64_t count(std::string_view s, std::string_view sub);

std::string repr(std::string_view s);  // Python repr() of a str, with its quote choice

// Python's repr() of a float ("1.0", "0.1", "1e+20", "inf").
std::string float_repr(double d);

// json.dumps(value, ensure_ascii, indent, separators, sort_keys) as Python's json module writes it.
struct JsonStyle {
  bool ensure_ascii = false;   // transformers' tojson default
  std::optional<std::string> indent;  // None: one line; else newline + indent per level
  std::optional<std::pair<std::string, std::string>> separators;  // default depends on indent
  bool sort_keys = false;
};
std::string json_dumps(const Value& v, const JsonStyle& style);

}  // namespace pystr
}  // namespace ztvm::jinja
