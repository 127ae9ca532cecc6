// A program that does not include <memplan/io/gzip.hpp> (as on a machine without zlib): plain JSON
// still reads, a gzip'd file is a clear error instead of garbage. A separate executable: the rest of
// test_io includes gzip.hpp.
#include <doctest/doctest.h>

#include <string>

#include <memplan/io/json.hpp>

using namespace memplan;

TEST_CASE("without gzip support: .json reads, .json.gz is a clear I/O error naming the file") {
  const std::string dir = MEMPLAN_IO_TEST_DATA;
  const auto p = io::read_graph(dir + "/small.json");
  CHECK(p.num_ops() == 11);
  try {
    (void)io::read_graph(dir + "/small.json.gz");
    FAIL("gzip read without gzip support");
  } catch (const error& e) {
    CHECK(e.code() == errc::io_error);
    const std::string msg = e.what();
    CHECK(msg.find("small.json.gz") != std::string::npos);
    CHECK(msg.find("no gzip support") != std::string::npos);
  }
  try {
    io::write_text_file("/tmp/memplan-test-no-gzip.json.gz", "{}");
    FAIL("gzip written without gzip support");
  } catch (const error& e) {
    CHECK(std::string(e.what()).find("no gzip support") != std::string::npos);
  }
}
