// Python str semantics for the Jinja interpreter. Python strings are sequences of code points, so
// every index, length and case mapping here works on decoded code points, not on UTF-8 bytes.
#include "text/jinja_strings.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "text/jinja_value.h"

namespace ztvm::jinja::pystr {

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    utf8proc_int32_t cp = 0;
    auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i), utf8proc_ssize_t(s.size() - i), &cp);
    if (n <= 0) {  // invalid byte: one replacement character, skip the byte
      out.push_back(0xFFFD);
      i += 1;
    } else {
      out.push_back(char32_t(cp));
      i += size_t(n);
    }
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  utf8proc_uint8_t buf[4];
  auto n = utf8proc_encode_char(utf8proc_int32_t(cp), buf);
  out.append(reinterpret_cast<const char*>(buf), size_t(n));
}

std::string encode(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t c : cps) append_utf8(out, c);
  return out;
}

size_t length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // count non-continuation bytes
  return n;
}

bool is_space(char32_t c) {
  // Python's str.isspace(): Unicode White_Space plus the ASCII separators 0x1C-0x1F.
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  std::u32string cps = decode(s);
  std::u32string set = chars ? decode(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
  size_t b = 0, e = cps.size();
  if (left) while (b < e && strip_it(cps[b])) b++;
  if (right) while (e > b && strip_it(cps[e - 1])) e--;
  return encode(std::u32string_view(cps).substr(b, e - b));
}

static void check_sep(const std::optional<std::string>& sep) {
  if (sep && sep->empty()) throw TemplateError("split(): empty separator");
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  check_sep(sep);
  std::vector<std::string> parts;
  if (sep) {  // exact separator: empty fields are kept
    size_t start = 0;
    while (maxsplit < 0 || int64_t(parts.size()) < maxsplit) {
      size_t at = s.find(*sep, start);
      if (at == std::string_view::npos) break;
      parts.emplace_back(s.substr(start, at - start));
      start = at + sep->size();
    }
    parts.emplace_back(s.substr(start));
    return parts;
  }
  // Whitespace runs: leading whitespace is skipped; after maxsplit splits, the rest stays whole.
  std::u32string cps = decode(s);
  size_t i = 0, n = cps.size();
  while (true) {
    while (i < n && is_space(cps[i])) i++;
    if (i == n) break;
    if (maxsplit >= 0 && int64_t(parts.size()) == maxsplit) {
      parts.push_back(encode(std::u32string_view(cps).substr(i)));
      break;
    }
    size_t j = i;
    while (j < n && !is_space(cps[j])) j++;
    parts.push_back(encode(std::u32string_view(cps).substr(i, j - i)));
    i = j;
  }
  return parts;
}

// rsplit: the same, splitting from the right (matters only with maxsplit).
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  check_sep(sep);
  std::vector<std::string> parts;
  if (sep) {
    size_t end = s.size();
    while (maxsplit < 0 || int64_t(parts.size()) < maxsplit) {
      if (end < sep->size()) break;
      size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string_view::npos) break;
      parts.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    parts.emplace_back(s.substr(0, end));
  } else {
    std::u32string cps = decode(s);
    size_t j = cps.size();
    while (true) {
      while (j > 0 && is_space(cps[j - 1])) j--;
      if (j == 0) break;
      if (maxsplit >= 0 && int64_t(parts.size()) == maxsplit) {
        parts.push_back(encode(std::u32string_view(cps).substr(0, j)));
        break;
      }
      size_t i = j;
      while (i > 0 && !is_space(cps[i - 1])) i--;
      parts.push_back(encode(std::u32string_view(cps).substr(i, j - i)));
      j = i;
    }
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

// str.replace(old, new, count); count < 0 replaces all.
std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count) {
  std::string out;
  if (old.empty()) {  // Python inserts `with` before every code point and at the end
    std::u32string cps = decode(s);
    int64_t done = 0;
    for (char32_t c : cps) {
      if (count < 0 || done < count) out += with, done++;
      append_utf8(out, c);
    }
    if (count < 0 || done < count) out += with;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t at = s.find(old, start);
    if (at == std::string_view::npos) break;
    out.append(s.substr(start, at - start));
    out.append(with);
    start = at + old.size();
    done++;
  }
  out.append(s.substr(start));
  return out;
}

// Per-code-point case mapping (utf8proc's simple mappings; Python's special cases such as
// "ß".upper() == "SS" are not reproduced).
template <typename F>
static std::string map_cps(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : decode(s)) append_utf8(out, char32_t(f(utf8proc_int32_t(c))));
  return out;
}

std::string upper(std::string_view s) { return map_cps(s, utf8proc_toupper); }
std::string lower(std::string_view s) { return map_cps(s, utf8proc_tolower); }

