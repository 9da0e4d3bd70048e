// tidalctl explain / queues: read tidal-engine's explain API over HTTP and print it kubectl-style.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cmd/tidalctl/commands.h"

namespace tidal::cli {
namespace {

// GET http://HOST:PORT/PATH; returns false with `err` on a transport error.
bool HttpGet(const std::string& base, const std::string& path, int* code, std::string* body, std::string* err) {
  std::string hostport = base;
  if (hostport.rfind("http://", 0) == 0) hostport = hostport.substr(7);
  while (!hostport.empty() && hostport.back() == '/') hostport.pop_back();
  const auto colon = hostport.rfind(':');
  if (colon == std::string::npos) return *err = "--engine: expected http://HOST:PORT, got " + base, false;
  const std::string host = hostport.substr(0, colon);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  try {
    sa.sin_port = htons(static_cast<uint16_t>(std::stoi(hostport.substr(colon + 1))));
  } catch (...) {
    return *err = "--engine: invalid port in " + base, false;
  }
  if (inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &sa.sin_addr) != 1) {
    return *err = "--engine: invalid IPv4 host " + host, false;
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    *err = "cannot reach tidal-engine at " + base + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return false;
  }
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + hostport + "\r\nConnection: close\r\n\r\n";
  (void)!::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string resp;
  char buf[8192];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) resp.append(buf, static_cast<size_t>(n));
  ::close(fd);
  const auto sp = resp.find(' ');
  const auto hdr_end = resp.find("\r\n\r\n");
  if (sp == std::string::npos || hdr_end == std::string::npos) return *err = "malformed HTTP response", false;
  *code = std::atoi(resp.c_str() + sp + 1);
  *body = resp.substr(hdr_end + 4);
  return true;
}

std::string UrlEncode(const std::string& s) {
  std::ostringstream o;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '/' || c == '~') {
      o << c;
    } else {
      o << '%' << std::hex << std::uppercase << std::setw(2) << std::setfill('0') << static_cast<int>(c);
    }
  }
  return o.str();
}

}  // namespace

int Explain(const Args& args) {
  Flags flags(args);
  if (!flags.Parse({"--engine", "-o", "--output"}) || flags.positional().size() != 1) {
    std::cerr << "usage: tidalctl explain NAMESPACE/NAME [--engine http://127.0.0.1:8081] [-o text|json]\n";
    return 2;
  }
  const std::string output = flags.Get("-o", flags.Get("--output", "text"));
  int code = 0;
  std::string body, err;
  if (!HttpGet(flags.Get("--engine", "http://127.0.0.1:8081"),
               "/explain?workload=" + UrlEncode(flags.positional()[0]) + "&format=json", &code, &body, &err)) {
    std::cerr << "tidalctl explain: " << err << "\n";
    return 1;
  }
  if (code != 200) {
    std::cerr << "tidalctl explain: " << body;
    return 1;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const std::exception& e) {
    std::cerr << "tidalctl explain: engine answered non-JSON: " << e.what() << "\n";
    return 1;
  }
  if (output == "json") {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  auto field = [&](const char* k) { return j.contains(k) && !j[k].is_null() ? (j[k].is_string() ? j[k].get<std::string>() : j[k].dump()) : "-"; };
  std::cout << "Workload:  " << field("workload") << "\n"
            << "Queue:     " << field("queue") << "  Class: " << field("class") << "\n"
            << "State:     " << field("state") << "\n";
  if (j.contains("members")) std::cout << "Members:   " << j["members"].dump() << "\n";
  if (j.contains("position")) std::cout << "Position:  " << field("position") << " of " << field("queue_length") << "\n";
  if (j.contains("eta_unix")) std::cout << "ETA:       " << (j["eta_unix"].is_null() ? "unknown" : "t=" + j["eta_unix"].dump()) << "\n";
  if (j.contains("why")) std::cout << "Why:       " << field("why") << "\n";
  std::cout << "Quota:     " << field("quota") << "\n" << "Last:      " << field("last") << "\n";
  return 0;
}

int Queues(const Args& args) {
  Flags flags(args);
  if (!flags.Parse({"--engine", "-o", "--output"}) || !flags.positional().empty()) {
    std::cerr << "usage: tidalctl queues [--engine http://127.0.0.1:8081] [-o table|json]\n";
    return 2;
  }
  int code = 0;
  std::string body, err;
  if (!HttpGet(flags.Get("--engine", "http://127.0.0.1:8081"), "/queues?format=json", &code, &body, &err)) {
    std::cerr << "tidalctl queues: " << err << "\n";
    return 1;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const std::exception& e) {
    std::cerr << "tidalctl queues: engine answered non-JSON: " << e.what() << "\n";
    return 1;
  }
  if (flags.Get("-o", flags.Get("--output", "table")) == "json") {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << std::left << std::setw(20) << "QUEUE" << std::setw(12) << "GPUS" << std::setw(12) << "NOMINAL"
            << std::setw(12) << "BORROWED" << std::setw(10) << "SHARE" << std::setw(10) << "PENDING" << std::setw(10)
            << "K8S-GPUS" << "SLURM-GPUS\n";
  for (const auto& q : j) {
    auto num = [&](const char* k) -> std::string {
      if (!q.contains(k) || !q[k].contains("gpus")) return "-";
      return std::to_string(static_cast<int64_t>(q[k]["gpus"].get<double>()));
    };
    double pending = 0;
    if (q.contains("pending")) {
      for (const auto& [c, v] : q["pending"].items()) pending += v.get<double>();
    }
    std::ostringstream share;
    share << std::fixed << std::setprecision(3) << q.value("share", 0.0);
    std::cout << std::setw(20) << q.value("queue", "") << std::setw(12) << num("usage") << std::setw(12) << num("nominal")
              << std::setw(12) << num("borrowed") << std::setw(10) << share.str() << std::setw(10) << pending;
    auto door = [&](const char* d) -> std::string {
      if (!q.contains("door_gpus") || !q["door_gpus"].contains(d)) return "-";
      return std::to_string(static_cast<int64_t>(q["door_gpus"][d].get<double>()));
    };
    std::cout << std::setw(10) << door("kubernetes") << door("slurm") << "\n";
  }
  return 0;
}

}  // namespace tidal::cli
