#include "net/signing.h"

#include <blake3.h>
#include <fmt/format.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstring>
#include <stdexcept>

#include "base/bytes.h"
#include "net/openssl_error.h"

namespace phalanx::net {
namespace fs = std::filesystem;

namespace detail {
struct Pkey {
  explicit Pkey(EVP_PKEY* k) : key(k) {}
  ~Pkey() { EVP_PKEY_free(key); }
  Pkey(const Pkey&) = delete;
  Pkey& operator=(const Pkey&) = delete;
  EVP_PKEY* key;
};
}  // namespace detail

namespace {

constexpr std::string_view kContext = "phalanx round statement v2";

bool isEd25519(EVP_PKEY* key) { return EVP_PKEY_get_base_id(key) == EVP_PKEY_ED25519; }

// ECDSA's r and s, each as many bytes as the curve's order.
std::size_t scalarBytes(EVP_PKEY* key) { return std::size_t(EVP_PKEY_get_bits(key) + 7) / 8; }

struct MdCtx {
  MdCtx() : ctx(EVP_MD_CTX_new()) {}
  ~MdCtx() { EVP_MD_CTX_free(ctx); }
  MdCtx(const MdCtx&) = delete;
  MdCtx& operator=(const MdCtx&) = delete;
  EVP_MD_CTX* ctx;
};

const EVP_MD* digestFor(EVP_PKEY* key) { return isEd25519(key) ? nullptr : EVP_sha256(); }

}  // namespace

Digest vectorDigest(std::span<const float> values) {
  // BLAKE3 (collision resistant, 256 bits): every vector heard is digested once, and at this
  // model size the digest was most of a signed round's extra CPU. One 318,040-byte vector here
  // (tools/dev/statements-bench's machine, AVX-512): 51 us with BLAKE3, 176 us with OpenSSL's
  // SHA-256 on SHA-NI.
  Digest out{};
  blake3_hasher hasher;
  blake3_hasher_init(&hasher);
  blake3_hasher_update(&hasher, values.data(), values.size_bytes());
  blake3_hasher_finalize(&hasher, out.data(), out.size());
  return out;
}

std::optional<Digest> digestOf(std::string_view bytes) {
  if (bytes.size() != kDigestBytes) return std::nullopt;
  Digest out;
  std::memcpy(out.data(), bytes.data(), kDigestBytes);
  return out;
}

std::string_view bytesOf(const Digest& digest) {
  return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

std::vector<std::uint8_t> statementBytes(std::string_view domain, std::uint32_t sender,
                                         std::uint64_t round, const Digest& digest) {
  // Lengths first, so that no (domain, fields) pair reads as another.
  std::vector<std::uint8_t> out(kContext.size() + 8 + domain.size() + 4 + 8 + kDigestBytes);
  std::memcpy(out.data(), kContext.data(), kContext.size());
  base::storeLittle(domain.size(), std::span(out).subspan(kContext.size(), 8), 8);
  if (!domain.empty()) std::memcpy(out.data() + kContext.size() + 8, domain.data(), domain.size());
  auto rest = std::span(out).subspan(kContext.size() + 8 + domain.size());
  base::storeLittle(sender, rest.subspan(0, 4), 4);
  base::storeLittle(round, rest.subspan(4, 8), 8);
  std::memcpy(rest.data() + 12, digest.data(), kDigestBytes);
  return out;
}

SigningKey SigningKey::generate() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (!key) throw std::runtime_error("cannot make a P-256 key: " + sslError());
  return SigningKey(std::make_shared<detail::Pkey>(key));
}

std::expected<SigningKey, std::string> SigningKey::load(const fs::path& file) {
  FILE* f = std::fopen(file.c_str(), "r");
  if (!f)
    return std::unexpected(fmt::format("{}: cannot open: {}", file.string(), strerror(errno)));
  EVP_PKEY* key = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (!key)
    return std::unexpected(fmt::format("{}: not a PEM private key: {}", file.string(), sslError()));
  const int id = EVP_PKEY_get_base_id(key);
  if (id != EVP_PKEY_EC && id != EVP_PKEY_ED25519) {
    EVP_PKEY_free(key);
    return std::unexpected(
        fmt::format("{}: an EC or Ed25519 key is needed to sign round statements", file.string()));
  }
  return SigningKey(std::make_shared<detail::Pkey>(key));
}

std::string SigningKey::sign(std::string_view domain, std::uint32_t sender, std::uint64_t round,
                             const Digest& digest) const {
  const auto message = statementBytes(domain, sender, round, digest);
  MdCtx md;
  EVP_PKEY* key = key_->key;
  std::size_t size = 0;
  if (!md.ctx || EVP_DigestSignInit(md.ctx, nullptr, digestFor(key), nullptr, key) != 1 ||
      EVP_DigestSign(md.ctx, nullptr, &size, message.data(), message.size()) != 1) {
    throw std::runtime_error("cannot sign a round statement: " + sslError());
  }
  std::vector<unsigned char> der(size);
  if (EVP_DigestSign(md.ctx, der.data(), &size, message.data(), message.size()) != 1)
    throw std::runtime_error("cannot sign a round statement: " + sslError());
  if (isEd25519(key)) return std::string(reinterpret_cast<const char*>(der.data()), size);
  // DER's length varies with r and s; r || s at the order's width does not.
  const unsigned char* p = der.data();
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, long(size));
  if (!sig) throw std::runtime_error("cannot read back an ECDSA signature: " + sslError());
  const std::size_t n = scalarBytes(key);
  std::string out(2 * n, '\0');
  auto* raw = reinterpret_cast<unsigned char*>(out.data());
  const bool ok = BN_bn2binpad(ECDSA_SIG_get0_r(sig), raw, int(n)) == int(n) &&
                  BN_bn2binpad(ECDSA_SIG_get0_s(sig), raw + n, int(n)) == int(n);
  ECDSA_SIG_free(sig);
  if (!ok) throw std::runtime_error("an ECDSA signature does not fit its curve's width");
  return out;
}

