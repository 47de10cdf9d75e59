// `phalanx bench SUITE`: the command line of the suites in tools/bench_{cpu,gpu,net}.h. Prints
// Google Benchmark's JSON; extra --benchmark_* flags pass through.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "tools/bench_cpu.h"
#include "tools/bench_gpu.h"
#include "tools/bench_net.h"
#include "tools/command.h"

namespace phalanx::tools {
namespace {

struct BenchOptions {
  std::string suite;
  bool quick = false;
  NetBenchOptions net;
};

int runBench(const BenchOptions& o, CLI::App* app) {
  if (o.suite == "net") return runNetBench(o.net);
  if (o.suite == "aggregate") {
    registerAggregateBenchmarks(o.quick);
  } else if (o.suite == "compress") {
    registerCompressBenchmarks(o.quick);
  } else if (o.suite == "attack") {
    registerAttackBenchmarks(o.quick);
  } else if (o.suite == "digest") {
    registerDigestBenchmarks(o.quick);
  } else if (o.suite == "gpu") {
    if (const std::string why = registerGpuBenchmarks(o.quick); !why.empty()) {
      fmt::print(stderr, "{}\n", why);
      return kExitBadInput;
    }
  } else {
    return kExitBadInput;
  }
  std::vector<std::string> args{"phalanx-bench"};
  bool has_format = false;
  for (const auto& extra : app->remaining()) {
    has_format |= extra.starts_with("--benchmark_format");
    args.push_back(extra);
  }
  if (!has_format) args.push_back("--benchmark_format=json");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = int(argv.size());
  benchmark::Initialize(&argc, argv.data());
  if (benchmark::ReportUnrecognizedArguments(argc, argv.data())) return kExitBadInput;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return kExitOk;
}

}  // namespace

Command addBenchCommand(CLI::App& root) {
  auto opts = std::make_shared<BenchOptions>();
  CLI::App* app = root.add_subcommand(
      "bench",
      "Benchmarks printing Google Benchmark JSON. Suites: aggregate (every rule, n in {8, 32}, "
      "d in {1M, 25.6M}, with its ratio to a memory-read floor timed in the same run); compress "
      "(every codec's encode and decode at d in {1M, 25.6M}, sparse ones at density 1% and 0.1%, "
      "with the same floor); gpu (the CUDA kernels on device buffers: top-k, distances, weighted "
      "sums, trimmed mean, median, packing, each with its ratio to a device-memory read floor "
      "timed in the same run); attack (a colluding coalition's opt_alie / opt_foe line search "
      "against NNA and cs_plus_pt per round at f = 1 and 8, once for all as phalanx's coalition "
      "leader runs it and once per colluder, each as a ratio to the f = 1 search timed in the "
      "same run); digest (the statements' BLAKE3 of one vector beside OpenSSL's SHA-256, d in "
      "{79,510, 1M, 25.6M}, each with its ratio to a read floor); net "
      "(the transport's loopback throughput against raw sockets in the "
      "same run, and round-trip latency; --bytes, --json). --benchmark_filter=REGEX and other "
      "--benchmark_* flags pass through.");
  app->add_option("suite", opts->suite, "aggregate | compress | attack | digest | gpu | net")
      ->required()
      ->check(CLI::IsMember({"aggregate", "compress", "attack", "digest", "gpu", "net"}));
  app->add_option("--bytes", opts->net.bytes, "net: message size in bytes (default 100 MB)");
  app->add_flag("--json", opts->net.json, "net: one JSON line");
  app->add_flag("--quick", opts->quick, "tiny sizes, for smoke tests");
  // What bench does not know goes to Google Benchmark, not up to the root (whose options
  // otherwise follow any subcommand): here --log-level goes before `bench`.
  app->allow_extras();
  app->fallthrough(false);
  return {app, [opts, app] { return runBench(*opts, app); }};
}

}  // namespace phalanx::tools
