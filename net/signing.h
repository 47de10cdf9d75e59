// Round statements and their signatures (docs/PROTOCOL.md "Equivocation"): each peer signs, once
// per round, "sender i's vector for round t has digest h" with the key of its certificate
// (ECDSA P-256 as `phalanx certs` makes them, or Ed25519), so that two signed statements with
// different digests for one sender and round prove an equivocation to anyone who holds i's
// certificate. Signatures are fixed-size (ECDSA's r || s, not DER) so that a message's size never
// depends on the random nonce: simulated runs stay bit-identical.
#pragma once

#include <array>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace phalanx::net {

// What a statement says a vector is: BLAKE3 of its float32 bytes. A statement binds its vector
// only as far as no signer can find two vectors with one digest, so the digest is cryptographic
// (with a 64-bit or non-cryptographic hash an equivocator makes two vectors that share one, and
// signs once for both).
inline constexpr std::size_t kDigestBytes = 32;
using Digest = std::array<std::uint8_t, kDigestBytes>;
Digest vectorDigest(std::span<const float> values);
// A digest as a wire field carries it; nullopt unless exactly kDigestBytes long.
std::optional<Digest> digestOf(std::string_view bytes);
std::string_view bytesOf(const Digest& digest);

// The bytes a statement signs: a context string, the run's domain (its configuration digest:
// a statement of another run proves nothing in this one), the sender, the round and the digest.
std::vector<std::uint8_t> statementBytes(std::string_view domain, std::uint32_t sender,
                                         std::uint64_t round, const Digest& digest);

namespace detail {
struct Pkey;  // an OpenSSL EVP_PKEY, freed with the last owner
}

class VerifyKey;

// A private key that signs statements.
class SigningKey {
 public:
  // A fresh P-256 key (the simulation's peers: no files).
  static SigningKey generate();
  // A PEM private key (security.dir's node-<id>.key); the error names the file.
  static std::expected<SigningKey, std::string> load(const std::filesystem::path& file);

  std::string sign(std::string_view domain, std::uint32_t sender, std::uint64_t round,
                   const Digest& digest) const;
  std::shared_ptr<const VerifyKey> publicKey() const;

 private:
  explicit SigningKey(std::shared_ptr<detail::Pkey> key) : key_(std::move(key)) {}
  std::shared_ptr<detail::Pkey> key_;
};

// A public key that checks statements.
class VerifyKey {
 public:
  bool verify(std::string_view domain, std::uint32_t sender, std::uint64_t round,
              const Digest& digest, std::span<const std::uint8_t> signature) const;
  bool verify(std::string_view domain, std::uint32_t sender, std::uint64_t round,
              const Digest& digest, std::string_view signature) const;

  explicit VerifyKey(std::shared_ptr<detail::Pkey> key) : key_(std::move(key)) {}

 private:
  std::shared_ptr<detail::Pkey> key_;
};

// The public key of node `id`'s certificate `cert`, checked: signed by the CA of `ca` and named
// CN=node-<id> (the name the TLS handshake binds to the id). The error names the file.
std::expected<std::shared_ptr<const VerifyKey>, std::string> loadCertificateKey(
    const std::filesystem::path& cert, const std::filesystem::path& ca, std::uint32_t id);

// Every peer's public key this node can check statements with, by id.
using KeyRing = std::map<std::uint32_t, std::shared_ptr<const VerifyKey>>;

}  // namespace phalanx::net
