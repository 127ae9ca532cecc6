// The `memplan` executable: the CLI is memplan::cli::run_command_line (command_line.cpp).
#include "command_line.hpp"

int main(int argc, char** argv) { return memplan::cli::run_command_line(argc, argv); }
