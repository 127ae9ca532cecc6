// memplan_bench_allocator -- memplan's replaying resource (MemoMalloc, runtime/replay.hpp) against general
// purpose allocators on the allocation traces of real training and inference graphs.
//
//   memplan_bench_allocator [--graph FILE]... [--threads 1,2] [--iterations N] [--repeats R]
//                           [--no-touch] [--no-symbolic] [--min-pairs P] [--report-json OUT]
//
// Workload. Each graph (a memplan JSON export, data/models/) is run in its given order the way an eager
// framework allocates: one allocation per storage when its producer runs (and one per op workspace),
// freed after its last use (runtime/plan_replay.hpp: allocations_of); outputs are freed at the end of
// the step. Weights, inputs and optimizer state are resident and not part of the trace. Every request
// is 64-byte aligned (what tensors need) for every allocator.
//
// Allocators, side by side in one process (the same threads, the same trace):
//   memplan            replaying_resource: the trace placed once by place::default_placer (0.8 s at most;
//                      MemoMalloc §3.2 uses greedy_by_size, within a few % of it here),
//                      one slab per thread (runtime/slab_backend.hpp: 2 MiB aligned, transparent huge
//                      pages advised, pre-faulted), allocation i at slab + offset[i]
//   memplan_4k_pages   the same on host_backend's plain aligned allocation (4 KiB pages)
//   harness_floor      not an allocator: the plan's pointers in trace order, no checks, no bookkeeping --
//                      the cost of the harness itself (virtual call, trace walk), for reading ns/pair
//   glibc              aligned_alloc / free
//   jemalloc, tcmalloc, mimalloc   dlopen'ed when installed (Debian: libjemalloc2, libtcmalloc-minimal4,
//                      libmimalloc2.0), skipped with a message otherwise: mallocx/sdallocx,
//                      tc_memalign/tc_free, mi_malloc_aligned/mi_free
//   pmr_pool           std::pmr::synchronized_pool_resource shared by the threads (over new/delete)
//   pmr_unsync_pool    std::pmr::unsynchronized_pool_resource, one per thread
//   caching_allocator  PyTorch's CUDA caching allocator *model* (place::online): reserved bytes only,
//                      no timing (it is a simulator, not an allocator)
//
// Measures, per (graph, allocator, threads): ns_per_pair -- wall time of the allocate + free calls alone
// (max(N, enough steps for --min-pairs pairs, default 100000) steps) divided by the allocations each thread made (threads run concurrently: it is the time per pair as
// one thread sees it); step_seconds -- one replayed step with every page of every allocation written
// once after it is allocated, as a kernel writing its output would (page faults of fresh mappings
// included); reserved_bytes -- what the allocator holds from the system after the run where it can be
// told (memplan: slabs; pools: peak bytes taken from upstream; caching model: its segments), null elsewhere.
// Each measure is the median of R repeats, allocators interleaved within a repeat. Ratios are printed
// against glibc measured in the same process. This machine has 2 cores; run --threads 1,2,4,8 on a larger one.
//
// After the table: batch-size-symbolic plans (runtime/symbolic.hpp) for every graph whose export exists
// at batch 1 and batch 32 (X-b1 / X-b32): one plan over batches [1, 32] against a plan per batch.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <memory_resource>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <unistd.h>

#include <memplan/core/pipeline.hpp>
#include <memplan/io/gzip.hpp>
#include <memplan/io/json.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/place/online/caching_allocator.hpp>
#include <memplan/runtime/plan_replay.hpp>
#include <memplan/runtime/replay.hpp>
#include <memplan/runtime/slab_backend.hpp>
#include <memplan/runtime/symbolic.hpp>
#include <memplan/schedule/given.hpp>

