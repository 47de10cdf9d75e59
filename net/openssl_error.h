// OpenSSL's last error as text, its queue emptied: for messages that name a file or an operation.
#pragma once

#include <openssl/err.h>

#include <string>

namespace phalanx::net {

inline std::string sslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

}  // namespace phalanx::net
