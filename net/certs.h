// A cluster's certificates for `security: tls` (net/tls.h): one CA, and per node an EC P-256 key
// and a certificate with CN=node-<id> signed by it — the name the TLS handshake binds to the id
// a Hello claims. Made with OpenSSL's library; nothing is downloaded or shelled out.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <span>
#include <string>

namespace phalanx::net {

// What a certificate folder holds (what `phalanx certs` writes, what security.dir names).
std::filesystem::path caCertFile(const std::filesystem::path& dir);
std::filesystem::path caKeyFile(const std::filesystem::path& dir);
std::filesystem::path nodeCertFile(const std::filesystem::path& dir, std::uint32_t id);
std::filesystem::path nodeKeyFile(const std::filesystem::path& dir, std::uint32_t id);

// Writes DIR/ca.pem and DIR/ca.key (kept when both are there already: more nodes join the same
// cluster) and DIR/node-<id>.pem, DIR/node-<id>.key for each id. Keys are written 0600, the
// folder is made 0700. Certificates last `days`. The error says which file and why.
std::expected<void, std::string> writeClusterCerts(const std::filesystem::path& dir,
                                                   std::span<const std::uint32_t> ids,
                                                   int days = 825);

}  // namespace phalanx::net
