#pragma once
// Per-op and per-storage facts every memory-aware scheduler needs, read once from a problem
// (graph-format.md memory rule: a storage is live from the step of its allocating op to its last
// user; resident storages always; live_to_end storages to the end; preexisting non-resident
// storages from step 0 to their last user).
#include <cstdint>
#include <vector>

#include <memplan/core/problem.hpp>

namespace memplan::schedule::detail {

struct memory_facts {
  std::vector<std::int64_t> alloc;     // per op: bytes of the (non-empty) storages it allocates
  std::vector<std::uint8_t> freeable;  // per storage: non-empty, not resident, not live to the end
  std::int64_t initial_live = 0;       // live before the first op: resident + preexisting storages with users
  std::int64_t step0_only = 0;         // preexisting, non-resident storages nobody uses: live at step 0 only

  explicit memory_facts(const problem& p)
      : alloc(static_cast<std::size_t>(p.num_ops()), 0), freeable(static_cast<std::size_t>(p.num_storages()), 0) {
    for (storage_id s = 0; s < p.num_storages(); ++s) {
      const auto b = p.storage_bytes(s);
      if (b == 0) continue;
      if (p.resident(s)) { initial_live += b; continue; }
      if (p.preexisting(s)) {
        if (p.live_at_start_only(s)) step0_only += b;
        else initial_live += b;
      } else {
        alloc[static_cast<std::size_t>(p.storage_allocator(s))] += b;
      }
      freeable[static_cast<std::size_t>(s)] = p.live_to_end(s) ? 0 : 1;
    }
  }
};

}  // namespace memplan::schedule::detail
