#include "node/config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "base/text.h"
#include "base/yaml_fields.h"
#include "compress/accordion.h"
#include "compress/compressor.h"
#include "compress/feedback.h"
#include "robust/aggregator.h"
#include "robust/attacks.h"

namespace phalanx::node {
namespace {

using base::YamlFields;
using compress::FeedbackKind;

// kernels/backend.h's choices.

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();
constexpr double kHuge = 1e12;

struct Source {
  std::string name;
  std::set<std::string> overridden;  // paths set with --set

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    bool from_cli = false;
    for (const auto& p : overridden) {
      from_cli |= field == p || field.starts_with(p + ".") || p.starts_with(field + ".");
    }
    throw ConfigError(
        fmt::format("{}: {}: {}{}", name, field, problem, from_cli ? " (set with --set)" : ""));
  }
};

// compress/ validates its own settings; its errors read "compression.FIELD: problem".
[[noreturn]] void failFromCompress(const std::string& error, const Source& source) {
  const auto colon = error.find(": ");
  if (colon == std::string::npos) source.fail("compression", error);
  source.fail(error.substr(0, colon), error.substr(colon + 2));
}

// Builds the configured codec once (with a stand-in 64 x 64 layer: the model's layout is
// only known later) so a bad combination fails at start-up, not at the first round.
void checkCompression(const CompressionConfig& c, const Source& source) {
  compress::CompressorConfig codec = compressorConfig(c);
  codec.layers = {{64, 64}};
  auto made = compress::makeCompressor(codec);
  if (!made) failFromCompress(made.error(), source);
  if (c.feedback != compress::FeedbackKind::kDgc) {
    auto fb = compress::FeedbackEncoder::make(
        std::move(*made), {.kind = c.feedback, .eta = c.eta, .alpha = c.alpha}, 64 * 64);
    if (!fb) failFromCompress(fb.error(), source);
  }
  if (c.adaptive) {
    if (auto levels = compress::accordionLevels(codec); !levels)
      failFromCompress(levels.error(), source);
  }
}

// The hub's broadcast codec, built once as checkCompression does.
void checkBroadcast(const BroadcastConfig& b, const Source& source) {
  if (b.feedback != FeedbackKind::kNone && b.feedback != FeedbackKind::kEf14) {
    source.fail("compression.broadcast.feedback",
                fmt::format("{}: the hub keeps plain error feedback (none, ef14)",
                            compress::kFeedbacks.name(b.feedback)));
  }
  if (b.codec == compress::CodecId::kNone) return;
  compress::CompressorConfig codec = compressorConfig(b);
  codec.layers = {{64, 64}};
  auto made = compress::makeCompressor(codec);
  if (!made) source.fail("compression.broadcast", made.error());
}

// What each exchange mode can run (node/exchange/gradient_feedback.h for gradient mode, the leaves'
// uplink of hub mode).
void checkExchange(const Config& c, const Source& source) {
  const CompressionConfig& k = c.compression;
  checkBroadcast(k.broadcast, source);
  if (c.exchange != Exchange::kHub && k.broadcast.codec != compress::CodecId::kNone)
    source.fail("compression.broadcast.codec", "only exchange: hub broadcasts");
  if (c.exchange == Exchange::kOuter && k.adaptive)
    source.fail("compression.adaptive", "Accordion is not run with exchange: outer");
  if (!exchangesGradients(c)) {
    if (k.feedback != FeedbackKind::kNone) {
      source.fail("compression.feedback",
                  "model gossip tracks replicas (CHOCO) itself; error "
                  "feedback is for exchange: gradient (use none)");
    }
    // CHOCO's replicas close in on the models only under a contraction, E‖C(x) − x‖² ≤ (1 −
    // δ)‖x‖²; these unbiased codecs are none (their variance factor is d/k − 1 and √d − 1).
    if (k.codec == compress::CodecId::kRandk && k.unbiased) {
      source.fail("compression.unbiased",
                  "rand-k with unbiased: true scales its values by d/k, which is not a "
                  "contraction: CHOCO replicas of models drift (use unbiased: false, or "
                  "exchange: gradient with feedback: diana for unbiased compression)");
    }
    if (k.codec == compress::CodecId::kTerngrad) {
      source.fail("compression.codec",
                  "terngrad is unbiased with variance factor sqrt(d) - 1, not a contraction: "
                  "CHOCO replicas of models drift (use it with exchange: gradient)");
    }
    return;
  }
  if (c.exchange == Exchange::kOuter) {
    // The pseudo-gradient goes out standalone, once per round, with plain error feedback
    // (SparseLoCo's); the momentum is the outer optimizer's.
    if (k.feedback != FeedbackKind::kNone && k.feedback != FeedbackKind::kEf14) {
      source.fail("compression.feedback",
                  fmt::format("{}: exchange: outer sends its pseudo-gradient with none or ef14",
                              compress::kFeedbacks.name(k.feedback)));
    }
  }
  // DGC's selection is by density: topk_sampled (or exact topk), not randk's random draw.
  if (k.feedback == FeedbackKind::kDgc && k.codec != compress::CodecId::kTopkSampled &&
      k.codec != compress::CodecId::kTopk) {
    source.fail("compression.codec", "dgc selects with topk_sampled (or exact topk)");
  }
  if (k.feedback == FeedbackKind::kDgc && k.adaptive) {
    source.fail("compression.adaptive",
                "dgc has its own density warm-up; Accordion does not apply");
  }
}

}  // namespace

