// JSON syntax, a byte at a time: the automaton behind `response_format` json_object / json_schema,
// which keeps generated text a prefix of one JSON object (RFC 8259) and says when it is whole. The
// state is a small value type, copied freely: the sampler tries a token's bytes on a copy.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>

namespace ztvm {

class JsonSyntax {
 public:
  static constexpr int kMaxDepth = 64;   // deeper nesting is refused
  // Whitespace in a row: enough for indented output, too little for a model to stall on newlines; before
  // the object, a SentencePiece token's leading space and a newline.
  static constexpr int kMaxSpaces = 24;
  static constexpr int kMaxLeadingSpaces = 2;

  // Takes one byte; false (and the state unusable) if the text so far is no longer a JSON prefix.
  bool feed(uint8_t c);
  bool feed(std::string_view bytes) {
    for (char c : bytes)
      if (!feed((uint8_t)c)) return false;
    return true;
  }
  // The top-level object is closed: nothing but the end may follow.
  bool done() const { return mode_ == Mode::Done; }

 private:
  enum class Mode : uint8_t {
    Start,        // before the top-level '{'
    Value,        // a value must come (after ':' or ',' in an array)
    FirstValue,   // after '[': a value or ']'
    Key,          // after ',' in an object: a key string
    FirstKey,     // after '{': a key string or '}'
    Colon,        // after a key
    After,        // after a value: ',' or the closing bracket
    String,       // inside a string (key or value)
    Escape,       // after '\' in a string
    Unicode,      // \uXXXX: hex digits to go in hex_left_
    Number,       // inside a number: num_ says where
    Literal,      // inside true / false / null: lit_ and lit_at_
    Done,
  };
  enum class Num : uint8_t { Minus, Zero, Int, Dot, Frac, Exp, ExpSign, ExpInt };

  bool value_start(uint8_t c);
  bool close_value();  // a value ended: After, or Done at the top level

  Mode mode_ = Mode::Start;
  Num num_ = Num::Int;
  bool key_ = false;  // the string being read is a key
  uint8_t hex_left_ = 0;
  const char* lit_ = nullptr;  // the literal's text and how far it is matched
  uint8_t lit_at_ = 0;
  uint8_t spaces_ = 0;
  int8_t depth_ = 0;
  std::array<bool, kMaxDepth> in_object_{};  // per open bracket: '{' (true) or '['
};

}  // namespace ztvm
