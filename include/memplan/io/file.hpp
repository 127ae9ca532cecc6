#pragma once
// Reading and writing the files memplan's tools exchange: whole files as text, gzip'd content
// inflated whatever the name (magic bytes), names ending in .gz written compressed. Compression is
// not in this header: it comes from <memplan/io/gzip.hpp> (target memplan::gzip, zlib), which
// installs itself here when a program includes it; without it a .gz file is a clear io_error.
#include <filesystem>
#include <fstream>
#include <ios>
#include <iterator>
#include <system_error>
#include <string>
#include <string_view>

#include <memplan/base/error.hpp>

namespace memplan::io {

namespace detail {

inline bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b;
}

inline bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A file opened for reading, or a clear io_error: a directory opens as a stream on Linux and then
// fails inside the first read with std::ios_base::failure (found by the cli_args fuzz target:
// `memplan plan .` ended in "internal error: basic_filebuf::underflow").
inline std::ifstream open_for_reading(const std::string& path, const std::string& what, std::ios::openmode mode = std::ios::in) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw error(errc::io_error, "cannot read " + what + "'" + path + "': it is a directory");
  std::ifstream in(path, mode);
  if (!in) {
    // Why: no file there, or one that cannot be read.
    const bool exists = std::filesystem::exists(path, ec);
    throw error(errc::io_error, "cannot open " + what + "'" + path + "': " + (!exists && !ec ? "no such file" : "permission denied or unreadable"));
  }
  return in;
}

// The gzip codec, installed by <memplan/io/gzip.hpp>; null when the program has none.
struct gzip_codec {
  std::string (*inflate)(std::string_view data, const std::string& source) = nullptr;
  std::string (*deflate)(std::string_view text, const std::string& target) = nullptr;
};
inline gzip_codec& installed_gzip() {
  static gzip_codec c;
  return c;
}

}  // namespace detail

// The text of a file; gzip'd content (detected by its magic bytes, whatever the name) is inflated.
inline std::string read_text_file(const std::string& path) {
  auto in = detail::open_for_reading(path, "", std::ios::binary);
  std::string data;
  try {
    data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure& e) {
    throw error(errc::io_error, "error while reading '" + path + "': " + e.what());
  }
  if (in.bad()) throw error(errc::io_error, "error while reading '" + path + "'");
  if (detail::is_gzip(data)) {
    const auto& c = detail::installed_gzip();
    if (!c.inflate)
      throw error(errc::io_error, path + ": is gzip-compressed, but this program has no gzip support "
                                         "(link memplan::gzip and include <memplan/io/gzip.hpp>, or gunzip the file first)");
    return c.inflate(data, path);
  }
  return data;
}

// Writes text; a name ending in .gz is gzip-compressed (needs <memplan/io/gzip.hpp>).
inline void write_text_file(const std::string& path, std::string_view text) {
  std::string data;
  if (detail::ends_with(path, ".gz")) {
    const auto& c = detail::installed_gzip();
    if (!c.deflate)
      throw error(errc::io_error, "'" + path + "': cannot write gzip: this program has no gzip support "
                                  "(link memplan::gzip and include <memplan/io/gzip.hpp>)");
    data = c.deflate(text, path);
  } else {
    data.assign(text);
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) throw error(errc::io_error, "cannot write '" + path + "'");
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw error(errc::io_error, "error while writing '" + path + "'");
}

// "dir/resnet18.json.gz" -> "resnet18".
inline std::string stem_of(std::string_view path) {
  auto slash = path.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (std::string_view suf : {".gz", ".json"})
    if (detail::ends_with(base, suf)) base.remove_suffix(suf.size());
  return std::string(base);
}

}  // namespace memplan::io
