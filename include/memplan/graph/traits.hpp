#pragma once
// Customization point objects that read ANY user graph, and the concepts layered on them.
//
// Lookup order of every CPO (documented in docs/adapting.md):
//   1. a member function on the graph:        g.ops(), g.inputs(op), g.tensor_bytes(t), ...
//   2. a free function found by ADL:          ops(g), inputs(g, op), tensor_bytes(g, t), ...
//   3. a default where one makes sense:       tensor_bytes -> t.bytes, tensor_kind_of -> activation,
//                                             op_name/tensor_name -> none (the problem numbers them),
//                                             inplace_of -> none, op_type -> "op", op_phase_of -> other,
//                                             op_cost -> 0, op_workspace -> 0, op_recomputable -> true,
//                                             op_implementations -> none.
// Sizes, costs and workspaces may instead come from lookups passed to memplan::make_problem.
// A CPO without 1 or 2 and without a default fails with a static_assert that says what to write.
//
// Conformance check for your graph type:   static_assert(memplan::dataflow_graph<MyGraph>);
#include <concepts>
#include <cstdint>
#include <optional>
#include <ranges>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <memplan/base/kinds.hpp>

namespace memplan {
namespace _cpo {

template <class...>
inline constexpr bool dependent_false = false;

// Poison pills: unqualified calls below find the user's functions by ADL only.
void ops(auto&) = delete;
void tensors(auto&) = delete;
void inputs(auto&, auto&) = delete;
void outputs(auto&, auto&) = delete;
void producer(auto&, auto&) = delete;
void consumers(auto&, auto&) = delete;
void tensor_bytes(auto&, auto&) = delete;
void tensor_kind_of(auto&, auto&) = delete;
void tensor_name(auto&, auto&) = delete;
void op_name(auto&, auto&) = delete;
void op_type(auto&, auto&) = delete;
void op_phase_of(auto&, auto&) = delete;
void inplace_of(auto&, auto&) = delete;
void op_cost(auto&, auto&) = delete;
void op_workspace(auto&, auto&) = delete;
void op_recomputable(auto&, auto&) = delete;
void op_implementations(auto&, auto&) = delete;

template <class G> concept member_ops = requires(const G& g) { { g.ops() } -> std::ranges::forward_range; };
template <class G> concept adl_ops = requires(const G& g) { { ops(g) } -> std::ranges::forward_range; };
template <class G> concept member_tensors = requires(const G& g) { { g.tensors() } -> std::ranges::forward_range; };
template <class G> concept adl_tensors = requires(const G& g) { { tensors(g) } -> std::ranges::forward_range; };

struct ops_fn {
  template <class G>
  constexpr decltype(auto) operator()(const G& g) const {
    if constexpr (member_ops<G>) return g.ops();
    else if constexpr (adl_ops<G>) return ops(g);
    else static_assert(dependent_false<G>, "memplan::ops(g): give your graph a member `ops()` or a free function `ops(const G&)` returning a forward range of op descriptors");
  }
};
struct tensors_fn {
  template <class G>
  constexpr decltype(auto) operator()(const G& g) const {
    if constexpr (member_tensors<G>) return g.tensors();
    else if constexpr (adl_tensors<G>) return tensors(g);
    else static_assert(dependent_false<G>, "memplan::tensors(g): give your graph a member `tensors()` or a free function `tensors(const G&)` returning a forward range of tensor descriptors");
  }
};

// Two-argument CPOs (graph, descriptor) share one shape; the macro-free way is one struct each.
#define MEMPLAN_CPO_2(NAME, MSG)                                                                   \
  template <class G, class D> concept member_##NAME = requires(const G& g, const D& d) { g.NAME(d); }; \
  template <class G, class D> concept adl_##NAME = requires(const G& g, const D& d) { NAME(g, d); };  \
  struct NAME##_fn {                                                                                \
    template <class G, class D>                                                                     \
    constexpr decltype(auto) operator()(const G& g, const D& d) const {                             \
      if constexpr (member_##NAME<G, D>) return g.NAME(d);                                          \
      else if constexpr (adl_##NAME<G, D>) return NAME(g, d);                                       \
      else static_assert(dependent_false<G, D>, MSG);                                               \
    }                                                                                               \
  };
MEMPLAN_CPO_2(inputs, "memplan::inputs(g, op): provide member `inputs(op)` or free `inputs(const G&, op)` returning a range of tensor descriptors")
MEMPLAN_CPO_2(outputs, "memplan::outputs(g, op): provide member `outputs(op)` or free `outputs(const G&, op)` returning a range of tensor descriptors")
MEMPLAN_CPO_2(producer, "memplan::producer(g, t): provide member `producer(t)` or free `producer(const G&, t)` returning std::optional<op descriptor>")
MEMPLAN_CPO_2(consumers, "memplan::consumers(g, t): provide member `consumers(t)` or free `consumers(const G&, t)` returning a range of op descriptors")
#undef MEMPLAN_CPO_2

template <class G, class T> concept member_tensor_bytes = requires(const G& g, const T& t) { { g.tensor_bytes(t) } -> std::convertible_to<std::int64_t>; };
template <class G, class T> concept adl_tensor_bytes = requires(const G& g, const T& t) { { tensor_bytes(g, t) } -> std::convertible_to<std::int64_t>; };
template <class T> concept field_bytes = requires(const T& t) { { t.bytes } -> std::convertible_to<std::int64_t>; };

struct tensor_bytes_fn {
  template <class G, class T>
  constexpr std::int64_t operator()(const G& g, const T& t) const {
    if constexpr (member_tensor_bytes<G, T>) return static_cast<std::int64_t>(g.tensor_bytes(t));
    else if constexpr (adl_tensor_bytes<G, T>) return static_cast<std::int64_t>(tensor_bytes(g, t));
    else if constexpr (field_bytes<T>) return static_cast<std::int64_t>(t.bytes);
    else {
      static_assert(dependent_false<G, T>, "memplan::tensor_bytes(g, t): provide member `tensor_bytes(t)`, free `tensor_bytes(const G&, t)`, a `bytes` field on the tensor descriptor, or pass a size lookup to memplan::make_problem(g, sizes)");
      return 0;
    }
  }
};

// Optional properties with defaults.
#define MEMPLAN_CPO_DEFAULTED(NAME, RET, DEFAULT)                                                  \
  template <class G, class D> concept member_##NAME = requires(const G& g, const D& d) { { g.NAME(d) } -> std::convertible_to<RET>; }; \
  template <class G, class D> concept adl_##NAME = requires(const G& g, const D& d) { { NAME(g, d) } -> std::convertible_to<RET>; };  \
  struct NAME##_fn {                                                                                \
    template <class G, class D>                                                                     \
    constexpr RET operator()(const G& g, const D& d) const {                                        \
      if constexpr (member_##NAME<G, D>) return g.NAME(d);                                          \
      else if constexpr (adl_##NAME<G, D>) return NAME(g, d);                                       \
      else return DEFAULT;                                                                          \
    }                                                                                               \
  };
MEMPLAN_CPO_DEFAULTED(tensor_kind_of, ::memplan::tensor_kind, ::memplan::tensor_kind::activation)
MEMPLAN_CPO_DEFAULTED(tensor_name, std::optional<std::string>, std::nullopt)
MEMPLAN_CPO_DEFAULTED(op_name, std::optional<std::string>, std::nullopt)
MEMPLAN_CPO_DEFAULTED(op_type, std::string, std::string("op"))
MEMPLAN_CPO_DEFAULTED(op_phase_of, ::memplan::op_phase, ::memplan::op_phase::other)
MEMPLAN_CPO_DEFAULTED(op_cost, double, 0.0)
MEMPLAN_CPO_DEFAULTED(op_workspace, std::int64_t, std::int64_t{0})
MEMPLAN_CPO_DEFAULTED(op_recomputable, bool, true)
MEMPLAN_CPO_DEFAULTED(op_implementations, std::vector<::memplan::implementation>, std::vector<::memplan::implementation>{})
#undef MEMPLAN_CPO_DEFAULTED

// inplace_of(g, t) -> std::optional<tensor descriptor>: t is written into the storage of the result.
template <class G, class D> concept member_inplace_of = requires(const G& g, const D& d) { { g.inplace_of(d) } -> std::convertible_to<std::optional<D>>; };
template <class G, class D> concept adl_inplace_of = requires(const G& g, const D& d) { { inplace_of(g, d) } -> std::convertible_to<std::optional<D>>; };
struct inplace_of_fn {
  template <class G, class D>
  constexpr std::optional<D> operator()(const G& g, const D& d) const {
    if constexpr (member_inplace_of<G, D>) return g.inplace_of(d);
    else if constexpr (adl_inplace_of<G, D>) return inplace_of(g, d);
    else return std::nullopt;
  }
};

}  // namespace _cpo

inline namespace cpos {
inline constexpr _cpo::ops_fn ops{};
inline constexpr _cpo::tensors_fn tensors{};
inline constexpr _cpo::inputs_fn inputs{};
inline constexpr _cpo::outputs_fn outputs{};
inline constexpr _cpo::producer_fn producer{};
inline constexpr _cpo::consumers_fn consumers{};
inline constexpr _cpo::tensor_bytes_fn tensor_bytes{};
inline constexpr _cpo::tensor_kind_of_fn tensor_kind_of{};
inline constexpr _cpo::tensor_name_fn tensor_name{};
inline constexpr _cpo::op_name_fn op_name{};
inline constexpr _cpo::op_type_fn op_type{};
inline constexpr _cpo::op_phase_of_fn op_phase_of{};
inline constexpr _cpo::inplace_of_fn inplace_of{};
inline constexpr _cpo::op_cost_fn op_cost{};
inline constexpr _cpo::op_workspace_fn op_workspace{};
inline constexpr _cpo::op_recomputable_fn op_recomputable{};
inline constexpr _cpo::op_implementations_fn op_implementations{};
}  // namespace cpos

// ---- descriptor types -------------------------------------------------------------------------
template <class G>
using op_descriptor_t = std::ranges::range_value_t<std::remove_cvref_t<decltype(::memplan::ops(std::declval<const G&>()))>>;
template <class G>
using tensor_descriptor_t = std::ranges::range_value_t<std::remove_cvref_t<decltype(::memplan::tensors(std::declval<const G&>()))>>;

// ---- concepts, layered from basic to full -------------------------------------------------------
// op_graph: ops and, per op, its input and output tensors.
template <class G>
concept op_graph = (_cpo::member_ops<G> || _cpo::adl_ops<G>) && (_cpo::member_tensors<G> || _cpo::adl_tensors<G>) &&
    requires(const G& g, const op_descriptor_t<G>& op) {
      requires _cpo::member_inputs<G, op_descriptor_t<G>> || _cpo::adl_inputs<G, op_descriptor_t<G>>;
      requires _cpo::member_outputs<G, op_descriptor_t<G>> || _cpo::adl_outputs<G, op_descriptor_t<G>>;
      { ::memplan::inputs(g, op) } -> std::ranges::input_range;
      { ::memplan::outputs(g, op) } -> std::ranges::input_range;
    };

// tensor_graph: plus, per tensor, its producer (optional) and consumers.
template <class G>
concept tensor_graph = op_graph<G> && requires(const G& g, const tensor_descriptor_t<G>& t) {
  requires _cpo::member_producer<G, tensor_descriptor_t<G>> || _cpo::adl_producer<G, tensor_descriptor_t<G>>;
  requires _cpo::member_consumers<G, tensor_descriptor_t<G>> || _cpo::adl_consumers<G, tensor_descriptor_t<G>>;
  { ::memplan::consumers(g, t) } -> std::ranges::input_range;
};

// sized: tensor_bytes is available (member, ADL or a `bytes` field).
template <class G>
concept sized_tensors = requires { typename tensor_descriptor_t<G>; } &&
    (_cpo::member_tensor_bytes<G, tensor_descriptor_t<G>> || _cpo::adl_tensor_bytes<G, tensor_descriptor_t<G>> ||
     _cpo::field_bytes<tensor_descriptor_t<G>>);

// dataflow_graph: everything memplan reads from a graph. `static_assert(memplan::dataflow_graph<G>)`.
template <class G>
concept dataflow_graph = tensor_graph<G> && sized_tensors<G>;

}  // namespace memplan
