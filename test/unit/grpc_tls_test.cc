// Mutual TLS between tidal-engine's gRPC server and its clients (server/grpc_listener.h,
// server/grpc_client_tls.h), on a real server on 127.0.0.1 with certificates made at run time by
// hack/gen-engine-certs.sh (openssl) in a temp dir: who is let in, who is refused, and that
// rotated files are used by new connections without a restart (the files are re-read every second
// here, served through a symlinked directory swapped atomically, as Kubernetes does for Secrets).
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "server/grpc_client_tls.h"
#include "server/grpc_listener.h"
#include "server/service.h"

namespace tidal {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class GrpcTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/tidal-tls-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    const std::string gen = std::string(TIDAL_SOURCE_DIR) + "/hack/gen-engine-certs.sh ";
    // a: the real PKI; a2: the same CA, renewed leaf certificates; b: another CA.
    ASSERT_EQ(std::system((gen + (dir_ / "a").string()).c_str()), 0);
    fs::create_directories(dir_ / "a2");
    fs::copy_file(dir_ / "a" / "ca.crt", dir_ / "a2" / "ca.crt");
    fs::copy_file(dir_ / "a" / "ca.key", dir_ / "a2" / "ca.key");
    ASSERT_EQ(std::system((gen + (dir_ / "a2").string()).c_str()), 0);
    ASSERT_EQ(std::system((gen + (dir_ / "b").string()).c_str()), 0);
    ASSERT_NE(Slurp(dir_ / "a" / "engine.crt"), Slurp(dir_ / "a2" / "engine.crt"));
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  void SetUp() override {
    // The server reads its files through srv -> a (the symlink is what rotations swap).
    served_ = dir_ / ("srv-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
    Point(served_, "a");
    engine_ = std::move(Engine::Create(EngineConfig{})).value();
    service_ = std::make_unique<EngineService>(*engine_);
    ListenOptions o;
    o.address = "127.0.0.1:0";
    o.tls_cert = (served_ / "engine.crt").string();
    o.tls_key = (served_ / "engine.key").string();
    o.tls_client_ca = (served_ / "ca.crt").string();
    o.tls_refresh_seconds = 1;
    grpc::ServerBuilder b;
    b.RegisterService(service_.get());
    int port = 0;
    auto s = StartGrpcServer(b, o, &port);
    ASSERT_TRUE(s.ok()) << s.status().Message();
    server_ = std::move(*s);
    addr_ = "127.0.0.1:" + std::to_string(port);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    fs::remove(served_);
  }

  // link -> target, replaced atomically (a new symlink renamed over the old one).
  static void Point(const fs::path& link, const std::string& target) {
    const fs::path tmp = link.string() + ".new";
    fs::remove(tmp);
    fs::create_directory_symlink(dir_ / target, tmp);
    fs::rename(tmp, link);
  }

  ClientTlsOptions Client(const std::string& pki, const std::string& who = "scheduler") const {
    ClientTlsOptions t;
    t.ca = (dir_ / pki / "ca.crt").string();
    t.cert = (dir_ / pki / (who + ".crt")).string();
    t.key = (dir_ / pki / (who + ".key")).string();
    t.refresh_seconds = 1;
    return t;
  }

  // One Explain call on a fresh channel: OK, and the server certificate the client saw.
  static grpc::Status Call(const std::shared_ptr<grpc::Channel>& ch, std::string* peer_cert = nullptr) {
    auto stub = v1::Engine::NewStub(ch);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    v1::ExplainRequest req;
    req.set_workload("ns/nothing");
    v1::ExplainResponse resp;
    grpc::Status s = stub->Explain(&ctx, req, &resp);
    if (s.ok() && peer_cert != nullptr) {
      auto pem = ctx.auth_context()->FindPropertyValues("x509_pem_cert");
      *peer_cert = pem.empty() ? "" : std::string(pem[0].begin(), pem[0].end());
    }
    return s;
  }
  grpc::Status CallWith(const ClientTlsOptions& t, std::string* peer_cert = nullptr) const {
    auto ch = DialEngine(addr_, t);
    EXPECT_TRUE(ch.ok()) << ch.status().Message();
    if (!ch.ok()) return grpc::Status(grpc::StatusCode::INTERNAL, "dial");
    return Call(*ch, peer_cert);
  }
  // Polls (new connections, up to 15 s) until pred holds; the provider re-reads every second.
  template <class Pred>
  static bool Eventually(Pred pred) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  static fs::path dir_;
  fs::path served_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<EngineService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string addr_;
};

fs::path GrpcTlsTest::dir_;

TEST_F(GrpcTlsTest, ClientWithCertificateFromTheCaConnects) {
  std::string seen;
  grpc::Status s = CallWith(Client("a"), &seen);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(seen, Slurp(dir_ / "a" / "engine.crt"));
  EXPECT_TRUE(CallWith(Client("a", "slurm")).ok());
}

TEST_F(GrpcTlsTest, ClientWithoutCertificateIsRefused) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = Slurp(dir_ / "a" / "ca.crt");  // trusts the server, presents nothing
  grpc::Status s = Call(grpc::CreateChannel(addr_, grpc::SslCredentials(ssl)));
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
}

