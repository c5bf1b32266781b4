// A small JSON value with a reader and a writer, enough for topology files.
// Kept inside src/topology so the library has no JSON dependency.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace weft::topo {

class Json {
 public:
  using Array = std::vector<Json>;
  // Keys keep insertion order so dumped files read in a natural order.
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() : value_(nullptr) {}
  Json(std::nullptr_t) : value_(nullptr) {}
  Json(bool b) : value_(b) {}
  Json(int i) : value_(static_cast<double>(i)) {}
  Json(double d) : value_(d) {}
  Json(const char* s) : value_(std::string(s)) {}
  Json(std::string s) : value_(std::move(s)) {}
  Json(Array a) : value_(std::move(a)) {}
  Json(Object o) : value_(std::move(o)) {}

  bool isNull() const { return std::holds_alternative<std::nullptr_t>(value_); }
  bool isBool() const { return std::holds_alternative<bool>(value_); }
  bool isNumber() const { return std::holds_alternative<double>(value_); }
  bool isString() const { return std::holds_alternative<std::string>(value_); }
  bool isArray() const { return std::holds_alternative<Array>(value_); }
  bool isObject() const { return std::holds_alternative<Object>(value_); }

  // Typed access; a wrong type throws weftInvalidArgument naming `what`.
  bool asBool(const char* what) const;
  double asNumber(const char* what) const;
  int asInt(const char* what) const;
  const std::string& asString(const char* what) const;
  const Array& asArray(const char* what) const;
  const Object& asObject(const char* what) const;

  // Object member or nullptr when absent (or when this is not an object).
  const Json* find(const std::string& key) const;
  // Appends a member to an object value.
  void set(std::string key, Json value);

  // Parses a whole document; errors carry the line and column.
  static Json parse(const std::string& text);
  // Pretty-printed with two-space indent; numbers print in shortest
  // round-trip form so parse(dump(x)) reproduces every double exactly.
  std::string dump() const;

 private:
  void dumpTo(std::string& out, int indent) const;
  std::variant<std::nullptr_t, bool, double, std::string, Array, Object> value_;
};

}  // namespace weft::topo
