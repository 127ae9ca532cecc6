#pragma once
// memplan::io::explain -- a plan told in words (`memplan explain GRAPH PLAN.json`): the figures, the
// step at the peak and what is live there and why (resident, read by the op running, kept until a
// later reader, a graph output), the ops recomputed and the storages moved to the host. Reads only
// the plan's steps and materializations and the problem, like verify; writes text.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <memplan/base/kinds.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/io/report.hpp>

namespace memplan::io {

struct explain_options {
  std::int32_t top = 15;  // live storages listed at the peak (largest first)
};

namespace detail {

inline std::string storage_label(const problem& p, storage_id s) {
  const auto ts = p.storage_tensors(s);
  std::string n = "'" + p.tensor_name(ts[0]) + "'";
  if (ts.size() > 1) n += " (+" + std::to_string(ts.size() - 1) + " in place)";
  return n;
}

inline bool op_touches(const problem& p, op_id o, storage_id s) {
  const auto t = p.touched(o);
  return std::find(t.begin(), t.end(), s) != t.end();
}

inline std::string step_label(const problem& p, const step& s, std::size_t index) {
  std::string r = "step " + std::to_string(index) + " (" + std::string(to_string(s.kind)) + " ";
  r += runs_op(s.kind) ? "'" + p.op_name(s.id) + "', " + std::string(to_string(p.phase(s.id))) : "'" + p.tensor_name(s.id) + "'";
  return r + ")";
}

}  // namespace detail

inline void explain(std::ostream& os, const problem& p, const memory_plan& mp, const explain_options& opt = {}) {
  const auto& st = mp.stats;
  auto bytes = [](std::int64_t b) { return human_bytes(b) + " (" + std::to_string(b) + " B)"; };
  os << "plan of '" << p.name() << "': " << mp.steps.size() << " steps over " << p.num_ops() << " ops, " << mp.mats.size()
     << " materializations of " << p.num_storages() << " storages\n";
  os << "arena " << bytes(mp.arena) << ", peak " << bytes(st.peak);
  if (st.lower_bound > 0) {
    os << ", lower bound " << bytes(st.lower_bound);
    if (!st.lower_bound_by.empty()) os << " (" << st.lower_bound_by << ")";
  }
  os << "\n";
  if (st.impl_lower_bound >= 0)
    os << "bound for the plan's implementations " << bytes(st.impl_lower_bound)
       << ": the rest of the gap needs slower implementations with less workspace\n";
  if (!mp.stages.empty()) {
    os << "stages:";
    for (const auto& r : mp.stages) os << " " << to_string(r.kind) << " " << r.name << ";";
    os << "\n";
  }

  // Tick -> step, and where each step sits.
  std::vector<std::size_t> tick_step;
  for (std::size_t i = 0; i < mp.steps.size(); ++i)
    if (runs_op(mp.steps[i].kind)) tick_step.push_back(i);
  if (mp.peak_tick < 0 || static_cast<std::size_t>(mp.peak_tick) >= tick_step.size()) {
    os << "no op steps: the peak is the resident bytes\n";
    return;
  }
  const auto T = mp.peak_tick;
  const auto peak_index = tick_step[static_cast<std::size_t>(T)];
  const auto& ps = mp.steps[peak_index];
  os << "\nthe peak, " << bytes(mp.live[static_cast<std::size_t>(T)]) << ", is reached at " << detail::step_label(p, ps, peak_index);
  if (const auto ws = step_workspace(p, ps); ws > 0) os << ", whose workspace takes " << bytes(ws);
  os << ".\n";

  struct live_one {
    std::int32_t mat;
    std::int64_t bytes;
  };
  std::vector<live_one> live;
  for (std::size_t m = 0; m < mp.mats.size(); ++m) {
    const auto& x = mp.mats[m];
    if (x.first <= T && T <= x.last) live.push_back({static_cast<std::int32_t>(m), p.storage_bytes(x.storage)});
  }
  std::stable_sort(live.begin(), live.end(), [](const live_one& a, const live_one& b) { return a.bytes > b.bytes; });
  std::int64_t by_reason[4] = {0, 0, 0, 0};  // resident, used by this step, kept for later, output
  const char* reason_name[4] = {"resident (inputs, weights, optimizer state)", "read or written by the step at the peak",
                                "kept for a later step", "graph outputs kept to the end"};
  os << live.size() << " storages are live there; the largest:\n";
  for (std::size_t i = 0; i < live.size(); ++i) {
    const auto& m = mp.mats[static_cast<std::size_t>(live[i].mat)];
    const auto s = m.storage;
    std::string why;
    int reason = 2;
    if (p.resident(s)) {
      reason = 0;
      why = "resident " + std::string(to_string(p.kind(p.storage_root(s))));
    } else if (detail::op_touches(p, ps.id, s)) {
      reason = 1;
      why = "used by this step";
    } else {
      // The next op step after the peak that reads or writes it.
      std::string next;
      for (std::size_t k = static_cast<std::size_t>(T) + 1; k < tick_step.size() && next.empty(); ++k) {
        const auto& q = mp.steps[tick_step[k]];
        if (detail::op_touches(p, q.id, s)) next = detail::step_label(p, q, tick_step[k]);
      }
      if (!next.empty()) {
        why = "kept until " + next + " needs it";
      } else if (p.live_to_end(s)) {
        reason = 3;
        why = "graph output, kept to the end";
      } else {
        why = "not read again before it is freed";
      }
    }
    by_reason[reason] += live[i].bytes;
    if (static_cast<std::int32_t>(i) < opt.top) {
      char line[64];
      std::snprintf(line, sizeof line, "  %12s  %-16s ", human_bytes(live[i].bytes).c_str(),
                    std::string(to_string(p.kind(p.storage_root(s)))).c_str());
      os << line << detail::storage_label(p, s) << " at offset " << m.offset << ": " << why << "\n";
    }
  }
  if (static_cast<std::int32_t>(live.size()) > opt.top) os << "  ... and " << live.size() - static_cast<std::size_t>(opt.top) << " more\n";
  os << "by reason:\n";
  for (int r = 0; r < 4; ++r)
    if (by_reason[r] > 0) os << "  " << human_bytes(by_reason[r]) << "  " << reason_name[r] << "\n";
  if (const auto ws = step_workspace(p, ps); ws > 0) os << "  " << human_bytes(ws) << "  workspace of the step at the peak\n";

  // Recomputation and transfers.
  std::map<op_id, std::int32_t> recomputed;
  std::map<tensor_id, std::int32_t> offloaded, prefetched;
  double rec_cost = 0;
  for (const auto& s : mp.steps) {
    if (s.kind == step_kind::recompute) {
      ++recomputed[s.id];
      rec_cost += step_cost(p, s);
    } else if (s.kind == step_kind::offload) {
      ++offloaded[s.id];
    } else if (s.kind == step_kind::prefetch) {
      ++prefetched[s.id];
    }
  }
  os << "\n";
  if (recomputed.empty()) {
    os << "nothing is recomputed.\n";
  } else {
    std::int64_t n = 0;
    for (const auto& [o, c] : recomputed) n += c;
    os << n << " recompute steps of " << recomputed.size() << " ops (extra cost " << rec_cost << (p.cost_unit().empty() ? "" : " " + p.cost_unit())
       << "): their results were dropped after their forward use and are rebuilt just before a later reader:\n";
    std::int32_t shown = 0;
    for (const auto& [o, c] : recomputed) {
      if (shown++ == opt.top) {
        os << "  ...\n";
        break;
      }
      os << "  '" << p.op_name(o) << "' (" << p.op_type(o) << ") x" << c << "\n";
    }
  }
  if (offloaded.empty() && prefetched.empty()) {
    os << "nothing is offloaded to the host.\n";
  } else {
    os << offloaded.size() << " tensors go to the host and " << prefetched.size() << " come back (" << human_bytes(st.transfer_bytes)
       << " moved):\n";
    std::int32_t shown = 0;
    for (const auto& [t, c] : offloaded) {
      if (shown++ == opt.top) {
        os << "  ...\n";
        break;
      }
      os << "  '" << p.tensor_name(t) << "' " << human_bytes(p.bytes(t)) << ", offloaded x" << c << ", prefetched x"
         << (prefetched.count(t) ? prefetched.at(t) : 0) << "\n";
    }
  }
}

}  // namespace memplan::io
