#pragma once
// Runs a function on a thread with a small stack (a framework's worker thread: 512 KB on macOS,
// 128 KB under musl): the tests of searches and replays whose depth grows with the input, which must
// not use the call stack for it.
#include <pthread.h>

#include <cstddef>
#include <functional>

namespace memplan::testing {

// False if the thread could not be started with that stack size.
inline bool run_on_small_stack(std::size_t bytes, const std::function<void()>& fn) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return false;
  const bool sized = pthread_attr_setstacksize(&attr, bytes) == 0;
  pthread_t thread;
  const bool started = sized && pthread_create(&thread, &attr, [](void* f) -> void* {
    (*static_cast<const std::function<void()>*>(f))();
    return nullptr;
  }, const_cast<std::function<void()>*>(&fn)) == 0;
  pthread_attr_destroy(&attr);
  if (started) pthread_join(thread, nullptr);
  return started;
}

}  // namespace memplan::testing
