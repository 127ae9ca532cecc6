#pragma once
// The path of a bundled model (data/models/FILE), or empty, with a doctest message, when the checkout
// does not carry it: tests that read a bundled export skip rather than fail without it.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

namespace memplan::testing {

inline std::string bundled_model(const std::string& file) {
  auto path = std::string(MEMPLAN_SOURCE_DIR) + "/data/models/" + file;
  if (std::filesystem::exists(path)) return path;
  MESSAGE("data/models/" << file << " not bundled: skipped");
  return {};
}

}  // namespace memplan::testing
