#pragma once
// Buffer lists in the MiniMalloc CSV format (std only).
//
// Input: a header naming the columns, then one buffer per row. Required columns: id, lower, upper, size
// (lifetime [lower, upper), bytes); optional: offset (the buffer is pinned there; an empty cell means
// not pinned) and alignment (power of two; empty means 1). Columns may come in any order. Blank lines are
// skipped. Every malformed row is reported with its line number: missing or extra fields, a non-integer,
// a negative size, lower >= upper, a duplicate id, a bad alignment or offset.
// Output: id,lower,upper,size,offset (MiniMalloc's solution format), ids in input order; or the problem
// alone (id,lower,upper,size, with offset / alignment columns only for pins and alignments).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <ios>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_set>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/io/file.hpp>

namespace memplan::io {

struct buffer_list {
  place::buffer_problem problem;
  std::vector<std::string> ids;  // one per buffer, same order
};

namespace detail {

inline std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

inline std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ',') { out.push_back(trim(cur)); cur.clear(); }
    else cur += c;
  }
  out.push_back(trim(cur));
  return out;
}

}  // namespace detail

inline buffer_list read_buffers_csv(std::istream& in, const std::string& source = "<input>") {
  auto fail = [&](std::size_t line, const std::string& what) -> error {
    return error(errc::parse_error, source + ":" + std::to_string(line) + ": " + what);
  };
  std::string line;
  std::size_t lineno = 0;
  // Header.
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    ++lineno;
    if (!detail::trim(line).empty()) { header = detail::split_csv(line); break; }
  }
  if (header.empty()) throw fail(lineno == 0 ? 1 : lineno, "empty file: expected the header id,lower,upper,size");
  enum col { c_id, c_lower, c_upper, c_size, c_offset, c_alignment, n_cols };
  const char* names[n_cols] = {"id", "lower", "upper", "size", "offset", "alignment"};
  int where[n_cols] = {-1, -1, -1, -1, -1, -1};
  for (std::size_t k = 0; k < header.size(); ++k) {
    auto name = header[k];
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    int c = -1;
    for (int j = 0; j < n_cols; ++j)
      if (name == names[j]) c = j;
    if (c < 0) throw fail(lineno, "unknown column '" + header[k] + "' (expected id, lower, upper, size, offset, alignment)");
    if (where[c] >= 0) throw fail(lineno, "duplicate column '" + header[k] + "'");
    where[c] = static_cast<int>(k);
  }
  for (int j = 0; j < c_offset; ++j)
    if (where[j] < 0) throw fail(lineno, std::string("header lacks the required column '") + names[j] + "'");
  buffer_list out;
  std::unordered_set<std::string> seen;
  while (std::getline(in, line)) {
    ++lineno;
    if (detail::trim(line).empty()) continue;
    const auto f = detail::split_csv(line);
    if (f.size() < header.size())
      throw fail(lineno, "missing column: " + std::to_string(f.size()) + " fields, expected " + std::to_string(header.size()) +
                             " ('" + header[f.size()] + "' is missing)");
    if (f.size() > header.size())
      throw fail(lineno, "extra field: " + std::to_string(f.size()) + " fields, expected " + std::to_string(header.size()));
    auto integer = [&](int c, bool optional) -> std::optional<std::int64_t> {
      if (where[c] < 0) return std::nullopt;
      const auto& s = f[static_cast<std::size_t>(where[c])];
      if (s.empty()) {
        if (optional) return std::nullopt;
        throw fail(lineno, std::string("empty ") + names[c]);
      }
      std::int64_t v = 0;
      const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || ptr != s.data() + s.size())
        throw fail(lineno, std::string(names[c]) + " '" + s + "' is not an integer");
      return v;
    };
    const auto& id = f[static_cast<std::size_t>(where[c_id])];
    if (id.empty()) throw fail(lineno, "empty id");
    place::buffer b;
    b.lower = *integer(c_lower, false);
    b.upper = *integer(c_upper, false);
    b.size = *integer(c_size, false);
    if (b.size < 0) throw fail(lineno, "buffer '" + id + "': negative size " + std::to_string(b.size));
    if (b.lower >= b.upper)
      throw fail(lineno, "buffer '" + id + "': lower " + std::to_string(b.lower) + " >= upper " + std::to_string(b.upper));
    if (auto a = integer(c_alignment, true)) {
      if (*a <= 0 || (*a & (*a - 1)) != 0)
        throw fail(lineno, "buffer '" + id + "': alignment " + std::to_string(*a) + " is not a power of two");
      b.alignment = *a;
    }
    if (auto o = integer(c_offset, true)) {
      if (*o < 0) throw fail(lineno, "buffer '" + id + "': negative offset " + std::to_string(*o));
      if (*o % b.alignment != 0)
        throw fail(lineno, "buffer '" + id + "': offset " + std::to_string(*o) + " breaks its alignment " + std::to_string(b.alignment));
      b.fixed_offset = *o;
    }
    if (!seen.insert(id).second) throw fail(lineno, "duplicate id '" + id + "'");
    out.problem.buffers.push_back(b);
    out.ids.push_back(id);
  }
  return out;
}