bool exchangesGradients(const Config& c) {
  return c.exchange != Exchange::kModel &&
         !(c.exchange == Exchange::kOuter && c.outer.mix == OuterMix::kModels);
}

compress::CompressorConfig compressorConfig(const BroadcastConfig& c) {
  return {.codec = c.codec, .density = c.density, .values = c.values};
}

robust::AggregatorConfig ruleConfig(const Config& c, std::uint32_t id) {
  const MixingConfig& m = c.mixing;
  return {.rule = m.rule, .pre = m.pre, .tau = m.tau, .iters = m.iters, .seed = c.seed + id};
}

train::TrainerConfig trainerConfig(const Config& c) {
  return {.model = c.model, .optimizer = c.optimizer, .data = c.data, .rounds = c.rounds.count};
}

compress::CompressorConfig compressorConfig(const CompressionConfig& c) {
  return {.codec = c.codec,
          .density = c.density,
          .values = c.values,
          .bits = c.bits,
          .bucket = c.bucket,
          .rank = c.rank,
          .threshold = c.threshold,
          .unbiased = c.unbiased};
}

std::string controlToken(const ControlConfig& control) {
  if (!control.token.empty() || control.token_file.empty()) return control.token;
  namespace fs = std::filesystem;
  const fs::path file = control.token_file;
  std::error_code ec;
  const fs::perms perms = fs::status(file, ec).permissions();
  if (ec || !fs::is_regular_file(file, ec)) {
    throw ConfigError(fmt::format("control.token_file: {}: cannot read it", file.string()));
  }
  if ((perms & (fs::perms::group_all | fs::perms::others_all)) != fs::perms::none) {
    throw ConfigError(
        fmt::format("control.token_file: {}: group or others may read it; `chmod 600 {}` first",
                    file.string(), file.string()));
  }
  std::ifstream in(file);
  std::string token;
  std::getline(in, token);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.empty()) {
    throw ConfigError(
        fmt::format("control.token_file: {}: the first line is empty", file.string()));
  }
  return token;
}

std::string configDigest(const Config& c, std::string_view learner, std::size_t dimension) {
  const std::string shared = fmt::format(
      "{};dimension={};exchange={};feedback={}", learner, dimension, kExchanges.name(c.exchange),
      exchangesGradients(c) ? compress::kFeedbacks.name(c.compression.feedback)
                            : std::string_view("-"));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(shared.data(), shared.size(), digest, &size, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(digest), size);
}

