#pragma once
// A small min-cost flow solver (std only) for place::mincost_flow: primal-dual with Johnson potentials.
// Each phase runs Dijkstra on reduced costs from the source, then sends a blocking flow through the
// admissible edges (reduced cost 0 after the potential update) with Dinic-style current-arc DFS, so
// that many unit paths of equal cost are augmented per Dijkstra. Costs must be non-negative initially.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

#include <memplan/base/deadline.hpp>

namespace memplan::place::detail {

class min_cost_flow {
 public:
  explicit min_cost_flow(int nodes) : head_(static_cast<std::size_t>(nodes), -1) {}

  // Adds an edge and returns its id (the reverse edge is id ^ 1).
  int add_edge(int from, int to, std::int64_t cap, std::int64_t cost) {
    const int id = static_cast<int>(to_.size());
    push(from, to, cap, cost);
    push(to, from, 0, -cost);
    return id;
  }

  [[nodiscard]] std::int64_t flow_on(int edge) const { return cap_[static_cast<std::size_t>(edge ^ 1)]; }

  // Sends up to `limit` units from s to t at minimum cost; returns (flow, cost). Past `until` no new
  // phase starts (the first always runs): the flow sent so far is a minimum-cost flow of its value.
  std::pair<std::int64_t, std::int64_t> run(int s, int t, std::int64_t limit, const deadline& until = deadline::never()) {
    const auto N = head_.size();
    std::vector<std::int64_t> pot(N, 0), dist(N);
    std::int64_t flow = 0, cost = 0;
    constexpr auto inf = std::numeric_limits<std::int64_t>::max() / 4;
    using item = std::pair<std::int64_t, int>;
    bool first = true;
    while (flow < limit) {
      if (!first && until.expired()) break;
      first = false;
      std::fill(dist.begin(), dist.end(), inf);
      std::priority_queue<item, std::vector<item>, std::greater<>> pq;
      dist[static_cast<std::size_t>(s)] = 0;
      pq.push({0, s});
      while (!pq.empty()) {
        auto [d, u] = pq.top();
        pq.pop();
        if (d != dist[static_cast<std::size_t>(u)]) continue;
        for (int e = head_[static_cast<std::size_t>(u)]; e >= 0; e = next_[static_cast<std::size_t>(e)]) {
          const auto se = static_cast<std::size_t>(e);
          if (cap_[se] <= 0) continue;
          const int v = to_[se];
          const auto nd = d + cost_[se] + pot[static_cast<std::size_t>(u)] - pot[static_cast<std::size_t>(v)];
          if (nd < dist[static_cast<std::size_t>(v)]) {
            dist[static_cast<std::size_t>(v)] = nd;
            pq.push({nd, v});
          }
        }
      }
      if (dist[static_cast<std::size_t>(t)] >= inf) break;
      // Potentials capped at dist(t) keep every residual reduced cost non-negative (nodes farther than t
      // were not settled and must not get an admissible edge into them).
      const auto dt = dist[static_cast<std::size_t>(t)];
      for (std::size_t v = 0; v < N; ++v) pot[v] += std::min(dist[v], dt);
      // Blocking flow on admissible edges (reduced cost 0), current-arc DFS with BFS levels on them.
      std::vector<int> level(N, -1);
      {
        std::vector<int> q{s};
        level[static_cast<std::size_t>(s)] = 0;
        for (std::size_t qi = 0; qi < q.size(); ++qi) {
          const int u = q[qi];
          for (int e = head_[static_cast<std::size_t>(u)]; e >= 0; e = next_[static_cast<std::size_t>(e)]) {
            const auto se = static_cast<std::size_t>(e);
            const int v = to_[se];
            if (cap_[se] > 0 && level[static_cast<std::size_t>(v)] < 0 && admissible(se, u, v, pot)) {
              level[static_cast<std::size_t>(v)] = level[static_cast<std::size_t>(u)] + 1;
              q.push_back(v);
            }
          }
        }
      }
      std::vector<int> arc(head_);
      std::function<std::int64_t(int, std::int64_t)> dfs = [&](int u, std::int64_t f) -> std::int64_t {
        if (u == t) return f;
        for (int& e = arc[static_cast<std::size_t>(u)]; e >= 0; e = next_[static_cast<std::size_t>(e)]) {
          const auto se = static_cast<std::size_t>(e);
          const int v = to_[se];
          if (cap_[se] <= 0 || level[static_cast<std::size_t>(v)] != level[static_cast<std::size_t>(u)] + 1 ||
              !admissible(se, u, v, pot))
            continue;
          if (auto got = dfs(v, std::min(f, cap_[se])); got > 0) {
            cap_[se] -= got;
            cap_[se ^ 1] += got;
            return got;
          }
        }
        return 0;
      };
      std::int64_t pushed = 0;
      while (flow < limit) {
        const auto got = dfs(s, limit - flow);
        if (got == 0) break;
        flow += got;
        pushed += got;
        cost += got * (pot[static_cast<std::size_t>(t)] - pot[static_cast<std::size_t>(s)]);
      }
      if (pushed == 0) break;  // cannot happen with a reachable sink; guards against a stall
    }
    return {flow, cost};
  }

 private:
  void push(int from, int to, std::int64_t cap, std::int64_t cost) {
    to_.push_back(to);
    cap_.push_back(cap);
    cost_.push_back(cost);
    next_.push_back(head_[static_cast<std::size_t>(from)]);
    head_[static_cast<std::size_t>(from)] = static_cast<int>(to_.size()) - 1;
  }
  bool admissible(std::size_t e, int u, int v, const std::vector<std::int64_t>& pot) const {
    return cost_[e] + pot[static_cast<std::size_t>(u)] - pot[static_cast<std::size_t>(v)] == 0;
  }

  std::vector<int> head_, to_, next_;
  std::vector<std::int64_t> cap_, cost_;
};

}  // namespace memplan::place::detail
