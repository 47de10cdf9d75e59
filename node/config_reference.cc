#include "node/config_reference.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "node/config.h"

namespace phalanx::node {
namespace {

// One line per field, in the words of the docs that explain it further.
const std::map<std::string_view, std::string_view>& meanings() {
  static const std::map<std::string_view, std::string_view> table{
      {"seed", "seeds the data split, the model's initialization and every random choice"},
      {"threads", "worker threads of this peer's kernels; 0: every core"},
      {"device", "where the kernels run: auto (a GPU when one answers), cpu or cuda"},
      {"data.dataset", "the training data: fashion_mnist (files under data.path) or synthetic"},
      {"data.path", "the dataset's folder (fashion_mnist: where tools/install-deps puts it)"},
      {"data.partition", "how the training set is split among peers: iid or dirichlet"},
      {"data.alpha", "the Dirichlet concentration of data.partition: dirichlet (small: skewed)"},
      {"data.batch", "samples per local step"},
      {"data.synthetic.train", "training samples of the synthetic task"},
      {"data.synthetic.test", "test samples of the synthetic task"},
      {"data.synthetic.features", "features per sample of the synthetic task"},
      {"data.synthetic.classes", "classes of the synthetic task"},
      {"data.synthetic.separation", "distance between the synthetic classes' centres"},
      {"model.kind", "mlp (hidden layers, ReLU) or softmax (linear)"},
      {"model.hidden", "the mlp's hidden layer widths"},
      {"optimizer.lr", "the local step's learning rate"},
      {"optimizer.momentum", "the Polyak momentum of local steps"},
      {"optimizer.momentum_kind", "ema (m = μm + (1 − μ)g) or heavy_ball (m = μm + g)"},
      {"optimizer.weight_decay", "L2 weight decay of local steps"},
      {"optimizer.schedule.kind", "the learning-rate schedule (docs/ALGORITHMS.md)"},
      {"optimizer.schedule.tau", "the schedule's time constant, in rounds"},
      {"optimizer.schedule.decay_every", "rounds between a step schedule's decays"},
      {"optimizer.schedule.min_lr", "the schedule never goes below this"},
      {"exchange", "what peers send: model (gossip of models), gradient, hub (a star) or outer"},
      {"outer.steps", "H: local steps per round of the outer loop"},
      {"outer.mix", "what the outer loop mixes: pseudo_gradients or models"},
      {"outer.lr", "the outer step's learning rate"},
      {"outer.momentum", "the outer step's momentum"},
      {"outer.nesterov", "Nesterov momentum for the outer step"},
      {"compression.codec", "how a peer compresses what it sends (docs/ALGORITHMS.md §3)"},
      {"compression.density", "the fraction of coordinates sent by topk, topk_sampled and randk"},
      {"compression.values", "how sparse values travel: fp32, fp16 or bf16"},
      {"compression.bits", "qsgd's bits per coordinate"},
      {"compression.bucket", "qsgd's and sign's bucket size; 0: the codec's default"},
      {"compression.rank", "powersgd's rank"},
      {"compression.threshold", "the threshold codec's lambda; 0: 1/(2 sqrt(k))"},
      {"compression.unbiased", "randk and qsgd scale to stay unbiased (DIANA needs it)"},
      {"compression.shared_seed", "every peer draws the same random coordinates"},
      {"compression.feedback", "error feedback: none, ef14, ef21, ef21_sgdm, ef21_w or diana"},
      {"compression.eta", "ef21_sgdm's momentum weight"},
      {"compression.alpha", "diana's shift step; 0: 1/(ω + 1) from the codec's variance"},
      {"compression.weights", "ef21_w's weights: uniform or data (each peer's share of samples)"},
      {"compression.clip_norm", "dgc's local clipping norm; 0: off"},
      {"compression.warmup_every", "dgc's rounds per density warm-up stage; 0: one epoch"},
      {"compression.gamma", "CHOCO's consensus step; auto: 1 uncompressed, else measured"},
      {"compression.keyframe_every",
       "rounds between full replicas; 0: on (re)connection and request"},
      {"compression.adaptive", "Accordion: each layer's compression chosen per window"},
      {"compression.accordion_window", "rounds per Accordion window; 0: one epoch"},
      {"compression.accordion_eta", "a layer whose gradient norm changed this much is critical"},
      {"compression.broadcast.codec", "exchange: hub — how the hub compresses its broadcast"},
      {"compression.broadcast.density", "the broadcast's density (sparse codecs)"},
      {"compression.broadcast.values", "how the broadcast's sparse values travel"},
      {"compression.broadcast.feedback", "the hub's error feedback: none or ef14"},
      {"mixing.rule", "the robust rule that mixes a round's vectors (docs/ALGORITHMS.md §2)"},
      {"mixing.pre", "pre-aggregation steps applied in order: nnm, clip:C, arc, bucketing:S"},
      {"mixing.tau", "the clipping radius of cc and clipped_gossip; 0: adaptive"},
      {"mixing.weights",
       "metropolis, or byzantine_max: an edge to a declared Byzantine peer weighs the row's "
       "largest honest weight (the robust-gossip reference's convention)"},
      {"mixing.step",
       "the gossip step of a model exchange, x = c + step (z - c); auto: 1/lambda_max of the "
       "honest graph's Metropolis Laplacian (the run's declared Byzantine ids left out)"},
      {"mixing.iters", "cc's iterations"},
      {"mixing.exclude_equivocators", "leave peers convicted of equivocation out of later mixes"},
      {"rounds.count", "rounds to run"},
      {"rounds.deadline_ms", "the most a round waits (docs/PROTOCOL.md \"Closing a round\")"},
      {"rounds.quorum", "close a round once deg − b live neighbours spoke plus a grace"},
      {"rounds.quorum_grace", "the grace after the quorum, as a fraction of the time it took"},
      {"rounds.pace_floor", "a quorum-closed round lasts at least this × the median recent round"},
      {"rounds.adaptive_deadline", "learn the deadline from when each round's quorum came"},
      {"rounds.deadline_k", "MADs above the median the adaptive deadline allows"},
      {"rounds.deadline_min_ms", "the adaptive deadline's floor"},
      {"rounds.eval_every", "rounds between evaluations on the test set"},
      {"checkpoint.dir", "where checkpoints go (per node: DIR/node-K); empty: OUT/checkpoints"},
      {"checkpoint.every", "rounds between checkpoints; 0: none"},
      {"security.mode", "tls (mutual TLS, the default) or none (no proof of who speaks)"},
      {"security.dir", "the folder `phalanx certs` wrote (ca.pem, node-<id>.pem, node-<id>.key)"},
      {"security.ca", "the cluster CA's certificate, instead of security.dir"},
      {"security.cert", "this node's certificate ({id}: the node id), instead of security.dir"},
      {"security.key", "this node's private key ({id}: the node id), instead of security.dir"},
      {"security.statements",
       "sign each round's vector and prove equivocations (false: none is ever proven)"},
      {"control.token", "the bearer token of /control and /model; empty: both off"},
      {"control.token_file", "a 0600 file whose first line is the token, instead of control.token"},
      {"control.remote", "accept /control from other hosts (default: loopback only)"},
      {"byzantine.ID.attack", "what peer ID runs: an attack (docs/GUIDE.md, docs/PROTOCOL.md)"},
      {"byzantine.ID.tau", "the attack's scale (ipm 2, foe 0.1, alie 1.5); 0: its default"},
      {"byzantine.ID.sigma", "the gaussian attack's standard deviation"},
      {"byzantine.ID.eps", "dissensus' factor"},
      {"byzantine.ID.collude", "pool vectors with the other colluding attackers"},
      {"byzantine.ID.pivots",
       "opt_alie / opt_ipm / opt_foe against a pivot rule: search against the first honest "
       "peer's mix, or the average of every honest peer's (empire's objective)"},
  };
  return table;
}

base::FieldLog referenceFields() { return configFields("", "defaults", {}, /*describe=*/true); }

std::string sectionOf(const std::string& path) {
  const auto dot = path.find('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

}  // namespace

std::string_view fieldMeaning(std::string_view path) {
  const auto it = meanings().find(path);
  return it == meanings().end() ? std::string_view() : it->second;
}

std::vector<std::string> fieldsWithoutMeaning() {
  std::vector<std::string> out;
  for (const auto& f : referenceFields()) {
    if (fieldMeaning(f.path).empty()) out.push_back(f.path);
  }
  return out;
}

std::vector<std::string> meaningsWithoutField() {
  std::set<std::string> read;
  for (const auto& f : referenceFields()) read.insert(f.path);
  std::vector<std::string> out;
  for (const auto& [path, _] : meanings()) {
    if (!read.contains(std::string(path))) out.emplace_back(path);
  }
  return out;
}

std::string configReference() {
  std::string out =
      "# Config fields\n\n"
      "<!-- Generated by `phalanx config reference > docs/CONFIG.md` from the fields the loader\n"
      "reads (node/config.cc) and their meanings (node/config_reference.cc); a test fails when\n"
      "they differ. Edit those, not this file. -->\n\n"
      "Every field a config file (YAML) may hold, what it takes, its default and what it does.\n"
      "A field left out takes its default; an unknown field, or a value outside what it takes,\n"
      "stops the node with the file, the field and the allowed values (and the closest name\n"
      "when it looks like a typo). `phalanx config show C.yaml [--set path=value ...]` prints a\n"
      "config with every default filled in; docs/GUIDE.md shows them at work.\n";
  // By section, in the order the loader first reads each (top-level fields are read between
  // sections: they are gathered under one heading).
  const base::FieldLog fields = referenceFields();
  std::vector<std::string> sections;
  for (const auto& f : fields) {
    const std::string s = sectionOf(f.path);
    if (std::find(sections.begin(), sections.end(), s) == sections.end()) sections.push_back(s);
  }
  for (const auto& section : sections) {
    out += fmt::format("\n## {}\n\n| field | takes | default | meaning |\n|---|---|---|---|\n",
                       section.empty() ? "top level" : section);
    for (const auto& f : fields) {
      if (sectionOf(f.path) != section) continue;
      std::string kind = f.kind;
      std::replace(kind.begin(), kind.end(), '|', '/');
      out += fmt::format("| `{}` | {} | `{}` | {} |\n", f.path, kind,
                         f.value.empty() ? "\"\"" : f.value, fieldMeaning(f.path));
    }
  }
  return out;
}

std::string resolvedYaml(const base::FieldLog& fields) {
  std::string out;
  std::vector<std::string> open;  // the sections of the last field, outermost first
  for (const auto& f : fields) {
    std::vector<std::string> parts;
    for (std::size_t at = 0;;) {
      const std::size_t dot = f.path.find('.', at);
      parts.push_back(f.path.substr(at, dot - at));
      if (dot == std::string::npos) break;
      at = dot + 1;
    }
    const std::vector<std::string> sections(parts.begin(), parts.end() - 1);
    std::size_t common = 0;
    while (common < open.size() && common < sections.size() && open[common] == sections[common])
      ++common;
    for (std::size_t d = common; d < sections.size(); ++d)
      out += fmt::format("{:{}}{}:\n", "", 2 * d, sections[d]);
    open = sections;
    out += fmt::format("{:{}}{}: {}\n", "", 2 * sections.size(), parts.back(), f.value);
  }
  return out;
}

}  // namespace phalanx::node
