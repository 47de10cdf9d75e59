// `phalanx lab aggregate|attack|compress`: the command line of tools/lab_run.h.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>

#include "compress/compressor.h"
#include "robust/aggregator.h"
#include "robust/attacks.h"
#include "tools/command.h"
#include "tools/lab_run.h"

namespace phalanx::tools {

Command addLabCommand(CLI::App& root) {
  CLI::App* lab = root.add_subcommand("lab",
                                      "Run one aggregator, attack or compressor on vectors from "
                                      ".npy files (float32, rows = vectors)");
  lab->require_subcommand(1);

  auto agg = std::make_shared<LabAggregateOptions>();
  CLI::App* a = lab->add_subcommand("aggregate", "Mix the rows of X.npy with one robust rule");
  a->add_option("--rule", agg->rule,
                "rule: " + fmt::format("{}", fmt::join(robust::kRules.names(), ", ")))
      ->check(CLI::IsMember(robust::kRules.names()));
  a->add_option("--b", agg->b, "Byzantine budget b");
  a->add_option("--pivot", agg->pivot, "row that is the node's own vector (default 0)");
  a->add_option("--pre", agg->pre, "pre-aggregators in order, e.g. nnm,clip:2.0,arc,bucketing:2");
  a->add_option("--tau", agg->tau, "clipping radius (cc; clipped_gossip, 0 = adaptive)");
  a->add_option("--iters", agg->iters, "cc iterations")->check(CLI::PositiveNumber);
  a->add_option("--seed", agg->seed, "seed for bucketing");
  a->add_option("--in", agg->in, "X.npy, one vector per row")->required()->check(CLI::ExistingFile);
  a->add_option("--out", agg->out, "z.npy, the mix")->required();
  a->add_flag("--json", agg->json, "print one JSON line with the report");

  auto att = std::make_shared<LabAttackOptions>();
  CLI::App* t =
      lab->add_subcommand("attack", "Craft a Byzantine vector from the honest rows of H.npy");
  t->add_option("--name", att->name,
                "attack: " + fmt::format("{}", fmt::join(robust::kAttacks.names(), ", ")))
      ->required()
      ->check(CLI::IsMember(robust::kAttacks.names()));
  t->add_option("--tau", att->tau,
                "attack strength (ipm default 2.0, foe 0.1, alie 1.5; spectral: no search)");
  t->add_flag("--z", att->alie_z, "alie: tau = z from n = rows + f and f");
  t->add_option("--f", att->f, "number of Byzantine copies (opt_* searches, alie --z)");
  t->add_option("--agg", att->agg, "opt_*, spectral: the rule attacked")
      ->check(CLI::IsMember(robust::kRules.names()));
  t->add_option("--b", att->b, "opt_*: that rule's budget (default f)");
  t->add_option("--pre", att->pre, "opt_*: that rule's pre-aggregators");
  t->add_option("--sigma", att->sigma, "gaussian: standard deviation");
  t->add_flag("--scale-to-mean", att->scale_to_mean, "gaussian: sigma = |mean| / sqrt(d)");
  t->add_option("--mimic", att->mimic, "mimic: which honest row to copy");
  t->add_option("--eps", att->eps, "dissensus: eps");
  t->add_option("--target", att->target, "dissensus, spectral: the honest row under attack");
  t->add_option("--fiedler", att->fiedler,
                "spectral: the honest graph's Fiedler vector, one entry per row (v0,v1,...)")
      ->delimiter(',');
  t->add_option("--seed", att->seed, "seed (gaussian)");
  t->add_option("--in", att->in, "H.npy, one honest vector per row")
      ->required()
      ->check(CLI::ExistingFile);
  t->add_option("--out", att->out, "a.npy, the attack vector")->required();
  t->add_flag("--json", att->json, "print one JSON line");

  auto comp = std::make_shared<LabCompressOptions>();
  CLI::App* c = lab->add_subcommand("compress", "Encode and decode one vector with one compressor");
  c->add_option("--codec", comp->codec,
                fmt::format("codec: {}", fmt::join(compress::kCodecNames, ", ")))
      ->required()
      ->check(CLI::IsMember(compress::kCodecNames));
  c->add_option("--density", comp->density, "topk, topk_sampled, randk: fraction kept");
  addChoiceOption(c, "--values", comp->values, compress::kValueTypes, "sparse values");
  c->add_option("--bits", comp->bits, "qsgd: bits per entry with the sign (2..16)");
  c->add_option("--rank", comp->rank, "powersgd: rank (the input must be 2-D)");
  c->add_option("--bucket", comp->bucket,
                "qsgd, sign: bucket size (0: 128 for qsgd, 1024 for sign)");
  c->add_option("--threshold", comp->threshold, "threshold: lambda (0: 1/(2 sqrt(k)))");
  c->add_flag("--biased", comp->biased, "randk without the d/k scale; qsgd with its shrink");
  c->add_option("--seed", comp->seed, "the codec's seed (and --dim's data)");
  c->add_option("--in", comp->in, "x.npy: a vector, or a matrix (one layer)")
      ->check(CLI::ExistingFile);
  c->add_option("--dim", comp->dim, "instead of --in: a random vector of this length");
  c->add_option("--dist", comp->dist, "--dim's distribution: gauss, uniform")
      ->check(CLI::IsMember({"gauss", "uniform"}));
  c->add_option("--out", comp->out, "y.npy: the decoded vector");
  c->add_flag("--json", comp->json, "print one JSON line");

  return {lab, [a, t, c, agg, att, comp] {
            if (a->parsed()) return runLabAggregate(*agg);
            if (t->parsed()) return runLabAttack(*att);
            if (c->parsed()) return runLabCompress(*comp);
            return kExitBadInput;
          }};
}

}  // namespace phalanx::tools
