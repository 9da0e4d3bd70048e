#include "server/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace tidal {

Status HttpServer::Start(const std::string& addr) {
  const auto colon = addr.rfind(':');
  if (colon == std::string::npos) return Status::Error("--http-addr: expected HOST:PORT, got \"" + addr + "\"");
  const std::string host = addr.substr(0, colon);
  int port = 0;
  try {
    port = std::stoi(addr.substr(colon + 1));
  } catch (...) {
    return Status::Error("--http-addr: invalid port in \"" + addr + "\"");
  }
  if (port < 0 || port > 65535) return Status::Error("--http-addr: port out of range in \"" + addr + "\"");
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.empty() ? "0.0.0.0" : host.c_str(), &sa.sin_addr) != 1) {
    return Status::Error("--http-addr: invalid IPv4 host \"" + host + "\"");
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::Error(std::string("http: socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(listen_fd_, 64) != 0) {
    const std::string err = std::strerror(errno);
    ::close(listen_fd_);
    listen_fd_ = -1;
    return Status::Error("http: cannot listen on " + addr + ": " + err);
  }
  socklen_t len = sizeof sa;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
  port_ = ntohs(sa.sin_port);
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void HttpServer::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

void HttpServer::Loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Serve(fd);
    ::close(fd);
  }
}

void HttpServer::Serve(int fd) {
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string req;
  char buf[4096];
  while (req.find("\r\n\r\n") == std::string::npos && req.size() < 65536) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    req.append(buf, static_cast<size_t>(n));
  }
  HttpResponse resp;
  const auto sp1 = req.find(' ');
  const auto sp2 = sp1 == std::string::npos ? std::string::npos : req.find(' ', sp1 + 1);
  if (sp2 == std::string::npos) {
    resp = {400, "text/plain; charset=utf-8", "bad request\n"};
  } else if (req.compare(0, sp1, "GET") != 0) {
    resp = {405, "text/plain; charset=utf-8", "only GET is supported\n"};
  } else {
    std::string target = req.substr(sp1 + 1, sp2 - sp1 - 1), query;
    if (auto q = target.find('?'); q != std::string::npos) {
      query = target.substr(q + 1);
      target.resize(q);
    }
    auto h = handlers_.find(target);
    resp = h == handlers_.end() ? HttpResponse{404, "text/plain; charset=utf-8", "not found: " + target + "\n"}
                                : h->second(target, query);
  }
  const char* reason = resp.code == 200 ? "OK" : resp.code == 404 ? "Not Found" : resp.code == 503 ? "Service Unavailable" : "Error";
  std::string out = "HTTP/1.1 " + std::to_string(resp.code) + " " + reason + "\r\nContent-Type: " + resp.content_type +
                    "\r\nContent-Length: " + std::to_string(resp.body.size()) + "\r\nConnection: close\r\n\r\n" + resp.body;
  size_t off = 0;
  while (off < out.size()) {
    const ssize_t n = ::send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

}  // namespace tidal
