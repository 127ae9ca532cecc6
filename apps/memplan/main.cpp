// The `memplan` executable: the CLI is memplan::cli::run_command_line (command_line.cpp).
#include "command_line.hpp"

#include <cstdlib>  // (defines __GLIBC__ where the C library is glibc)
#if defined(__GLIBC__)
#include <malloc.h>
#endif

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // A plan allocates and frees blocks of megabytes many times over (each placement search's
  // failure tables, 8 MiB apiece at 1,800 buffers; the checkpointers' tables), and glibc maps and
  // unmaps such blocks from the system each time, so every page of each one faults again: 81,000
  // page faults in a budget plan of Inception-v3 b32 (docs/recompute.md). Keeping them in the heap
  // for reuse (up to 32 MiB a block, 256 MiB of free memory before the heap is trimmed) cuts those.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
  return memplan::cli::run_command_line(argc, argv);
}