TEST_F(GrpcTlsTest, PlaintextClientIsRefused) {
  EXPECT_FALSE(Call(grpc::CreateChannel(addr_, grpc::InsecureChannelCredentials())).ok());
}

TEST_F(GrpcTlsTest, ClientCertificateFromAnotherCaIsRefused) {
  ClientTlsOptions t = Client("b");
  t.ca = (dir_ / "a" / "ca.crt").string();  // it trusts the server; the server does not trust it
  grpc::Status s = CallWith(t);
  EXPECT_FALSE(s.ok());
}

TEST_F(GrpcTlsTest, ServerCertificateFromAnotherCaOrNameIsRefusedByTheClient) {
  ClientTlsOptions wrong_ca = Client("a");
  wrong_ca.ca = (dir_ / "b" / "ca.crt").string();
  EXPECT_FALSE(CallWith(wrong_ca).ok());
  ClientTlsOptions wrong_name = Client("a");
  wrong_name.server_name = "not-the-engine.example";
  EXPECT_FALSE(CallWith(wrong_name).ok());
  ClientTlsOptions right_name = Client("a");
  right_name.server_name = "tidal-engine";  // a SAN of the certificate
  EXPECT_TRUE(CallWith(right_name).ok());
}

TEST_F(GrpcTlsTest, RotatedServerCertificateIsUsedByNewConnections) {
  std::string seen;
  ASSERT_TRUE(CallWith(Client("a"), &seen).ok());
  ASSERT_EQ(seen, Slurp(dir_ / "a" / "engine.crt"));
  auto kept = DialEngine(addr_, Client("a"));  // an open connection, for after the rotation
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE(Call(*kept).ok());
  Point(served_, "a2");
  const std::string renewed = Slurp(dir_ / "a2" / "engine.crt");
  EXPECT_TRUE(Eventually([&] { return CallWith(Client("a"), &seen).ok() && seen == renewed; }))
      << "new connections still get the old certificate";
  EXPECT_TRUE(Call(*kept).ok()) << "the connection opened before the rotation still works";
}

TEST_F(GrpcTlsTest, RotatedClientCaIsUsedForNewConnections) {
  ASSERT_TRUE(CallWith(Client("a")).ok());
  ASSERT_FALSE(CallWith(Client("b")).ok());
  Point(served_, "b");  // the server's certificate, key and client CA all from pki b now
  EXPECT_TRUE(Eventually([&] { return CallWith(Client("b")).ok(); })) << "b's clients are never let in";
  EXPECT_FALSE(CallWith(Client("a")).ok()) << "a's clients are still let in after the CA changed";
}

TEST_F(GrpcTlsTest, ClientReloadsItsRotatedFiles) {
  // The client reads its files through cli -> a; swapped to b's files (which the server does not
  // trust), new connections made with the same credentials (the same certificate provider, as
  // tidal-slurm's channel reconnecting) are refused: it reloaded without being recreated.
  const fs::path cli = dir_ / "cli";
  Point(cli, "a");
  ClientTlsOptions t;
  t.ca = (cli / "ca.crt").string();
  t.cert = (cli / "scheduler.crt").string();
  t.key = (cli / "scheduler.key").string();
  t.refresh_seconds = 1;
  auto creds = EngineChannelCredentials(addr_, t);
  ASSERT_TRUE(creds.ok()) << creds.status().Message();
  auto connect = [&] {  // a channel of its own: a new connection, a new handshake
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return Call(grpc::CreateCustomChannel(addr_, *creds, args));
  };
  ASSERT_TRUE(connect().ok());
  Point(cli, "b");
  EXPECT_TRUE(Eventually([&] { return !connect().ok(); })) << "the client still presents the old certificate";
  fs::remove(cli);
}

