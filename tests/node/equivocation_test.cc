// Signed round statements and the equivocation detector: a signature holds for its statement
// only (sender, round, digest, run); two signed statements with different digests convict and
// give a proof anyone with the key checks; forged or unsigned reports convict nobody and cost a
// check only when they disagree; a false signature in the sender's own message convicts it here;
// rounds outside the window are forgotten.
#include "node/equivocation.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "net/signing.h"
#include "node/signed_rounds.h"
#include "tests/support/temp_dir.h"

namespace phalanx::node {
namespace {

constexpr std::string_view kRun = "run-digest";

// A digest named by a number (its first bytes), for statements about no particular vector.
Digest dg(std::uint64_t n) {
  Digest d{};
  for (std::size_t k = 0; k < 8; ++k) d[k] = std::uint8_t(n >> (8 * k));
  return d;
}

struct Keys {
  net::SigningKey alice = net::SigningKey::generate();  // peer 9: the one under watch
  net::SigningKey mallory = net::SigningKey::generate();
  std::shared_ptr<net::KeyRing> ring = std::make_shared<net::KeyRing>();
  Keys() {
    (*ring)[9] = alice.publicKey();
    (*ring)[4] = mallory.publicKey();
  }
  Statement by9(std::uint64_t round, std::uint64_t digest) const {
    return {9, round, dg(digest), alice.sign(kRun, 9, round, dg(digest))};
  }
};

TEST(Equivocation, DigestIsOfTheBytes) {
  const std::vector<float> a{1.0f, 2.0f}, b{1.0f, 2.0f}, c{1.0f, 2.0000002f};
  EXPECT_EQ(net::vectorDigest(a), net::vectorDigest(b));
  EXPECT_NE(net::vectorDigest(a), net::vectorDigest(c));
  const std::vector<float> zero{0.0f}, negative_zero{-0.0f};
  EXPECT_NE(net::vectorDigest(zero),
            net::vectorDigest(negative_zero));  // bit for bit, not by value
}

std::string hex(const Digest& d) {
  std::string out;
  for (std::uint8_t byte : d) out += fmt::format("{:02x}", byte);
  return out;
}

// The digest is BLAKE3 of the little-endian float32 bytes: the answers are b3sum's (Debian's
// b3sum, fed the same bytes), for an empty vector, a short one and a model-sized one (the SIMD
// paths of many 1 KiB chunks).
TEST(Equivocation, DigestIsBlake3OfTheFloatBytes) {
  EXPECT_EQ(hex(net::vectorDigest(std::span<const float>{})),
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262");
  const std::vector<float> three{1.0f, -2.5f, 0.1f};
  EXPECT_EQ(hex(net::vectorDigest(three)),
            "0f4cd200ae9e527b20929370ac61ccd52624491be484fa6f3d9c08d2bc9cc038");
  std::vector<float> model(79'510);
  for (std::size_t k = 0; k < model.size(); ++k) model[k] = float(k) * 0.25f;
  EXPECT_EQ(hex(net::vectorDigest(model)),
            "e63c5bf2c8a3b842a4089441b49cbae8c25745e40a266b05d7c18c2d096964c8");
}

TEST(Signing, ASignatureHoldsForItsStatementOnly) {
  const Keys k;
  const std::string sig = k.alice.sign(kRun, 9, 5, dg(111));
  EXPECT_EQ(sig.size(), 64u);  // r || s of P-256, whatever the nonce
  const auto key = k.alice.publicKey();
  EXPECT_TRUE(key->verify(kRun, 9, 5, dg(111), sig));
  EXPECT_FALSE(key->verify(kRun, 9, 5, dg(112), sig));                    // another digest
  EXPECT_FALSE(key->verify(kRun, 9, 6, dg(111), sig));                    // another round
  EXPECT_FALSE(key->verify(kRun, 8, 5, dg(111), sig));                    // another sender
  EXPECT_FALSE(key->verify("other run", 9, 5, dg(111), sig));             // another run
  EXPECT_FALSE(k.mallory.publicKey()->verify(kRun, 9, 5, dg(111), sig));  // another key
  std::string flipped = sig;
  flipped[10] ^= 1;
  EXPECT_FALSE(key->verify(kRun, 9, 5, dg(111), flipped));
  EXPECT_FALSE(key->verify(kRun, 9, 5, dg(111), std::string()));
  EXPECT_FALSE(key->verify(kRun, 9, 5, dg(111), std::string(64, '\xff')));  // s beyond the order
}

TEST(Equivocation, TwoSignedDifferentStatementsConvictWithAProofOthersCheck) {
  const Keys k;
  EquivocationDetector d(k.ring, std::string(kRun));
  EXPECT_TRUE(d.own(k.by9(5, 111)).fresh);
  const auto agree = d.report(/*reporter=*/1, k.by9(5, 111));
  EXPECT_FALSE(agree.convicted);
  EXPECT_EQ(d.signaturesChecked(), 0u);  // agreeing statements cost no check
  const auto caught = d.report(2, k.by9(5, 222));
  EXPECT_TRUE(caught.convicted);
  ASSERT_TRUE(caught.proof.has_value());
  EXPECT_TRUE(d.convicted(9));
  EXPECT_EQ(d.convictedAt().at(9), 5u);

  EquivocationDetector elsewhere(k.ring, std::string(kRun));  // a peer that saw neither
  EXPECT_TRUE(elsewhere.proof(/*reporter=*/3, *caught.proof));
  EXPECT_TRUE(elsewhere.convicted(9));
  EquivocationDetector other_run(k.ring, "another run");  // proofs do not cross runs
  EXPECT_FALSE(other_run.proof(3, *caught.proof));
}

TEST(Equivocation, ForgedReportsConvictNobodyAndCostOneCheckEach) {
  const Keys k;
  EquivocationDetector d(k.ring, std::string(kRun));
  d.own(k.by9(5, 111));
  for (std::uint32_t liar = 1; liar <= 6; ++liar) {  // any number of liars
    Statement forged{9, 5, dg(100 + liar), k.mallory.sign(kRun, 9, 5, dg(100 + liar))};
    const auto out = d.report(liar, forged);
    EXPECT_FALSE(out.convicted);
    EXPECT_FALSE(out.fresh);                         // not relayed
    EXPECT_FALSE(d.report(liar, forged).convicted);  // a repeat is not looked at again
  }
  EXPECT_FALSE(d.convicted(9));
  EXPECT_EQ(d.signaturesChecked(), 1u + 6u);  // the own statement once, each forgery once
  EXPECT_EQ(d.signaturesRefused(), 6u);
  // A forged proof convicts nobody either.
  const Proof forged{k.by9(5, 111), {9, 5, dg(333), k.mallory.sign(kRun, 9, 5, dg(333))}};
  EXPECT_FALSE(d.proof(1, forged));
  EXPECT_FALSE(d.convicted(9));
  // Unsigned reports are no evidence at all.
  EXPECT_FALSE(d.report(7, Statement{9, 5, dg(444), ""}).convicted);
}

TEST(Equivocation, AFalseSignatureFromTheSenderItselfConvictsItHere) {
  const Keys k;
  EquivocationDetector d(k.ring, std::string(kRun));
  // Peer 9 sent this node vector 111 under a signature that does not hold; nothing to check
  // until some statement disagrees.
  EXPECT_FALSE(d.own(Statement{9, 5, dg(111), std::string(64, '\1')}).convicted);
  const auto out = d.report(2, k.by9(5, 222));
  EXPECT_TRUE(out.convicted);
  EXPECT_FALSE(out.proof.has_value());  // nobody else can be shown it
}

TEST(Equivocation, WithoutTheSendersKeyNothingIsConvicted) {
  const Keys k;
  EquivocationDetector d(std::make_shared<net::KeyRing>(), std::string(kRun));
  d.own(Statement{9, 5, dg(111), std::string(64, '\1')});
  EXPECT_FALSE(d.report(2, k.by9(5, 222)).convicted);
  EXPECT_FALSE(d.proof(3, Proof{k.by9(6, 1), k.by9(6, 2)}));
  EXPECT_FALSE(d.convicted(9));
}

TEST(Equivocation, OutsideTheWindowIsIgnored) {
  const Keys k;
  EquivocationDetector d(k.ring, std::string(kRun), /*window=*/4);
  d.advance(100);
  EXPECT_FALSE(d.own(k.by9(90, 111)).fresh);  // too old
  d.report(1, k.by9(90, 222));
  EXPECT_FALSE(d.convicted(9));
  d.own(k.by9(99, 111));
  d.advance(110);  // round 99 is forgotten
  EXPECT_FALSE(d.report(1, k.by9(99, 222)).convicted);
  EXPECT_FALSE(d.convicted(9));
}

TEST(SignedRounds, ARestartedPeerNeverSignsARoundItSignedBefore) {
  testing::TempDir dir;
  const auto file = dir.path() / "signed-rounds";
  {
    auto first = SignedRounds::open(file);
    ASSERT_TRUE(first.has_value()) << first.error();
    EXPECT_FALSE((*first)->before().has_value());
    for (std::uint64_t t = 0; t <= 7; ++t) EXPECT_TRUE((*first)->mayLog(t));
    EXPECT_TRUE((*first)->mayLog(7));  // the same round again (several messages) in one run
  }
  auto again = SignedRounds::open(file);  // the restart, resumed from round 5's checkpoint
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ((*again)->before(), std::optional<std::uint64_t>(7));
  for (std::uint64_t t = 5; t <= 7; ++t) EXPECT_FALSE((*again)->mayLog(t)) << t;
  EXPECT_TRUE((*again)->mayLog(8));
  // A file that is not a record is refused with its name.
  std::ofstream(dir.path() / "bad") << "abc";
  const auto bad = SignedRounds::open(dir.path() / "bad");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().find("bad"), std::string::npos);
}

}  // namespace
}  // namespace phalanx::node
