#pragma once
// memplan::verify: the one referee. It re-derives every invariant of a memory_plan from the steps
// alone -- it trusts no lifetime, profile or stat computed elsewhere -- and reports the first violation
// precisely: step, op, tensor, offsets.
//
// Invariants: every op computed exactly once, after all its predecessors; every tensor an op reads is
// on the device and still holds that tensor's value (not freed, not offloaded, not overwritten in
// place) -- so a recompute, which reads the same tensors as the original op, produces the same value;
// every materialization is created by exactly one step (preexisting storages: the first ones, in
// storage order) and its offset is aligned and inside the arena; no two materializations live at the
// same time (or one and the running op's workspace) overlap; implementations exist and the workspace
// placed is the chosen one's; offloaded values are back before use; resident and output storages are
// on the device at the end, resident ones where they started (so the plan can run again); the claimed
// peak, arena, transfer and recompute figures equal the re-derived ones; the claimed lower bound does
// not exceed the peak.
//
// Timed plans (offloaders; timeline::timed) are checked against the device model (core/timing.hpp):
// op steps run one at a time in step order and last their cost; transfers last bytes / bandwidth and
// never overlap on the one copy engine; no op reads or writes a value before the step that makes it
// (an op, a prefetch) has ended -- nothing is read while on the host or in flight; an offload copies a
// value only after its last write has ended; every op or prefetch listed after an offload starts after
// that copy has completed (the memory it releases is reused only then), and a prefetch starts only
// after the op before it has ended (it allocates at its start). With these, the bytes on the device at
// every instant -- copies in flight included -- never exceed the live bytes of some op step, which the
// replay bounds by the arena; makespan and host peak are re-derived from the times.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/core/timing.hpp>

namespace memplan {

struct verify_result {
  bool ok = true;
  std::string violation;    // the first violation, in words
  std::int32_t step = -1;   // index into plan.steps, -1 when not about one step
  explicit operator bool() const noexcept { return ok; }
};

namespace detail {

// The replay behind verify(): one pass over the steps with its own bookkeeping.
class referee {
 public:
  referee(const problem& p, const memory_plan& plan)
      : p_(p), plan_(plan), ns_(static_cast<std::size_t>(p.num_storages())) {}

  verify_result run() {
    if (auto bad = check_static()) return fail(*bad);
    if (auto bad = check_initial()) return fail(*bad);
    for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
      const auto& st = plan_.steps[i];
      std::optional<std::string> bad;
      if (runs_op(st.kind)) bad = run_op(i, st);
      else bad = run_transfer(i, st);
      if (bad) return fail(at_step(i) + *bad, static_cast<std::int32_t>(i));
    }
    if (auto bad = check_end()) return fail(*bad);
    if (auto bad = check_stats()) return fail(*bad);
    if (auto bad = check_timing()) return fail(*bad);
    return {};
  }

 private:
  enum : std::uint8_t { absent = 0, live = 1, on_host = 2, freed = 3 };
  static verify_result fail(std::string msg, std::int32_t step = -1) { return verify_result{false, std::move(msg), step}; }

  [[nodiscard]] std::string at_step(std::size_t i) const {
    const auto& s = plan_.steps[i];
    std::string w = "step " + std::to_string(i) + " (" + std::string(to_string(s.kind)) + " ";
    if (runs_op(s.kind)) w += (s.id >= 0 && s.id < p_.num_ops()) ? "'" + p_.op_name(s.id) + "'" : std::to_string(s.id);
    else w += (s.id >= 0 && s.id < p_.num_tensors()) ? "'" + p_.tensor_name(s.id) + "'" : std::to_string(s.id);
    return w + "): ";
  }
  [[nodiscard]] std::string mat_name(std::size_t m) const {
    const auto s = plan_.mats[m].storage;
    return "tensor '" + p_.tensor_name(p_.storage_root(s)) + "' (materialization " + std::to_string(m) + ")";
  }

