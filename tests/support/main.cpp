// The doctest main of every test executable. ctest runs each test case in its own process, selected by
// name (--test-case=NAME, from doctest_discover_tests). A name that no longer selects its test case
// would run nothing and pass -- CMake's lists split names at ';', and 45 test cases named with one
// silently ran nothing before this check -- so a --test-case filter that selects no test case fails.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <string_view>

namespace {

unsigned selected_test_cases = 0;

// Records how many test cases passed the filters (doctest's own count, reported at the end of a run).
struct selection_counter : doctest::IReporter {
  explicit selection_counter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& s) override { selected_test_cases = s.numTestCasesPassingFilters; }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

REGISTER_LISTENER("memplan_selection_counter", 1, selection_counter);

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit()) return result;  // --help, --list-test-cases, ...
  bool by_name = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    by_name = by_name || a.starts_with("--test-case=") || a.starts_with("-tc=");
  }
  if (result == 0 && by_name && selected_test_cases == 0) {
    std::fprintf(stderr, "memplan tests: the --test-case filter selected no test case (a name with ';'?)\n");
    return 1;
  }
  return result;
}