TEST(GrpcTlsOptions, NonLoopbackTcpNeedsTlsOrInsecure) {
  ListenOptions o;
  o.address = "0.0.0.0:50051";
  auto refused = MakeServerCredentials(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().Message().find("--insecure"), std::string::npos) << refused.status().Message();
  EXPECT_NE(refused.status().Message().find("--tls-cert"), std::string::npos);
  o.insecure = true;
  EXPECT_TRUE(MakeServerCredentials(o).ok());
  o.insecure = false;
  o.address = "127.0.0.1:50051";
  EXPECT_TRUE(MakeServerCredentials(o).ok());
  o.address = "unix:///run/tidal/engine.sock";
  EXPECT_TRUE(MakeServerCredentials(o).ok());
  // The client side refuses the same.
  auto dial = DialEngine("10.1.2.3:50051", ClientTlsOptions{});
  ASSERT_FALSE(dial.ok());
  EXPECT_NE(dial.status().Message().find("engineInsecure"), std::string::npos) << dial.status().Message();
  ClientTlsOptions insecure;
  insecure.insecure = true;
  EXPECT_TRUE(DialEngine("10.1.2.3:50051", insecure).ok());
}

TEST(GrpcTlsOptions, LoopbackAddresses) {
  for (const char* a : {"127.0.0.1:1", "localhost:50051", "[::1]:50051", "127.3.4.5:9"}) {
    EXPECT_TRUE(IsLoopbackAddress(a)) << a;
  }
  for (const char* a : {"0.0.0.0:1", "[::]:1", "10.0.0.1:1", "127.0.0.1", "127.0.0.256:1", "127.0.0:1",
                        "localhost.example.com:1", ":50051", "127.0.0.1.example:1"}) {
    EXPECT_FALSE(IsLoopbackAddress(a)) << a;
  }
}

TEST(GrpcTlsOptions, IncompleteOrBadFilesNameTheFlag) {
  char tmpl[] = "/tmp/tidal-tls-bad.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path d = tmpl;
  ASSERT_EQ(std::system((std::string(TIDAL_SOURCE_DIR) + "/hack/gen-engine-certs.sh " + d.string()).c_str()), 0);
  ListenOptions o;
  o.address = "127.0.0.1:0";
  o.tls_cert = (d / "engine.crt").string();
  o.tls_key = (d / "engine.key").string();
  auto two = MakeServerCredentials(o);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().Message().find("all three"), std::string::npos) << two.status().Message();
  o.tls_client_ca = (d / "ca.crt").string();
  EXPECT_TRUE(MakeServerCredentials(o).ok());
  o.tls_key = (d / "scheduler.key").string();  // another certificate's key
  auto mismatch = MakeServerCredentials(o);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().Message().find("--tls-key"), std::string::npos) << mismatch.status().Message();
  EXPECT_NE(mismatch.status().Message().find("does not match"), std::string::npos);
  o.tls_key = (d / "engine.key").string();
  o.tls_client_ca = (d / "missing.crt").string();
  auto missing = MakeServerCredentials(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().Message().find("--tls-client-ca"), std::string::npos) << missing.status().Message();
  o.tls_client_ca = (d / "engine.key").string();  // a key where a certificate belongs
  auto not_cert = MakeServerCredentials(o);
  ASSERT_FALSE(not_cert.ok());
  EXPECT_NE(not_cert.status().Message().find("no PEM certificate"), std::string::npos) << not_cert.status().Message();
  ClientTlsOptions c;
  c.ca = (d / "ca.crt").string();
  c.cert = (d / "slurm.crt").string();
  auto client_two = DialEngine("127.0.0.1:1", c);
  ASSERT_FALSE(client_two.ok());
  EXPECT_NE(client_two.status().Message().find("engineTls.key"), std::string::npos) << client_two.status().Message();
  fs::remove_all(d);
}

}  // namespace
}  // namespace tidal
