// Adapting a graph type you already have: memplan reads it through customization points.
// Here a "third-party" graph with its own structs needs four free functions (found by ADL) and
// a `bytes` field; sizes could also come from a lookup passed to memplan::make_problem.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <memplan/core/pipeline.hpp>
#include <memplan/schedule/given.hpp>

namespace mylib {
struct layer {
  std::string name;
  std::vector<int> reads, writes;
  friend bool operator<(const layer& a, const layer& b) { return a.name < b.name; }
  friend bool operator==(const layer& a, const layer& b) { return a.name == b.name; }
};
struct blob {
  int id;
  long long bytes;
  bool is_input = false;
  friend bool operator<(const blob& a, const blob& b) { return a.id < b.id; }
  friend bool operator==(const blob& a, const blob& b) { return a.id == b.id; }
};
struct model {
  std::vector<layer> layers;
  std::vector<blob> blobs;
};

// The handful of functions memplan needs:
const std::vector<layer>& ops(const model& m) { return m.layers; }
const std::vector<blob>& tensors(const model& m) { return m.blobs; }
std::vector<blob> inputs(const model& m, const layer& l) {
  std::vector<blob> r;
  for (int i : l.reads) r.push_back(m.blobs[static_cast<std::size_t>(i)]);
  return r;
}
std::vector<blob> outputs(const model& m, const layer& l) {
  std::vector<blob> r;
  for (int i : l.writes) r.push_back(m.blobs[static_cast<std::size_t>(i)]);
  return r;
}
// Optional: kinds and names (defaults: activation, numbered names).
memplan::tensor_kind tensor_kind_of(const model&, const blob& b) {
  return b.is_input ? memplan::tensor_kind::input : memplan::tensor_kind::activation;
}
std::optional<std::string> op_name(const model&, const layer& l) { return l.name; }
}  // namespace mylib

static_assert(memplan::op_graph<mylib::model>);  // add producer()/consumers() for memplan::dataflow_graph

// A placer that stacks buffers (the real ones live in memplan/place/).
struct stack_placer {
  std::string name() const { return "stack"; }
  memplan::place::buffer_placement place(const memplan::place::buffer_problem& bp) const {
    memplan::place::buffer_placement pl;
    for (const auto& b : bp.buffers) {
      pl.offsets.push_back(pl.arena);
      pl.arena += b.size;
    }
    return pl;
  }
};

int main() {
  mylib::model m;
  m.blobs = {{0, 1 << 20, true}, {1, 4 << 20}, {2, 4 << 20}, {3, 1 << 10}};
  m.layers = {{"conv", {0}, {1}}, {"relu", {1}, {2}}, {"fc", {2}, {3}}};
  auto plan = memplan::plan(m, memplan::schedule::given{} | stack_placer{});
  std::printf("ops %zu, peak %lld bytes, arena %lld bytes, lower bound %lld bytes\n", plan.order().size(),
              static_cast<long long>(plan.stats.peak), static_cast<long long>(plan.arena),
              static_cast<long long>(plan.stats.lower_bound));
  return 0;
}
