// Checkpoints: exact round trips, atomic saves keeping the newest two, and every kind of damage
// detected so that loading falls back to the previous file.
#include "train/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "tests/support/temp_dir.h"

namespace phalanx::train {
namespace {

using ::testing::HasSubstr;

Checkpoint sample(std::uint64_t round) {
  Checkpoint c;
  c.round = round;
  c.putFloats("model", std::vector<float>{1.5f, -0.0f, std::numeric_limits<float>::infinity(),
                                          float(round)});
  c.putU64s("rng", std::vector<std::uint64_t>{0xdeadbeefcafef00dull, round});
  c.sections["empty"] = {};
  return c;
}

std::string parseError(std::span<const std::uint8_t> bytes) {
  try {
    parseCheckpoint(bytes);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

TEST(Checkpoint, RoundTripsBitForBit) {
  const Checkpoint c = sample(42);
  const Checkpoint back = parseCheckpoint(serializeCheckpoint(c));
  EXPECT_EQ(back.round, 42u);
  EXPECT_EQ(back.sections, c.sections);
  const auto model = back.floats("model");
  ASSERT_EQ(model.size(), 4u);
  EXPECT_TRUE(std::signbit(model[1]));
  EXPECT_TRUE(std::isinf(model[2]));
  EXPECT_EQ(back.u64s("rng")[0], 0xdeadbeefcafef00dull);
  EXPECT_THROW(back.floats("momentum"), CheckpointError);
  Checkpoint odd;
  odd.sections["x"] = std::vector<std::uint8_t>(6);
  EXPECT_THROW(odd.u64s("x"), CheckpointError);  // 6 bytes are not whole u64 values
}

TEST(Checkpoint, EveryFlippedByteAndEveryTruncationIsDetected) {
  const auto bytes = serializeCheckpoint(sample(7));
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    auto damaged = bytes;
    damaged[i] ^= 0x20;
    EXPECT_NE(parseError(damaged), "") << "flip at " << i;
  }
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_NE(parseError(std::span(bytes).first(n)), "") << "truncated to " << n;
  }
  EXPECT_THAT(parseError(std::span(bytes).first(bytes.size() - 1)), HasSubstr("checksum"));
}

TEST(CheckpointStore, KeepsTheNewestTwoAndFallsBackPastDamage) {
  testing::TempDir dir;
  CheckpointStore store(dir.path() / "ckpt");
  EXPECT_FALSE(store.loadLatest().checkpoint);  // no folder yet: nothing to resume
  for (std::uint64_t round : {10u, 20u, 30u}) store.save(sample(round));
  auto files = store.files();
  ASSERT_EQ(files.size(), 2u);
  EXPECT_THAT(files[0].filename().string(), HasSubstr("checkpoint-000000000030.phx"));

  auto loaded = store.loadLatest();
  ASSERT_TRUE(loaded.checkpoint);
  EXPECT_EQ(loaded.checkpoint->round, 30u);
  EXPECT_TRUE(loaded.skipped.empty());

  // A torn write of the newest file: the previous one is used, and the reason reported.
  std::filesystem::resize_file(files[0], std::filesystem::file_size(files[0]) / 2);
  loaded = store.loadLatest();
  ASSERT_TRUE(loaded.checkpoint);
  EXPECT_EQ(loaded.checkpoint->round, 20u);
  ASSERT_EQ(loaded.skipped.size(), 1u);
  EXPECT_THAT(loaded.skipped[0], HasSubstr("checksum mismatch"));

  // A file renamed to another round is not trusted either.
  std::filesystem::copy_file(files[1], dir.path() / "ckpt" / "checkpoint-000000000099.phx");
  loaded = store.loadLatest();
  EXPECT_EQ(loaded.checkpoint->round, 20u);
  EXPECT_THAT(loaded.skipped[0], HasSubstr("holds round 20"));

  // Stray files and leftovers of an interrupted save are ignored.
  std::ofstream(dir.path() / "ckpt" / ".checkpoint-000000000040.tmp") << "partial";
  std::ofstream(dir.path() / "ckpt" / "notes.txt") << "x";
  EXPECT_EQ(store.files().size(), 3u);
}

TEST(CheckpointStore, SaveIntoAnUnwritablePlaceIsAClearError) {
  testing::TempDir dir;
  std::ofstream(dir.path() / "file") << "not a folder";
  CheckpointStore store(dir.path() / "file" / "ckpt");
  try {
    store.save(sample(1));
    FAIL() << "expected an error";
  } catch (const CheckpointError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot create"));
  }
}

}  // namespace
}  // namespace phalanx::train
