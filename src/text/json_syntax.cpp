#include "text/json_syntax.h"

#include <bit>

namespace ztvm {

namespace {
using Kind = JsonSchema::Kind;
bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_hex(uint8_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
uint64_t bits_below(size_t n) { return n >= 64 ? ~0ull : (1ull << n) - 1; }
}  // namespace

JsonSyntax& JsonSyntax::operator=(const JsonSyntax& o) {
  schema_ = o.schema_;
  mode_ = o.mode_, num_ = o.num_, integer_ = o.integer_, hex_left_ = o.hex_left_, spaces_ = o.spaces_;
  line_break_ = o.line_break_;
  depth_ = o.depth_, lit_node_ = o.lit_node_, lit_cand_ = o.lit_cand_, lit_at_ = o.lit_at_;
  for (int i = 0; i < depth_; i++) frames_[i] = o.frames_[i];  // the open ones only: a trial copy is cheap
  return *this;
}

bool JsonSyntax::gap(uint8_t c, int max) {
  if (c == '\n' || c == '\r') {
    if (line_break_) return false;
    line_break_ = true;
  }
  return ++spaces_ <= max;
}

bool JsonSyntax::close_value() {
  mode_ = depth_ == 0 ? Mode::Done : Mode::Container;  // the container's step is After already
  return true;
}

bool JsonSyntax::starts(int n, uint8_t c) const {
  const JsonSchema::Node& s = node(n);
  switch (s.kind) {
    case Kind::Any: return true;
    case Kind::Object: return c == '{';
    case Kind::Array: return c == '[';
    case Kind::String: return c == '"';
    case Kind::Number: case Kind::Integer: return c == '-' || is_digit(c);
    case Kind::Literals:
      for (const auto& l : s.literals)
        if ((uint8_t)l[0] == c) return true;
      return false;
    case Kind::AnyOf:
      for (int o : s.options)
        if (starts(o, c)) return true;
      return false;
  }
  return false;
}

bool JsonSyntax::value_start(int n, uint8_t c) {
  const JsonSchema::Node& s = node(n);
  switch (s.kind) {
    case Kind::Any:  // as the built-in node of the value's kind
      if (c == '{') return value_start(JsonSchema::kAnyObject, c);
      if (c == '[') return value_start(JsonSchema::kAnyArray, c);
      if (c == '"') return mode_ = Mode::String, true;
      if (c == '-' || is_digit(c)) {
        integer_ = false;
        num_ = c == '-' ? Num::Minus : c == '0' ? Num::Zero : Num::Int;
        return mode_ = Mode::Number, true;
      }
      return value_start(JsonSchema::kAnyLiteral, c);
    case Kind::Object:
    case Kind::Array:
      if (c != (s.kind == Kind::Object ? '{' : '[') || depth_ == kMaxDepth) return false;
      frames_[depth_++] = Frame{0, 0, n, s.kind == Kind::Array ? s.items : 0, 0,
                                s.kind == Kind::Object ? Step::FirstKey : Step::FirstValue};
      mode_ = Mode::Container;
      return true;
    case Kind::String:
      if (c != '"') return false;
      mode_ = Mode::String;
      return true;
    case Kind::Number:
    case Kind::Integer:
      if (c != '-' && !is_digit(c)) return false;
      integer_ = s.kind == Kind::Integer;
      num_ = c == '-' ? Num::Minus : c == '0' ? Num::Zero : Num::Int;
      mode_ = Mode::Number;
      return true;
    case Kind::Literals:
      mode_ = Mode::Literal, lit_node_ = n, lit_at_ = 0, lit_cand_ = bits_below(s.literals.size());
      return feed_literal(c);
    case Kind::AnyOf: {
      int pick = -1, count = 0;
      for (int o : s.options)
        if (starts(o, c)) pick = o, count++;
      if (count == 0) return false;
      return value_start(count == 1 ? pick : JsonSchema::kAny, c);  // two that begin alike: any value
    }
  }
  return false;
}

bool JsonSyntax::feed_container(uint8_t c) {
  Frame& f = frames_[depth_ - 1];
  const JsonSchema::Node& s = node(f.node);
  if (f.step != Step::KeyString) {  // whitespace may come between any two tokens (not inside one)
    if (is_space(c)) return gap(c, kMaxSpaces);
    spaces_ = 0, line_break_ = false;
  }
  const uint64_t all = bits_below(s.props.size());
  switch (f.step) {
    case Step::FirstKey:
      if (c == '}') return (s.required & ~f.seen) == 0 && (--depth_, close_value());
      [[fallthrough]];
    case Step::Key:
      if (c != '"') return false;
      f.step = Step::KeyString, f.cand = all & ~f.seen, f.key_at = 0;
      return f.cand || s.additional >= 0;
    case Step::KeyString: {
      if (c == '"') {  // a declared property whose name is exactly what was read, else an extra key
        for (uint64_t m = f.cand; m; m &= m - 1) {
          const int i = std::countr_zero(m);
          if (s.props[i].first.size() == f.key_at) {
            f.seen |= 1ull << i, f.value = s.props[i].second, f.step = Step::Colon;
            return true;
          }
        }
        if (s.additional < 0) return false;
        f.value = s.additional, f.step = Step::Colon;
        return true;
      }
      if (c == '\\' || c < 0x20) return false;  // keys are written without escapes
      uint64_t next = 0;
      for (uint64_t m = f.cand; m; m &= m - 1) {
        const int i = std::countr_zero(m);
        const std::string& name = s.props[i].first;
        if (f.key_at < name.size() && (uint8_t)name[f.key_at] == c) next |= 1ull << i;
      }
      f.cand = next, f.key_at++;
      return next || s.additional >= 0;
    }
    case Step::Colon:
      if (c != ':') return false;
      f.step = Step::Value;
      return true;
    case Step::Value:
    case Step::FirstValue:
      if (f.step == Step::FirstValue && c == ']') return --depth_, close_value();
      f.step = Step::After;  // where the value's close_value() comes back to
      return value_start(f.value, c);
    case Step::After:
      if (c == ',') {
        if (s.kind == Kind::Array) return f.step = Step::Value, true;
        if ((all & ~f.seen) == 0 && s.additional < 0) return false;  // every key given, no others allowed
        return f.step = Step::Key, true;
      }
      if (c == (s.kind == Kind::Object ? '}' : ']') && (s.required & ~f.seen) == 0) return --depth_, close_value();
      return false;
  }
  return false;
}

bool JsonSyntax::feed_number(uint8_t c) {
  const bool e = (c == 'e' || c == 'E') && !integer_;
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
      if (c == '.' && !integer_ && (num_ == Num::Zero || num_ == Num::Int)) return num_ = Num::Dot, true;
      if (e && num_ != Num::ExpInt) return num_ = Num::Exp, true;
      close_value();  // the number ended one byte ago: this byte belongs to what follows it
      return feed(c);
  }
  return false;
}

bool JsonSyntax::feed_literal(uint8_t c) {
  const auto& lits = node(lit_node_).literals;
  uint64_t next = 0;
  bool ended_before = false;  // a literal was whole before this byte (a number: 1 in {1, 10})
  for (uint64_t m = lit_cand_; m; m &= m - 1) {
    const std::string& l = lits[std::countr_zero(m)];
    if (l.size() == lit_at_) ended_before = true;
    else if ((uint8_t)l[lit_at_] == c) next |= m & -m;
  }
  if (!next) {
    if (!ended_before) return false;
    close_value();
    return feed(c);
  }
  lit_cand_ = next, lit_at_++;
  // Whole, with nothing longer still matching and not a number (which might go on): the value ends.
  for (uint64_t m = lit_cand_; m; m &= m - 1) {
    const std::string& l = lits[std::countr_zero(m)];
    if (l.size() != lit_at_ || l[0] == '-' || is_digit((uint8_t)l[0])) return true;
  }
  return close_value();
}

bool JsonSyntax::feed(uint8_t c) {
  switch (mode_) {
    case Mode::Start:
      if (is_space(c)) return gap(c, kMaxLeadingSpaces);
      spaces_ = 0, line_break_ = false;
      return value_start(schema_->root, c);
    case Mode::Container: return feed_container(c);
    case Mode::String:
      if (c == '"') return close_value();
      if (c == '\\') mode_ = Mode::Escape;
      return c >= 0x20;  // control characters must be escaped; bytes of UTF-8 characters pass
    case Mode::Escape:
      if (c == 'u') return mode_ = Mode::Unicode, hex_left_ = 4, true;
      mode_ = Mode::String;
      return c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't';
    case Mode::Unicode:
      if (!is_hex(c)) return false;
      if (--hex_left_ == 0) mode_ = Mode::String;
      return true;
    case Mode::Number: return feed_number(c);
    case Mode::Literal: return feed_literal(c);
    case Mode::Done: return false;
  }
  return false;
}

}  // namespace ztvm
