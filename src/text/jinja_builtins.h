// What a template can call: Jinja filters and tests, Python methods on str/dict/list, attribute and
// item access with Jinja's rules, and the global functions transformers provides.
#pragma once
#include <optional>
#include <string>

#include "text/jinja_value.h"

namespace ztvm::jinja {

// `value | name(args)`; throws TemplateError for an unknown filter or bad input.
Value apply_filter(const std::string& name, const Value& input, Args& args);
// `value is name(args)` (without the negation).
bool apply_test(const std::string& name, const Value& input, Args& args);

// obj.name as Jinja resolves it: dict key or namespace attribute; misses give Undefined. Throws
// when obj itself is Undefined (Jinja's default Undefined does too).
Value get_attr(const Value& obj, const std::string& name);
// obj[key]: list/str index (negative from the end), dict key; misses give Undefined.
Value get_item(const Value& obj, const Value& key);
// obj[start:stop:step] on lists and strings with Python's clamping rules; null means omitted.
Value get_slice(const Value& obj, const Value* start, const Value* stop, const Value* step);
// Python method call obj.name(args) on str, dict and list; nullopt when there is no such method.
std::optional<Value> call_method(const Value& obj, const std::string& name, Args& args);
// `item in container`.
bool contains(const Value& container, const Value& item);
// The items a for-loop sees: list elements, dict keys, string characters; Undefined is empty.
List iterate(const Value& v);

// Globals every chat template sees in transformers: range, namespace, dict, raise_exception,
// strftime_now (local time, C strftime format).
Dict builtin_globals();

// HTML escaping as markupsafe does it (& < > " ' -> &amp; &lt; &gt; &#34; &#39;).
std::string html_escape(const std::string& s);

// Throws the UndefinedError-style message an Undefined carries ("'x' is undefined").
[[noreturn]] void fail_undefined(const Value& v);

}  // namespace ztvm::jinja
