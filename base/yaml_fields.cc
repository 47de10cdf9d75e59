#include "base/yaml_fields.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "base/text.h"

namespace phalanx::base {
namespace {

constexpr double kUnbounded = 1e12;  // a bound at or past this is "no bound" in a reference

std::string numberKind(double min, double max) {
  if (min <= -kUnbounded && max >= kUnbounded) return "a number";
  if (max >= kUnbounded) return fmt::format("a number >= {}", min);
  return fmt::format("a number in [{}, {}]", min, max);
}

std::string integerKind(long double min, long double max) {
  if (max >= 1e12L) return fmt::format("a whole number >= {}", double(min));
  return fmt::format("a whole number in [{}, {}]", double(min), double(max));
}

// Text as a YAML flow scalar: bare when YAML reads it back as the same text, quoted otherwise.
std::string yamlText(const std::string& text) {
  const bool plain = !text.empty() &&
                     std::all_of(text.begin(), text.end(),
                                 [](char c) {
                                   return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                                          c == '-' || c == '.' || c == '/';
                                 }) &&
                     !std::isdigit(static_cast<unsigned char>(text[0])) && text != "true" &&
                     text != "false" && text != "null";
  if (plain) return text;
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string show(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a section";
  return "nothing";
}

}  // namespace

YamlFields::YamlFields(YAML::Node node, std::string path, Fail fail)
    : node_(std::move(node)), path_(std::move(path)), fail_(std::move(fail)) {
  if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap()) {
    fail_(path_.empty() ? std::string("(top level)") : path_,
          fmt::format("expected a section of fields, got {}", show(node_)));
  }
}

std::string YamlFields::field(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

void YamlFields::error(std::string_view key, const std::string& problem) const {
  fail_(field(key), problem);
  std::abort();  // fail_ must throw; reaching here is a bug
}

bool YamlFields::has(std::string_view key) const {
  return node_.IsMap() && node_[std::string(key)].IsDefined() && !node_[std::string(key)].IsNull();
}

std::optional<YAML::Node> YamlFields::scalar(std::string_view key, const char* expected) {
  asked_.insert(std::string(key));
  if (!has(key)) return std::nullopt;
  YAML::Node n = node_[std::string(key)];
  if (!n.IsScalar()) error(key, fmt::format("expected {}, got {}", expected, show(n)));
  return n;
}

std::optional<YAML::Node> YamlFields::sequence(std::string_view key, const char* expected) {
  asked_.insert(std::string(key));
  if (!has(key)) return std::nullopt;
  YAML::Node n = node_[std::string(key)];
  if (!n.IsSequence()) error(key, fmt::format("expected {}, got {}", expected, show(n)));
  return n;
}

void YamlFields::number(std::string_view key, double& out, double min, double max) {
  const auto n = scalar(key, "a number");
  if (!n) return logged(key, numberKind(min, max), fmt::format("{}", out));
  double v = 0;
  if (!YAML::convert<double>::decode(*n, v) || !std::isfinite(v)) {
    error(key, fmt::format("expected a number, got {}", show(*n)));
  }
  if (v < min || v > max) error(key, fmt::format("{} is outside [{}, {}]", v, min, max));
  out = v;
  logged(key, numberKind(min, max), fmt::format("{}", out));
}

void YamlFields::integer(std::string_view key, std::uint64_t& out, std::uint64_t min,
                         std::uint64_t max) {
  const auto n = scalar(key, "a whole number");
  if (!n) return logged(key, integerKind(min, max), fmt::format("{}", out));
  // Parse as signed first so "-3" is reported as out of range rather than wrapping.
  long long v = 0;
  if (!YAML::convert<long long>::decode(*n, v)) {
    error(key, fmt::format("expected a whole number, got {}", show(*n)));
  }
  if (v < 0 || std::uint64_t(v) < min || std::uint64_t(v) > max) {
    error(key, fmt::format("{} is outside [{}, {}]", v, min, max));
  }
  out = std::uint64_t(v);
  logged(key, integerKind(min, max), fmt::format("{}", out));
}

void YamlFields::integer(std::string_view key, int& out, int min, int max) {
  const auto n = scalar(key, "a whole number");
  if (!n) return logged(key, integerKind(min, max), fmt::format("{}", out));
  long long v = 0;
  if (!YAML::convert<long long>::decode(*n, v)) {
    error(key, fmt::format("expected a whole number, got {}", show(*n)));
  }
  if (v < min || v > max) error(key, fmt::format("{} is outside [{}, {}]", v, min, max));
  out = int(v);
  logged(key, integerKind(min, max), fmt::format("{}", out));
}

void YamlFields::boolean(std::string_view key, bool& out) {
  const auto n = scalar(key, "true or false");
  if (!n) return logged(key, "true or false", out ? "true" : "false");
  bool v = false;
  if (!YAML::convert<bool>::decode(*n, v)) {
    error(key, fmt::format("expected true or false, got {}", show(*n)));
  }
  out = v;
  logged(key, "true or false", out ? "true" : "false");
}

void YamlFields::text(std::string_view key, std::string& out) {
  const auto n = scalar(key, "text");
  if (n) out = n->Scalar();
  logged(key, "text", yamlText(out));
}

void YamlFields::choice(std::string_view key, std::string& out,
                        const std::vector<std::string>& allowed) {
  const std::string kind = fmt::format("one of: {}", fmt::join(allowed, ", "));
  const auto n = scalar(key, "a name");
  if (!n) return logged(key, kind, yamlText(out));
  if (std::find(allowed.begin(), allowed.end(), n->Scalar()) == allowed.end()) {
    error(key, fmt::format("unknown value {}{} (allowed: {})", show(*n),
                           didYouMean(n->Scalar(), allowed), fmt::join(allowed, ", ")));
  }
  out = n->Scalar();
  logged(key, kind, yamlText(out));
}

void YamlFields::integerList(std::string_view key, std::vector<std::size_t>& out, std::size_t min,
                             std::size_t max) {
  const std::string kind =
      fmt::format("a list of whole numbers, each in [{}, {}]", double(min), double(max));
  const auto list = sequence(key, "a list like [100, 50]");
  if (!list) return logged(key, kind, fmt::format("[{}]", fmt::join(out, ", ")));
  const YAML::Node& n = *list;
  std::vector<std::size_t> values;
  for (std::size_t i = 0; i < n.size(); ++i) {
    long long v = 0;
    if (!n[i].IsScalar() || !YAML::convert<long long>::decode(n[i], v)) {
      error(key, fmt::format("item {} should be a whole number, got {}", i, show(n[i])));
    }
    if (v < 0 || std::size_t(v) < min || std::size_t(v) > max) {
      error(key, fmt::format("item {} = {} is outside [{}, {}]", i, v, min, max));
    }
    values.push_back(std::size_t(v));
  }
  out = std::move(values);
  logged(key, kind, fmt::format("[{}]", fmt::join(out, ", ")));
}

void YamlFields::textList(std::string_view key, std::vector<std::string>& out) {
  const auto textList = [&] {
    std::vector<std::string> items;
    for (const auto& v : out) items.push_back(yamlText(v));
    return fmt::format("[{}]", fmt::join(items, ", "));
  };
  const auto list = sequence(key, "a list");
  if (!list) return logged(key, "a list of text", textList());
  const YAML::Node& n = *list;
  std::vector<std::string> values;
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsScalar()) error(key, fmt::format("item {} should be text, got {}", i, show(n[i])));
    values.push_back(n[i].Scalar());
  }
  out = std::move(values);
  logged(key, "a list of text", textList());
}

