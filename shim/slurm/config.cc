// tidal-slurm's config file (see config.h). Pure functions.
#include "shim/slurm/config.h"

#include <unistd.h>

#include "core/io/document.h"
#include "core/io/fields.h"
#include "server/http_server.h"

namespace tidal::slurm {

std::string EngineAddressError(const std::string& address) {
  if (address.rfind("unix:", 0) == 0) return address.size() > 5 ? "" : "unix: needs a socket path";
  const std::string want = "want HOST:PORT (port 1-65535) or unix:PATH, got '" + address + "'";
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || address.find("://") != std::string::npos) return want;
  const std::string port = address.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return want;
  const int p = std::stoi(port);
  if (p < 1 || p > 65535) return want;
  const std::string host = address.substr(0, colon);
  if (host.find(':') != std::string::npos && (host.front() != '[' || host.back() != ']')) return want;  // IPv6: [::1]:50051
  return "";
}

std::string ParseEngineList(const std::string& flag, std::vector<std::string>* out) {
  std::vector<std::string> list;
  size_t from = 0;
  while (true) {
    const size_t comma = flag.find(',', from);
    list.push_back(flag.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (std::string why = EngineAddressError(list[i]); !why.empty()) {
      return list.size() == 1 ? why : "entry " + std::to_string(i + 1) + ": " + why;
    }
  }
  *out = std::move(list);
  return "";
}

StatusOr<AdapterConfig> ParseAdapterConfig(const std::string& text, const std::string& file) {
  auto doc = ParseDocument(text, file);
  if (!doc.ok()) return doc.status();
  AdapterConfig cfg;
  std::vector<std::string> errors;
  if (!doc->root.is_null()) {
    Fields f(doc->root, "");
    if (const auto* e = f.Get("engine")) {
      cfg.engines.clear();
      if (e->is_string()) {
        cfg.engines.push_back(e->get<std::string>());
      } else if (e->is_array() && !e->empty()) {
        for (size_t i = 0; i < e->size(); ++i) {
          const std::string at = "engine[" + std::to_string(i) + "]";
          if (!(*e)[i].is_string()) {
            f.Fail(Status::Error(at + ": expected an address string"));
          } else if (std::string why = EngineAddressError((*e)[i].get<std::string>()); !why.empty()) {
            f.Fail(Status::Error(at + ": " + why));
          } else {
            cfg.engines.push_back((*e)[i].get<std::string>());
          }
        }
      } else {
        f.FailField("engine", "expected an address or a non-empty list of addresses (the replicas of one deployment)");
      }
    }
    f.Str("holder", &cfg.holder);
    f.Int("pollIntervalMs", &cfg.poll_interval_ms, 100, 600000);
    f.Str("slurmConf", &cfg.slurm_conf);
    f.Str("defaultQueue", &cfg.default_queue);
    f.Str("topologyFeaturePrefix", &cfg.topology_feature_prefix);
    f.Str("topologyLabelPrefix", &cfg.topology_label_prefix);
    f.Str("switchLevel", &cfg.switch_level);
    f.Str("metricsAddress", &cfg.metrics_address);
    f.Str("jobcompFile", &cfg.jobcomp_file);
    f.Bool("engineInsecure", &cfg.engine_tls.insecure);
    if (const auto* t = f.Get("engineTls")) {
      Fields tf(*t, "engineTls");
      tf.Str("ca", &cfg.engine_tls.ca, /*required=*/true);
      tf.Str("cert", &cfg.engine_tls.cert, /*required=*/true);
      tf.Str("key", &cfg.engine_tls.key, /*required=*/true);
      tf.Str("serverName", &cfg.engine_tls.server_name);
      if (Status s = tf.Done(); !s.ok()) errors.push_back(doc->Locate(s).Message());
    }
    if (const auto* q = f.Get("queues")) {
      if (!q->is_array()) {
        f.FailField("queues", "must be a list of {account, partition, qos, queue}");
      } else {
        for (size_t i = 0; i < q->size(); ++i) {
          const std::string path = "queues[" + std::to_string(i) + "]";
          Fields rf((*q)[i], path);
          QueueRule r;
          rf.Str("account", &r.account);
          rf.Str("partition", &r.partition);
          rf.Str("qos", &r.qos);
          rf.Str("queue", &r.queue, /*required=*/true);
          if (rf.status().ok() && r.queue.empty()) rf.FailField("queue", "must not be empty");
          if (Status s = rf.Done(); !s.ok()) {
            errors.push_back(doc->Locate(s).Message());
            continue;
          }
          cfg.queues.push_back(std::move(r));
        }
      }
    }
    if (f.status().ok() && cfg.engines.size() == 1) {
      const std::string& e = cfg.engines.front();
      if (e.empty()) f.FailField("engine", "must not be empty");
      if (std::string why = EngineAddressError(e); !e.empty() && !why.empty()) f.FailField("engine", why);
    }
    if (f.status().ok() && !cfg.metrics_address.empty()) {
      if (Status s = HttpServer::CheckAddress(cfg.metrics_address); !s.ok()) f.FailField("metricsAddress", s.Message());
    }
    if (f.status().ok() && cfg.topology_feature_prefix.empty()) {
      f.FailField("topologyFeaturePrefix", "must not be empty (every feature would be read as topology)");
    }
    if (Status s = f.Done(); !s.ok()) errors.insert(errors.begin(), doc->Locate(s).Message());
  }
  if (!errors.empty()) {
    Status st = Status::Error(errors.front());
    for (size_t i = 1; i < errors.size(); ++i) st.AddReason(errors[i]);
    return st;
  }
  if (cfg.holder.empty()) {
    char host[256] = {0};
    if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
    cfg.holder = std::string("tidal-slurm@") + (host[0] ? host : "localhost");
  }
  return cfg;
}

StatusOr<AdapterConfig> LoadAdapterConfig(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseAdapterConfig(*text, path);
}

std::string QueueFor(const AdapterConfig& cfg, const std::string& account, const std::string& partition,
                     const std::string& qos) {
  for (const auto& r : cfg.queues) {
    if ((r.account.empty() || r.account == account) && (r.partition.empty() || r.partition == partition) &&
        (r.qos.empty() || r.qos == qos)) {
      return r.queue;
    }
  }
  return cfg.default_queue.empty() ? account : cfg.default_queue;
}

}  // namespace tidal::slurm
