// Jinja lexer. One pass over the source: in text state find the next `{{`, `{%` or `{#`; inside a
// tag, scan expression tokens until the closing delimiter (ignored while brackets are open, so
// `{{ {'a': {}} }}` works). Whitespace-control rules mirror Jinja 3's lexer.
#include "text/jinja_lexer.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "text/jinja_strings.h"
#include "text/jinja_value.h"

namespace ztvm::jinja {
namespace {

class Lexer {
 public:
  Lexer(std::string src, const LexerOptions& opts) : src_(std::move(src)), opts_(opts) {
    for (size_t i = 0; i < src_.size(); i++)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    bool line_starting = true;  // the previous tag ended a line (or we are at the start)
    while (pos_ < src_.size()) {
      size_t tag = find_tag(pos_);
      std::string text = src_.substr(pos_, tag - pos_);
      if (tag == src_.size()) {
        emit_text(std::move(text), pos_);
        break;
      }
      char kind = src_[tag + 1];  // '{', '%' or '#'
      char sign = tag + 2 < src_.size() ? src_[tag + 2] : 0;
      // Left-side whitespace control on the text before the tag.
      if (sign == '-') {
        text = pystr::strip(text, std::nullopt, false, true);
      } else if (sign != '+' && opts_.lstrip_blocks && kind != '{') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting) && l_pos < text.size() && all_space(text, l_pos)) text.resize(l_pos);
      }
      emit_text(std::move(text), pos_);
      pos_ = tag + 2 + (sign == '-' || sign == '+');
      if (kind == '#') skip_comment(tag);
      else if (kind == '%' && try_raw(tag)) {}
      else lex_tag(kind, tag);
      line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
    }
    push(Tok::End, "", src_.size());
    return std::move(tokens_);
  }

 private:
  std::string src_;
  LexerOptions opts_;
  size_t pos_ = 0;
  std::vector<size_t> line_starts_{0};
  std::vector<Token> tokens_;

  [[noreturn]] void fail(size_t at, const std::string& msg) {
    auto [line, col] = where(at);
    throw TemplateError(std::to_string(line) + ":" + std::to_string(col) + ": " + msg);
  }

  std::pair<int, int> where(size_t at) const {
    size_t line = size_t(std::upper_bound(line_starts_.begin(), line_starts_.end(), at) - line_starts_.begin());
    return {int(line), int(at - line_starts_[line - 1] + 1)};
  }

  Token& push(Tok type, std::string text, size_t at) {
    auto [line, col] = where(at);
    tokens_.push_back(Token{type, std::move(text), 0, 0, line, col});
    return tokens_.back();
  }

  void emit_text(std::string text, size_t at) {
    if (!text.empty()) push(Tok::Text, std::move(text), at);
  }

  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); i++)
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return src_.size();
  }

  // Length of the whitespace code point at `at` (Python's \s), or 0.
  size_t space_len(size_t at) const {
    unsigned char c = src_[at];
    if (c < 0x80) return pystr::is_space(c) ? 1 : 0;
    size_t n = (c >= 0xF0) ? 4 : (c >= 0xE0) ? 3 : 2;
    std::u32string cp = pystr::decode(std::string_view(src_).substr(at, n));
    return cp.size() == 1 && pystr::is_space(cp[0]) ? n : 0;
  }

  void skip_spaces() {
    while (pos_ < src_.size()) {
      size_t n = space_len(pos_);
      if (!n) break;
      pos_ += n;
    }
  }

  static bool all_space(const std::string& s, size_t from) {
    std::u32string cps = pystr::decode(std::string_view(s).substr(from));
    for (char32_t c : cps)
      if (!pystr::is_space(c)) return false;
    return true;
  }

  // Right-side whitespace control after a block/comment end: `-` strips all whitespace, `+` keeps
  // everything, otherwise trim_blocks drops a single newline.
  void after_block_end(char sign) {
    if (sign == '-') skip_spaces();
    else if (sign != '+' && opts_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') pos_++;
  }

  // {# ... #}: no nesting and no string awareness, as in Jinja.
  void skip_comment(size_t tag) {
    size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) fail(tag, "unterminated comment: missing '#}'");
    char sign = end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
    pos_ = end + 2;
    after_block_end(sign);
  }

  // {% raw %}...{% endraw %}: the body is text, not parsed.
  bool try_raw(size_t tag) {
    size_t p = pos_;
    while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\n')) p++;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\n')) p++;
    char sign = 0;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
    if (src_.compare(p, 2, "%}") != 0) return false;
    pos_ = p + 2;
    after_block_end(sign);
    // Find `{%[-+]? endraw [-+]?%}`.
    for (size_t q = src_.find("{%", pos_); q != std::string::npos; q = src_.find("{%", q + 2)) {
      size_t r = q + 2;
      char lsign = (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) ? src_[r++] : 0;
      while (r < src_.size() && (src_[r] == ' ' || src_[r] == '\t' || src_[r] == '\n')) r++;
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < src_.size() && (src_[r] == ' ' || src_[r] == '\t' || src_[r] == '\n')) r++;
      char rsign = (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) ? src_[r++] : 0;
      if (src_.compare(r, 2, "%}") != 0) continue;
      std::string body = src_.substr(pos_, q - pos_);
      if (lsign == '-') body = pystr::strip(body, std::nullopt, false, true);
      emit_text(std::move(body), pos_);
      pos_ = r + 2;
      after_block_end(rsign);
      return true;
    }
    fail(tag, "unterminated raw block: missing '{% endraw %}'");
  }

  // Scans tokens of a {{ }} or {% %} tag up to and including its closing delimiter.
  void lex_tag(char kind, size_t tag) {
    push(kind == '{' ? Tok::VarBegin : Tok::BlockBegin, "", tag);
    const char* close = kind == '{' ? "}}" : "%}";
    std::string brackets;  // open ( [ { still waiting for their closer
    while (true) {
      skip_spaces();
      if (pos_ >= src_.size()) fail(tag, std::string("unexpected end of template: missing '") + close + "'");
      if (brackets.empty()) {
        char sign = src_[pos_];
        bool has_sign = sign == '-' || (sign == '+' && kind == '%');
        size_t at = pos_ + (has_sign ? 1 : 0);
        if (src_.compare(at, 2, close) == 0) {
          push(kind == '{' ? Tok::VarEnd : Tok::BlockEnd, "", pos_);
          pos_ = at + 2;
          if (kind == '%') after_block_end(has_sign ? sign : 0);
          else if (has_sign) skip_spaces();  // `-}}` strips what follows; trim_blocks is for blocks only
          return;
        }
      }
      lex_token(brackets);
    }
  }

  void lex_token(std::string& brackets) {
    size_t start = pos_;
    char c = src_[pos_];
    if (std::isalpha((unsigned char)c) || c == '_') {
      while (pos_ < src_.size() && (std::isalnum((unsigned char)src_[pos_]) || src_[pos_] == '_')) pos_++;
      push(Tok::Name, src_.substr(start, pos_ - start), start);
    } else if (std::isdigit((unsigned char)c)) {
      lex_number();
    } else if (c == '\'' || c == '"') {
      lex_string();
    } else {
      static const char* ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                  "=",  ".",  ",",  ":",  "|",  "(",  ")", "[", "]", "{", "}"};
      for (const char* op : ops) {
        size_t n = std::strlen(op);
        if (src_.compare(pos_, n, op) != 0) continue;
        if (n == 1 && std::strchr("([{", op[0])) brackets += op[0];
        if (n == 1 && std::strchr(")]}", op[0])) {
          char want = op[0] == ')' ? '(' : op[0] == ']' ? '[' : '{';
          if (brackets.empty() || brackets.back() != want) fail(start, std::string("unexpected '") + op + "'");
          brackets.pop_back();
        }
        pos_ += n;
        push(Tok::Op, op, start);
        return;
      }
      unsigned char lead = (unsigned char)c;  // quote the whole UTF-8 sequence, not one byte of it
      size_t len = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
      fail(start, "unexpected character '" + src_.substr(start, len) + "'");
    }
  }

  // 42, 1_000, 2.5, 1e-5 (an exponent makes a float). `1.` is not a float: `.` starts an attribute.
  void lex_number() {
    size_t start = pos_;
    auto digits = [&] {
      while (pos_ < src_.size() && (std::isdigit((unsigned char)src_[pos_]) || src_[pos_] == '_')) pos_++;
    };
    digits();
    bool is_float = false;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit((unsigned char)src_[pos_ + 1])) {
      pos_++;
      digits();
      is_float = true;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t save = pos_++;
      if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) pos_++;
      if (pos_ < src_.size() && std::isdigit((unsigned char)src_[pos_])) {
        digits();
        is_float = true;
      } else {
        pos_ = save;  // not an exponent: `e` starts a name
      }
    }
    std::string text;
    for (size_t i = start; i < pos_; i++)
      if (src_[i] != '_') text += src_[i];
    Token& t = push(is_float ? Tok::Float : Tok::Int, text, start);
    // Python's ints have no bound; ours are 64-bit, so a longer literal is an error, not a crash.
    // Floats past the range are inf, as in Python.
    if (is_float) {
      t.float_value = std::strtod(text.c_str(), nullptr);
    } else {
      errno = 0;
      t.int_value = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) fail(start, "integer literal " + text.substr(0, 40) + " does not fit in 64 bits");
    }
  }

  // String literal with Python escapes (Jinja decodes literals with unicode-escape).
  void lex_string() {
    size_t start = pos_;
    char quote = src_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= src_.size()) fail(start, "unterminated string literal");
      char c = src_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= src_.size()) fail(start, "unterminated string literal");
      char e = src_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '\n': break;  // line continuation
        case 'x': case 'u': case 'U': {
          size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (pos_ + n > src_.size()) fail(pos_ - 2, "truncated \\" + std::string(1, e) + " escape");
          std::string hex = src_.substr(pos_, n);
          if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
            fail(pos_ - 2, "truncated \\" + std::string(1, e) + " escape");
          pystr::append_utf8(out, char32_t(std::stoul(hex, nullptr, 16)));
          pos_ += n;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {  // up to three octal digits
            unsigned v = unsigned(e - '0');
            for (int k = 0; k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; k++)
              v = v * 8 + unsigned(src_[pos_++] - '0');
            pystr::append_utf8(out, char32_t(v));
          } else {  // unknown escapes keep their backslash, as in Python
            out += '\\';
            out += e;
          }
      }
    }
    push(Tok::String, std::move(out), start);
  }
};

std::string normalize_newlines(const std::string& src, bool keep_trailing_newline) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); i++) {
    if (src[i] == '\r') {
      out += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') i++;
    } else {
      out += src[i];
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::vector<Token> tokenize(const std::string& source, const LexerOptions& opts) {
  return Lexer(normalize_newlines(source, opts.keep_trailing_newline), opts).run();
}

}  // namespace ztvm::jinja
