#include "src/topology/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "src/util/error.h"

namespace weft::topo {

bool Json::asBool(const char* what) const {
  if (!isBool()) raise(weftInvalidArgument, "topology JSON: %s must be true or false", what);
  return std::get<bool>(value_);
}

double Json::asNumber(const char* what) const {
  if (!isNumber()) raise(weftInvalidArgument, "topology JSON: %s must be a number", what);
  return std::get<double>(value_);
}

int Json::asInt(const char* what) const {
  double d = asNumber(what);
  if (d != std::floor(d) || std::fabs(d) > 2e9) raise(weftInvalidArgument, "topology JSON: %s must be an integer", what);
  return static_cast<int>(d);
}

const std::string& Json::asString(const char* what) const {
  if (!isString()) raise(weftInvalidArgument, "topology JSON: %s must be a string", what);
  return std::get<std::string>(value_);
}

const Json::Array& Json::asArray(const char* what) const {
  if (!isArray()) raise(weftInvalidArgument, "topology JSON: %s must be an array", what);
  return std::get<Array>(value_);
}

const Json::Object& Json::asObject(const char* what) const {
  if (!isObject()) raise(weftInvalidArgument, "topology JSON: %s must be an object", what);
  return std::get<Object>(value_);
}

const Json* Json::find(const std::string& key) const {
  if (!isObject()) return nullptr;
  for (const auto& [k, v] : std::get<Object>(value_))
    if (k == key) return &v;
  return nullptr;
}

void Json::set(std::string key, Json value) {
  if (!isObject()) value_ = Object{};
  std::get<Object>(value_).emplace_back(std::move(key), std::move(value));
}

namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Json document() {
    Json v = value(0);
    skipSpace();
    if (pos_ != s_.size()) fail("trailing characters after the document");
    return v;
  }

 private:
  // Nesting bound: a hostile file must not overflow the stack.
  static constexpr int kMaxDepth = 64;

  [[noreturn]] void fail(const char* why) {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    raise(weftInvalidArgument, "topology JSON: %s at line %d column %d", why, line, col);
  }

  void skipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  bool consume(char c) {
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) { ++pos_; return true; }
    return false;
  }

  void expect(char c) {
    if (!consume(c)) {
      char msg[32];
      snprintf(msg, sizeof msg, "expected '%c'", c);
      fail(msg);
    }
  }

  bool literal(const char* word) {
    size_t n = strlen(word);
    if (s_.compare(pos_, n, word) == 0) { pos_ += n; return true; }
    return false;
  }

  Json value(int depth) {
    if (depth > kMaxDepth) fail("nesting too deep");
    skipSpace();
    if (pos_ >= s_.size()) fail("unexpected end of input");
    char c = s_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Json(string());
    if (literal("true")) return Json(true);
    if (literal("false")) return Json(false);
    if (literal("null")) return Json(nullptr);
    return number();
  }

  Json object(int depth) {
    expect('{');
    Json::Object members;
    if (consume('}')) return Json(std::move(members));
    do {
      skipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a member name");
      std::string key = string();
      expect(':');
      members.emplace_back(std::move(key), value(depth + 1));
    } while (consume(','));
    expect('}');
    return Json(std::move(members));
  }

  Json array(int depth) {
    expect('[');
    Json::Array items;
    if (consume(']')) return Json(std::move(items));
    do {
      items.push_back(value(depth + 1));
    } while (consume(','));
    expect(']');
    return Json(std::move(items));
  }

  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') { out.push_back(c); continue; }
      if (pos_ >= s_.size()) fail("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          if (pos_ + 4 > s_.size()) fail("short \\u escape");
          unsigned code = 0;
          auto [p, ec] = std::from_chars(s_.data() + pos_, s_.data() + pos_ + 4, code, 16);
          if (ec != std::errc() || p != s_.data() + pos_ + 4) fail("bad \\u escape");
          pos_ += 4;
          // Topology names are ASCII; other code points are kept as UTF-8
          // without surrogate-pair joining.
          if (code < 0x80) {
            out.push_back(static_cast<char>(code));
          } else if (code < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (code >> 6)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
          } else {
            out.push_back(static_cast<char>(0xE0 | (code >> 12)));
            out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
          }
          break;
        }
        default: fail("unknown escape");
      }
    }
  }

  Json number() {
    size_t start = pos_;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
    while (pos_ < s_.size() && (isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
                                s_[pos_] == 'e' || s_[pos_] == 'E' || s_[pos_] == '-' || s_[pos_] == '+'))
      ++pos_;
    double d = 0;
    const char* first = s_.data() + start;
    if (*first == '+') ++first;
    auto [p, ec] = std::from_chars(first, s_.data() + pos_, d);
    if (pos_ == start || ec != std::errc() || p != s_.data() + pos_) { pos_ = start; fail("expected a value"); }
    return Json(d);
  }

  const std::string& s_;
  size_t pos_ = 0;
};

void appendQuoted(std::string& out, const std::string& s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

// Arrays of scalars stay on one line: GID tables and address lists would
// otherwise dominate a dump.
bool isFlat(const Json::Array& a) {
  for (const auto& v : a)
    if (v.isArray() || v.isObject()) return false;
  return true;
}

}  // namespace

Json Json::parse(const std::string& text) { return Parser(text).document(); }

std::string Json::dump() const {
  std::string out;
  dumpTo(out, 0);
  out.push_back('\n');
  return out;
}

void Json::dumpTo(std::string& out, int indent) const {
  std::string pad(indent + 2, ' ');
  if (isNull()) {
    out += "null";
  } else if (isBool()) {
    out += std::get<bool>(value_) ? "true" : "false";
  } else if (isNumber()) {
    double d = std::get<double>(value_);
    if (!std::isfinite(d)) raise(weftInvalidArgument, "topology JSON: cannot write a non-finite number");
    char buf[32];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, d);
    out.append(buf, p);
  } else if (isString()) {
    appendQuoted(out, std::get<std::string>(value_));
  } else if (isArray()) {
    const auto& a = std::get<Array>(value_);
    if (a.empty()) { out += "[]"; return; }
    if (isFlat(a)) {
      out.push_back('[');
      for (size_t i = 0; i < a.size(); ++i) {
        if (i) out += ", ";
        a[i].dumpTo(out, indent);
      }
      out.push_back(']');
      return;
    }
    out += "[\n";
    for (size_t i = 0; i < a.size(); ++i) {
      out += pad;
      a[i].dumpTo(out, indent + 2);
      out += i + 1 < a.size() ? ",\n" : "\n";
    }
    out += std::string(indent, ' ') + "]";
  } else {
    const auto& o = std::get<Object>(value_);
    if (o.empty()) { out += "{}"; return; }
    // Objects of scalars (one node, one link) print on one line each.
    bool flat = true;
    for (const auto& [k, v] : o)
      if (v.isObject() || (v.isArray() && !isFlat(std::get<Array>(v.value_)))) flat = false;
    if (flat) {
      out.push_back('{');
      for (size_t i = 0; i < o.size(); ++i) {
        if (i) out += ", ";
        appendQuoted(out, o[i].first);
        out += ": ";
        o[i].second.dumpTo(out, indent);
      }
      out.push_back('}');
      return;
    }
    out += "{\n";
    for (size_t i = 0; i < o.size(); ++i) {
      out += pad;
      appendQuoted(out, o[i].first);
      out += ": ";
      o[i].second.dumpTo(out, indent + 2);
      out += i + 1 < o.size() ? ",\n" : "\n";
    }
    out += std::string(indent, ' ') + "}";
  }
}

}  // namespace weft::topo