namespace {
using namespace memplan;
using clock_type = std::chrono::steady_clock;
constexpr std::size_t align64 = 64;
constexpr std::size_t page = 4096;

// ---- the workload -----------------------------------------------------------------------------------

struct event {
  bool alloc;
  std::int32_t id;
  std::size_t bytes;
};
struct workload {
  std::string name;
  runtime::allocation_trace trace;
  std::vector<event> events;  // trace order; escaping allocations freed at the end
  std::int64_t allocations = 0;
  std::int64_t live_peak = 0;
};

workload make_workload(const std::string& path) {
  const auto prob = io::read_graph(path);
  const auto plan = memplan::plan(prob, schedule::given{} | place::greedy_by_size{}, {.alignment = 64});
  workload w;
  w.name = std::filesystem::path(path).filename().string();
  for (const auto* ext : {".gz", ".json"})
    if (w.name.size() > std::strlen(ext) && w.name.ends_with(ext)) w.name.resize(w.name.size() - std::strlen(ext));
  w.trace = runtime::allocations_of(prob, plan).trace;
  for (auto& a : w.trace.allocations) a.alignment = align64;
  std::vector<std::pair<std::int64_t, event>> ev;
  for (std::size_t i = 0; i < w.trace.allocations.size(); ++i) {
    const auto& a = w.trace.allocations[i];
    ev.push_back({a.begin, {true, static_cast<std::int32_t>(i), static_cast<std::size_t>(a.size)}});
    ev.push_back({a.freed() ? a.end : w.trace.events + static_cast<std::int64_t>(i), {false, static_cast<std::int32_t>(i), static_cast<std::size_t>(a.size)}});
  }
  std::sort(ev.begin(), ev.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [t, e] : ev) w.events.push_back(e);
  w.allocations = static_cast<std::int64_t>(w.trace.allocations.size());
  w.live_peak = runtime::live_peak(w.trace);
  return w;
}

// ---- allocators -----------------------------------------------------------------------------------------

// One per thread (a shared allocator hands every thread the same object).
struct thread_allocator {
  virtual ~thread_allocator() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p, std::size_t bytes) = 0;
  virtual void begin_step() {}
};

struct allocator_kind {
  std::string name;
  // Makes the allocators of `threads` threads for one workload (shared state, if any, lives in the closure).
  std::function<std::vector<std::shared_ptr<thread_allocator>>(const workload&, int threads)> make;
  std::function<std::optional<std::int64_t>(const std::vector<std::shared_ptr<thread_allocator>>&)> reserved;
};

struct glibc_alloc final : thread_allocator {
  void* allocate(std::size_t bytes) override { return std::aligned_alloc(align64, (bytes + align64 - 1) / align64 * align64 + (bytes == 0) * align64); }
  void deallocate(void* p, std::size_t) override { std::free(p); }
};

// A C allocator loaded with dlopen: allocate(bytes, alignment) / free(p, bytes).
struct c_api {
  void* (*alloc)(std::size_t bytes) = nullptr;
  void (*free)(void* p, std::size_t bytes) = nullptr;
};
struct c_alloc final : thread_allocator {
  explicit c_alloc(c_api a) : api(a) {}
  void* allocate(std::size_t bytes) override { return api.alloc(bytes); }
  void deallocate(void* p, std::size_t bytes) override { api.free(p, bytes); }
  c_api api;
};
void* dl_sym(void* h, const char* name) { return h ? dlsym(h, name) : nullptr; }
void* dl_open(const char* name) { return dlopen(name, RTLD_NOW | RTLD_LOCAL); }

// jemalloc: mallocx(size, MALLOCX_ALIGN(64)) = flags lg2(64) = 6; sdallocx(p, size, flags).
void* (*je_mallocx)(std::size_t, int) = nullptr;
void (*je_sdallocx)(void*, std::size_t, int) = nullptr;
// tcmalloc: tc_memalign(alignment, size), tc_free(p).
void* (*tc_memalign)(std::size_t, std::size_t) = nullptr;
void (*tc_free)(void*) = nullptr;
// mimalloc: mi_malloc_aligned(size, alignment), mi_free(p).
void* (*mi_malloc_aligned)(std::size_t, std::size_t) = nullptr;
void (*mi_free)(void*) = nullptr;