  // ---- offsets, alignment, arena, implementations ----
  std::optional<std::string> check_static() {
    const auto a = plan_.alignment;
    if (a <= 0 || (a & (a - 1)) != 0) return "plan alignment " + std::to_string(a) + " is not a power of two";
    if (plan_.arena < 0) return std::string("negative arena size");
    for (std::size_t m = 0; m < plan_.mats.size(); ++m) {
      const auto& mm = plan_.mats[m];
      if (mm.storage < 0 || mm.storage >= p_.num_storages())
        return "materialization " + std::to_string(m) + " names storage " + std::to_string(mm.storage) + ", not in the graph";
      const auto bytes = p_.storage_bytes(mm.storage);
      if (bytes == 0) continue;
      if (auto bad = check_range(mat_name(m), mm.offset, bytes)) return bad;
    }
    for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
      const auto& st = plan_.steps[i];
      if (!runs_op(st.kind)) continue;
      if (st.id < 0 || st.id >= p_.num_ops()) return at_step(i) + "op id out of range";
      const auto n = static_cast<std::int32_t>(p_.implementations(st.id).size());
      if (st.impl < -1 || st.impl >= n)
        return at_step(i) + "implementation " + std::to_string(st.impl) + " does not exist (the op has " + std::to_string(n) + ")";
      const auto ws = step_workspace(p_, st);
      if (ws == 0) continue;
      if (st.workspace_offset < 0)
        return at_step(i) + "workspace of op '" + p_.op_name(st.id) + "' (" + std::to_string(ws) + " bytes) has no offset";
      if (auto bad = check_range("workspace of op '" + p_.op_name(st.id) + "'", st.workspace_offset, ws)) return at_step(i) + *bad;
    }
    return std::nullopt;
  }
  std::optional<std::string> check_range(const std::string& what, std::int64_t off, std::int64_t bytes) const {
    if (off < 0) return what + " has negative offset " + std::to_string(off);
    if (off % plan_.alignment != 0) return what + " at offset " + std::to_string(off) + " is not aligned to " + std::to_string(plan_.alignment);
    if (off > plan_.arena - bytes)
      // off and bytes are >= 0 here, so their sum fits in uint64 even where it leaves int64.
      return what + " at [" + std::to_string(off) + ", " + std::to_string(static_cast<std::uint64_t>(off) + static_cast<std::uint64_t>(bytes)) +
             ") lies outside the arena of " +
             std::to_string(plan_.arena) + " bytes";
    return std::nullopt;
  }

  // ---- address ranges live now: (offset, key), key = materialization or mats.size() + step for workspaces ----
  [[nodiscard]] std::int64_t key_bytes(std::size_t key) const {
    if (key < plan_.mats.size()) return p_.storage_bytes(plan_.mats[key].storage);
    return step_workspace(p_, plan_.steps[key - plan_.mats.size()]);
  }
  [[nodiscard]] std::string key_name(std::size_t key) const {
    if (key < plan_.mats.size()) {
      const auto s = static_cast<std::size_t>(plan_.mats[key].storage);
      return "tensor '" + p_.tensor_name(holds_[s] != no_id ? tensor_id(holds_[s]) : p_.storage_root(plan_.mats[key].storage)) + "'";
    }
    return "workspace of '" + p_.op_name(plan_.steps[key - plan_.mats.size()].id) + "'";
  }
  std::optional<std::string> occupy(std::size_t key, std::int64_t off) {
    const auto bytes = key_bytes(key);
    if (bytes == 0) return std::nullopt;
    const auto end = off + bytes;
    auto overlap = [&](std::int64_t o2, std::size_t k2) {
      return key_name(key) + " at [" + std::to_string(off) + ", " + std::to_string(end) + ") overlaps live " + key_name(k2) + " at [" +
             std::to_string(o2) + ", " + std::to_string(o2 + key_bytes(k2)) + ")";
    };
    auto it = ranges_.lower_bound({off, 0});
    if (it != ranges_.end() && it->first < end) return overlap(it->first, it->second);
    if (it != ranges_.begin()) {
      auto pv = std::prev(it);
      if (pv->first + key_bytes(pv->second) > off) return overlap(pv->first, pv->second);
    }
    ranges_.insert({off, key});
    live_bytes_ += bytes;
    return std::nullopt;
  }
  void release(std::size_t key, std::int64_t off) {
    if (key_bytes(key) == 0) return;
    ranges_.erase({off, key});
    live_bytes_ -= key_bytes(key);
  }

