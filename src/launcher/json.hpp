// Just enough JSON for PyTorch's error files (torch.distributed.elastic's ErrorHandler writes
// {"message": {"message": ..., "extraInfo": {"py_callstack": ..., "timestamp": ...}}}):
// a value tree, a parser that rejects what it does not understand, and a writer.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace spmd::launcher {

struct JsonValue {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  bool boolean = false;
  std::string text;  // a string's value, or a number as written (kept exactly)
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;  // in file order

  static JsonValue string(std::string s);
  static JsonValue number(long long n);
  static JsonValue object();

  bool is_string() const { return type == Type::String; }
  bool is_object() const { return type == Type::Object; }
  // The member `key` of an object (nullptr when absent or not an object).
  const JsonValue* find(const std::string& key) const;
  // Sets (replaces or appends) the member `key`; makes this an object if it is null.
  JsonValue& set(const std::string& key, JsonValue value);
};

// Parses a whole document; nullopt when it is not valid JSON.
std::optional<JsonValue> parse_json(const std::string& text);
// Compact JSON text.
std::string to_json(const JsonValue& value);

}  // namespace spmd::launcher
