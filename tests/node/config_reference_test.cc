// The config reference and the resolved config (node/config_reference.h): every field the
// loader reads has a meaning, docs/CONFIG.md is the generated text, a resolved config reads back
// as itself, and typos get the closest name.
#include "node/config_reference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "node/attack_spec.h"
#include "node/config.h"
#include "tests/support/process.h"

namespace phalanx::node {
namespace {

using ::testing::HasSubstr;

TEST(ConfigReference, EveryFieldTheLoaderReadsHasAMeaningAndNoMeaningIsStale) {
  EXPECT_THAT(fieldsWithoutMeaning(), ::testing::IsEmpty())
      << "add a line for each to node/config_reference.cc, then `phalanx config reference > "
         "docs/CONFIG.md`";
  EXPECT_THAT(meaningsWithoutField(), ::testing::IsEmpty());
}

TEST(ConfigReference, DocsConfigMdIsTheGeneratedReference) {
  std::ifstream in(testing::sourceDir() + "/docs/CONFIG.md");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), configReference())
      << "docs/CONFIG.md is stale: `build/phalanx config reference > docs/CONFIG.md`";
  // Lines the reference must hold: a field with its kind, default and meaning; the template
  // entry of the byzantine map; gamma's own syntax.
  EXPECT_THAT(configReference(),
              HasSubstr("| `rounds.deadline_min_ms` | a whole number in [1, 3600000] | `5` |"));
  EXPECT_THAT(configReference(), HasSubstr("| `byzantine.ID.attack` | text |"));
  EXPECT_THAT(configReference(),
              HasSubstr("| `compression.gamma` | auto, or a number in (0, 1] | `auto` |"));
}

TEST(ConfigReference, AResolvedConfigReadsBackAsItselfWithEveryDefaultFilledIn) {
  const std::string yaml =
      "seed: 7\nmodel: {kind: mlp, hidden: [32, 16]}\nmixing: {rule: cs_plus, pre: [nnm]}\n"
      "compression: {codec: topk, gamma: 0.5}\nsecurity: {mode: none}\n"
      "control: {token: \"a b:c\"}\nbyzantine: {3: {attack: alie}}\n";
  const base::FieldLog fields =
      configFields(yaml, "test.yaml", std::vector<std::string>{"rounds.count=9"});
  const std::string resolved = resolvedYaml(fields);
  EXPECT_THAT(resolved, HasSubstr("seed: 7\n"));
  EXPECT_THAT(resolved, HasSubstr("  hidden: [32, 16]\n"));
  EXPECT_THAT(resolved, HasSubstr("  count: 9\n"));
  EXPECT_THAT(resolved, HasSubstr("  deadline_min_ms: 5\n"));  // a default, filled in
  EXPECT_THAT(resolved, HasSubstr("  token: \"a b:c\"\n"));
  EXPECT_THAT(resolved, HasSubstr("byzantine:\n  3:\n    attack: alie\n"));
  const base::FieldLog again = configFields(resolved, "resolved.yaml");
  ASSERT_EQ(again.size(), fields.size());
  for (std::size_t i = 0; i < fields.size(); ++i) {
    EXPECT_EQ(again[i].path, fields[i].path);
    EXPECT_EQ(again[i].value, fields[i].value) << fields[i].path;
  }
}

TEST(ConfigReference, TyposGetTheClosestName) {
  const auto error = [](const std::string& yaml) -> std::string {
    try {
      parseConfig(yaml, "c.yaml");
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_THAT(error("mixin: {rule: nna}\n"), HasSubstr("c.yaml: mixin: unknown field (did you "
                                                       "mean 'mixing'?)"));
  EXPECT_THAT(error("optimizer: {momentun: 0.5}\n"), HasSubstr("did you mean 'momentum'?"));
  EXPECT_THAT(error("mixing: {rule: cs_pluss}\n"), HasSubstr("did you mean 'cs_plus'?"));
  EXPECT_THAT(error("byzantine: {1: {attack: alei}}\n"), HasSubstr("did you mean 'alie'?"));
  EXPECT_THAT(error("byzantine: {1: {attack: equivocate:alei}}\n"),
              HasSubstr("did you mean 'equivocate:alie'?"));
  // Nothing close: no guess.
  EXPECT_THAT(error("zzzzzz: 1\n"), ::testing::Not(HasSubstr("did you mean")));
}

}  // namespace
}  // namespace phalanx::node