  // A new materialization of storage s: the step's next one, not used before, of that storage.
  std::optional<std::string> open(storage_id s, std::int32_t m, const char* what) {
    const auto sname = "'" + p_.tensor_name(p_.storage_root(s)) + "'";
    if (m < 0 || static_cast<std::size_t>(m) >= plan_.mats.size())
      return std::string(what) + " " + sname + " but names no materialization for it (step.mat " + std::to_string(m) + ")";
    const auto mu = static_cast<std::size_t>(m);
    if (plan_.mats[mu].storage != s)
      return std::string(what) + " " + sname + " into materialization " + std::to_string(m) + ", which belongs to '" +
             p_.tensor_name(p_.storage_root(plan_.mats[mu].storage)) + "'";
    if (claimed_[mu]) return std::string(what) + " " + sname + " into materialization " + std::to_string(m) + ", already created by another step";
    claimed_[mu] = 1;
    if (auto bad = occupy(mu, plan_.mats[mu].offset)) return bad;
    cur_[static_cast<std::size_t>(s)] = m;
    state_[static_cast<std::size_t>(s)] = live;
    return std::nullopt;
  }
  void close(storage_id s) {
    const auto su = static_cast<std::size_t>(s);
    const auto m = cur_[su];
    if (m >= 0) release(static_cast<std::size_t>(m), plan_.mats[static_cast<std::size_t>(m)].offset);
    cur_[su] = no_id;
  }

  [[nodiscard]] std::optional<std::string> why_not_readable(tensor_id t) const {
    const auto s = static_cast<std::size_t>(p_.storage_of(t));
    const auto tn = "tensor '" + p_.tensor_name(t) + "'";
    switch (state_[s]) {
      case absent: return tn + " has not been produced yet";
      case on_host: return tn + " is offloaded to the host and was not prefetched";
      case freed: return tn + " was freed at step " + std::to_string(gone_at_[s]);
      default: break;
    }
    if (holds_[s] != t) return tn + " was overwritten in place by '" + p_.tensor_name(holds_[s]) + "'";
    return std::nullopt;
  }

  // ---- the preexisting storages: the first materializations, in storage order ----
  std::optional<std::string> check_initial() {
    state_.assign(ns_, absent);
    holds_.assign(ns_, no_id);
    host_holds_.assign(ns_, no_id);
    cur_.assign(ns_, no_id);
    gone_at_.assign(ns_, -1);
    claimed_.assign(plan_.mats.size(), 0);
    computed_at_.assign(static_cast<std::size_t>(p_.num_ops()), -1);
    const auto initial = initial_storages(p_);
    if (plan_.mats.size() < initial.size())
      return "plan has " + std::to_string(plan_.mats.size()) + " materializations, fewer than the " + std::to_string(initial.size()) +
             " preexisting storages";
    for (std::size_t k = 0; k < initial.size(); ++k)
      if (plan_.mats[k].storage != initial[k])
        return "materialization " + std::to_string(k) + " should be preexisting tensor '" + p_.tensor_name(p_.storage_root(initial[k])) +
               "' (the first materializations are the preexisting storages, in storage order)";
    for (storage_id s = 0; s < p_.num_storages(); ++s)
      if (p_.preexisting(s)) {
        state_[static_cast<std::size_t>(s)] = live;
        holds_[static_cast<std::size_t>(s)] = p_.storage_root(s);
      }
    for (std::size_t k = 0; k < initial.size(); ++k) {
      claimed_[k] = 1;
      cur_[static_cast<std::size_t>(initial[k])] = static_cast<std::int32_t>(k);
      if (auto bad = occupy(k, plan_.mats[k].offset)) return "before the first step: " + *bad;
    }
    peak_ = live_bytes_;
    return std::nullopt;
  }

