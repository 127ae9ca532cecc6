// io/json.hpp built without zlib (as on a machine without it): plain JSON still reads, a gzip'd
// file is a clear error instead of garbage. A separate executable: the rest of test_io has zlib.
#undef MEMPLAN_HAVE_ZLIB
#include <doctest/doctest.h>

#include <string>

#include <memplan/io/json.hpp>

using namespace memplan;

TEST_CASE("without zlib: .json reads, .json.gz is a clear I/O error naming the file") {
  const std::string dir = MEMPLAN_IO_TEST_DATA;
  const auto p = io::read_graph(dir + "/small.json");
  CHECK(p.num_ops() == 11);
  try {
    (void)io::read_graph(dir + "/small.json.gz");
    FAIL("gzip read without zlib");
  } catch (const error& e) {
    CHECK(e.code() == errc::io_error);
    const std::string msg = e.what();
    CHECK(msg.find("small.json.gz") != std::string::npos);
    CHECK(msg.find("without zlib") != std::string::npos);
  }
  CHECK_THROWS_AS(io::write_text_file("/nonexistent-dir/x.json.gz", "{}"), error);
}