namespace {

void applyOverride(YAML::Node& root, const std::string& assignment, Source& source) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError(
        fmt::format("--set {}: expected path=value, e.g. optimizer.lr=0.05", assignment));
  }
  const std::string path = assignment.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("--set {}: the value is not valid YAML: {}", assignment, e.msg));
  }
  const std::vector<std::string> keys = base::split(path, '.');
  if (std::ranges::any_of(keys, [](const std::string& key) { return key.empty(); })) {
    throw ConfigError(fmt::format("--set {}: empty name in path", assignment));
  }
  if (!root.IsMap()) root = YAML::Node(YAML::NodeType::Map);
  YAML::Node cursor = root;
  for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
    YAML::Node next = cursor[keys[i]];
    if (!next.IsDefined() || next.IsNull()) {
      cursor[keys[i]] = YAML::Node(YAML::NodeType::Map);
      next = cursor[keys[i]];
    } else if (!next.IsMap()) {
      throw ConfigError(
          fmt::format("--set {}: {} is a value, not a section", assignment,
                      fmt::join(keys.begin(), keys.begin() + std::ptrdiff_t(i + 1), ".")));
    }
    cursor.reset(next);  // rebind, do not assign: operator= would overwrite the node's content
  }
  cursor[keys.back()] = value;
  source.overridden.insert(path);
}

// Field `key` (at `path`): "auto" (nullopt) or a number in (0, hi] (the error names the field
// when it is neither); absent, `out` keeps its default. Logged once, as one kind.
void autoOrNumber(base::YamlFields& f, std::string_view key, std::string_view path,
                  std::optional<double>& out, double hi, base::FieldLog* log) {
  if (std::string text; f.has(key) && (f.text(key, text), text == "auto")) {
    out.reset();
  } else if (f.has(key)) {
    double v = 1.0;
    f.number(key, v, 1e-9, hi);
    out = v;
  }
  if (log)
    log->erase(
        std::remove_if(log->begin(), log->end(), [&](const auto& r) { return r.path == path; }),
        log->end());
  f.note(key, fmt::format("auto, or a number in (0, {}]", hi),
         out ? fmt::format("{}", *out) : "auto");
}