  // ---- compute / recompute ----
  std::optional<std::string> run_op(std::size_t i, const step& st) {
    const op_id o = st.id;
    const auto ou = static_cast<std::size_t>(o);
    if (st.kind == step_kind::compute) {
      if (computed_at_[ou] >= 0) return "op already computed at step " + std::to_string(computed_at_[ou]);
      for (auto q : p_.preds(o))
        if (computed_at_[static_cast<std::size_t>(q)] < 0) return "runs before its predecessor '" + p_.op_name(q) + "'";
    } else {
      if (computed_at_[ou] < 0) return std::string("recomputes an op that was never computed");
      if (!p_.recomputable(o)) return std::string("recomputes an op marked not recomputable (its outputs are not a function of its inputs)");
      recompute_cost_ += step_cost(p_, st);
    }
    for (auto t : p_.inputs(o))
      if (auto bad = why_not_readable(t)) return "reads " + *bad;
    std::int32_t next = st.mat;
    bool created = false;
    for (auto t : p_.outputs(o)) {
      const auto s = p_.storage_of(t);
      const auto su = static_cast<std::size_t>(s);
      if (p_.inplace_of(t) != no_id) {
        // A recompute writes in place again only where the storage still holds the base (a value
        // already updated, e.g. running statistics, is left as it is: no double update).
        if (st.kind == step_kind::recompute && state_[su] == live && holds_[su] == t) continue;
        if (auto bad = why_not_readable(p_.inplace_of(t))) return "writes in place into " + *bad;
        holds_[su] = t;
        continue;
      }
      if (state_[su] == live) {
        if (st.kind == step_kind::recompute && holds_[su] == t) continue;  // still there: left as it is
        return "produces '" + p_.tensor_name(t) + "' whose storage is already live";
      }
      if (st.kind == step_kind::compute && state_[su] != absent) return "produces '" + p_.tensor_name(t) + "' twice";
      if (p_.storage_bytes(s) > 0) {
        if (auto bad = open(s, next++, st.kind == step_kind::compute ? "computes" : "recomputes")) return bad;
        created = true;
      }
      state_[su] = live;
      holds_[su] = t;
    }
    if (!created && st.mat != no_id)
      return "names materialization " + std::to_string(st.mat) + " but creates none (its outputs are in place, empty or live)";
    const auto ws = step_workspace(p_, st);
    const auto ws_key = plan_.mats.size() + i;
    if (ws > 0)
      if (auto bad = occupy(ws_key, st.workspace_offset)) return bad;
    peak_ = std::max(peak_, live_bytes_);
    if (ws > 0) release(ws_key, st.workspace_offset);
    if (st.kind == step_kind::compute) computed_at_[ou] = static_cast<std::int32_t>(i);
    return std::nullopt;
  }

  // ---- free / offload / prefetch ----
  std::optional<std::string> run_transfer(std::size_t i, const step& st) {
    if (st.id < 0 || st.id >= p_.num_tensors()) return std::string("tensor id out of range");
    const tensor_id t = st.id;
    const auto s = p_.storage_of(t);
    const auto su = static_cast<std::size_t>(s);
    switch (st.kind) {
      case step_kind::free:
        if (p_.resident(s)) return std::string("frees a resident tensor (inputs, weights, optimizer state stay)");
        if (p_.live_to_end(s)) return std::string("frees a storage that holds an output");
        if (state_[su] != live) return std::string("frees a storage that is not live");
        close(s);
        state_[su] = freed;
        gone_at_[su] = static_cast<std::int32_t>(i);
        break;
      case step_kind::offload:
        if (auto bad = why_not_readable(t)) return "offloads " + *bad;
        close(s);
        state_[su] = on_host;
        host_holds_[su] = t;
        gone_at_[su] = static_cast<std::int32_t>(i);
        transfer_ += p_.storage_bytes(s);
        break;
      case step_kind::prefetch:
        if (state_[su] != on_host || host_holds_[su] != t) return "prefetches tensor '" + p_.tensor_name(t) + "' that is not on the host";
        if (p_.storage_bytes(s) > 0)
          if (auto bad = open(s, st.mat, "prefetches")) return bad;
        state_[su] = live;
        holds_[su] = t;
        transfer_ += p_.storage_bytes(s);
        peak_ = std::max(peak_, live_bytes_);
        break;
      default: break;
    }
    return std::nullopt;
  }

