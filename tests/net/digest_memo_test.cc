#include "net/digest_memo.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace phalanx::net {
namespace {

std::vector<float> vectorOf(float base, std::size_t n = 1000) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = base + float(i) * 0.5f;
  return v;
}

// Every answer is vectorDigest's: the memo only saves the hashing of bytes it has seen.
TEST(DigestMemo, AnswersAsVectorDigestAndComparesBytesItHasHashed) {
  DigestMemo memo(4);
  const auto a = vectorOf(1), b = vectorOf(2);
  EXPECT_EQ(memo.digest(a), vectorDigest(a));
  EXPECT_TRUE(memo.matches(a, vectorDigest(a)));  // compared, not hashed
  EXPECT_EQ(memo.counters().hashed, 1u);
  EXPECT_EQ(memo.counters().compared, 1u);
  // A vector that is not the one hashed under the claim: hashed, and refused.
  EXPECT_FALSE(memo.matches(b, vectorDigest(a)));
  EXPECT_EQ(memo.counters().hashed, 2u);
  // One element changed, same claim: the bytes differ, so it is hashed again and refused.
  auto a2 = a;
  a2[999] += 1;
  EXPECT_FALSE(memo.matches(a2, vectorDigest(a)));
  // A shorter vector with the same leading bytes is not the vector hashed either.
  EXPECT_FALSE(memo.matches(std::span(a).first(10), vectorDigest(a)));
  EXPECT_TRUE(memo.matches(b, vectorDigest(b)));
  EXPECT_EQ(memo.counters().compared, 2u);
  // Without a memo: the plain digest.
  EXPECT_TRUE(digestMatches(nullptr, a, vectorDigest(a)));
  EXPECT_FALSE(digestMatches(nullptr, b, vectorDigest(a)));
  EXPECT_EQ(digestVia(nullptr, a), vectorDigest(a));
}

TEST(DigestMemo, KeepsNoMoreBytesThanAllowed) {
  DigestMemo memo(100, 2 * 1000 * sizeof(float));  // two vectors' worth
  const auto a = vectorOf(1), b = vectorOf(2), c = vectorOf(3);
  memo.digest(a);
  memo.digest(b);
  memo.digest(c);  // a forgotten
  EXPECT_TRUE(memo.matches(b, vectorDigest(b)));
  EXPECT_TRUE(memo.matches(c, vectorDigest(c)));
  EXPECT_EQ(memo.counters().compared, 2u);
  EXPECT_TRUE(memo.matches(a, vectorDigest(a)));  // hashed again
  EXPECT_EQ(memo.counters().compared, 2u);
}

TEST(DigestMemo, ForgetsTheOldestBeyondItsCapacityAndStillAnswersRight) {
  DigestMemo memo(2);
  const auto a = vectorOf(1), b = vectorOf(2), c = vectorOf(3);
  memo.digest(a);
  memo.digest(b);
  memo.digest(c);  // a forgotten
  EXPECT_TRUE(memo.matches(a, vectorDigest(a)));
  EXPECT_EQ(memo.counters().compared, 0u);  // hashed again
  EXPECT_EQ(memo.counters().hashed, 4u);
  EXPECT_TRUE(memo.matches(c, vectorDigest(c)));
  EXPECT_EQ(memo.counters().compared, 1u);
}

// The simulation's workers ask at once; every answer stays right.
TEST(DigestMemo, ConcurrentAskersAllGetTheRightAnswer) {
  DigestMemo memo(8);
  std::vector<std::vector<float>> vectors;
  for (int k = 0; k < 8; ++k) vectors.push_back(vectorOf(float(k)));
  std::vector<std::thread> threads;
  std::atomic<int> wrong = 0;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 200; ++k) {
        const auto& v = vectors[std::size_t(k + t) % 8];
        const auto& other = vectors[std::size_t(k + t + 1) % 8];
        if (!memo.matches(v, vectorDigest(v))) ++wrong;
        if (memo.matches(other, vectorDigest(v))) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace phalanx::net
