// Runs the fuzz target without libFuzzer (which needs a clang that has C++23 <expected>):
// every file of a seed corpus, then a bounded number of seeded random mutations of them.
//   frame_fuzz_driver [--runs N] [--seed S] CORPUS_DIR      smoke run (exit 0 unless a crash)
//   frame_fuzz_driver --write-corpus DIR                     writes the seed corpus
#include <google/protobuf/stubs/logging.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "compress/compressor.h"
#include "net/frame.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes frameOf(const phalanx::net::v1::Envelope& e) { return phalanx::net::encodeFrame(e); }

// Seeds: one frame of every kind, round frames carrying each codec's message, and a stream.
std::vector<std::pair<std::string, Bytes>> seeds() {
  using namespace phalanx;
  std::vector<std::pair<std::string, Bytes>> out;
  net::v1::Envelope hello;
  hello.mutable_hello()->set_protocol_version(1);
  hello.mutable_hello()->set_cluster_id("fuzz");
  hello.mutable_hello()->set_model_dim(4096);
  out.emplace_back("hello", frameOf(hello));
  net::v1::Envelope bye;
  bye.mutable_goodbye()->set_reason(net::v1::Goodbye::LEAVING);
  out.emplace_back("goodbye", frameOf(bye));
  net::v1::Envelope beat;
  beat.mutable_heartbeat()->set_round(7);
  out.emplace_back("heartbeat", frameOf(beat));
  std::vector<float> x(4096);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = float(int(i * 2654435761u % 2001) - 1000) / 1000.0f;
  Bytes stream;
  for (const auto& codec : compress::kCodecNames) {
    compress::CompressorConfig c{
        .codec = compress::codecNamed(codec)->id, .density = 0.01, .seed = 3};
    if (c.codec == compress::CodecId::kPowersgd) c.layers = {{64, 64}};
    auto made = compress::makeCompressor(c);
    compress::Encoded e;
    if (!made || !(*made)->encode(x, e)) continue;
    net::v1::Envelope round;
    round.mutable_round()->set_round(1);
    round.mutable_round()->set_kind(net::v1::RoundMessage::DELTA);
    round.mutable_round()->set_payload(std::string(e.bytes.begin(), e.bytes.end()));
    auto f = frameOf(round);
    if (f.size() < 8192) stream.insert(stream.end(), f.begin(), f.end());
    out.emplace_back("round-" + codec, std::move(f));
  }
  out.emplace_back("stream", std::move(stream));
  return out;
}

Bytes readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

int main(int argc, char** argv) {
  // Invalid UTF-8 in a string field is refused either way; protobuf's per-message log line
  // would only bury the result.
  google::protobuf::SetLogHandler(nullptr);
  std::uint64_t runs = 20000, seed = 1;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::stoull(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::stoull(argv[++i]);
    } else if (a == "--write-corpus" && i + 1 < argc) {
      std::filesystem::create_directories(argv[i + 1]);
      for (const auto& [name, bytes] : seeds()) {
        std::ofstream(std::filesystem::path(argv[i + 1]) / name, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
      }
      return 0;
    } else {
      dir = a;
    }
  }
  std::vector<Bytes> corpus;
  if (!dir.empty()) {
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      corpus.push_back(readFile(entry.path()));
  }
  for (auto& [_, bytes] : seeds()) corpus.push_back(std::move(bytes));
  for (const auto& c : corpus) LLVMFuzzerTestOneInput(c.data(), c.size());
  // Mutations: flip, overwrite, insert, delete, truncate, splice — libFuzzer's basic moves.
  std::mt19937_64 rng(seed);
  for (std::uint64_t r = 0; r < runs; ++r) {
    Bytes b = corpus[rng() % corpus.size()];
    const int moves = 1 + int(rng() % 6);
    for (int m = 0; m < moves; ++m) {
      const std::size_t at = b.empty() ? 0 : rng() % b.size();
      switch (rng() % 6) {
        case 0:
          if (!b.empty()) b[at] ^= std::uint8_t(1u << (rng() % 8));
          break;
        case 1:
          if (!b.empty()) b[at] = std::uint8_t(rng());
          break;
        case 2:
          b.insert(b.begin() + std::ptrdiff_t(at), std::uint8_t(rng()));
          break;
        case 3:
          if (!b.empty()) b.erase(b.begin() + std::ptrdiff_t(at));
          break;
        case 4:
          b.resize(at);
          break;
        default: {
          const Bytes& other = corpus[rng() % corpus.size()];
          if (!other.empty()) {
            const std::size_t from = rng() % other.size();
            b.insert(b.begin() + std::ptrdiff_t(at), other.begin() + std::ptrdiff_t(from),
                     other.end());
          }
        }
      }
    }
    LLVMFuzzerTestOneInput(b.data(), b.size());
  }
  std::printf("fuzz smoke: %zu seeds, %llu mutated inputs, no crash\n", corpus.size(),
              (unsigned long long)runs);
  return 0;
}