inline buffer_list read_buffers_csv_file(const std::string& path) {
  auto in = detail::open_for_reading(path, "buffer list ");
  try {
    return read_buffers_csv(in, path);
  } catch (const std::ios_base::failure& e) {
    throw error(errc::io_error, "error while reading buffer list '" + path + "': " + e.what());
  }
}

// Writes id,lower,upper,size,offset rows (the placement's offsets) in input order.
inline void write_buffers_csv(std::ostream& out, const buffer_list& list, const place::buffer_placement& pl) {
  if (pl.offsets.size() != list.problem.buffers.size() || list.ids.size() != list.problem.buffers.size())
    throw error(errc::invalid_argument, "write_buffers_csv: " + std::to_string(pl.offsets.size()) + " offsets and " +
                                            std::to_string(list.ids.size()) + " ids for " +
                                            std::to_string(list.problem.buffers.size()) + " buffers");
  out << "id,lower,upper,size,offset\n";
  for (std::size_t i = 0; i < list.ids.size(); ++i) {
    const auto& b = list.problem.buffers[i];
    out << list.ids[i] << ',' << b.lower << ',' << b.upper << ',' << b.size << ',' << pl.offsets[i] << '\n';
  }
}

// Writes the problem, not a placement: id,lower,upper,size, then offset where a buffer is pinned and
// alignment where one is not 1 (each column only when some buffer needs it; empty cells elsewhere), so
// read_buffers_csv gives the same problem back. (An offset column is read as pins: a placement to be
// placed again is written this way, without its offsets.)
inline void write_buffers_csv(std::ostream& out, const buffer_list& list) {
  const auto& bs = list.problem.buffers;
  if (list.ids.size() != bs.size())
    throw error(errc::invalid_argument, "write_buffers_csv: " + std::to_string(list.ids.size()) + " ids for " + std::to_string(bs.size()) + " buffers");
  const bool pins = std::any_of(bs.begin(), bs.end(), [](const place::buffer& b) { return b.fixed_offset >= 0; });
  const bool aligned = std::any_of(bs.begin(), bs.end(), [](const place::buffer& b) { return b.alignment != 1; });
  out << "id,lower,upper,size" << (pins ? ",offset" : "") << (aligned ? ",alignment" : "") << '\n';
  for (std::size_t i = 0; i < bs.size(); ++i) {
    const auto& b = bs[i];
    out << list.ids[i] << ',' << b.lower << ',' << b.upper << ',' << b.size;
    if (pins) out << ',' << (b.fixed_offset >= 0 ? std::to_string(b.fixed_offset) : "");
    if (aligned) out << ',' << b.alignment;
    out << '\n';
  }
}

namespace detail {
template <class Write>
void write_csv_file(const std::string& path, Write write) {
  std::ofstream out(path);
  if (!out) throw error(errc::io_error, "cannot write '" + path + "'");
  write(out);
  if (!out) throw error(errc::io_error, "error while writing '" + path + "'");
}
}  // namespace detail

inline void write_buffers_csv_file(const std::string& path, const buffer_list& list, const place::buffer_placement& pl) {
  detail::write_csv_file(path, [&](std::ostream& out) { write_buffers_csv(out, list, pl); });
}

inline void write_buffers_csv_file(const std::string& path, const buffer_list& list) {
  detail::write_csv_file(path, [&](std::ostream& out) { write_buffers_csv(out, list); });
}

// MiniMalloc benchmark files carry the capacity in their name: "A.1048576.csv" -> 1048576.
inline std::optional<std::int64_t> capacity_from_filename(const std::string& path) {
  auto name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  if (name.size() < 5 || name.substr(name.size() - 4) != ".csv") return std::nullopt;
  name.resize(name.size() - 4);
  const auto dot = name.find_last_of('.');
  if (dot == std::string::npos) return std::nullopt;
  const auto digits = name.substr(dot + 1);
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return v;
}

}  // namespace memplan::io
