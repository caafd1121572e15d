// JSON a byte at a time, under a schema: the automaton behind `response_format`, which keeps generated
// text a prefix of one JSON value the schema allows (json_object: any object; json_schema: see
// json_schema.h) and says when it is whole. A state is small and copied freely (only its open
// brackets are): the sampler tries a token's bytes on a copy.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>

#include "text/json_schema.h"

namespace ztvm {

class JsonSyntax {
 public:
  static constexpr int kMaxDepth = 32;  // deeper nesting is refused
  // Whitespace in a row: enough for indented output (one line break, then spaces or tabs), too little
  // for a model to stall on blank lines; before the value, a SentencePiece token's leading space and a
  // newline.
  static constexpr int kMaxSpaces = 24;
  static constexpr int kMaxLeadingSpaces = 2;

  JsonSyntax() : JsonSyntax(JsonSchema::any_object()) {}
  explicit JsonSyntax(const JsonSchema& schema) : schema_(&schema) {}  // the schema outlives the state
  JsonSyntax(const JsonSyntax& o) { *this = o; }
  JsonSyntax& operator=(const JsonSyntax& o);

  // Takes one byte; false (and the state unusable) if the text so far is no longer a prefix of an
  // allowed value.
  bool feed(uint8_t c);
  bool feed(std::string_view bytes) {
    for (char c : bytes)
      if (!feed((uint8_t)c)) return false;
    return true;
  }
  // The top-level value is closed: nothing but the end may follow.
  bool done() const { return mode_ == Mode::Done; }

 private:
  enum class Mode : uint8_t { Start, Container, String, Escape, Unicode, Number, Literal, Done };
  // Where an open object or array is: FirstKey / Key / KeyString / Colon after '{' ...; FirstValue after '['.
  enum class Step : uint8_t { FirstKey, Key, KeyString, Colon, Value, FirstValue, After };
  enum class Num : uint8_t { Minus, Zero, Int, Dot, Frac, Exp, ExpSign, ExpInt };
  struct Frame {
    uint64_t seen = 0;    // object: declared properties given so far (a bit each)
    uint64_t cand = 0;    // object, reading a key: declared properties it may still be
    int32_t node = 0;     // the object's or array's schema node
    int32_t value = 0;    // the node of the value to come (after a key's colon; an array's items)
    uint16_t key_at = 0;  // bytes of the key read
    Step step = Step::FirstKey;
  };

  const JsonSchema::Node& node(int i) const { return schema_->nodes[(size_t)i]; }
  bool starts(int node, uint8_t c) const;  // may a value of `node` begin with c?
  bool value_start(int node, uint8_t c);
  bool close_value();  // a value ended: the container's After, or Done at the top
  bool gap(uint8_t c, int max);  // whitespace between tokens: false past the limits
  bool feed_container(uint8_t c);
  bool feed_number(uint8_t c);
  bool feed_literal(uint8_t c);

  const JsonSchema* schema_;
  Mode mode_ = Mode::Start;
  Num num_ = Num::Int;
  bool integer_ = false;     // the number being read must be an integer
  uint8_t hex_left_ = 0;     // \uXXXX digits to come
  uint8_t spaces_ = 0;       // whitespace bytes in the current gap,
  bool line_break_ = false;  // one of them '\n' or '\r'
  int8_t depth_ = 0;
  int32_t lit_node_ = 0;     // Literal: the node whose literals are matched,
  uint64_t lit_cand_ = 0;    // which of them still match,
  uint16_t lit_at_ = 0;      // and how many bytes did
  std::array<Frame, kMaxDepth> frames_;
};

}  // namespace ztvm
