// tidal-slurm's config: the engine's TLS fields (engineTls, engineInsecure) and what the engine link
// does with them before any connection.
#include <gtest/gtest.h>

#include "shim/slurm/config.h"
#include "shim/slurm/engine_failover.h"
#include "shim/slurm/engine_link.h"

namespace tidal::slurm {
namespace {

TEST(AdapterConfigTls, EngineTlsIsReadAndChecked) {
  auto cfg = ParseAdapterConfig(
      "engine: tidal-engine.example:50051\n"
      "engineTls: {ca: /tls/ca.crt, cert: /tls/slurm.crt, key: /tls/slurm.key, serverName: tidal-engine}\n",
      "a.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().Message();
  EXPECT_EQ(cfg->engine_tls.ca, "/tls/ca.crt");
  EXPECT_EQ(cfg->engine_tls.cert, "/tls/slurm.crt");
  EXPECT_EQ(cfg->engine_tls.key, "/tls/slurm.key");
  EXPECT_EQ(cfg->engine_tls.server_name, "tidal-engine");
  EXPECT_FALSE(cfg->engine_tls.insecure);
  // The files do not exist: the link says which one, before dialing.
  auto link = DialGrpcEngineLink(cfg->engines.front(), cfg->engine_tls);
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.status().Message().find("engineTls.ca"), std::string::npos) << link.status().Message();

  auto missing_key = ParseAdapterConfig("engineTls: {ca: /a, cert: /b}\n", "b.yaml");
  ASSERT_FALSE(missing_key.ok());
  EXPECT_NE(missing_key.status().Message().find("engineTls.key"), std::string::npos) << missing_key.status().Message();
  auto typo = ParseAdapterConfig("engineTls: {ca: /a, cert: /b, key: /c, server: x}\n", "c.yaml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().Message().find("server"), std::string::npos) << typo.status().Message();
}

TEST(AdapterConfigTls, PlaintextOnlyToLoopbackUnlessInsecure) {
  auto cfg = ParseAdapterConfig("engine: 10.0.0.7:50051\n", "a.yaml");
  ASSERT_TRUE(cfg.ok());
  auto refused = DialGrpcEngineLink(cfg->engines.front(), cfg->engine_tls);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().Message().find("engineInsecure"), std::string::npos) << refused.status().Message();
  auto insecure = ParseAdapterConfig("engine: 10.0.0.7:50051\nengineInsecure: true\n", "a.yaml");
  ASSERT_TRUE(insecure.ok()) << insecure.status().Message();
  EXPECT_TRUE(DialGrpcEngineLink(insecure->engines.front(), insecure->engine_tls).ok());
  auto local = ParseAdapterConfig("engine: 127.0.0.1:50051\n", "a.yaml");
  ASSERT_TRUE(local.ok());
  EXPECT_TRUE(DialGrpcEngineLink(local->engines.front(), local->engine_tls).ok());
}

TEST(AdapterConfig, AnEngineAddressWithoutAPortIsRefusedNamingTheField) {
  // Before: accepted, then refused at dial as "not a loopback address" (127.0.0.1), or dialled
  // at an impossible port (99999).
  for (const char* bad : {"127.0.0.1", "127.0.0.1:99999", "127.0.0.1:", "http://127.0.0.1:50051", "::1:50051", "unix:"}) {
    auto cfg = ParseAdapterConfig(std::string("engine: \"") + bad + "\"\n", "a.yaml");
    ASSERT_FALSE(cfg.ok()) << bad;
    EXPECT_NE(cfg.status().Message().find("a.yaml:1: engine: "), std::string::npos) << cfg.status().Message();
  }
  for (const char* good : {"127.0.0.1:50051", "localhost:50051", "[::1]:50051", "unix:///run/tidal.sock", "unix:/run/t.sock"}) {
    auto cfg = ParseAdapterConfig(std::string("engine: \"") + good + "\"\n", "a.yaml");
    EXPECT_TRUE(cfg.ok()) << good << ": " << cfg.status().Message();
  }
}

TEST(AdapterConfig, AMetricsAddressTheServerCannotTakeIsRefusedNamingTheField) {
  // Before: accepted by the parse (and so by a config check), refused only when tidal-slurm started.
  for (const char* bad : {"9100", "127.0.0.1:99999", "127.0.0.1:", ":http"}) {
    auto cfg = ParseAdapterConfig(std::string("engine: 127.0.0.1:50051\nmetricsAddress: \"") + bad + "\"\n", "a.yaml");
    ASSERT_FALSE(cfg.ok()) << bad;
    EXPECT_NE(cfg.status().Message().find("a.yaml:2: metricsAddress: "), std::string::npos) << cfg.status().Message();
  }
  for (const char* good : {":9100", "127.0.0.1:9100", "[::1]:9100", "0.0.0.0:0"}) {
    auto cfg = ParseAdapterConfig(std::string("engine: 127.0.0.1:50051\nmetricsAddress: \"") + good + "\"\n", "a.yaml");
    EXPECT_TRUE(cfg.ok()) << good << ": " << cfg.status().Message();
  }
}

// Replicas of one deployment (deploy/base: two): `engine` may list them, and the adapter finds the
// one whose scheduler leads (engine_failover.h). Each entry is checked, naming its index.
TEST(AdapterConfig, EngineTakesAListOfReplicaAddressesEachChecked) {
  auto cfg = ParseAdapterConfig("engine: [\"tidal-0.tidal:50051\", \"tidal-1.tidal:50051\"]\nengineInsecure: true\n", "a.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().Message();
  EXPECT_EQ(cfg->engines, (std::vector<std::string>{"tidal-0.tidal:50051", "tidal-1.tidal:50051"}));
  auto link = DialEngineLinks(cfg->engines, cfg->engine_tls);
  ASSERT_TRUE(link.ok()) << link.status().Message();
  EXPECT_NE(dynamic_cast<FailoverEngineLink*>(link->get()), nullptr);
  auto one = DialEngineLinks({"127.0.0.1:50051"}, {});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(dynamic_cast<FailoverEngineLink*>(one->get()), nullptr);  // one address: its plain link

  auto bad = ParseAdapterConfig("engine: [\"127.0.0.1:50051\", \"127.0.0.1\"]\n", "a.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().Message().find("engine[1]: want HOST:PORT"), std::string::npos) << bad.status().Message();
  for (const char* wrong : {"engine: []\n", "engine: 7\n", "engine: [7]\n"}) {
    auto w = ParseAdapterConfig(wrong, "a.yaml");
    ASSERT_FALSE(w.ok()) << wrong;
    EXPECT_NE(w.status().Message().find("engine"), std::string::npos) << w.status().Message();
  }
  // The --engine flag: ADDR or ADDR,ADDR.
  std::vector<std::string> list;
  EXPECT_EQ(ParseEngineList("127.0.0.1:1,unix:/run/t.sock", &list), "");
  EXPECT_EQ(list, (std::vector<std::string>{"127.0.0.1:1", "unix:/run/t.sock"}));
  EXPECT_NE(ParseEngineList("127.0.0.1:1,", &list).find("entry 2"), std::string::npos);
}

}  // namespace
}  // namespace tidal::slurm
