#pragma once
// place::best_fit -- XLA's heap simulator "GlobalDecreasingSizeBestFitHeap": a global (whole-program)
// decreasing-size order and best-fit chunk choice. Its spatial order sorts by size, then by the
// length of the live range (longer first), then by buffer; its temporal order sorts by live-range
// length first. Each buffer takes the smallest free chunk over its whole live range that fits, or
// the chunk on top of the heap.
#include <algorithm>
#include <string>
#include <vector>

#include <memplan/core/buffer.hpp>
#include <memplan/place/detail/support.hpp>

namespace memplan::place {

struct best_fit {
  enum class order_by { spatial, temporal };
  order_by order = order_by::spatial;

  [[nodiscard]] std::string name() const { return "best_fit"; }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const { return place(p, deadline::never()); }

  // With a deadline: if it passes before every buffer is placed, the rest is stacked on top (valid,
  // said in `note`); the pass checks it every 256 buffers.
  [[nodiscard]] buffer_placement place(const buffer_problem& p, const deadline& until) const { return detail::place_one_pass(*this, p, until); }

  // The offsets of the pass alone (validated input assumed; not yet checked by the referee: the
  // composite placers check the one placement they return).
  [[nodiscard]] std::vector<std::int64_t> offsets(const buffer_problem& p, const deadline& until, bool* cut = nullptr) const {
    auto ids = detail::free_buffers(p);
    auto len = [&](std::size_t i) { return p.buffers[i].upper - p.buffers[i].lower; };
    std::sort(ids.begin(), ids.end(), [&](std::size_t a, std::size_t b) {
      const auto& x = p.buffers[a];
      const auto& y = p.buffers[b];
      if (order == order_by::spatial) {
        if (x.size != y.size) return x.size > y.size;
        if (len(a) != len(b)) return len(a) > len(b);
      } else {
        if (len(a) != len(b)) return len(a) > len(b);
        if (x.size != y.size) return x.size > y.size;
      }
      if (x.lower != y.lower) return x.lower < y.lower;
      return a < b;
    });
    return detail::place_in_order(p, ids, detail::fit::best, {}, &until, cut);
  }
};

}  // namespace memplan::place
