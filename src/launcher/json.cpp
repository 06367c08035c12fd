#include "launcher/json.hpp"

#include <cstdio>
#include <cstdlib>

namespace spmd::launcher {

namespace {

constexpr int kMaxDepth = 64;

// JSON's two-character escapes: the character and the letter after the backslash.
constexpr std::pair<char, char> kEscapes[] = {{'"', '"'}, {'\\', '\\'}, {'\b', 'b'}, {'\f', 'f'},
                                              {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}};

char unescaped(char letter) {
  for (auto [plain, l] : kEscapes)
    if (l == letter) return plain;
  return 0;
}

char escape_letter(char plain) {
  for (auto [p, letter] : kEscapes)
    if (p == plain) return letter;
  return 0;
}

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  std::optional<JsonValue> document() {
    JsonValue v;
    if (!value(v, 0)) return std::nullopt;
    skip_space();
    if (pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  bool literal(const char* word) {
    std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }

  bool value(JsonValue& v, int depth) {
    if (depth > kMaxDepth) return false;
    skip_space();
    if (pos_ >= s_.size()) return false;
    char c = s_[pos_];
    if (c == '{') return object(v, depth);
    if (c == '[') return array(v, depth);
    if (c == '"') {
      v.type = JsonValue::Type::String;
      return string(v.text);
    }
    if (literal("true") || literal("false")) {
      v.type = JsonValue::Type::Bool;
      v.boolean = c == 't';
      return true;
    }
    if (literal("null")) {
      v.type = JsonValue::Type::Null;
      return true;
    }
    return number(v);
  }

  bool number(JsonValue& v) {
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    size_t digits = pos_;
    while (pos_ < s_.size() && std::string("0123456789.eE+-").find(s_[pos_]) != std::string::npos) ++pos_;
    if (pos_ == digits) return false;
    v.type = JsonValue::Type::Number;
    v.text = s_.substr(start, pos_ - start);
    char* end = nullptr;
    std::strtod(v.text.c_str(), &end);
    return end != nullptr && *end == '\0';
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool hex4(unsigned& cp) {
    if (pos_ + 4 > s_.size()) return false;
    char* end = nullptr;
    std::string h = s_.substr(pos_, 4);
    cp = static_cast<unsigned>(std::strtoul(h.c_str(), &end, 16));
    if (end != h.c_str() + 4) return false;
    pos_ += 4;
    return true;
  }

  bool string(std::string& out) {
    ++pos_;  // the opening quote
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return true;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) return false;
      char e = s_[pos_++];
      if (char plain = unescaped(e)) {
        out += plain;
        continue;
      }
      switch (e) {
        case '/': out += '/'; break;
        case 'u': {
          unsigned cp = 0;
          if (!hex4(cp)) return false;
          // A surrogate pair (Python's json.dump writes characters outside the BMP so).
          if (cp >= 0xD800 && cp < 0xDC00 && s_.compare(pos_, 2, "\\u") == 0) {
            pos_ += 2;
            unsigned low = 0;
            if (!hex4(low)) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default: return false;
      }
    }
    return false;
  }

  bool array(JsonValue& v, int depth) {
    v.type = JsonValue::Type::Array;
    ++pos_;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
    while (true) {
      JsonValue item;
      if (!value(item, depth + 1)) return false;
      v.items.push_back(std::move(item));
      skip_space();
      if (pos_ >= s_.size()) return false;
      char c = s_[pos_++];
      if (c == ']') return true;
      if (c != ',') return false;
    }
  }

  bool object(JsonValue& v, int depth) {
    v.type = JsonValue::Type::Object;
    ++pos_;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
    while (true) {
      skip_space();
      std::string key;
      if (pos_ >= s_.size() || s_[pos_] != '"' || !string(key)) return false;
      skip_space();
      if (pos_ >= s_.size() || s_[pos_++] != ':') return false;
      JsonValue member;
      if (!value(member, depth + 1)) return false;
      v.members.emplace_back(std::move(key), std::move(member));
      skip_space();
      if (pos_ >= s_.size()) return false;
      char c = s_[pos_++];
      if (c == '}') return true;
      if (c != ',') return false;
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

void write_string(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    if (char letter = escape_letter(c)) {
      out += '\\';
      out += letter;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

void write(std::string& out, const JsonValue& v) {
  switch (v.type) {
    case JsonValue::Type::Null: out += "null"; break;
    case JsonValue::Type::Bool: out += v.boolean ? "true" : "false"; break;
    case JsonValue::Type::Number: out += v.text; break;
    case JsonValue::Type::String: write_string(out, v.text); break;
    case JsonValue::Type::Array:
      out += '[';
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) out += ", ";
        write(out, v.items[i]);
      }
      out += ']';
      break;
    case JsonValue::Type::Object:
      out += '{';
      for (size_t i = 0; i < v.members.size(); ++i) {
        if (i) out += ", ";
        write_string(out, v.members[i].first);
        out += ": ";
        write(out, v.members[i].second);
      }
      out += '}';
      break;
  }
}

}  // namespace

JsonValue JsonValue::string(std::string s) {
  JsonValue v;
  v.type = Type::String;
  v.text = std::move(s);
  return v;
}

JsonValue JsonValue::number(long long n) {
  JsonValue v;
  v.type = Type::Number;
  v.text = std::to_string(n);
  return v;
}

JsonValue JsonValue::object() {
  JsonValue v;
  v.type = Type::Object;
  return v;
}

const JsonValue* JsonValue::find(const std::string& key) const {
  if (type != Type::Object) return nullptr;
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

JsonValue& JsonValue::set(const std::string& key, JsonValue value) {
  if (type == Type::Null) type = Type::Object;
  for (auto& [k, v] : members)
    if (k == key) return v = std::move(value);
  members.emplace_back(key, std::move(value));
  return members.back().second;
}

std::optional<JsonValue> parse_json(const std::string& text) { return Parser(text).document(); }

std::string to_json(const JsonValue& value) {
  std::string out;
  write(out, value);
  return out;
}

}  // namespace spmd::launcher
