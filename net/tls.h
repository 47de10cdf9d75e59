// Mutual TLS between peers (docs/PROTOCOL.md "Identity"): every node presents a certificate from
// the cluster's CA, verifies the other's, and is known by the id in its certificate's CN
// ("node-<id>").
#pragma once

#include <openssl/ssl.h>

#include <asio/ssl.hpp>
#include <cstdint>
#include <optional>

#include "net/transport.h"

namespace phalanx::net {

// `context` set up for mutual TLS with `files` (TLS 1.2 and later, the peer's certificate
// required and verified against the CA). Throws std::system_error for a file it cannot use.
void configureMutualTls(asio::ssl::context& context, const TlsFiles& files);

// The node id in the verified peer certificate's CN ("node-<id>", the id below 2^32); nullopt
// without a certificate or for any other name.
std::optional<std::uint32_t> certificateNodeId(SSL* ssl);

}  // namespace phalanx::net