static bool is_cased(char32_t c) {
  auto cat = utf8proc_category(utf8proc_int32_t(c));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

std::string title(std::string_view s) {
  // A cased character after a cased one is lowered; any other is title-cased ("they're" -> "They'Re").
  std::string out;
  bool prev_cased = false;
  for (char32_t c : decode(s)) {
    auto cp = utf8proc_int32_t(c);
    append_utf8(out, char32_t(prev_cased ? utf8proc_tolower(cp) : utf8proc_totitle(cp)));
    prev_cased = is_cased(c);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::u32string cps = decode(s);
  std::string out;
  for (size_t i = 0; i < cps.size(); i++) {
    auto cp = utf8proc_int32_t(cps[i]);
    append_utf8(out, char32_t(i == 0 ? utf8proc_totitle(cp) : utf8proc_tolower(cp)));
  }
  return out;
}

// Byte search is safe on UTF-8 (no code point is a substring of another); results are code-point
// indices, as Python reports them.
int64_t find(std::string_view s, std::string_view sub) {
  size_t at = s.find(sub);
  return at == std::string_view::npos ? -1 : int64_t(length(s.substr(0, at)));
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return int64_t(length(s)) + 1;
  int64_t n = 0;
  for (size_t at = s.find(sub); at != std::string_view::npos; at = s.find(sub, at + sub.size())) n++;
  return n;
}

static bool is_printable(char32_t c) {
  // Python's str.isprintable(): everything except control, format, surrogate, private-use,
  // unassigned and separator characters, but the ASCII space is printable.
  if (c == ' ') return true;
  switch (utf8proc_category(utf8proc_int32_t(c))) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS: case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

std::string repr(std::string_view s) {
  // Single quotes unless the text has a ' and no ", exactly like Python.
  char quote = (s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos) ? '"' : '\'';
  std::string out(1, quote);
  char buf[16];
  for (char32_t c : decode(s)) {
    if (c == '\\' || c == char32_t(quote)) {
      out += '\\';
      out += char(c);
    } else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (is_printable(c)) append_utf8(out, c);
    else {
      if (c < 0x100) std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(c));
      else if (c < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
      else std::snprintf(buf, sizeof buf, "\\U%08x", unsigned(c));
      out += buf;
    }
  }
  out += quote;
  return out;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, then Python's layout: positional when -5 < exponent < 16.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t epos = sci.find('e');
  std::string digits = sci.substr(0, epos);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  int exp = std::stoi(sci.substr(epos + 1));
  std::string out = neg ? "-" : "";
  if (exp < -4 || exp >= 16) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    std::snprintf(buf, sizeof buf, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + buf;
  }
  if (exp < 0) return out + "0." + std::string(size_t(-exp - 1), '0') + digits;
  size_t int_len = size_t(exp) + 1;
  if (digits.size() <= int_len) return out + digits + std::string(int_len - digits.size(), '0') + ".0";
  return out + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

// ---- json.dumps ----

// A JSON string as Python's json module writes it: the short escapes, \u00XX for other control
// characters, and with ensure_ascii every non-ASCII code point as \uXXXX (surrogate pairs above
// the BMP). DEL (0x7F) is left alone, as Python does.
static void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  char buf[16];
  out += '"';
  for (char32_t c : decode(s)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || (ensure_ascii && c > 0x7F)) {
          if (c >= 0x10000) {  // UTF-16 surrogate pair, as Python writes it
            char32_t v = c - 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", unsigned(0xD800 + (v >> 10)), unsigned(0xDC00 + (v & 0x3FF)));
          } else {
            std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
          }
          out += buf;
        } else {
          append_utf8(out, c);
        }
    }
  }
  out += '"';
}

// Python's layout: empty containers stay "[]"/"{}"; with an indent each item goes on its own
// line and the item separator loses its trailing space unless separators are given.
namespace {
struct JsonWriter {
  const JsonStyle& style;
  std::string item_sep, key_sep;
  std::string out;

  void newline(int level) {
    out += '\n';
    for (int i = 0; i < level; i++) out += *style.indent;
  }

  // json.dumps turns non-string keys into strings: 1 -> "1", True -> "true", None -> "null".
  void json_key(const Value& k) {
    std::string text = k.is_string() ? k.str()
                       : k.is_bool() ? (k.get_bool() ? "true" : "false")
                       : k.is_none() ? "null"
                                     : k.repr();
    json_string(out, text, style.ensure_ascii);
  }

  void write(const Value& v, int level) {
    switch (v.kind()) {
      case Value::Kind::None: out += "null"; return;
      case Value::Kind::Bool: out += v.get_bool() ? "true" : "false"; return;
      case Value::Kind::Int: out += std::to_string(v.get_int()); return;
      case Value::Kind::Float: {
        double d = v.get_float();
        if (std::isnan(d)) out += "NaN";
        else if (std::isinf(d)) out += d < 0 ? "-Infinity" : "Infinity";
        else out += float_repr(d);
        return;
      }
      case Value::Kind::String: json_string(out, v.str(), style.ensure_ascii); return;
      case Value::Kind::List: {
        const List& l = v.list();
        if (l.empty()) { out += "[]"; return; }
        out += '[';
        for (size_t i = 0; i < l.size(); i++) {
          if (i) out += item_sep;
          if (style.indent) newline(level + 1);
          write(l[i], level + 1);
        }
        if (style.indent) newline(level);
        out += ']';
        return;
      }
      case Value::Kind::Dict: {
        std::vector<const Dict::Entry*> entries;
        for (auto& e : v.dict().entries()) entries.push_back(&e);
        if (entries.empty()) { out += "{}"; return; }
        if (style.sort_keys)
          std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return less_than(a->first, b->first); });
        out += '{';
        for (size_t i = 0; i < entries.size(); i++) {
          if (i) out += item_sep;
          if (style.indent) newline(level + 1);
          json_key(entries[i]->first);
          out += key_sep;
          write(entries[i]->second, level + 1);
        }
        if (style.indent) newline(level);
        out += '}';
        return;
      }
      default:
        throw TemplateError("tojson: Object of type " + v.type_name() + " is not JSON serializable");
    }
  }
};
}  // namespace

std::string json_dumps(const Value& v, const JsonStyle& style) {
  JsonWriter w{style, ", ", ": ", {}};
  if (style.indent) w.item_sep = ",";  // Python drops the space before a newline
  if (style.separators) std::tie(w.item_sep, w.key_sep) = *style.separators;
  w.write(v, 0);
  return std::move(w.out);
}

}  // namespace ztvm::jinja::pystr
