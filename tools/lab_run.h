// The work of `phalanx lab`: one robust rule, attack or codec on .npy vectors, for researchers and
// for cross-checking against other libraries (ByzFL, MoNNA's code). Each returns an exit code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compress/compressor.h"

namespace phalanx::tools {

struct LabAggregateOptions {
  std::string rule = "nna";
  std::size_t b = 0;
  std::size_t pivot = 0;
  std::string pre;
  double tau = 0;
  int iters = 1;
  std::uint64_t seed = 1;
  std::string in, out;
  bool json = false;
};

struct LabAttackOptions {
  std::string name;
  std::optional<double> tau;
  bool alie_z = false;
  std::size_t f = 1;
  double sigma = 1.0;
  bool scale_to_mean = false;
  std::size_t mimic = 0;
  double eps = 1.5;
  std::optional<std::size_t> target;
  std::vector<double> fiedler;  // spectral: v_k per honest row
  std::string agg = "nna";
  std::optional<std::size_t> b;
  std::string pre;
  std::uint64_t seed = 1;
  std::string in, out;
  bool json = false;
};

struct LabCompressOptions {
  std::string codec = "topk";
  double density = 0.01;
  compress::ValueType values = compress::ValueType::kFp32;
  int bits = 8;
  int rank = 2;
  std::size_t bucket = 0;
  double threshold = 0;
  bool biased = false;
  std::uint64_t seed = 1;
  std::string in;
  std::size_t dim = 0;
  std::string dist = "gauss";
  std::string out;
  bool json = false;
};

// Mixes the rows of `in` with one rule into `out`; --json prints the report.
int runLabAggregate(const LabAggregateOptions& o);
// Crafts one Byzantine vector from the honest rows of `in` into `out`.
int runLabAttack(const LabAttackOptions& o);
// Encodes and decodes one vector with one codec; prints size, time and error.
int runLabCompress(const LabCompressOptions& o);

}  // namespace phalanx::tools
