#pragma once
// The whole CLI as one function (command_line.cpp defines it; main.cpp only forwards), so that the
// fuzz target of the argument parser (tests/fuzz, cli_args) and test_fuzz_replay run the very same code.
namespace memplan::cli {

struct command_line_limits {
  bool parse_only = false;        // return 0 after parsing, before any work (every subcommand's parser)
  double max_time_limit_s = -1;   // >= 0: every time limit is at most this (bounded runs under a fuzzer)
};

// Parses argv and runs the subcommand; returns the exit code (0 ok, 1 invalid/infeasible, 2 bad
// input, 3 internal or solver failure).
int run_command_line(int argc, const char* const* argv, const command_line_limits& limits = {});

}  // namespace memplan::cli
