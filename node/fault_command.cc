#include "node/fault_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <sstream>

#include "base/text.h"
#include "robust/attacks.h"

namespace phalanx::node {
namespace {

constexpr std::string_view kVerbs =
    "crash, hang S, slow MS, drop P, delay MS, corrupt P, partition IDS, attack NAME, heal, "
    "restart";

// The whole word as a number in [lo, hi].
std::expected<double, std::string> number(std::string_view verb, const std::string& arg, double lo,
                                          double hi) {
  double out = 0;
  std::size_t used = 0;
  try {
    out = std::stod(arg, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (arg.empty() || used != arg.size() || !(out >= lo && out <= hi)) {
    return std::unexpected(
        fmt::format("{}: expected a number in [{}, {}], got '{}'", verb, lo, hi, arg));
  }
  return out;
}

std::expected<FaultCommand, std::string> attackCommand(const std::string& name) {
  if (name.empty()) return std::unexpected("attack: expected a name (or none)");
  const auto spec = AttackSpec::parse(name);
  if (!spec) return std::unexpected("attack " + spec.error());
  if (!spec->honest() && spec->kind != Misbehaviour::kVector && !spec->protocol()) {
    return std::unexpected(
        fmt::format("attack {}: not switchable at run time (allowed: none, vector attacks {}, "
                    "{}NAME, protocol attacks stall, round_lie, resync_flood, keyframe_spam)",
                    name, fmt::join(robust::kAttacks.names(), ", "), kEquivocatePrefix));
  }
  return fault::SwitchAttack{*spec};
}

}  // namespace

std::expected<FaultCommand, std::string> parseFaultCommand(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string verb, arg, extra;
  in >> verb >> arg >> extra;
  const bool takes_arg = verb != "crash" && verb != "heal" && verb != "restart";
  if (!extra.empty() || (!takes_arg && !arg.empty())) {
    return std::unexpected(
        fmt::format("{}: unexpected '{}' after the command", verb, extra.empty() ? arg : extra));
  }
  const auto millis = [&](double v) { return std::chrono::milliseconds(std::int64_t(v)); };
  const auto parsedOr = [](auto&& parsed, auto&& make) -> std::expected<FaultCommand, std::string> {
    if (!parsed) return std::unexpected(parsed.error());
    return make(*parsed);
  };
  if (verb == "crash") return fault::Crash{};
  if (verb == "heal") return fault::Heal{};
  if (verb == "restart") return fault::Restart{};
  if (verb == "hang") {
    return parsedOr(number(verb, arg, 0, 3600), [](double v) { return fault::Hang{v}; });
  }
  if (verb == "slow") {
    return parsedOr(number(verb, arg, 0, 600000), [&](double v) { return fault::Slow{millis(v)}; });
  }
  if (verb == "delay") {
    return parsedOr(number(verb, arg, 0, 600000),
                    [&](double v) { return fault::Delay{millis(v)}; });
  }
  if (verb == "drop") {
    return parsedOr(number(verb, arg, 0, 1), [](double v) { return fault::Drop{v}; });
  }
  if (verb == "corrupt") {
    return parsedOr(number(verb, arg, 0, 1), [](double v) { return fault::Corrupt{v}; });
  }
  if (verb == "partition") {
    const auto ids = base::parseIds(arg);
    if (!ids) return std::unexpected("partition: " + ids.error());
    if (ids->empty()) return std::unexpected("partition: expected ids, e.g. partition 3,7");
    return fault::Partition{*ids};
  }
  if (verb == "attack") return attackCommand(arg);
  return std::unexpected(fmt::format("unknown fault '{}' ({})", verb, kVerbs));
}

std::string faultText(const FaultCommand& command) {
  struct Text {
    std::string operator()(const fault::Crash&) const { return "crash"; }
    std::string operator()(const fault::Hang& h) const { return fmt::format("hang {}", h.seconds); }
    std::string operator()(const fault::Slow& s) const {
      return fmt::format("slow {}", s.by.count());
    }
    std::string operator()(const fault::Delay& d) const {
      return fmt::format("delay {}", d.by.count());
    }
    std::string operator()(const fault::Drop& d) const {
      return fmt::format("drop {}", d.probability);
    }
    std::string operator()(const fault::Corrupt& c) const {
      return fmt::format("corrupt {}", c.probability);
    }
    std::string operator()(const fault::Partition& p) const {
      return fmt::format("partition {}", fmt::join(p.peers, ","));
    }
    std::string operator()(const fault::Heal&) const { return "heal"; }
    std::string operator()(const fault::SwitchAttack& a) const {
      return "attack " + a.attack.name();
    }
    std::string operator()(const fault::Restart&) const { return "restart"; }
  };
  return std::visit(Text{}, command);
}

}  // namespace phalanx::node
