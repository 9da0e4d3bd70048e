// tidal-engine's gRPC listener flags (see listen_flags.h).
#include "cmd/tidal_engine/listen_flags.h"

namespace tidal {

const std::vector<std::string> kListenFlags = {"--tls-cert", "--tls-key", "--tls-client-ca", "--insecure",
                                               "--socket-mode"};

const char* const kListenUsage =
    "  --tls-cert FILE --tls-key FILE --tls-client-ca FILE  mutual TLS on --listen (PEM; re-read every 10 s)\n"
    "  --insecure true  allow plaintext gRPC on a non-loopback TCP address (default: refused)\n"
    "  --socket-mode MODE  of a unix socket (default 0660)\n";

StatusOr<ListenOptions> ListenOptionsFromFlags(const cli::Flags& flags, const std::string& listen) {
  ListenOptions o;
  o.address = listen;
  o.tls_cert = flags.Get("--tls-cert");
  o.tls_key = flags.Get("--tls-key");
  o.tls_client_ca = flags.Get("--tls-client-ca");
  const std::string insecure = flags.Get("--insecure", "false");
  if (insecure != "true" && insecure != "false") {
    return Status::Error("--insecure: \"" + insecure + "\" must be true or false");
  }
  o.insecure = insecure == "true";
  auto mode = ParseSocketMode(flags.Get("--socket-mode", "0660"));
  if (!mode.ok()) return mode.status();
  o.socket_mode = *mode;
  return o;
}

}  // namespace tidal