std::shared_ptr<const VerifyKey> SigningKey::publicKey() const {
  return std::make_shared<const VerifyKey>(key_);
}

bool VerifyKey::verify(std::string_view domain, std::uint32_t sender, std::uint64_t round,
                       const Digest& digest, std::string_view signature) const {
  return verify(
      domain, sender, round, digest,
      std::span(reinterpret_cast<const std::uint8_t*>(signature.data()), signature.size()));
}

bool VerifyKey::verify(std::string_view domain, std::uint32_t sender, std::uint64_t round,
                       const Digest& digest, std::span<const std::uint8_t> signature) const {
  EVP_PKEY* key = key_->key;
  std::vector<unsigned char> der;
  std::span<const unsigned char> checked = signature;
  if (!isEd25519(key)) {
    const std::size_t n = scalarBytes(key);
    if (signature.size() != 2 * n) return false;
    ECDSA_SIG* sig = ECDSA_SIG_new();
    BIGNUM* r = BN_bin2bn(signature.data(), int(n), nullptr);
    BIGNUM* s = BN_bin2bn(signature.data() + n, int(n), nullptr);
    if (!sig || !r || !s || ECDSA_SIG_set0(sig, r, s) != 1) {
      BN_free(r);
      BN_free(s);
      ECDSA_SIG_free(sig);
      return false;
    }
    const int size = i2d_ECDSA_SIG(sig, nullptr);
    der.resize(std::size_t(std::max(size, 0)));
    unsigned char* p = der.data();
    const bool ok = size > 0 && i2d_ECDSA_SIG(sig, &p) == size;
    ECDSA_SIG_free(sig);
    if (!ok) return false;
    checked = der;
  }
  const auto message = statementBytes(domain, sender, round, digest);
  MdCtx md;
  const bool ok =
      md.ctx && EVP_DigestVerifyInit(md.ctx, nullptr, digestFor(key), nullptr, key) == 1 &&
      EVP_DigestVerify(md.ctx, checked.data(), checked.size(), message.data(), message.size()) == 1;
  ERR_clear_error();  // a forged signature leaves its reason on the queue
  return ok;
}

std::expected<std::shared_ptr<const VerifyKey>, std::string> loadCertificateKey(
    const fs::path& cert_file, const fs::path& ca_file, std::uint32_t id) {
  const auto read = [](const fs::path& file) -> X509* {
    FILE* f = std::fopen(file.c_str(), "r");
    if (!f) return nullptr;
    X509* c = PEM_read_X509(f, nullptr, nullptr, nullptr);
    std::fclose(f);
    return c;
  };
  X509* cert = read(cert_file);
  if (!cert) return std::unexpected(fmt::format("{}: not a PEM certificate", cert_file.string()));
  X509* ca = read(ca_file);
  std::string error;
  char cn[256] = {};
  EVP_PKEY* ca_key = ca ? X509_get0_pubkey(ca) : nullptr;
  if (!ca_key) {
    error = fmt::format("{}: not a PEM certificate", ca_file.string());
  } else if (X509_verify(cert, ca_key) != 1) {
    error = fmt::format("{}: not signed by the CA of {}", cert_file.string(), ca_file.string());
  } else if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn) <
                 0 ||
             std::string(cn) != fmt::format("node-{}", id)) {
    error = fmt::format("{}: its name is '{}', not node-{}", cert_file.string(), cn, id);
  }
  EVP_PKEY* key = error.empty() ? X509_get_pubkey(cert) : nullptr;
  X509_free(cert);
  X509_free(ca);
  ERR_clear_error();
  if (!error.empty()) return std::unexpected(error);
  if (!key) return std::unexpected(fmt::format("{}: no public key", cert_file.string()));
  return std::make_shared<const VerifyKey>(std::make_shared<detail::Pkey>(key));
}

}  // namespace phalanx::net