// `log`: every field read, with its value after the read. `describe`: also the fields of a
// `byzantine` entry, under byzantine.ID, when the config has none (for the reference).
Config parse(const YAML::Node& root, const Source& source, base::FieldLog* log = nullptr,
             bool describe = false) {
  const YamlFields::Fail fail = [&source](const std::string& field, const std::string& problem) {
    source.fail(field, problem);
  };
  Config c;
  YamlFields top(root, "", fail);
  top.logTo(log);
  top.integer("seed", c.seed, 0, kU64Max);
  top.integer("threads", c.threads, 0, 1024);
  top.choice("device", c.device, kernels::kDevices);

  YamlFields data = top.section("data");
  data.choice("dataset", c.data.dataset, train::kDatasetKinds);
  data.text("path", c.data.path);
  data.choice("partition", c.data.partition, train::kPartitionKinds);
  data.number("alpha", c.data.alpha, 1e-6, 1e6);
  data.integer("batch", c.data.batch, 1, 1 << 20);
  YamlFields synthetic = data.section("synthetic");
  synthetic.integer("train", c.data.synthetic.train, 1, 10'000'000);
  synthetic.integer("test", c.data.synthetic.test, 1, 10'000'000);
  synthetic.integer("features", c.data.synthetic.features, 1, 1 << 20);
  synthetic.integer("classes", c.data.synthetic.classes, 2, 256);
  synthetic.number("separation", c.data.synthetic.separation, 0, 1e3);
  synthetic.finish();
  data.finish();

  YamlFields model = top.section("model");
  model.choice("kind", c.model.kind, train::kModelKinds);
  model.integerList("hidden", c.model.hidden, 1, 1 << 16);
  model.finish();
  if (c.model.kind == train::ModelKind::kMlp && c.model.hidden.empty()) {
    source.fail("model.hidden", "an mlp needs at least one hidden layer (or use kind: softmax)");
  }

  YamlFields opt = top.section("optimizer");
  opt.number("lr", c.optimizer.lr, 0, kHuge);
  opt.number("momentum", c.optimizer.momentum, 0, 0.999999);
  opt.choice("momentum_kind", c.optimizer.momentum_kind, train::kMomentumKinds);
  opt.number("weight_decay", c.optimizer.weight_decay, 0, kHuge);
  YamlFields schedule = opt.section("schedule");
  schedule.choice("kind", c.optimizer.schedule.kind, train::kScheduleKinds);
  schedule.number("tau", c.optimizer.schedule.tau, 1e-9, kHuge);
  schedule.integer("decay_every", c.optimizer.schedule.decay_every, 1, kU64Max);
  schedule.number("min_lr", c.optimizer.schedule.min_lr, 0, kHuge);
  schedule.finish();
  opt.finish();

  top.choice("exchange", c.exchange, kExchanges);
  YamlFields outer = top.section("outer");
  outer.integer("steps", c.outer.steps, 1, 1'000'000);
  outer.choice("mix", c.outer.mix, kOuterMixes);
  outer.number("lr", c.outer.lr, 0, kHuge);
  outer.number("momentum", c.outer.momentum, 0, 0.999999);
  outer.boolean("nesterov", c.outer.nesterov);
  outer.finish();

  YamlFields comp = top.section("compression");
  std::string codec(compress::codecName(c.compression.codec));
  comp.choice("codec", codec, compress::kCodecNames);
  c.compression.codec = compress::codecNamed(codec)->id;
  comp.number("density", c.compression.density, 1e-9, 1.0);
  comp.choice("values", c.compression.values, compress::kValueTypes);
  comp.integer("bits", c.compression.bits, 1, 16);
  comp.integer("bucket", c.compression.bucket, 0, 1 << 30);
  comp.integer("rank", c.compression.rank, 1, 1024);
  comp.number("threshold", c.compression.threshold, 0, kHuge);
  comp.boolean("unbiased", c.compression.unbiased);
  comp.boolean("shared_seed", c.compression.shared_seed);
  comp.choice("feedback", c.compression.feedback, compress::kFeedbacks);
  comp.number("eta", c.compression.eta, 1e-9, 1.0);
  comp.number("alpha", c.compression.alpha, 0, 1.0);
  comp.choice("weights", c.compression.weights, kEf21Weights);
  comp.number("clip_norm", c.compression.clip_norm, 0, kHuge);
  comp.integer("warmup_every", c.compression.warmup_every, 0, kU64Max);
  autoOrNumber(comp, "gamma", "compression.gamma", c.compression.gamma, 1.0, log);
  comp.integer("keyframe_every", c.compression.keyframe_every, 0, kU64Max);
  comp.boolean("adaptive", c.compression.adaptive);
  comp.integer("accordion_window", c.compression.accordion_window, 0, kU64Max);
  comp.number("accordion_eta", c.compression.accordion_eta, 1e-9, kHuge);
  YamlFields broadcast = comp.section("broadcast");
  BroadcastConfig& bc = c.compression.broadcast;
  std::string broadcast_codec(compress::codecName(bc.codec));
  broadcast.choice("codec", broadcast_codec, compress::kCodecNames);
  bc.codec = compress::codecNamed(broadcast_codec)->id;
  broadcast.number("density", bc.density, 1e-9, 1.0);
  broadcast.choice("values", bc.values, compress::kValueTypes);
  broadcast.choice("feedback", bc.feedback, compress::kFeedbacks);
  broadcast.finish();
  comp.finish();
  checkCompression(c.compression, source);
  checkExchange(c, source);

  YamlFields mixing = top.section("mixing");
  mixing.choice("rule", c.mixing.rule, robust::kRules);
  std::vector<std::string> pre;
  for (const robust::PreSpec& spec : c.mixing.pre) pre.push_back(robust::preSpecText(spec));
  mixing.textList("pre", pre);
  mixing.number("tau", c.mixing.tau, 0, kHuge);
  autoOrNumber(mixing, "step", "mixing.step", c.mixing.step, 2.0, log);
  mixing.choice("weights", c.mixing.weights, kMixingWeights);
  mixing.integer("iters", c.mixing.iters, 1, 1000);
  mixing.boolean("exclude_equivocators", c.mixing.exclude_equivocators);
  mixing.finish();
  if (auto specs = robust::parsePreSpecs(pre); specs) {
    c.mixing.pre = std::move(*specs);
  } else {
    source.fail("mixing.pre", specs.error());
  }

  YamlFields rounds = top.section("rounds");
  rounds.integer("count", c.rounds.count, 1, kU64Max);
  rounds.integer("deadline_ms", c.rounds.deadline_ms, 1, 3'600'000);
  rounds.boolean("quorum", c.rounds.quorum);
  rounds.number("quorum_grace", c.rounds.quorum_grace, 0, 100);
  rounds.number("pace_floor", c.rounds.pace_floor, 0, 1);
  rounds.boolean("adaptive_deadline", c.rounds.adaptive_deadline);
  rounds.number("deadline_k", c.rounds.deadline_k, 0, 1000);
  rounds.integer("deadline_min_ms", c.rounds.deadline_min_ms, 1, 3'600'000);
  rounds.integer("eval_every", c.rounds.eval_every, 1, kU64Max);
  rounds.finish();

  YamlFields checkpoint = top.section("checkpoint");
  checkpoint.text("dir", c.checkpoint.dir);
  checkpoint.integer("every", c.checkpoint.every, 0, kU64Max);
  checkpoint.finish();
  // An empty dir is allowed: `phalanx node --out DIR` then checkpoints under DIR/checkpoints.

  YamlFields security = top.section("security");
  security.choice("mode", c.security.mode, kSecurityModes);
  security.text("dir", c.security.dir);
  security.text("ca", c.security.ca);
  security.text("cert", c.security.cert);
  security.text("key", c.security.key);
  security.boolean("statements", c.security.statements);
  security.finish();
  // Where the files are and whether they exist is checked where a node starts (certificateFiles
  // in node/peer_builder.h): a simulation needs none, and launch makes them.

  YamlFields control = top.section("control");
  control.text("token", c.control.token);
  control.text("token_file", c.control.token_file);
  control.boolean("remote", c.control.remote);
  control.finish();

  YamlFields byzantine = top.section("byzantine");
  std::vector<std::string> ids = byzantine.keys();
  const bool template_entry = describe && ids.empty();
  if (template_entry) ids = {"ID"};
  for (const std::string& key : ids) {
    std::uint32_t id = 0;
    if (!template_entry && !YAML::convert<std::uint32_t>::decode(YAML::Node(key), id)) {
      source.fail("byzantine." + key, "keys are node ids (whole numbers)");
    }
    YamlFields entry = byzantine.section(key);
    ByzantineConfig b;
    if (!template_entry && !entry.has("attack")) source.fail(entry.path() + ".attack", "required");
    std::string attack;
    entry.text("attack", attack);
    if (!template_entry) {
      auto spec = AttackSpec::parse(attack);
      if (!spec) source.fail(entry.path() + ".attack", spec.error());
      b.attack = *spec;
    }
    entry.number("tau", b.tau, -kHuge, kHuge);
    entry.number("sigma", b.sigma, 0, kHuge);
    entry.number("eps", b.eps, -kHuge, kHuge);
    entry.boolean("collude", b.collude);
    entry.choice("pivots", b.pivots, kSearchPivots);
    entry.finish();
    if (!template_entry) c.byzantine[id] = b;
  }

  top.finish();
  return c;
}

