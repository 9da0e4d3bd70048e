#include "cmd/tidal_engine/state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

namespace tidal {
namespace {

std::string Errno() { return std::strerror(errno); }

// How to start without the file, said with each refusal.
std::string Refused(const std::string& path, const std::string& why) {
  return "--state-file " + path + ": " + why +
         ". The engine does not start without the usage history and the doors' nodes it holds; fix it, or move it "
         "aside (mv " + path + " " + path + ".bad) to start without them";
}

// The whole file, or why it cannot be read.
StatusOr<std::string> ReadAll(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error(Refused(path, "cannot open: " + Errno()));
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = Status::Error(Refused(path, "cannot read: " + Errno()));
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

constexpr const char* kKnownKeys[] = {"version", "time", "usage", "doorNodes", "drains", "runtimeHistory"};

}  // namespace

StatusOr<StateFileRead> ReadStateFile(const std::string& path, Engine& engine) {
  StateFileRead out;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return out;  // a first start
    return Status::Error(Refused(path, "cannot stat: " + Errno()));
  }
  if (S_ISDIR(st.st_mode)) return Status::Error(Refused(path, "is a directory, not a file"));
  if (!S_ISREG(st.st_mode)) return Status::Error(Refused(path, "is not a regular file"));
  auto text = ReadAll(path);
  if (!text.ok()) return text.status();
  if (text->find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::Error(Refused(path, "empty (" + std::to_string(text->size()) +
                                           " bytes; the engine never writes an empty file: lost in a crash "
                                           "before its data reached the disk?)"));
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    std::string why = e.what();  // "[json.exception.parse_error.101] parse error at line 1, column 52: ..."
    if (const size_t at = why.find("] "); at != std::string::npos) why = why.substr(at + 2);
    return Status::Error(Refused(path, "not JSON (" + std::to_string(text->size()) + " bytes, cut short?): " + why));
  }
  if (!j.is_object()) return Status::Error(Refused(path, "expected a JSON object, found " + std::string(j.type_name())));
  if (auto v = j.find("version"); v != j.end()) {
    if (!v->is_number_integer() || v->get<int64_t>() < 1) {
      return Status::Error(Refused(path, "version: expected a positive integer, found " + v->dump().substr(0, 64)));
    }
    if (v->get<int64_t>() > kStateFileVersion) {
      return Status::Error(Refused(path, "version: " + std::to_string(v->get<int64_t>()) +
                                             " (written by a newer engine; this one reads up to " +
                                             std::to_string(kStateFileVersion) + ")"));
    }
  }
  if (!j.contains("time") || !j["time"].is_number_integer()) {
    return Status::Error(Refused(path, "time: expected an integer (unix seconds), found " +
                                           (j.contains("time") ? j["time"].dump().substr(0, 64) : std::string("none"))));
  }
  if (!j.contains("usage") || !j["usage"].is_object()) {
    return Status::Error(Refused(path, "usage: expected {queue: {resource: number}}, found " +
                                           (j.contains("usage") ? std::string(j["usage"].type_name()) : std::string("none"))));
  }
  out.found = true;
  for (const auto& [key, v] : j.items()) {
    bool known = false;
    for (const char* k : kKnownKeys) known = known || key == k;
    if (!known) out.warnings.push_back(key.substr(0, 100) + ": not a key this engine knows (a newer engine's?); ignored");
  }
  if (Status s = engine.LoadLedger(*text); !s.ok()) {
    for (const auto& r : s.reasons()) out.warnings.push_back(r);
  }
  return out;
}

std::string StateFileText(const std::string& saved_ledger) {
  nlohmann::json j = nlohmann::json::parse(saved_ledger, nullptr, false);
  if (!j.is_object()) return saved_ledger;
  j["version"] = kStateFileVersion;
  return j.dump();
}

Status WriteStateFile(const std::string& path, const std::string& tmp, const std::string& text) {
  auto fail = [&](const std::string& step, int fd) {
    const std::string why = "cannot write state file " + path + ": " + step + " " + tmp + ": " + Errno();
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());  // the last complete file stays; no partial file is left beside it
    return Status::Error(why);
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("creating", -1);
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("writing", fd);
    done += static_cast<size_t>(n);
  }
  // The data on the disk before the name points at it: else a power loss can leave an empty file.
  if (::fsync(fd) != 0) return fail("flushing", fd);
  if (::close(fd) != 0) return fail("closing", -1);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("renaming over it", -1);
  // The rename itself on the disk: else a power loss can bring the old file back.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || ::fsync(dfd) != 0) {
    const std::string why = "state file " + path + " written, but flushing its directory failed: " + Errno();
    if (dfd >= 0) ::close(dfd);
    return Status::Error(why);
  }
  ::close(dfd);
  return Status::Ok();
}

std::string StateFileTemporary(const std::string& path, const std::string& host, pid_t pid) {
  return path + ".tmp." + host + "." + std::to_string(pid);
}

std::vector<std::string> RemoveStaleStateTemporaries(const std::string& path, const std::string& host, pid_t own) {
  std::vector<std::string> removed;
  const std::filesystem::path p(path);
  const std::string prefix = p.filename().string() + ".tmp." + host + ".";
  const std::string mine = std::filesystem::path(StateFileTemporary(path, host, own)).filename().string();
  std::error_code ec;
  const std::filesystem::path dir = p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path();
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name == mine) continue;
    const std::string pid = name.substr(prefix.size());
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code rm;
    if (std::filesystem::remove(it->path(), rm)) removed.push_back(it->path().string());
  }
  return removed;
}

}  // namespace tidal
