#pragma once
// The host backend of replay slabs (runtime/replay.hpp). A slab is one large block that a replay touches
// all over, every run: with 4 KiB pages each planned tensor lives on other pages than the last one, and
// a step that writes its tensors pays a TLB miss per page. On Linux the slab is therefore mapped with
// mmap, 2 MiB aligned, and advised MADV_HUGEPAGE (transparent huge pages, when the kernel allows them:
// /sys/kernel/mm/transparent_hugepage/enabled = always or madvise), and its pages are faulted in once
// when it is made (MemoMalloc's prim::AllocateSlab, §3.3: the slab is the memory of the pass). Elsewhere
// it is host_backend's aligned allocation.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include <memplan/runtime/arena.hpp>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace memplan::runtime {

struct slab_host_backend : host_backend {
  bool huge_pages = true;  // Linux: advise transparent huge pages
  bool prefault = true;    // write every page once at allocation

  static constexpr const char* name() { return "host slab"; }
  static constexpr std::size_t huge_page = std::size_t{2} << 20;

  [[nodiscard]] std::byte* allocate(std::size_t bytes, std::size_t alignment) const {
    if (bytes == 0) bytes = alignment;
    std::byte* p = nullptr;
#if defined(__linux__)
    if (alignment > huge_page) return host_backend::allocate(bytes, alignment);
    // Over-map by one huge page, keep a 2 MiB aligned window, unmap the rest.
    const std::size_t len = round(bytes, 4096);
    const std::size_t over = len + huge_page;
    void* m = ::mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    auto* base = static_cast<std::byte*>(m);
    const auto addr = reinterpret_cast<std::uintptr_t>(base);
    const std::size_t lead = (huge_page - addr % huge_page) % huge_page;
    if (lead) ::munmap(base, lead);
    if (over - lead - len) ::munmap(base + lead + len, over - lead - len);
    p = base + lead;
    if (huge_pages) (void)::madvise(p, len, MADV_HUGEPAGE);
#else
    p = host_backend::allocate(bytes, alignment);
#endif
    if (prefault) std::memset(p, 0, bytes);
    return p;
  }
  void deallocate(std::byte* p, std::size_t bytes, std::size_t alignment) const noexcept {
#if defined(__linux__)
    if (alignment > huge_page) return host_backend::deallocate(p, bytes, alignment);
    ::munmap(p, round(bytes == 0 ? alignment : bytes, 4096));
#else
    host_backend::deallocate(p, bytes, alignment);
#endif
  }

 private:
  static std::size_t round(std::size_t x, std::size_t a) { return (x + a - 1) / a * a; }
};

static_assert(memory_backend<slab_host_backend>);

}  // namespace memplan::runtime
