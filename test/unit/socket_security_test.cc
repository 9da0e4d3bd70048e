// tidal-engine's unix socket (server/grpc_listener.h): the socket's mode and owner after the bind,
// and the directory checks that refuse a place where another user could replace the socket; an
// address (unix socket or TCP port) another engine listens on is refused, not taken over.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "server/grpc_listener.h"
#include "server/service.h"

namespace tidal {
namespace {

namespace fs = std::filesystem;

class SocketSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tidal-sock-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    engine_ = std::move(Engine::Create(EngineConfig{})).value();
    service_ = std::make_unique<EngineService>(*engine_);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    fs::remove_all(dir_);
  }
  StatusOr<std::unique_ptr<grpc::Server>> Start(const fs::path& sock, unsigned mode = 0660) {
    ListenOptions o;
    o.address = "unix://" + sock.string();
    o.socket_mode = mode;
    grpc::ServerBuilder b;
    b.RegisterService(service_.get());
    int port = -1;
    auto s = StartGrpcServer(b, o, &port);
    EXPECT_EQ(port, 0);
    return s;
  }
  static bool Connects(const fs::path& sock) {
    auto stub = v1::Engine::NewStub(grpc::CreateChannel("unix://" + sock.string(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    v1::ExplainRequest req;
    req.set_workload("ns/x");
    v1::ExplainResponse resp;
    return stub->Explain(&ctx, req, &resp).ok();
  }
  static unsigned ModeOf(const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  }
  fs::path dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<EngineService> service_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(SocketSecurityTest, SocketGetsTheModeAndOwner) {
  const fs::path sock = dir_ / "engine.sock";
  auto s = Start(sock);
  ASSERT_TRUE(s.ok()) << s.status().Message();
  server_ = std::move(*s);
  EXPECT_EQ(ModeOf(sock), 0660u);
  struct stat st {};
  ASSERT_EQ(::lstat(sock.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_TRUE(Connects(sock));
}

TEST_F(SocketSecurityTest, OtherModeFromTheFlag) {
  const fs::path sock = dir_ / "engine.sock";
  auto s = Start(sock, 0600);
  ASSERT_TRUE(s.ok()) << s.status().Message();
  server_ = std::move(*s);
  EXPECT_EQ(ModeOf(sock), 0600u);
}

TEST_F(SocketSecurityTest, WorldWritableDirectoryWithoutStickyBitIsRefused) {
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  auto s = Start(dir_ / "engine.sock");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().Message().find("world-writable without the sticky bit"), std::string::npos) << s.status().Message();
  EXPECT_FALSE(fs::exists(dir_ / "engine.sock"));
  ASSERT_EQ(::chmod(dir_.c_str(), 01777), 0);  // like /tmp
  auto ok = Start(dir_ / "engine.sock");
  ASSERT_TRUE(ok.ok()) << ok.status().Message();
  server_ = std::move(*ok);
}

TEST_F(SocketSecurityTest, DirectoryOwnedByAnotherUserIsRefused) {
  const fs::path sub = dir_ / "theirs";
  fs::create_directory(sub);
  if (::chown(sub.c_str(), 12345, 12345) != 0) GTEST_SKIP() << "not root: cannot give a directory away";
  if (::geteuid() == 12345) GTEST_SKIP();
  auto s = Start(sub / "engine.sock");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().Message().find("owned by uid 12345"), std::string::npos) << s.status().Message();
}

TEST_F(SocketSecurityTest, MissingDirectoryIsCreatedPrivate) {
  const fs::path sock = dir_ / "run" / "engine.sock";
  auto s = Start(sock);
  ASSERT_TRUE(s.ok()) << s.status().Message();
  server_ = std::move(*s);
  EXPECT_EQ(ModeOf(dir_ / "run"), 0750u);
  EXPECT_TRUE(Connects(sock));
  auto deeper = Start(dir_ / "a" / "b" / "engine.sock");  // only the last component is created
  ASSERT_FALSE(deeper.ok());
  EXPECT_NE(deeper.status().Message().find("cannot create socket directory"), std::string::npos);
}

// Regression: the engine removed whatever was at the socket path before binding (a typo in
// --listen could delete a file); now only a stale socket is removed.
TEST_F(SocketSecurityTest, RegularFileAtTheSocketPathIsKept) {
  const fs::path victim = dir_ / "precious.txt";
  std::ofstream(victim) << "data\n";
  auto s = Start(victim);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().Message().find("is not a socket"), std::string::npos) << s.status().Message();
  EXPECT_TRUE(fs::is_regular_file(victim));
}

TEST_F(SocketSecurityTest, StaleSocketIsReplaced) {
  const fs::path sock = dir_ / "engine.sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, sock.c_str(), sizeof(sa.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ::close(fd);  // the file stays: a stale socket, as after a crash
  ASSERT_TRUE(fs::is_socket(sock));
  auto s = Start(sock);
  ASSERT_TRUE(s.ok()) << s.status().Message();
  server_ = std::move(*s);
  EXPECT_TRUE(Connects(sock));
}

// Regression: a second engine on the same --listen socket removed the first one's live socket
// as "stale" and bound its own; new clients reached the second engine, the first served no one.
TEST_F(SocketSecurityTest, LiveSocketIsRefusedAndKept) {
  const fs::path sock = dir_ / "engine.sock";
  auto first = Start(sock);
  ASSERT_TRUE(first.ok()) << first.status().Message();
  server_ = std::move(*first);
  struct stat before {};
  ASSERT_EQ(::lstat(sock.c_str(), &before), 0);
  auto second = Start(sock);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().Message().find("another process is listening on " + sock.string()), std::string::npos)
      << second.status().Message();
  struct stat after {};
  ASSERT_EQ(::lstat(sock.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);  // the first engine's socket, not a new one
  EXPECT_TRUE(Connects(sock));
}

// Regression: gRPC's default SO_REUSEPORT let a second engine bind the same HOST:PORT (both
// logged "serving gRPC on ..." and the kernel split new connections between them).
TEST_F(SocketSecurityTest, TcpPortInUseIsRefused) {
  auto listen = [&](const std::string& address, int* port) {
    ListenOptions o;
    o.address = address;
    grpc::ServerBuilder b;
    b.RegisterService(service_.get());
    return StartGrpcServer(b, o, port);
  };
  int port = 0;
  auto first = listen("127.0.0.1:0", &port);
  ASSERT_TRUE(first.ok()) << first.status().Message();
  server_ = std::move(*first);
  ASSERT_GT(port, 0);
  int again = 0;
  auto second = listen("127.0.0.1:" + std::to_string(port), &again);
  EXPECT_FALSE(second.ok()) << "a second server bound port " << port;
  if (second.ok()) (*second)->Shutdown();
  else EXPECT_NE(second.status().Message().find("cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos);
}

TEST(SocketMode, Parse) {
  EXPECT_EQ(*ParseSocketMode("0660"), 0660u);
  EXPECT_EQ(*ParseSocketMode("600"), 0600u);
  EXPECT_EQ(*ParseSocketMode("0666"), 0666u);
  for (const char* bad : {"", "rw", "0888", "04660", "0440", "0060", "12345"}) {
    auto m = ParseSocketMode(bad);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_NE(m.status().Message().find("--socket-mode"), std::string::npos);
  }
  EXPECT_EQ(UnixSocketPath("unix:///run/x.sock"), "/run/x.sock");
  EXPECT_EQ(UnixSocketPath("unix:rel.sock"), "rel.sock");
  EXPECT_EQ(UnixSocketPath("127.0.0.1:1"), "");
}

}  // namespace
}  // namespace tidal