  // ---- the end of the steps ----
  std::optional<std::string> check_end() const {
    for (op_id o = 0; o < p_.num_ops(); ++o)
      if (computed_at_[static_cast<std::size_t>(o)] < 0) return "op '" + p_.op_name(o) + "' is never computed";
    const auto initial = initial_mats(p_, plan_);
    for (storage_id s = 0; s < p_.num_storages(); ++s) {
      const auto su = static_cast<std::size_t>(s);
      if (p_.storage_bytes(s) == 0) continue;
      if ((p_.resident(s) || p_.live_to_end(s)) && state_[su] != live)
        return "tensor '" + p_.tensor_name(p_.storage_root(s)) + "' must be on the device at the end (resident or output) but is not";
      if (p_.resident(s) && cur_[su] != initial[su] &&
          plan_.mats[static_cast<std::size_t>(cur_[su])].offset != plan_.mats[static_cast<std::size_t>(initial[su])].offset)
        return "resident tensor '" + p_.tensor_name(p_.storage_root(s)) + "' ends at offset " +
               std::to_string(plan_.mats[static_cast<std::size_t>(cur_[su])].offset) + ", not where it started (" +
               std::to_string(plan_.mats[static_cast<std::size_t>(initial[su])].offset) + "): the plan could not run again";
    }
    for (std::size_t m = 0; m < claimed_.size(); ++m)
      if (!claimed_[m]) return mat_name(m) + " is created by no step";
    return std::nullopt;
  }

  std::optional<std::string> check_stats() const {
    const auto peak = std::max(peak_, p_.resident_bytes());
    const auto& st = plan_.stats;
    if (st.peak != peak) return "plan claims a peak of " + std::to_string(st.peak) + " bytes, the steps give " + std::to_string(peak);
    if (st.arena != plan_.arena)
      return "stats claim an arena of " + std::to_string(st.arena) + " bytes, the plan has " + std::to_string(plan_.arena);
    if (st.lower_bound > peak)
      return "plan claims a lower bound of " + std::to_string(st.lower_bound) + " bytes above its own peak " + std::to_string(peak);
    if (st.impl_lower_bound > peak)
      return "plan claims a lower bound of " + std::to_string(st.impl_lower_bound) +
             " bytes for its implementations above its own peak " + std::to_string(peak);
    if (st.arena_lower_bound > plan_.arena)
      return "plan claims an arena lower bound of " + std::to_string(st.arena_lower_bound) + " bytes above its own arena " +
             std::to_string(plan_.arena);
    if (st.transfer_bytes != transfer_)
      return "plan claims " + std::to_string(st.transfer_bytes) + " transfer bytes, the steps move " + std::to_string(transfer_);
    if (st.recompute_cost != recompute_cost_)
      return "plan claims a recompute cost of " + std::to_string(st.recompute_cost) + ", the steps give " + std::to_string(recompute_cost_);
    return std::nullopt;
  }

