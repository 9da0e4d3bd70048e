// A blocking HTTP/1.1 GET over a plain loopback socket, for tests of the HTTP endpoints (no
// client library: the request is the one line a scraper sends, the reply is read to EOF).
// Threading: none of its own; each call uses its own socket, so any thread may call it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>

namespace tidal::testing {

struct HttpReply {
  int code = 0;      // 0: no answer (connect, send or read failed; see error)
  std::string body;  // after the header block
  std::string error;
};

inline HttpReply HttpGet(int port, const std::string& target, int timeout_s = 10) {
  HttpReply r;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return r.error = "socket failed", r;
  timeval tv{timeout_s, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return r.error = "connect to 127.0.0.1:" + std::to_string(port) + " failed", r;
  }
  const std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  for (size_t sent = 0; sent < req.size();) {
    const ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      ::close(fd);
      return r.error = "send failed", r;
    }
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      ::close(fd);
      return r.error = "read failed or timed out after " + std::to_string(raw.size()) + " bytes", r;
    }
    if (n == 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody"
  const size_t sp = raw.find(' ');
  const size_t end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || sp == std::string::npos || end == std::string::npos) {
    return r.error = "not an HTTP reply: \"" + raw.substr(0, 80) + "\"", r;
  }
  r.code = std::atoi(raw.c_str() + sp + 1);
  r.body = raw.substr(end + 4);
  return r;
}

}  // namespace tidal::testing
