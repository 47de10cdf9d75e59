#include "net/certs.h"

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string_view>
#include <system_error>

#include "base/files.h"
#include "net/openssl_error.h"

namespace phalanx::net {
namespace fs = std::filesystem;

fs::path caCertFile(const fs::path& dir) { return dir / "ca.pem"; }
fs::path caKeyFile(const fs::path& dir) { return dir / "ca.key"; }
fs::path nodeCertFile(const fs::path& dir, std::uint32_t id) {
  return dir / fmt::format("node-{}.pem", id);
}
fs::path nodeKeyFile(const fs::path& dir, std::uint32_t id) {
  return dir / fmt::format("node-{}.key", id);
}

namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Free>;
using Cert = std::unique_ptr<X509, Free>;
using Bio = std::unique_ptr<BIO, Free>;

bool addExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `key` named CN=`name`, signed by `issuer_key` (itself when `issuer` is null:
// the CA), with the extensions a CA or a TLS client and server need.
std::expected<Cert, std::string> makeCert(EVP_PKEY* key, const std::string& name, X509* issuer,
                                          EVP_PKEY* issuer_key, int days) {
  Cert cert(X509_new());
  if (!cert) return std::unexpected(sslError());
  X509_set_version(cert.get(), 2);  // v3: extensions
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return std::unexpected(sslError());
  serial[0] &= 0x7f;  // a positive number
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);  // tolerate a clock an hour behind
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), long(days) * 86400);
  X509_NAME* subject = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : subject);
  X509_set_pubkey(cert.get(), key);
  X509* signer = issuer ? issuer : cert.get();
  const bool ca = issuer == nullptr;
  const bool ok =
      addExtension(cert.get(), signer, NID_basic_constraints,
                   ca ? "critical,CA:TRUE" : "critical,CA:FALSE") &&
      addExtension(cert.get(), signer, NID_key_usage,
                   ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature") &&
      addExtension(cert.get(), signer, NID_subject_key_identifier, "hash") &&
      (ca || addExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always")) &&
      (ca || addExtension(cert.get(), signer, NID_ext_key_usage, "serverAuth,clientAuth"));
  if (!ok) return std::unexpected(sslError());
  if (X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256()) <= 0)
    return std::unexpected(sslError());
  return cert;
}

// What `write` puts in a memory BIO, written to `file` with `mode` (a key: 0600 from the start).
template <typename Write>
std::expected<void, std::string> writePem(const fs::path& file, mode_t mode, Write write) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || write(bio.get()) != 1)
    return std::unexpected(fmt::format("{}: {}", file.string(), sslError()));
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return base::writeFileWithMode(file, std::string_view(data, std::size_t(size)), mode);
}

std::expected<void, std::string> writeKey(const fs::path& file, EVP_PKEY* key) {
  return writePem(file, 0600, [&](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
  });
}

std::expected<void, std::string> writeCert(const fs::path& file, X509* cert) {
  return writePem(file, 0644, [&](BIO* b) { return PEM_write_bio_X509(b, cert); });
}

std::expected<Key, std::string> newKey() {
  Key key(EVP_EC_gen("P-256"));
  if (!key) return std::unexpected(sslError());
  return key;
}

// The CA in `dir`, read back, or made and written when it is not there.
std::expected<std::pair<Key, Cert>, std::string> clusterCa(const fs::path& dir, int days) {
  if (fs::exists(caCertFile(dir)) && fs::exists(caKeyFile(dir))) {
    Bio cert_bio(BIO_new_file(caCertFile(dir).c_str(), "r"));
    Bio key_bio(BIO_new_file(caKeyFile(dir).c_str(), "r"));
    Cert cert(cert_bio ? PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr) : nullptr);
    Key key(key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr) : nullptr);
    if (!cert || !key) {
      return std::unexpected(fmt::format("{} / {}: not a CA certificate and key: {}",
                                         caCertFile(dir).string(), caKeyFile(dir).string(),
                                         sslError()));
    }
    return std::pair{std::move(key), std::move(cert)};
  }
  auto key = newKey();
  if (!key) return std::unexpected(key.error());
  auto cert = makeCert(key->get(), "phalanx-cluster-ca", nullptr, nullptr, days);
  if (!cert) return std::unexpected(fmt::format("the cluster CA: {}", cert.error()));
  if (auto ok = writeKey(caKeyFile(dir), key->get()); !ok) return std::unexpected(ok.error());
  if (auto ok = writeCert(caCertFile(dir), cert->get()); !ok) return std::unexpected(ok.error());
  return std::pair{std::move(*key), std::move(*cert)};
}

}  // namespace

std::expected<void, std::string> writeClusterCerts(const fs::path& dir,
                                                   std::span<const std::uint32_t> ids, int days) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return std::unexpected(fmt::format("{}: {}", dir.string(), ec.message()));
  fs::permissions(dir, fs::perms::owner_all, ec);
  auto ca = clusterCa(dir, days);
  if (!ca) return std::unexpected(ca.error());
  for (const std::uint32_t id : ids) {
    auto key = newKey();
    if (!key) return std::unexpected(key.error());
    auto cert =
        makeCert(key->get(), fmt::format("node-{}", id), ca->second.get(), ca->first.get(), days);
    if (!cert) return std::unexpected(fmt::format("node {}: {}", id, cert.error()));
    if (auto ok = writeKey(nodeKeyFile(dir, id), key->get()); !ok) return ok;
    if (auto ok = writeCert(nodeCertFile(dir, id), cert->get()); !ok) return ok;
  }
  return {};
}

}  // namespace phalanx::net
