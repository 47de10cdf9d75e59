// Validated reads from one YAML mapping, for topology files (topologies/) and config files
// (node/). Every read names the field's full path; `finish()` rejects keys nobody asked for,
// listing the allowed ones. Errors are thrown as the caller's exception type through `fail`
// (start-up only). Not thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/field_log.h"
#include "base/names.h"

namespace phalanx::base {

// Counts and sizes are read through the std::uint64_t overload.
static_assert(std::is_same_v<std::size_t, std::uint64_t>, "phalanx assumes an LP64 platform");

class YamlFields {
 public:
  // `fail(field, problem)` must throw. `node` must be a map or null (absent section).
  using Fail = std::function<void(const std::string& field, const std::string& problem)>;
  YamlFields(YAML::Node node, std::string path, Fail fail);

  bool has(std::string_view key) const;
  // Every read from here on (and from sections made from here on) appends to `log`.
  void logTo(FieldLog* log) { log_ = log; }
  // A field read by hand (its own syntax): allowed here, and logged as `kind` and `value`.
  void note(std::string_view key, std::string kind, std::string value);

  void number(std::string_view key, double& out, double min, double max);
  void integer(std::string_view key, std::uint64_t& out, std::uint64_t min, std::uint64_t max);
  void integer(std::string_view key, int& out, int min, int max);
  void boolean(std::string_view key, bool& out);
  void text(std::string_view key, std::string& out);
  void choice(std::string_view key, std::string& out, const std::vector<std::string>& allowed);
  // The same into an enum through its name table (base/names.h).
  template <class E, std::size_t N>
  void choice(std::string_view key, E& out, const NameTable<E, N>& table) {
    std::string name(table.name(out));
    choice(key, name, table.names());
    out = *table.parse(name);
  }
  void integerList(std::string_view key, std::vector<std::size_t>& out, std::size_t min,
                   std::size_t max);
  void textList(std::string_view key, std::vector<std::string>& out);
  // A list of [a, b] pairs of whole numbers in [0, max], like a graph's edges.
  void integerPairs(std::string_view key, std::vector<std::pair<std::uint64_t, std::uint64_t>>& out,
                    std::uint64_t max);
  YamlFields section(std::string_view key);
  // A list of sections; item i reports its fields as key[i].field. Empty when absent.
  std::vector<YamlFields> sectionList(std::string_view key);

  // Keys of this mapping, for maps keyed by data (node ids).
  std::vector<std::string> keys() const;

  // Rejects every key not read, and a key given twice.
  void finish();

  const std::string& path() const { return path_; }

 private:
  std::string field(std::string_view key) const;
  std::optional<YAML::Node> scalar(std::string_view key, const char* expected);
  // The same for lists: marks `key` asked, nullopt when absent, an error when not a list.
  std::optional<YAML::Node> sequence(std::string_view key, const char* expected);
  [[noreturn]] void error(std::string_view key, const std::string& problem) const;
  void logged(std::string_view key, std::string kind, std::string value);

  YAML::Node node_;
  std::string path_;
  Fail fail_;
  std::set<std::string> asked_;
  FieldLog* log_ = nullptr;
};

}  // namespace phalanx::base