  // ---- timed plans: the no-wait schedule of compute and copy engines ----
  std::optional<std::string> check_timing() const {
    if (!plan_.timed) return std::nullopt;
    double spc = 1.0;
    try {
      spc = seconds_per_cost(p_, plan_.timing);
    } catch (const error& e) {
      return std::string("timed plan: ") + e.what();
    }
    std::vector<double> ready(ns_, 0.0);  // when the value on the device of each storage is complete
    std::vector<std::pair<double, std::size_t>> copies;  // (begin, step) on the copy engine
    std::vector<std::pair<double, std::int64_t>> host;   // host memory events
    double prev_op_end = 0.0, released = 0.0, makespan = 0.0;
    auto secs = [](double x) {
      char b[40];
      std::snprintf(b, sizeof b, "%.9g s", x);
      return std::string(b);
    };
    for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
      const auto& st = plan_.steps[i];
      if (!(st.begin >= 0.0) || !(st.end >= st.begin)) return at_step(i) + "its times [" + secs(st.begin) + ", " + secs(st.end) + "] are not an interval";
      makespan = std::max(makespan, st.end);
      if (runs_op(st.kind)) {
        const double dur = step_cost(p_, st) * spc;
        if (!same_time(st.end, st.begin + dur)) return at_step(i) + "lasts " + secs(st.end - st.begin) + ", its cost gives " + secs(dur);
        if (!time_le(prev_op_end, st.begin)) return at_step(i) + "starts at " + secs(st.begin) + " before the op before it ends (" + secs(prev_op_end) + ")";
        if (!time_le(released, st.begin))
          return at_step(i) + "starts at " + secs(st.begin) + " before an offload listed before it completes (" + secs(released) + "): its memory is still in use";
        for (auto s : p_.touched(st.id))
          if (!time_le(ready[static_cast<std::size_t>(s)], st.begin))
            return at_step(i) + "uses tensor '" + p_.tensor_name(p_.storage_root(s)) + "' at " + secs(st.begin) + ", in flight until " +
                   secs(ready[static_cast<std::size_t>(s)]);
        for (auto t : p_.outputs(st.id)) ready[static_cast<std::size_t>(p_.storage_of(t))] = st.end;
        prev_op_end = st.end;
        continue;
      }
      if (st.kind == step_kind::free) continue;
      const auto s = p_.storage_of(st.id);
      const auto su = static_cast<std::size_t>(s);
      const auto bytes = p_.storage_bytes(s);
      double dur = 0.0;
      try {
        dur = transfer_seconds(bytes, plan_.timing);
      } catch (const error& e) {
        return at_step(i) + e.what();
      }
      if (!same_time(st.end, st.begin + dur)) return at_step(i) + "lasts " + secs(st.end - st.begin) + ", bytes / bandwidth gives " + secs(dur);
      copies.push_back({st.begin, i});
      if (st.kind == step_kind::offload) {
        if (!time_le(ready[su], st.begin))
          return at_step(i) + "copies the value at " + secs(st.begin) + " before it is complete (" + secs(ready[su]) + ")";
        released = std::max(released, st.end);
        host.push_back({st.begin, bytes});
      } else {
        if (!time_le(prev_op_end, st.begin))
          return at_step(i) + "starts at " + secs(st.begin) + " before the op before it ends (" + secs(prev_op_end) + "): its memory may be in use";
        if (!time_le(released, st.begin))
          return at_step(i) + "starts at " + secs(st.begin) + " before an offload listed before it completes (" + secs(released) + ")";
        ready[su] = st.end;
        host.push_back({st.end, -bytes});
      }
    }
    std::sort(copies.begin(), copies.end());
    for (std::size_t k = 1; k < copies.size(); ++k) {
      const auto& a = plan_.steps[copies[k - 1].second];
      const auto& b = plan_.steps[copies[k].second];
      if (!time_le(a.end, b.begin))
        return at_step(copies[k].second) + "overlaps the transfer of step " + std::to_string(copies[k - 1].second) + " on the copy engine";
    }
    if (!same_time(makespan, plan_.makespan))
      return "plan claims a makespan of " + secs(plan_.makespan) + ", its steps end at " + secs(makespan);
    std::sort(host.begin(), host.end());  // at one instant, releases (negative) before copies in
    std::int64_t held = 0, host_peak = 0;
    for (const auto& [t, b] : host) host_peak = std::max(host_peak, held += b);
    if (host_peak != plan_.host_peak)
      return "plan claims a host peak of " + std::to_string(plan_.host_peak) + " bytes, the transfers give " + std::to_string(host_peak);
    if (plan_.timing.host_limit >= 0 && host_peak > plan_.timing.host_limit)
      return "the offloaded values need " + std::to_string(host_peak) + " bytes of host memory, above its limit of " +
             std::to_string(plan_.timing.host_limit);
    return std::nullopt;
  }

  const problem& p_;
  const memory_plan& plan_;
  std::size_t ns_;
  std::vector<std::uint8_t> state_, claimed_;
  std::vector<std::int32_t> holds_, host_holds_, cur_, gone_at_, computed_at_;
  std::set<std::pair<std::int64_t, std::size_t>> ranges_;
  std::int64_t live_bytes_ = 0, peak_ = 0, transfer_ = 0;
  double recompute_cost_ = 0.0;
};

}  // namespace detail

inline verify_result verify(const problem& p, const memory_plan& plan) { return detail::referee(p, plan).run(); }

// Throws memplan::error(errc::invalid_plan) with the violation when the plan is not valid.
inline void verify_or_throw(const problem& p, const memory_plan& plan) {
  if (auto r = verify(p, plan); !r) throw error(errc::invalid_plan, "invalid plan: " + r.violation);
}

}  // namespace memplan
