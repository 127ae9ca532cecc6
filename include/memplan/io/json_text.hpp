#pragma once
// JSON text for memplan's formats: the document type (keys keep their order), parsing with errors
// that give line, column and byte, short quotes of values for messages, and saving to a file. One of
// the only headers that include nlohmann-json (link memplan::json).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <memplan/base/error.hpp>
#include <memplan/io/file.hpp>

namespace memplan::io {

// Keys keep their order when written (format, version, name, tensors, ops; tensors in graph order).
using json = nlohmann::ordered_json;

namespace detail {

// Parses JSON text; on a syntax error throws errc::parse_error with line, column and byte offset.
// J: io::json (keeps key order) or nlohmann::json (sorted keys, O(log n) lookups: for big objects).
template <class J = json>
J parse_json_text(std::string_view text, const std::string& source) {
  try {
    return J::parse(text.begin(), text.end());
  } catch (const typename J::parse_error& e) {
    const auto byte = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < byte; ++i) {
      if (text[i] == '\n') { ++line; col = 1; }
      else ++col;
    }
    std::string why = e.what();
    // nlohmann: "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
    if (auto p = why.find(": "); p != std::string::npos && why.rfind("[json.exception", 0) == 0) why = why.substr(p + 2);
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) why = "the document is empty";
    throw error(errc::parse_error, source + ": not valid JSON at line " + std::to_string(line) + ", column " +
                                       std::to_string(col) + " (byte " + std::to_string(byte) + "): " + why);
  } catch (const typename J::exception& e) {
    // E.g. out_of_range.406 "number overflow parsing '1e400'": a number no double can hold.
    std::string why = e.what();
    if (auto p = why.find("] "); p != std::string::npos && why.rfind("[json.exception", 0) == 0) why = why.substr(p + 2);
    throw error(errc::parse_error, source + ": not valid JSON: " + why);
  }
}

template <class J>
std::string short_dump(const J& v) {
  auto s = v.dump(-1, ' ', false, J::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

inline std::string squote(std::string_view s) {
  // Built by appending: g++ 12 -O3 flags "'" + std::string(s) + "'" with a false -Wrestrict (GCC PR 105329).
  std::string o;
  o.reserve(s.size() + 2);
  o += '\'';
  o.append(s);
  o += '\'';
  return o;
}

}  // namespace detail

// Writes any JSON document to a file (.gz: gzip'd), compact, or indented when indent >= 0.
inline void save_json(const std::string& path, const json& j, int indent = -1) {
  // Names built in C++ may hold bytes that are not UTF-8: replace them rather than throw.
  write_text_file(path, j.dump(indent, ' ', false, json::error_handler_t::replace) + "\n");
}

}  // namespace memplan::io