Config parseWith(YAML::Node root, Source source, std::span<const std::string> overrides,
                 base::FieldLog* log = nullptr, bool describe = false) {
  for (const auto& o : overrides) applyOverride(root, o, source);
  return parse(root, source, log, describe);
}

YAML::Node loadYaml(const std::string& yaml, const std::string& source) {
  try {
    return YAML::Load(yaml);
  } catch (const YAML::ParserException& e) {
    throw ConfigError(fmt::format("{}:{}:{}: YAML syntax error: {}", source, e.mark.line + 1,
                                  e.mark.column + 1, e.msg));
  }
}

std::string readConfigText(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot read the config file", file.string()));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Config parseConfig(const std::string& yaml, const std::string& source,
                   std::span<const std::string> overrides) {
  return parseWith(loadYaml(yaml, source), Source{source, {}}, overrides);
}

Config loadConfig(const std::filesystem::path& file, std::span<const std::string> overrides) {
  return parseConfig(readConfigText(file), file.string(), overrides);
}

base::FieldLog configFields(const std::string& yaml, const std::string& source,
                            std::span<const std::string> overrides, bool describe) {
  base::FieldLog log;
  parseWith(loadYaml(yaml, source), Source{source, {}}, overrides, &log, describe);
  return log;
}

base::FieldLog loadConfigFields(const std::filesystem::path& file,
                                std::span<const std::string> overrides) {
  return configFields(readConfigText(file), file.string(), overrides, false);
}

}  // namespace phalanx::node
