// tidal-slurm's config file (YAML/JSON): where the engine is, who this adapter is, how Slurm's
// accounts/partitions/QOS map to Tidal queues, and the conventions it reads from jobs and nodes.
// Every problem is one reason "file:line: field: reason". Pure functions: no state, no threads.
//
//   engine: 127.0.0.1:50051          # tidal-engine's gRPC address, or a list: the replicas of one
//                                     # deployment, each tried until the leading one takes the door
//   holder: tidal-slurm@host          # the door lease's holder (default tidal-slurm@<hostname>)
//   pollIntervalMs: 1000
//   slurmConf: /etc/slurm/slurm.conf  # "" = libslurm's default (SLURM_CONF)
//   queues:                           # first match wins; unset fields match anything
//     - {account: physics, queue: physics}
//     - {partition: debug, queue: interactive}
//   defaultQueue: ""                  # no rule matched: "" = the job's account is the queue
//   topologyFeaturePrefix: tidal-     # node feature tidal-<level>-<value> -> topology label
//   topologyLabelPrefix: topology.tidal.dev/
//   switchLevel: leaf                 # sbatch --switches=1 means this level is required
//   metricsAddress: 127.0.0.1:9402    # "" = no HTTP endpoint
//   jobcompFile: ""                   # jobcomp/filetxt log: jobs that ran while the adapter was down
//   engineTls:                        # mutual TLS to a TCP engine (files re-read every 10 s)
//     ca: /etc/tidal/tls/ca.crt       #   the CA of the engine's certificate
//     cert: /etc/tidal/tls/slurm.crt  #   this adapter's client certificate and key
//     key: /etc/tidal/tls/slurm.key
//     serverName: tidal-engine        #   a name in the engine's certificate ("" = the address's host)
//   engineInsecure: false             # allow plaintext gRPC to a non-loopback engine address
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/api/status.h"
#include "server/grpc_client_tls.h"

namespace tidal::slurm {

struct QueueRule {
  std::string account, partition, qos;  // "" = any
  std::string queue;
};

struct AdapterConfig {
  std::vector<std::string> engines = {"127.0.0.1:50051"};  // `engine`: one address or several
  std::string holder;  // "" until resolved: tidal-slurm@<hostname>
  int64_t poll_interval_ms = 1000;
  std::string slurm_conf;
  std::vector<QueueRule> queues;
  std::string default_queue;
  std::string topology_feature_prefix = "tidal-";
  std::string topology_label_prefix = "topology.tidal.dev/";
  std::string switch_level = "leaf";
  std::string metrics_address = "127.0.0.1:9402";
  std::string jobcomp_file;
  ClientTlsOptions engine_tls;  // engineTls + engineInsecure
};

StatusOr<AdapterConfig> ParseAdapterConfig(const std::string& text, const std::string& file);
// Why `address` is not an engine address ("" = it is): HOST:PORT, [IPv6]:PORT or unix:PATH. Used for
// the config's `engine` and the --engine flag.
std::string EngineAddressError(const std::string& address);
// The --engine flag: ADDR or ADDR,ADDR,... (replicas); why not, naming the entry ("" = fine).
std::string ParseEngineList(const std::string& flag, std::vector<std::string>* out);
StatusOr<AdapterConfig> LoadAdapterConfig(const std::string& path);

// The Tidal queue of a job: the first rule matching account, partition and QOS, else
// default_queue, else the account ("" when the job names none).
std::string QueueFor(const AdapterConfig& cfg, const std::string& account, const std::string& partition,
                     const std::string& qos);

}  // namespace tidal::slurm
