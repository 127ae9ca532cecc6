#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <memplan/io/buffers_csv.hpp>
#include <memplan/place/default_placer.hpp>

using namespace memplan;

namespace {

io::buffer_list parse(const std::string& text) {
  std::istringstream in(text);
  return io::read_buffers_csv(in, "t.csv");
}

// The error message of parsing `text`, which must fail with a parse error.
std::string parse_error(const std::string& text) {
  try {
    (void)parse(text);
  } catch (const error& e) {
    CHECK(e.code() == errc::parse_error);
    return e.what();
  }
  FAIL("expected a parse error for: " << text);
  return {};
}

}  // namespace

TEST_CASE("MiniMalloc CSV: read, place, write, read back") {
  const auto list = parse("id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n");
  REQUIRE(list.ids == std::vector<std::string>{"b1", "b2", "b3", "b4", "b5"});
  CHECK(list.problem.buffers[3].lower == 9);
  CHECK(list.problem.buffers[3].upper == 21);
  auto p = list.problem;
  p.capacity = 12;
  const auto pl = place::default_placer{}.place(p);
  std::ostringstream out;
  io::write_buffers_csv(out, list, pl);
  const auto back = parse(out.str());
  CHECK(back.ids == list.ids);
  for (std::size_t i = 0; i < back.ids.size(); ++i) {
    CHECK(back.problem.buffers[i].size == list.problem.buffers[i].size);
    CHECK(back.problem.buffers[i].fixed_offset == pl.offsets[i]);  // the offset column reads back as pins
  }
  CHECK(!place::check(back.problem, pl));
}

TEST_CASE("CSV: a problem written without offsets reads back the same, pins and alignments in their columns only when present") {
  const auto same = [](const io::buffer_list& a, const io::buffer_list& b) {
    REQUIRE(a.ids == b.ids);
    for (std::size_t i = 0; i < a.ids.size(); ++i) {
      const auto &x = a.problem.buffers[i], &y = b.problem.buffers[i];
      CHECK(x.lower == y.lower);
      CHECK(x.upper == y.upper);
      CHECK(x.size == y.size);
      CHECK(x.alignment == y.alignment);
      CHECK(x.fixed_offset == y.fixed_offset);
    }
  };
  const auto plain = parse("id,lower,upper,size\na,0,3,4\nb,2,9,0\n");
  std::ostringstream out;
  io::write_buffers_csv(out, plain);
  CHECK(out.str() == "id,lower,upper,size\na,0,3,4\nb,2,9,0\n");
  same(parse(out.str()), plain);
  const auto pinned = parse("id,lower,upper,size,offset,alignment\na,0,3,4,,\nb,2,9,8,16,8\nc,1,2,3,,4\n");
  std::ostringstream out2;
  io::write_buffers_csv(out2, pinned);
  CHECK(out2.str() == "id,lower,upper,size,offset,alignment\na,0,3,4,,1\nb,2,9,8,16,8\nc,1,2,3,,4\n");
  same(parse(out2.str()), pinned);
  auto short_ids = plain;
  short_ids.ids.pop_back();
  CHECK_THROWS_AS(io::write_buffers_csv(out, short_ids), error);
}

TEST_CASE("CSV: optional columns, any order, blank lines, CRLF") {
  const auto list = parse("size,id,upper,lower,alignment,offset\r\n\r\n64,x,4,0,64,128\r\n8,y,2,1,,\r\n");
  REQUIRE(list.ids.size() == 2);
  CHECK(list.problem.buffers[0].size == 64);
  CHECK(list.problem.buffers[0].alignment == 64);
  CHECK(list.problem.buffers[0].fixed_offset == 128);
  CHECK(list.problem.buffers[1].alignment == 1);
  CHECK(list.problem.buffers[1].fixed_offset == -1);
}

TEST_CASE("CSV: every malformed case has its own message with the line number") {
  const std::string h = "id,lower,upper,size\n";
  CHECK(parse_error("") .find("empty file") != std::string::npos);
  CHECK(parse_error("id,lower,upper\n").find("required column 'size'") != std::string::npos);
  CHECK(parse_error("id,lower,upper,size,colour\n").find("unknown column 'colour'") != std::string::npos);
  CHECK(parse_error("id,lower,lower,upper,size\n").find("duplicate column") != std::string::npos);
  auto e = parse_error(h + "a,0,1,4\nb,0,1\n");
  CHECK(e.find("t.csv:3:") != std::string::npos);
  CHECK(e.find("missing column") != std::string::npos);
  CHECK(e.find("'size'") != std::string::npos);
  CHECK(parse_error(h + "a,0,1,4,5\n").find("extra field") != std::string::npos);
  e = parse_error(h + "a,0,x1,4\n");
  CHECK(e.find("t.csv:2:") != std::string::npos);
  CHECK(e.find("upper 'x1' is not an integer") != std::string::npos);
  CHECK(parse_error(h + "a,0,1,4.5\n").find("size '4.5' is not an integer") != std::string::npos);
  CHECK(parse_error(h + "a,0,1,-4\n").find("negative size -4") != std::string::npos);
  CHECK(parse_error(h + "a,3,3,4\n").find("lower 3 >= upper 3") != std::string::npos);
  e = parse_error(h + "a,0,1,4\n\nb,0,1,4\na,1,2,4\n");
  CHECK(e.find("t.csv:5:") != std::string::npos);
  CHECK(e.find("duplicate id 'a'") != std::string::npos);
  CHECK(parse_error(h + ",0,1,4\n").find("empty id") != std::string::npos);
  CHECK(parse_error(h + "a,0,,4\n").find("empty upper") != std::string::npos);
  CHECK(parse_error("id,lower,upper,size,alignment\na,0,1,4,3\n").find("not a power of two") != std::string::npos);
  CHECK(parse_error("id,lower,upper,size,offset\na,0,1,4,-8\n").find("negative offset") != std::string::npos);
  CHECK(parse_error("id,lower,upper,size,offset,alignment\na,0,1,4,12,8\n").find("breaks its alignment") != std::string::npos);
}

TEST_CASE("CSV: file errors and capacity from the file name") {
  try {
    (void)io::read_buffers_csv_file("/nonexistent/dir/x.csv");
    FAIL("expected an I/O error");
  } catch (const error& e) {
    CHECK(e.code() == errc::io_error);
    CHECK(std::string(e.what()).find("/nonexistent/dir/x.csv") != std::string::npos);
  }
  CHECK(io::capacity_from_filename("bench/A.1048576.csv") == 1048576);
  CHECK(io::capacity_from_filename("input.12.csv") == 12);
  CHECK(!io::capacity_from_filename("buffers.csv"));
  CHECK(!io::capacity_from_filename("a.b12.csv"));
}