std::optional<c_api> load_jemalloc() {
  void* h = dl_open("libjemalloc.so.2");
  je_mallocx = reinterpret_cast<decltype(je_mallocx)>(dl_sym(h, "mallocx"));
  je_sdallocx = reinterpret_cast<decltype(je_sdallocx)>(dl_sym(h, "sdallocx"));
  if (!je_mallocx || !je_sdallocx) return std::nullopt;
  return c_api{[](std::size_t n) { return je_mallocx(n ? n : 1, 6); }, [](void* p, std::size_t n) { je_sdallocx(p, n ? n : 1, 6); }};
}
std::optional<c_api> load_tcmalloc() {
  void* h = dl_open("libtcmalloc_minimal.so.4");
  if (!h) h = dl_open("libtcmalloc.so.4");
  tc_memalign = reinterpret_cast<decltype(tc_memalign)>(dl_sym(h, "tc_memalign"));
  tc_free = reinterpret_cast<decltype(tc_free)>(dl_sym(h, "tc_free"));
  if (!tc_memalign || !tc_free) return std::nullopt;
  return c_api{[](std::size_t n) { return tc_memalign(align64, n); }, [](void* p, std::size_t) { tc_free(p); }};
}
std::optional<c_api> load_mimalloc() {
  void* h = dl_open("libmimalloc.so.2");
  mi_malloc_aligned = reinterpret_cast<decltype(mi_malloc_aligned)>(dl_sym(h, "mi_malloc_aligned"));
  mi_free = reinterpret_cast<decltype(mi_free)>(dl_sym(h, "mi_free"));
  if (!mi_malloc_aligned || !mi_free) return std::nullopt;
  return c_api{[](std::size_t n) { return mi_malloc_aligned(n, align64); }, [](void* p, std::size_t) { mi_free(p); }};
}

// Counts the bytes a pool holds from its upstream (new/delete), and their peak.
class counting_resource final : public std::pmr::memory_resource {
 public:
  std::atomic<std::int64_t> held{0}, peak{0};

