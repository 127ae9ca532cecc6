#pragma once
// registry<Stage>: the policies of one stage kind by name, each with a one-line description and a
// factory -- what the CLI's --scheduler / --checkpointer / --offloader / --placer NAME choose from.
// Options reach a policy at run time through the plan_context (time limit, progress, solver), so a
// factory takes nothing. The registries themselves live in <memplan/registry/*.hpp>; adding a policy
// is one line there.
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>

namespace memplan {

template <class Stage>
class registry {
 public:
  struct entry {
    std::string name;
    std::string description;
    std::function<Stage()> make;
  };

  explicit registry(std::string kind) : kind_(std::move(kind)) {}

  registry& add(std::string name, std::string description, std::function<Stage()> make) {
    for (const auto& e : entries_)
      if (e.name == name) throw error(errc::invalid_argument, kind_ + " registry: '" + name + "' is registered twice");
    entries_.push_back({std::move(name), std::move(description), std::move(make)});
    return *this;
  }

  [[nodiscard]] bool contains(std::string_view name) const {
    for (const auto& e : entries_)
      if (e.name == name) return true;
    return false;
  }

  // The policy of that name; errc::invalid_argument listing the valid names otherwise.
  [[nodiscard]] Stage make(std::string_view name) const {
    for (const auto& e : entries_)
      if (e.name == name) return e.make();
    throw error(errc::invalid_argument, "unknown " + kind_ + " '" + std::string(name) + "'; valid names: " + joined_names());
  }

  [[nodiscard]] const std::vector<entry>& entries() const noexcept { return entries_; }
  [[nodiscard]] const std::string& kind() const noexcept { return kind_; }
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (const auto& e : entries_) n.push_back(e.name);
    return n;
  }
  [[nodiscard]] std::string joined_names() const {
    std::string s;
    for (const auto& e : entries_) s += (s.empty() ? "" : ", ") + e.name;
    return s;
  }
  // "  name: description" lines, for --help.
  [[nodiscard]] std::string help() const {
    std::string s;
    for (const auto& e : entries_) s += "  " + e.name + ": " + e.description + "\n";
    return s;
  }

 private:
  std::string kind_;
  std::vector<entry> entries_;
};

}  // namespace memplan
