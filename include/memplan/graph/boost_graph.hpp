#pragma once
// Boost.Graph adapter (CMake target memplan::boost). Reads a boost::adjacency_list with bundled
// properties as a dataflow graph:
//   - every vertex is an op;
//   - every out-edge carries one use of a tensor; the out-edges of one source vertex that carry the
//     same tensor key form ONE tensor (produced by the source, consumed by every target);
//   - the tensor key and size come from the edge bundle (members `tensor` and `bytes` by default,
//     or any accessors you pass); `kind` and vertex `name` are used when the bundles have them.
// Tensors without a producer (inputs, weights) are not edges: model them as a source op (a "load")
// or leave them out -- resident tensors only add a constant to every order's peak.
//
//   using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, my_op, my_edge>;
//   memplan::boost_dataflow_view view(g);
//   static_assert(memplan::dataflow_graph<decltype(view)>);
//   auto plan = memplan::plan(view, memplan::schedule::given{} | memplan::place::greedy_by_size{});
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

// Boost 1.74's named_graph.hpp trips g++ 12's -Wuninitialized / -Wmaybe-uninitialized on a
// boost::optional when optimizing with sanitizers; the warning is about Boost's code, not ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graph_traits.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <memplan/base/error.hpp>
#include <memplan/graph/index_range.hpp>
#include <memplan/base/kinds.hpp>
#include <memplan/graph/traits.hpp>

namespace memplan {

struct boost_tensor_ref {
  std::int32_t index = -1;
  friend constexpr auto operator<=>(boost_tensor_ref, boost_tensor_ref) = default;
};

namespace detail {
struct edge_tensor_key {
  template <class EP>
  auto operator()(const EP& e) const -> decltype(e.tensor) { return e.tensor; }
};
struct edge_bytes {
  template <class EP>
  std::int64_t operator()(const EP& e) const { return static_cast<std::int64_t>(e.bytes); }
};
}  // namespace detail

template <class G, class KeyFn = detail::edge_tensor_key, class BytesFn = detail::edge_bytes>
class boost_dataflow_view {
 public:
  using vertex = typename boost::graph_traits<G>::vertex_descriptor;
  using edge_bundle = typename boost::edge_bundle_type<G>::type;
  using vertex_bundle = typename boost::vertex_bundle_type<G>::type;
  using key_type = std::remove_cvref_t<decltype(std::declval<KeyFn>()(std::declval<const edge_bundle&>()))>;

  explicit boost_dataflow_view(const G& g, KeyFn key = {}, BytesFn bytes = {}) : g_(&g) {
    std::map<vertex, std::int32_t> vid;
    for (auto [v, vend] = boost::vertices(g); v != vend; ++v) {
      vid.emplace(*v, static_cast<std::int32_t>(ops_.size()));
      ops_.push_back(*v);
    }
    ins_.resize(ops_.size());
    outs_.resize(ops_.size());
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      std::map<key_type, std::int32_t> by_key;  // tensors of this source, by key
      for (auto [e, eend] = boost::out_edges(ops_[i], g); e != eend; ++e) {
        const auto& ep = g[*e];
        auto k = key(ep);
        auto [it, fresh] = by_key.emplace(k, static_cast<std::int32_t>(tensors_.size()));
        if (fresh) {
          tensor_data td;
          td.bytes = bytes(ep);
          if constexpr (requires { ep.kind; }) td.kind = ep.kind;
          if constexpr (requires { std::string(ep.name); }) td.name = std::string(ep.name);
          else td.name = op_label(i) + ":" + key_label(k);
          td.producer = static_cast<std::int32_t>(i);
          tensors_.push_back(std::move(td));
          outs_[i].push_back(boost_tensor_ref{it->second});
        } else if (tensors_[static_cast<std::size_t>(it->second)].bytes != bytes(ep)) {
          throw error(errc::invalid_graph, "boost graph: edges of tensor '" + tensors_[static_cast<std::size_t>(it->second)].name +
                                               "' disagree on its size");
        }
        const auto target = vid.at(boost::target(*e, g));
        auto& cons = tensors_[static_cast<std::size_t>(it->second)].consumers;
        if (std::find(cons.begin(), cons.end(), target) == cons.end()) {
          cons.push_back(target);
          ins_[static_cast<std::size_t>(target)].push_back(boost_tensor_ref{it->second});
        }
      }
    }
  }

  [[nodiscard]] const std::vector<vertex>& ops() const { return ops_; }
  [[nodiscard]] index_range<boost_tensor_ref> tensors() const {
    return index_range<boost_tensor_ref>(static_cast<std::int32_t>(tensors_.size()));
  }
  [[nodiscard]] std::span<const boost_tensor_ref> inputs(vertex v) const { return ins_[index_of(v)]; }
  [[nodiscard]] std::span<const boost_tensor_ref> outputs(vertex v) const { return outs_[index_of(v)]; }
  [[nodiscard]] std::optional<vertex> producer(boost_tensor_ref t) const { return ops_[static_cast<std::size_t>(at(t).producer)]; }
  [[nodiscard]] std::vector<vertex> consumers(boost_tensor_ref t) const {
    std::vector<vertex> r;
    for (auto c : at(t).consumers) r.push_back(ops_[static_cast<std::size_t>(c)]);
    return r;
  }
  [[nodiscard]] std::int64_t tensor_bytes(boost_tensor_ref t) const { return at(t).bytes; }
  [[nodiscard]] tensor_kind tensor_kind_of(boost_tensor_ref t) const { return at(t).kind; }
  [[nodiscard]] std::optional<std::string> tensor_name(boost_tensor_ref t) const { return at(t).name; }
  [[nodiscard]] std::optional<std::string> op_name(vertex v) const { return op_label(index_of(v)); }

 private:
  struct tensor_data {
    std::string name;
    std::int64_t bytes = 0;
    tensor_kind kind = tensor_kind::activation;
    std::int32_t producer = -1;
    std::vector<std::int32_t> consumers;
  };
  template <class K>
  static std::string key_label(const K& k) {
    if constexpr (requires { std::to_string(k); }) return std::to_string(k);
    else if constexpr (std::is_convertible_v<K, std::string>) return std::string(k);
    else return "t";
  }
  std::string op_label(std::size_t i) const {
    const auto& vp = (*g_)[ops_[i]];
    if constexpr (requires { std::string(vp.name); }) return std::string(vp.name);
    else return "v" + std::to_string(i);
  }
  std::size_t index_of(vertex v) const {
    if constexpr (std::is_integral_v<vertex>) {
      if (static_cast<std::size_t>(v) < ops_.size() && ops_[static_cast<std::size_t>(v)] == v) return static_cast<std::size_t>(v);
    }
    for (std::size_t i = 0; i < ops_.size(); ++i)
      if (ops_[i] == v) return i;
    throw error(errc::invalid_argument, "boost graph: vertex is not in the adapted graph");
  }
  const tensor_data& at(boost_tensor_ref t) const {
    if (t.index < 0 || static_cast<std::size_t>(t.index) >= tensors_.size())
      throw error(errc::invalid_argument, "boost graph: tensor reference out of range");
    return tensors_[static_cast<std::size_t>(t.index)];
  }

  const G* g_;
  std::vector<vertex> ops_;
  std::vector<tensor_data> tensors_;
  std::vector<std::vector<boost_tensor_ref>> ins_, outs_;
};

}  // namespace memplan

template <>
struct std::hash<memplan::boost_tensor_ref> {
  std::size_t operator()(memplan::boost_tensor_ref r) const noexcept { return std::hash<std::int32_t>{}(r.index); }
};