 private:
  void* do_allocate(std::size_t n, std::size_t a) override {
    const auto now = held += static_cast<std::int64_t>(n);
    for (auto p = peak.load(); now > p && !peak.compare_exchange_weak(p, now);) {
    }
    return std::pmr::new_delete_resource()->allocate(n, a);
  }
  void do_deallocate(void* p, std::size_t n, std::size_t a) override {
    held -= static_cast<std::int64_t>(n);
    std::pmr::new_delete_resource()->deallocate(p, n, a);
  }
  [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
};

template <class Pool>
struct pmr_alloc final : thread_allocator {
  pmr_alloc(std::shared_ptr<counting_resource> up, std::shared_ptr<Pool> pool) : upstream(std::move(up)), pool(std::move(pool)) {}
  void* allocate(std::size_t bytes) override { return pool->allocate(bytes, align64); }
  void deallocate(void* p, std::size_t bytes) override { pool->deallocate(p, bytes, align64); }
  std::shared_ptr<counting_resource> upstream;
  std::shared_ptr<Pool> pool;
};

template <class Backend>
struct memplan_alloc final : thread_allocator {
  memplan_alloc(std::shared_ptr<const runtime::replay_plan> plan, Backend b) : mem(std::move(plan), std::pmr::new_delete_resource(), {}, b) {}
  void* allocate(std::size_t bytes) override { return mem.allocate(bytes, align64); }
  void deallocate(void* p, std::size_t bytes) override { mem.deallocate(p, bytes, align64); }
  void begin_step() override { mem.begin_run(); }
  runtime::replaying_resource<Backend> mem;
};

struct floor_alloc final : thread_allocator {
  explicit floor_alloc(std::shared_ptr<const runtime::replay_plan> p) : plan(std::move(p)), slab(plan->arena, 64) {
    for (const auto& e : plan->entries) ptr.push_back(e.planned() ? slab.data() + e.offset : nullptr);
  }
  void* allocate(std::size_t bytes) override {
    void* p = ptr[next++];
    return p ? p : ::operator new(bytes ? bytes : 1, std::align_val_t(align64));
  }
  void deallocate(void* p, std::size_t) override {
    const auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(slab.data());
    if (a < b || a - b >= static_cast<std::uintptr_t>(slab.size())) ::operator delete(p, std::align_val_t(align64));
  }
  void begin_step() override { next = 0; }
  std::shared_ptr<const runtime::replay_plan> plan;
  runtime::arena<runtime::slab_host_backend> slab;
  std::vector<std::byte*> ptr;
  std::size_t next = 0;
};

std::vector<allocator_kind> allocator_kinds() {
  std::vector<allocator_kind> k;
  auto memplan_kind = [](std::string name, auto backend) {
    using B = decltype(backend);
    return allocator_kind{std::move(name),
                          [backend](const workload& w, int threads) {
                            auto plan = std::make_shared<const runtime::replay_plan>(runtime::plan_trace(w.trace, place::default_placer{}));
                            std::vector<std::shared_ptr<thread_allocator>> v;
                            for (int t = 0; t < threads; ++t) v.push_back(std::make_shared<memplan_alloc<B>>(plan, backend));
                            return v;
                          },
                          [](const std::vector<std::shared_ptr<thread_allocator>>& v) -> std::optional<std::int64_t> {
                            std::int64_t r = 0;
                            for (const auto& a : v) {
                              const auto& m = static_cast<const memplan_alloc<B>&>(*a).mem;
                              if (m.stats().misses > 0)
                                std::fprintf(stderr, "memplan: %lld misses (%s)\n", static_cast<long long>(m.stats().misses), m.stats().reason.c_str());
                              r += m.reserved_bytes();
                            }
                            return r;
                          }};
  };
  k.push_back(memplan_kind("memplan", runtime::slab_host_backend{}));
  // The harness's own cost: the plan's pointers handed out in trace order with no check and no
  // bookkeeping at all (not an allocator: valid only because the trace repeats exactly).
  k.push_back({"harness_floor",
               [](const workload& w, int threads) {
                 auto plan = std::make_shared<const runtime::replay_plan>(runtime::plan_trace(w.trace, place::default_placer{}));
                 std::vector<std::shared_ptr<thread_allocator>> v;
                 for (int t = 0; t < threads; ++t) v.push_back(std::make_shared<floor_alloc>(plan));
                 return v;
               },
               [](const auto&) -> std::optional<std::int64_t> { return std::nullopt; }});
  k.push_back(memplan_kind("memplan_4k_pages", runtime::host_backend{}));
  auto simple = [](std::string name, std::function<std::shared_ptr<thread_allocator>()> one) {
    return allocator_kind{std::move(name),
                          [one](const workload&, int threads) {
                            std::vector<std::shared_ptr<thread_allocator>> v;
                            for (int t = 0; t < threads; ++t) v.push_back(one());
                            return v;
                          },
                          [](const auto&) -> std::optional<std::int64_t> { return std::nullopt; }};
  };
  k.push_back(simple("glibc", [] { return std::make_shared<glibc_alloc>(); }));
  const std::pair<const char*, std::optional<c_api> (*)()> loaders[] = {
      {"jemalloc", load_jemalloc}, {"tcmalloc", load_tcmalloc}, {"mimalloc", load_mimalloc}};
  for (const auto& [name, load] : loaders) {
    if (auto api = load()) k.push_back(simple(name, [a = *api] { return std::make_shared<c_alloc>(a); }));
    else std::printf("(%s not found: skipped; Debian package in tools/bootstrap.sh)\n", name);
  }
  auto pmr_reserved = [](const std::vector<std::shared_ptr<thread_allocator>>& v) -> std::optional<std::int64_t> {
    std::int64_t r = 0;
    std::vector<const counting_resource*> seen;
    for (const auto& a : v) {
      const counting_resource* up = nullptr;
      if (auto* s = dynamic_cast<const pmr_alloc<std::pmr::synchronized_pool_resource>*>(a.get())) up = s->upstream.get();
      if (auto* u = dynamic_cast<const pmr_alloc<std::pmr::unsynchronized_pool_resource>*>(a.get())) up = u->upstream.get();
      if (up && std::find(seen.begin(), seen.end(), up) == seen.end()) {
        seen.push_back(up);
        r += up->peak.load();
      }
    }
    return r;
  };
  k.push_back({"pmr_pool",
               [](const workload&, int threads) {
                 auto up = std::make_shared<counting_resource>();
                 auto pool = std::make_shared<std::pmr::synchronized_pool_resource>(up.get());
                 std::vector<std::shared_ptr<thread_allocator>> v;
                 for (int t = 0; t < threads; ++t) v.push_back(std::make_shared<pmr_alloc<std::pmr::synchronized_pool_resource>>(up, pool));
                 return v;
               },
               pmr_reserved});
  k.push_back({"pmr_unsync_pool",
               [](const workload&, int threads) {
                 std::vector<std::shared_ptr<thread_allocator>> v;
                 for (int t = 0; t < threads; ++t) {
                   auto up = std::make_shared<counting_resource>();
                   auto pool = std::make_shared<std::pmr::unsynchronized_pool_resource>(up.get());
                   v.push_back(std::make_shared<pmr_alloc<std::pmr::unsynchronized_pool_resource>>(up, pool));
                 }
                 return v;
               },
               pmr_reserved});
  return k;
}

// ---- running --------------------------------------------------------------------------------------------

// One replayed step on one thread; with `touch`, one byte of every page of each allocation is written.
void run_step(const workload& w, thread_allocator& a, std::vector<void*>& ptr, bool touch) {
  a.begin_step();
  for (const auto& e : w.events) {
    if (e.alloc) {
      auto* p = static_cast<unsigned char*>(a.allocate(e.bytes));
      if (touch)
        for (std::size_t off = 0; off < e.bytes; off += page) p[off] = static_cast<unsigned char>(off);
      ptr[static_cast<std::size_t>(e.id)] = p;
    } else {
      a.deallocate(ptr[static_cast<std::size_t>(e.id)], e.bytes);
    }
  }
}

// Runs `iterations` steps on every thread at once; returns the wall seconds (slowest thread).
double run_threads(const workload& w, std::vector<std::shared_ptr<thread_allocator>>& as, int iterations, bool touch) {
  const auto n = as.size();
  std::vector<double> secs(n, 0.0);
  std::barrier sync(static_cast<std::ptrdiff_t>(n));
  std::vector<std::thread> th;
  for (std::size_t t = 0; t < n; ++t)
    th.emplace_back([&, t] {
      std::vector<void*> ptr(w.trace.allocations.size(), nullptr);
      run_step(w, *as[t], ptr, touch);  // warm-up: first faults, pools filled
      sync.arrive_and_wait();
      const auto t0 = clock_type::now();
      for (int i = 0; i < iterations; ++i) run_step(w, *as[t], ptr, touch);
      secs[t] = std::chrono::duration<double>(clock_type::now() - t0).count();
    });
  for (auto& x : th) x.join();
  return *std::max_element(secs.begin(), secs.end());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct result {
  std::string graph, allocator;
  int threads = 1;
  double ns_per_pair = NAN, step_seconds = NAN;
  std::optional<std::int64_t> reserved;
};

std::string json_number(double x) {
  if (std::isnan(x)) return "null";
  std::ostringstream s;
  s.precision(9);
  s << x;
  return s.str();
}

// ---- symbolic plans --------------------------------------------------------------------------------------

void symbolic_report(const std::vector<std::string>& graphs) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& g : graphs) {
    const auto pos = g.find("-b1.");
    if (pos == std::string::npos) continue;
    auto other = g.substr(0, pos) + "-b32." + g.substr(pos + 4);
    if (std::filesystem::exists(other)) pairs.push_back({g, other});
  }
  if (pairs.empty()) return;
  std::printf("\n## Batch-size-symbolic plans: one plan over batches [1, 32] vs a greedy_by_size plan per batch\n\n");
  std::printf("%-28s %6s %6s %14s %14s %8s\n", "graph", "exact", "rounded", "batch", "symbolic", "per-batch");
  for (const auto& [g1, g32] : pairs) {
    const auto w1 = make_workload(g1), w32 = make_workload(g32);
    std::string name = w1.name.substr(0, w1.name.rfind("-b1"));
    try {
      const auto st = runtime::fit_traces(w1.trace, 1, w32.trace, 32, {1, 32});
      std::int64_t exact = 0, rounded = 0;
      for (std::size_t i = 0; i < st.sizes.size(); ++i) {
        const bool ok = st.sizes[i].at(1) == w1.trace.allocations[i].size && st.sizes[i].at(32) == w32.trace.allocations[i].size;
        (ok ? exact : rounded) += 1;
      }
      const auto sr = runtime::plan_symbolic(st, place::greedy_by_size{});
      if (auto bad = runtime::prove(sr.problem, sr.placement)) std::printf("%s: NOT PROVED: %s\n", name.c_str(), bad->c_str());
      for (std::int64_t b : {1, 2, 4, 8, 16, 32}) {
        if (auto bad = runtime::check_at(sr.problem, sr.placement, b)) std::printf("%s: referee: %s\n", name.c_str(), bad->c_str());
        const auto sym = runtime::arena_at(sr.problem, sr.placement, b);
        const auto per = place::greedy_by_size{}.place(runtime::instantiate(sr.problem, b)).arena;
        std::printf("%-28s %6lld %7lld %13lld %14lld %14lld  x%.3f\n", name.c_str(), static_cast<long long>(exact), static_cast<long long>(rounded),
                    static_cast<long long>(b), static_cast<long long>(sym), static_cast<long long>(per), per > 0 ? static_cast<double>(sym) / static_cast<double>(per) : 1.0);
      }
    } catch (const memplan::error& e) {
      std::printf("%-28s skipped: %s\n", name.c_str(), e.what());
    }
  }
}

}  // namespace

