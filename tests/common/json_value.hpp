// A strict little JSON reader for tests (RFC 8259: objects, arrays, strings with escapes,
// numbers, true/false/null; nothing after the value). parse_json() returns nullopt for text
// that is not valid JSON, so a test can assert a file is valid before it looks inside.
#pragma once

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace spmd::testing {

struct Json {
  enum class Type { Null, Bool, Number, String, Array, Object } type = Type::Null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> fields;

  const Json* get(const std::string& key) const {
    auto it = fields.find(key);
    return it == fields.end() ? nullptr : &it->second;
  }
  std::string str(const std::string& key) const {
    const Json* j = get(key);
    return j && j->type == Type::String ? j->text : "";
  }
  double num(const std::string& key, double otherwise = -1) const {
    const Json* j = get(key);
    return j && j->type == Type::Number ? j->number : otherwise;
  }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& s) : s_(s) {}
  std::optional<Json> parse() {
    Json v;
    if (!value(v, 0)) return std::nullopt;
    space();
    if (pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  bool literal(const char* word) {
    std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  bool string(std::string& out) {
    if (pos_ >= s_.size() || s_[pos_] != '"') return false;
    ++pos_;
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) return false;
      char e = s_[pos_++];
      if (e == 'u') {
        if (pos_ + 4 > s_.size()) return false;
        for (int i = 0; i < 4; ++i)
          if (!std::isxdigit(static_cast<unsigned char>(s_[pos_ + static_cast<size_t>(i)]))) return false;
        out += '?';  // the code point itself does not matter to the tests
        pos_ += 4;
      } else if (std::string("\"\\/bfnrt").find(e) != std::string::npos) {
        out += e;
      } else {
        return false;
      }
    }
    return false;
  }
  bool number(double& out) {
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_]))) return false;
    if (s_[pos_] == '0') ++pos_;
    else while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      size_t digits = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ == digits) return false;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      size_t digits = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ == digits) return false;
    }
    out = std::strtod(s_.substr(start, pos_ - start).c_str(), nullptr);
    return true;
  }
  bool value(Json& v, int depth) {
    if (depth > 64) return false;
    space();
    if (pos_ >= s_.size()) return false;
    char c = s_[pos_];
    if (c == '{') {
      v.type = Json::Type::Object;
      ++pos_;
      space();
      if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
      for (;;) {
        space();
        std::string key;
        if (!string(key)) return false;
        space();
        if (pos_ >= s_.size() || s_[pos_++] != ':') return false;
        Json item;
        if (!value(item, depth + 1)) return false;
        v.fields[key] = std::move(item);
        space();
        if (pos_ >= s_.size()) return false;
        if (s_[pos_] == '}') return ++pos_, true;
        if (s_[pos_++] != ',') return false;
      }
    }
    if (c == '[') {
      v.type = Json::Type::Array;
      ++pos_;
      space();
      if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
      for (;;) {
        Json item;
        if (!value(item, depth + 1)) return false;
        v.items.push_back(std::move(item));
        space();
        if (pos_ >= s_.size()) return false;
        if (s_[pos_] == ']') return ++pos_, true;
        if (s_[pos_++] != ',') return false;
      }
    }
    if (c == '"') {
      v.type = Json::Type::String;
      return string(v.text);
    }
    if (literal("true")) return v.type = Json::Type::Bool, v.boolean = true, true;
    if (literal("false")) return v.type = Json::Type::Bool, true;
    if (literal("null")) return true;
    v.type = Json::Type::Number;
    return number(v.number);
  }

  const std::string& s_;
  size_t pos_ = 0;
};

inline std::optional<Json> parse_json(const std::string& text) { return JsonReader(text).parse(); }

}  // namespace spmd::testing
