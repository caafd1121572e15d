// GgufValue: construction helpers, type predicates and the printable summary for `ztvm info`.
#include <cstdio>
#include <stdexcept>

#include "model/gguf.h"

namespace ztvm {

const char* gguf_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: return "u8";
    case GgufValueType::I8: return "i8";
    case GgufValueType::U16: return "u16";
    case GgufValueType::I16: return "i16";
    case GgufValueType::U32: return "u32";
    case GgufValueType::I32: return "i32";
    case GgufValueType::F32: return "f32";
    case GgufValueType::Bool: return "bool";
    case GgufValueType::String: return "string";
    case GgufValueType::Array: return "array";
    case GgufValueType::U64: return "u64";
    case GgufValueType::I64: return "i64";
    case GgufValueType::F64: return "f64";
  }
  return "?";
}

bool gguf_type_is_integer(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::U16: case GgufValueType::I16:
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::U64: case GgufValueType::I64:
      return true;
    default:
      return false;
  }
}

bool gguf_type_is_signed(GgufValueType t) {
  return t == GgufValueType::I8 || t == GgufValueType::I16 || t == GgufValueType::I32 || t == GgufValueType::I64;
}

bool gguf_type_is_float(GgufValueType t) { return t == GgufValueType::F32 || t == GgufValueType::F64; }

uint64_t GgufValue::array_size() const {
  if (type != GgufValueType::Array) return 0;
  if (elem_type == GgufValueType::String) return strings.size();
  if (elem_type == GgufValueType::Array) return items.size();
  if (gguf_type_is_float(elem_type)) return reals.size();
  return ints.size();
}

GgufValue GgufValue::of_uint(GgufValueType t, uint64_t v) {
  if (!gguf_type_is_integer(t) || gguf_type_is_signed(t)) throw std::invalid_argument("of_uint: not an unsigned type");
  GgufValue out;
  out.type = t;
  out.integer = int64_t(v);
  return out;
}

GgufValue GgufValue::of_int(GgufValueType t, int64_t v) {
  if (!gguf_type_is_signed(t)) throw std::invalid_argument("of_int: not a signed type");
  GgufValue out;
  out.type = t;
  out.integer = v;
  return out;
}

GgufValue GgufValue::of_float(GgufValueType t, double v) {
  if (!gguf_type_is_float(t)) throw std::invalid_argument("of_float: not a float type");
  GgufValue out;
  out.type = t;
  out.real = v;
  return out;
}

GgufValue GgufValue::of_bool(bool v) {
  GgufValue out;
  out.type = GgufValueType::Bool;
  out.integer = v ? 1 : 0;
  return out;
}

GgufValue GgufValue::of_string(std::string v) {
  GgufValue out;
  out.type = GgufValueType::String;
  out.str = std::move(v);
  return out;
}

GgufValue GgufValue::of_ints(GgufValueType elem, std::vector<int64_t> v) {
  if (!gguf_type_is_integer(elem) && elem != GgufValueType::Bool) throw std::invalid_argument("of_ints: bad element type");
  GgufValue out;
  out.type = GgufValueType::Array;
  out.elem_type = elem;
  out.ints = std::move(v);
  return out;
}

GgufValue GgufValue::of_floats(GgufValueType elem, std::vector<double> v) {
  if (!gguf_type_is_float(elem)) throw std::invalid_argument("of_floats: bad element type");
  GgufValue out;
  out.type = GgufValueType::Array;
  out.elem_type = elem;
  out.reals = std::move(v);
  return out;
}

GgufValue GgufValue::of_strings(std::vector<std::string> v) {
  GgufValue out;
  out.type = GgufValueType::Array;
  out.elem_type = GgufValueType::String;
  out.strings = std::move(v);
  return out;
}

GgufValue GgufValue::of_arrays(std::vector<GgufValue> v) {
  for (const GgufValue& item : v)
    if (item.type != GgufValueType::Array) throw std::invalid_argument("of_arrays: element is not an array");
  GgufValue out;
  out.type = GgufValueType::Array;
  out.elem_type = GgufValueType::Array;
  out.items = std::move(v);
  return out;
}

namespace {

// Quoted, with control characters escaped and the middle of long strings elided.
std::string quote(const std::string& s, size_t max_chars) {
  std::string out = "\"";
  size_t n = 0;
  for (unsigned char c : s) {
    if (n++ == max_chars) {
      out += "...";
      break;
    }
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '"' || c == '\\') (out += '\\') += char(c);
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else out += char(c);
  }
  return out + "\"";
}

std::string format_real(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", v);
  return buf;
}

std::string format_int(GgufValueType t, int64_t v) {
  if (t == GgufValueType::Bool) return v ? "true" : "false";
  if (t == GgufValueType::U64) return std::to_string(uint64_t(v));
  return std::to_string(v);
}

}  // namespace

std::string GgufValue::summary(size_t max_items, size_t max_chars) const {
  if (type == GgufValueType::String) return quote(str, max_chars);
  if (gguf_type_is_float(type)) return format_real(real);
  if (type != GgufValueType::Array) return format_int(type, integer);
  const uint64_t n = array_size();
  std::string out = "[" + std::string(gguf_type_name(elem_type)) + " x " + std::to_string(n) + "] ";
  for (uint64_t i = 0; i < n && i < max_items; ++i) {
    if (i) out += ", ";
    if (elem_type == GgufValueType::String) out += quote(strings[i], 24);
    else if (elem_type == GgufValueType::Array) out += "(" + items[i].summary(3, 24) + ")";
    else if (gguf_type_is_float(elem_type)) out += format_real(reals[i]);
    else out += format_int(elem_type, ints[i]);
  }
  if (n > max_items) out += ", ...";
  return out;
}

}  // namespace ztvm
