#pragma once
// One arena over a memory backend. The host backend makes ONE aligned allocation; a debug mode
// poisons bytes the plan says are free (NaN fill), so that a wrong plan corrupts results instead of
// passing by luck.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>

namespace memplan::runtime {

// A float quiet NaN, as 4 bytes: poisoned memory read as float32 is NaN, and any arithmetic on it
// stays NaN, so reading memory the plan freed shows up in the results.
inline constexpr std::uint32_t poison_word = 0x7fc00bad;

// Host memory: one aligned allocation per arena; copies are memcpy.
struct host_backend {
  static constexpr const char* name() { return "host"; }
  [[nodiscard]] std::byte* allocate(std::size_t bytes, std::size_t alignment) const {
    if (bytes == 0) bytes = alignment;
    return static_cast<std::byte*>(::operator new(bytes, std::align_val_t(alignment)));
  }
  void deallocate(std::byte* p, std::size_t /*bytes*/, std::size_t alignment) const noexcept {
    ::operator delete(p, std::align_val_t(alignment));
  }
  void to_host(void* dst, const std::byte* src, std::size_t n) const { std::memcpy(dst, src, n); }
  void from_host(std::byte* dst, const void* src, std::size_t n) const { std::memcpy(dst, src, n); }
  // Fills n bytes with the poison pattern; `phase` is p's offset modulo 4 from the arena's start so
  // that every 4-byte slot of the arena holds the same NaN word, wherever a range begins.
  void poison(std::byte* p, std::size_t n, std::size_t phase) const {
    unsigned char w[4];
    std::memcpy(w, &poison_word, 4);
    std::size_t i = 0;
    for (; i < n && (i + phase) % 4 != 0; ++i) p[i] = std::byte{w[(i + phase) % 4]};
    for (; i + 4 <= n; i += 4) std::memcpy(p + i, w, 4);
    for (; i < n; ++i) p[i] = std::byte{w[(i + phase) % 4]};
  }
};

template <class Backend>
concept memory_backend = requires(const Backend& b, std::byte* p, const std::byte* cp, void* h, const void* ch, std::size_t n) {
  { b.allocate(n, n) } -> std::same_as<std::byte*>;
  b.deallocate(p, n, n);
  b.to_host(h, cp, n);
  b.from_host(p, ch, n);
  b.poison(p, n, n);
};

// Optional: a backend that allocates the host staging of offloaded values itself, e.g. page-locked
// memory, so that the copies are DMA transfers that can overlap kernels (cuda_backend). Without these
// members the executor stages in ordinary heap memory.
template <class Backend>
concept host_staging_backend = memory_backend<Backend> && requires(const Backend& b, std::byte* p, std::size_t n) {
  { b.allocate_host(n) } -> std::same_as<std::byte*>;
  b.deallocate_host(p, n);
};

namespace detail {
// One host staging buffer of n bytes, from the backend's host allocator when it has one.
template <memory_backend Backend>
class staging_block {
 public:
  staging_block() = default;
  staging_block(std::size_t n, const Backend& b) : b_(b), n_(n) {
    if constexpr (host_staging_backend<Backend>) p_ = b_.allocate_host(n);
    else p_ = static_cast<std::byte*>(::operator new(n == 0 ? 1 : n));
  }
  staging_block(staging_block&& o) noexcept : b_(o.b_), p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  staging_block& operator=(staging_block&& o) noexcept {
    if (this != &o) {
      release();
      b_ = o.b_;
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  staging_block(const staging_block&) = delete;
  staging_block& operator=(const staging_block&) = delete;
  ~staging_block() { release(); }
  [[nodiscard]] std::byte* data() const noexcept { return p_; }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }

 private:
  void release() noexcept {
    if (!p_) return;
    if constexpr (host_staging_backend<Backend>) b_.deallocate_host(p_, n_);
    else ::operator delete(p_);
    p_ = nullptr;
  }
  Backend b_{};
  std::byte* p_ = nullptr;
  std::size_t n_ = 0;
};
}  // namespace detail

template <memory_backend Backend = host_backend>
class arena {
 public:
  explicit arena(std::int64_t bytes, std::int64_t alignment = 64, Backend backend = {}) : backend_(backend) {
    if (bytes < 0) throw error(errc::invalid_argument, "arena: negative size " + std::to_string(bytes));
    if (alignment <= 0 || (alignment & (alignment - 1)) != 0)
      throw error(errc::invalid_argument, "arena: alignment " + std::to_string(alignment) + " is not a power of two");
    size_ = bytes;
    alignment_ = static_cast<std::size_t>(alignment < 64 ? 64 : alignment);
    try {
      data_ = backend_.allocate(static_cast<std::size_t>(bytes), alignment_);
    } catch (const std::bad_alloc&) {
      throw error(errc::runtime_error, "arena: cannot allocate " + std::to_string(bytes) + " bytes on " + Backend::name());
    }
  }
  arena(const arena&) = delete;
  arena& operator=(const arena&) = delete;
  arena(arena&& o) noexcept : backend_(o.backend_), data_(o.data_), size_(o.size_), alignment_(o.alignment_) { o.data_ = nullptr; }
  arena& operator=(arena&&) = delete;
  ~arena() {
    if (data_) backend_.deallocate(data_, static_cast<std::size_t>(size_), alignment_);
  }

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::int64_t size() const noexcept { return size_; }
  [[nodiscard]] const Backend& backend() const noexcept { return backend_; }

  // Pointer to [offset, offset + bytes): bounds-checked, never silently outside the arena.
  [[nodiscard]] std::byte* at(std::int64_t offset, std::int64_t bytes) const {
    if (offset < 0 || bytes < 0 || offset > size_ - bytes)
      throw error(errc::runtime_error, "arena: range [" + std::to_string(offset) + ", " + std::to_string(offset + bytes) +
                                           ") is outside the arena of " + std::to_string(size_) + " bytes");
    return data_ + offset;
  }
  void poison(std::int64_t offset, std::int64_t bytes) const {
    backend_.poison(at(offset, bytes), static_cast<std::size_t>(bytes), static_cast<std::size_t>(offset % 4));
  }
  void poison_all() const { backend_.poison(data_, static_cast<std::size_t>(size_), 0); }

 private:
  Backend backend_;
  std::byte* data_ = nullptr;
  std::int64_t size_ = 0;
  std::size_t alignment_ = 64;
};

}  // namespace memplan::runtime
