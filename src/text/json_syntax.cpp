#include "text/json_syntax.h"

namespace ztvm {

namespace {
bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_hex(uint8_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
}  // namespace

bool JsonSyntax::close_value() {
  mode_ = depth_ == 0 ? Mode::Done : Mode::After;
  return true;
}

bool JsonSyntax::value_start(uint8_t c) {
  switch (c) {
    case '{':
    case '[':
      if (depth_ == kMaxDepth) return false;
      in_object_[depth_++] = c == '{';
      mode_ = c == '{' ? Mode::FirstKey : Mode::FirstValue;
      return true;
    case '"': mode_ = Mode::String, key_ = false; return true;
    case '-': mode_ = Mode::Number, num_ = Num::Minus; return true;
    case '0': mode_ = Mode::Number, num_ = Num::Zero; return true;
    case 't': lit_ = "true"; break;
    case 'f': lit_ = "false"; break;
    case 'n': lit_ = "null"; break;
    default:
      if (!is_digit(c)) return false;
      mode_ = Mode::Number, num_ = Num::Int;
      return true;
  }
  mode_ = Mode::Literal, lit_at_ = 1;
  return true;
}

bool JsonSyntax::feed(uint8_t c) {
  switch (mode_) {  // whitespace may come between any two tokens (not inside one)
    case Mode::Start: case Mode::Value: case Mode::FirstValue: case Mode::Key: case Mode::FirstKey:
    case Mode::Colon: case Mode::After:
      if (is_space(c)) return ++spaces_ <= (mode_ == Mode::Start ? kMaxLeadingSpaces : kMaxSpaces);
      spaces_ = 0;
      break;
    default: break;
  }
  switch (mode_) {
    case Mode::Start: return c == '{' && value_start(c);  // the top level is an object
    case Mode::Value: return value_start(c);
    case Mode::FirstValue:
      if (c != ']') return value_start(c);
      --depth_;
      return close_value();
    case Mode::FirstKey:
      if (c == '}') {
        --depth_;
        return close_value();
      }
      [[fallthrough]];
    case Mode::Key:
      if (c != '"') return false;
      mode_ = Mode::String, key_ = true;
      return true;
    case Mode::Colon:
      if (c != ':') return false;
      mode_ = Mode::Value;
      return true;
    case Mode::After:
      if (c == ',') {
        mode_ = in_object_[depth_ - 1] ? Mode::Key : Mode::Value;
        return true;
      }
      if ((c == '}' && in_object_[depth_ - 1]) || (c == ']' && !in_object_[depth_ - 1])) {
        --depth_;
        return close_value();
      }
      return false;
    case Mode::String:
      if (c == '"') {
        if (!key_) return close_value();
        mode_ = Mode::Colon, key_ = false;
        return true;
      }
      if (c == '\\') mode_ = Mode::Escape;
      return c >= 0x20;  // control characters must be escaped; bytes of UTF-8 characters pass
    case Mode::Escape:
      if (c == 'u') {
        mode_ = Mode::Unicode, hex_left_ = 4;
        return true;
      }
      mode_ = Mode::String;
      return c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't';
    case Mode::Unicode:
      if (!is_hex(c)) return false;
      if (--hex_left_ == 0) mode_ = Mode::String;
      return true;
    case Mode::Literal:
      if (c != (uint8_t)lit_[lit_at_]) return false;
      return lit_[++lit_at_] ? true : close_value();
    case Mode::Number: {
      const bool e = c == 'e' || c == 'E';
      switch (num_) {
        case Num::Minus:
          if (!is_digit(c)) return false;
          num_ = c == '0' ? Num::Zero : Num::Int;
          return true;
        case Num::Dot: num_ = Num::Frac; return is_digit(c);
        case Num::Exp:
          if (c == '+' || c == '-') return num_ = Num::ExpSign, true;
          num_ = Num::ExpInt;
          return is_digit(c);
        case Num::ExpSign: num_ = Num::ExpInt; return is_digit(c);
        case Num::Zero:
        case Num::Int:
        case Num::Frac:
        case Num::ExpInt:
          if (is_digit(c) && num_ != Num::Zero) return true;
          if (c == '.' && (num_ == Num::Zero || num_ == Num::Int)) return num_ = Num::Dot, true;
          if (e && num_ != Num::ExpInt) return num_ = Num::Exp, true;
          close_value();  // the number ended one byte ago: this byte belongs to what follows it
          return feed(c);
      }
      return false;
    }
    case Mode::Done: return false;
  }
  return false;
}

}  // namespace ztvm