void YamlFields::integerPairs(std::string_view key,
                              std::vector<std::pair<std::uint64_t, std::uint64_t>>& out,
                              std::uint64_t max) {
  const auto list = sequence(key, "a list of pairs like [[0, 1], [1, 2]]");
  if (!list) return;
  const YAML::Node& n = *list;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs;
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsSequence() || n[i].size() != 2) {
      error(key, fmt::format("item {} should be a pair [a, b], got {}", i, show(n[i])));
    }
    std::uint64_t ends[2];
    for (std::size_t e = 0; e < 2; ++e) {
      long long v = 0;
      if (!n[i][e].IsScalar() || !YAML::convert<long long>::decode(n[i][e], v) || v < 0 ||
          std::uint64_t(v) > max) {
        error(key, fmt::format("item {} holds {}; expected a whole number in [0, {}]", i,
                               show(n[i][e]), max));
      }
      ends[e] = std::uint64_t(v);
    }
    pairs.emplace_back(ends[0], ends[1]);
  }
  out = std::move(pairs);
}

std::vector<YamlFields> YamlFields::sectionList(std::string_view key) {
  std::vector<YamlFields> items;
  const auto list = sequence(key, "a list of sections");
  if (!list) return items;
  const YAML::Node& n = *list;
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsMap()) {
      error(key, fmt::format("item {} should be a section of fields, got {}", i, show(n[i])));
    }
    items.emplace_back(n[i], fmt::format("{}[{}]", field(key), i), fail_);
    items.back().logTo(log_);
  }
  return items;
}

YamlFields YamlFields::section(std::string_view key) {
  asked_.insert(std::string(key));
  YAML::Node n = has(key) ? node_[std::string(key)] : YAML::Node();
  YamlFields inner(n, field(key), fail_);
  inner.logTo(log_);
  return inner;
}

void YamlFields::note(std::string_view key, std::string kind, std::string value) {
  asked_.insert(std::string(key));
  logged(key, std::move(kind), std::move(value));
}

void YamlFields::logged(std::string_view key, std::string kind, std::string value) {
  if (log_) log_->push_back({field(key), std::move(kind), std::move(value)});
}

std::vector<std::string> YamlFields::keys() const {
  std::vector<std::string> out;
  if (!node_.IsMap()) return out;
  for (const auto& kv : node_) out.push_back(kv.first.as<std::string>());
  return out;
}

void YamlFields::finish() {
  if (!node_.IsMap()) return;
  std::set<std::string> seen;
  for (const auto& kv : node_) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
    if (!asked_.contains(key)) {
      const std::vector<std::string> allowed(asked_.begin(), asked_.end());
      error(key, fmt::format("unknown field{} (allowed here: {})", didYouMean(key, allowed),
                             fmt::join(asked_, ", ")));
    }
    // yaml-cpp keeps both copies of a repeated key and reads the first: the second would be
    // ignored without a word.
    if (!seen.insert(key).second) error(key, "given twice in the same section");
  }
}

}  // namespace phalanx::base
