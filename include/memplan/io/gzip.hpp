#pragma once
// gzip for memplan's files, over zlib: the only header that includes zlib (target memplan::gzip).
// Including it installs the codec that io::read_text_file / write_text_file (io/file.hpp) use, so a
// program reads and writes .json.gz as soon as one of its translation units includes this header.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <zlib.h>

#include <memplan/base/error.hpp>
#include <memplan/io/file.hpp>

namespace memplan::io {

namespace detail {

inline std::string gunzip(std::string_view data, const std::string& source) {
  std::string out;
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) throw error(errc::io_error, source + ": cannot initialise zlib");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  if (data.size() > std::numeric_limits<uInt>::max()) {
    inflateEnd(&zs);
    throw error(errc::io_error, source + ": gzip file too large");
  }
  char buf[1 << 16];
  int rc = Z_OK;
  for (;;) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members are one file (gzip(1) semantics).
      if (zs.avail_in > 0 && is_gzip(std::string_view(reinterpret_cast<const char*>(zs.next_in), zs.avail_in))) {
        inflateReset(&zs);
        continue;
      }
      break;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      inflateEnd(&zs);
      throw error(errc::io_error, source + ": truncated gzip data (the file ends inside the compressed stream)");
    }
    std::string why = zs.msg ? zs.msg : "zlib error " + std::to_string(rc);
    inflateEnd(&zs);
    throw error(errc::io_error, source + ": corrupt gzip data: " + why);
  }
  inflateEnd(&zs);
  return out;
}

inline std::string gzip(std::string_view text, const std::string& target) {
  z_stream zs{};
  // windowBits 15 + 16: a gzip header; the header's mtime stays 0, so equal input gives equal bytes.
  if (deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw error(errc::io_error, target + ": cannot initialise zlib");
  if (text.size() > std::numeric_limits<uInt>::max()) {
    deflateEnd(&zs);
    throw error(errc::io_error, target + ": text too large to compress");
  }
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = deflate(&zs, Z_FINISH);
    out.append(buf, sizeof buf - zs.avail_out);
  } while (rc == Z_OK || rc == Z_BUF_ERROR);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw error(errc::io_error, target + ": zlib failed to compress");
  return out;
}

}  // namespace detail

// Installs the codec (done once, before main, by the variable below).
inline bool install_gzip() {
  auto& c = detail::installed_gzip();
  c.inflate = &detail::gunzip;
  c.deflate = &detail::gzip;
  return true;
}
inline const bool gzip_installed = install_gzip();

}  // namespace memplan::io
