#include "net/tls.h"

#include <openssl/x509.h>

#include <string_view>

namespace phalanx::net {

void configureMutualTls(asio::ssl::context& context, const TlsFiles& files) {
  context.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                      asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                      asio::ssl::context::no_tlsv1_1);
  context.load_verify_file(files.ca);
  context.use_certificate_chain_file(files.cert);
  context.use_private_key_file(files.key, asio::ssl::context::pem);
  context.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
}

std::optional<std::uint32_t> certificateNodeId(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (!cert) return std::nullopt;
  char cn[256] = {};
  const int n =
      X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn);
  X509_free(cert);
  const std::string_view name(cn, n > 0 ? std::size_t(n) : 0);
  if (!name.starts_with("node-") || name.size() <= 5 || name.size() > 15) return std::nullopt;
  std::uint64_t id = 0;
  for (const char c : name.substr(5)) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + std::uint64_t(c - '0');
  }
  if (id > 0xffffffffull) return std::nullopt;
  return std::uint32_t(id);
}

}  // namespace phalanx::net
