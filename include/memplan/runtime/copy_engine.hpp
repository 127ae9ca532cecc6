#pragma once
// The copy engine of the offloading model (core/timing.hpp, Beaumont et al. §3): ONE thread that runs
// copies in the order they are submitted, in parallel with the thread that computes. The executor
// submits offload / prefetch copies to it and waits only where the plan needs a copy to be done (a
// value about to be read, bytes about to be reused).
//
// Jobs run first in, first out; submit() returns a ticket, and job t is done once completed() >= t.
// An exception thrown by a job is kept and rethrown by the next wait() (the jobs after it are skipped:
// their data would depend on it). The thread starts at the first submit, so an executor whose plan
// moves nothing never starts one. std only.
//
// Both sides poll for a short while (`spin`, 200 us) before they block on a condition
// variable: many copies of a training step last microseconds, less than a thread's wake-up from a
// futex, which would otherwise be paid twice per copy (the copy thread woken to start it, the
// computing thread woken when it completes).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace memplan::runtime {

class copy_engine {
 public:
  using ticket = std::uint64_t;

  copy_engine() = default;
  copy_engine(const copy_engine&) = delete;
  copy_engine& operator=(const copy_engine&) = delete;
  // Finishes the job running, drops the rest (their buffers may be going away) and joins.
  ~copy_engine() {
    stopping_.store(true);
    {
      std::lock_guard lk(m_);
      stop_ = true;
      completed_.fetch_add(queue_.size());
      queue_.clear();
      pending_.store(0);
    }
    work_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // Queues a copy; returns its ticket (1, 2, ...).
  ticket submit(std::function<void()> job) {
    std::lock_guard lk(m_);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    queue_.push_back(std::move(job));
    pending_.fetch_add(1);
    const auto t = ++submitted_;
    work_.notify_one();
    return t;
  }

  [[nodiscard]] ticket completed() const noexcept { return completed_.load(std::memory_order_acquire); }
  [[nodiscard]] ticket submitted() const {
    std::lock_guard lk(m_);
    return submitted_;
  }

  // Blocks until job t (and so every job before it) has run; rethrows what a job threw.
  void wait(ticket t) {
    const auto until = std::chrono::steady_clock::now() + spin;
    while (completed() < t && !failed_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until) {
    }
    std::unique_lock lk(m_);
    done_.wait(lk, [&] { return completed() >= t || error_; });
    if (error_) {
      auto e = std::exchange(error_, nullptr);
      failed_.store(false);
      std::rethrow_exception(e);
    }
  }
  void drain() { wait(submitted()); }

 private:
  void loop() {
    std::unique_lock lk(m_);
    for (;;) {
      if (queue_.empty() && !stop_) {  // poll a while before sleeping
        lk.unlock();
        const auto until = std::chrono::steady_clock::now() + spin;
        while (pending_.load(std::memory_order_acquire) == 0 && !stopping_.load(std::memory_order_acquire) &&
               std::chrono::steady_clock::now() < until) {
        }
        lk.lock();
      }
      work_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      auto job = std::move(queue_.front());
      queue_.pop_front();
      pending_.fetch_sub(1);
      lk.unlock();
      std::exception_ptr err;
      try {
        job();
      } catch (...) {
        err = std::current_exception();
      }
      lk.lock();
      if (err) {
        error_ = err;
        failed_.store(true);
        completed_.fetch_add(queue_.size());
        pending_.store(0);
        queue_.clear();
      }
      completed_.fetch_add(1, std::memory_order_release);
      done_.notify_all();
    }
  }

  // How long wait() and the idle copy thread poll before they block.
  static constexpr std::chrono::microseconds spin{200};

  mutable std::mutex m_;
  std::condition_variable work_, done_;
  std::deque<std::function<void()>> queue_;
  ticket submitted_ = 0;
  std::atomic<ticket> completed_{0};
  std::atomic<std::size_t> pending_{0};  // queue_.size(), for the copy thread's polling
  std::atomic<bool> failed_{false}, stopping_{false};
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace memplan::runtime
