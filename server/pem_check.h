// Startup checks of PEM files for gRPC TLS (OpenSSL): a certificate file holds at least one X.509
// certificate; a key file holds a private key matching the first certificate of its pair. They turn
// a typo or a mismatched pair into an error naming the flag at startup, instead of handshakes that
// fail later. Pure functions: no state, no threads.
#pragma once

#include <string>

#include "core/api/status.h"

namespace tidal {

Status CheckCertificateFile(const std::string& path, const std::string& flag);
Status CheckCertificatePair(const std::string& cert_path, const std::string& key_path, const std::string& cert_flag,
                            const std::string& key_flag);

}  // namespace tidal