// jemalloc is built with initial-exec TLS: dlopen'ing it fails ("cannot allocate memory in static TLS
// block") unless glibc reserves more static TLS for late loads. The bench re-executes itself once with
// GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536 when that is not set yet.
void reexec_with_static_tls(char** argv) {
  const char* t = std::getenv("GLIBC_TUNABLES");
  if (t && std::strstr(t, "optional_static_tls")) return;
  std::string v = std::string(t ? t : "") + (t && *t ? ":" : "") + "glibc.rtld.optional_static_tls=65536";
  setenv("GLIBC_TUNABLES", v.c_str(), 1);
  execv("/proc/self/exe", argv);  // returns only on failure: then run without jemalloc
}

int main(int argc, char** argv) {
  reexec_with_static_tls(argv);
  std::vector<std::string> graphs;
  std::vector<int> threads{1, 2};
  int iterations = 20, repeats = 3;
  std::int64_t min_pairs = 100000;
  bool touch = true, symbolic = true;
  std::string report;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--graph") graphs.push_back(value());
    else if (a == "--threads") {
      threads.clear();
      std::stringstream ss(value());
      for (std::string x; std::getline(ss, x, ',');) threads.push_back(std::max(1, std::atoi(x.c_str())));
    } else if (a == "--iterations") iterations = std::max(1, std::atoi(value().c_str()));
    else if (a == "--repeats") repeats = std::max(1, std::atoi(value().c_str()));
    else if (a == "--min-pairs") min_pairs = std::max(0LL, std::atoll(value().c_str()));
    else if (a == "--report-json") report = value();
    else if (a == "--no-touch") touch = false;
    else if (a == "--no-symbolic") symbolic = false;
    else {
      std::fprintf(stderr,
                   "usage: memplan_bench_allocator [--graph FILE]... [--threads 1,2] [--iterations N] [--repeats R] [--no-touch] "
                   "[--no-symbolic] [--min-pairs N] [--report-json OUT]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  if (graphs.empty())
    for (const auto* g : {"resnet18-train-b1", "mobilenet_v2-train-b1", "transformer-infer-b1", "resnet18-infer-b32"})
      graphs.push_back(std::string(MEMPLAN_SOURCE_DIR) + "/data/models/" + g + ".json.gz");

  const auto kinds = allocator_kinds();
  std::vector<result> results;
  std::printf("\n## Allocators on replayed training / inference allocation traces (%d iterations, median of %d)\n\n", iterations, repeats);
  std::printf("%-24s %-18s %3s %12s %9s %14s %9s %14s\n", "graph", "allocator", "thr", "ns/pair", "vs glibc", "step ms", "vs glibc", "reserved B");
  for (const auto& path : graphs) {
    const auto w = make_workload(path);
    std::printf("# %s: %lld allocations per step, live peak %lld B\n", w.name.c_str(), static_cast<long long>(w.allocations), static_cast<long long>(w.live_peak));
    for (const int nt : threads) {
      std::vector<std::vector<double>> pair_ns(kinds.size()), step_s(kinds.size());
      std::vector<std::optional<std::int64_t>> reserved(kinds.size());
      for (int r = 0; r < repeats; ++r)
        for (std::size_t k = 0; k < kinds.size(); ++k) {
          auto as = kinds[k].make(w, nt);
          // Enough steps for at least min_pairs allocate + free pairs: a small trace's step is microseconds.
          const auto pair_iterations = static_cast<int>(std::max<std::int64_t>(iterations, (min_pairs + w.allocations - 1) / std::max<std::int64_t>(1, w.allocations)));
          pair_ns[k].push_back(run_threads(w, as, pair_iterations, false) * 1e9 / static_cast<double>(pair_iterations * w.allocations));
          if (touch) step_s[k].push_back(run_threads(w, as, std::max(1, iterations / 4), true) / std::max(1, iterations / 4));
          reserved[k] = kinds[k].reserved(as);
        }
      std::size_t glibc = 0;
      for (std::size_t k = 0; k < kinds.size(); ++k)
        if (kinds[k].name == "glibc") glibc = k;
      const double base_ns = median(pair_ns[glibc]), base_step = median(step_s[glibc]);
      for (std::size_t k = 0; k < kinds.size(); ++k) {
        result res{w.name, kinds[k].name, nt, median(pair_ns[k]), median(step_s[k]), reserved[k]};
        results.push_back(res);
        std::printf("%-24s %-18s %3d %12.1f %9.3f %14.3f %9.3f %14s\n", w.name.c_str(), kinds[k].name.c_str(), nt, res.ns_per_pair, res.ns_per_pair / base_ns,
                    res.step_seconds * 1e3, res.step_seconds / base_step, res.reserved ? std::to_string(*res.reserved).c_str() : "-");
      }
      // The caching allocator model: reserved bytes of one thread's step (times the threads).
      const auto bp = runtime::to_buffer_problem(w.trace, 64).problem;
      const auto sim = place::online::caching_allocator{}.simulate(bp);
      results.push_back({w.name, "caching_allocator", nt, NAN, NAN, sim.reserved * nt});
      std::printf("%-24s %-18s %3d %12s %9s %14s %9s %14lld\n", w.name.c_str(), "caching_allocator", nt, "-", "-", "-", "-", static_cast<long long>(sim.reserved * nt));
      // memplan against the best general-purpose allocator.
      double best_ns = INFINITY, best_step = INFINITY;
      std::string best_name;
      for (std::size_t k = 0; k < kinds.size(); ++k)
        if (kinds[k].name == "glibc" || kinds[k].name == "jemalloc" || kinds[k].name == "mimalloc" || kinds[k].name == "tcmalloc") {
          if (median(pair_ns[k]) < best_ns) {
            best_ns = median(pair_ns[k]);
            best_name = kinds[k].name;
          }
          best_step = std::min(best_step, median(step_s[k]));
        }
      std::printf("  memplan: %.2fx faster per pair than the best general allocator (%s), step %.3fx of the best\n", best_ns / median(pair_ns[0]),
                  best_name.c_str(), median(step_s[0]) / best_step);
    }
  }
  if (!report.empty()) {
    std::ofstream out(report);
    out << "{\"results\": [";
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      out << (i ? ",\n  " : "\n  ") << "{\"graph\": \"" << r.graph << "\", \"allocator\": \"" << r.allocator << "\", \"threads\": " << r.threads
          << ", \"ns_per_pair\": " << json_number(r.ns_per_pair) << ", \"step_seconds\": " << json_number(r.step_seconds)
          << ", \"reserved_bytes\": " << (r.reserved ? std::to_string(*r.reserved) : "null") << "}";
    }
    out << "\n]}\n";
    std::printf("\nwrote %s\n", report.c_str());
  }
  if (symbolic) {
    std::vector<std::string> all = graphs;
    symbolic_report(all);
  }
  return 0;
}
