// libslurm's job_info_t / node_info_t / partition_info_msg_t into records. Internal to the libslurm
// reader (slurm_api_libslurm.cc): the only header besides that file that includes <slurm/slurm.h>.
//
// Threading: the converter holds a uid -> user name cache; one caller thread (the reader's).
#pragma once

#include <slurm/slurm.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "shim/slurm/records.h"

// Exported by libslurm but declared only in Slurm's internal headers (slurm_protocol_defs.h,
// bitstring.h).
extern "C" {
const char* slurm_job_reason_string(enum job_state_reason inx);
bitoff_t slurm_bit_size(bitstr_t* b);
bool slurm_bit_test(bitstr_t* b, bitoff_t bit);
}

namespace tidal::slurm {

class LibslurmConverter {
 public:
  // node_names: the node table by index (slurm_load_node's node_array order, "" for a hole): the
  // nodes of a running job's per-node GRES detail (node_inx), empty = the job's nodes in order.
  JobRecord Job(const slurm_job_info_t& job, const std::vector<std::string>& node_names = {});
  // partitions: node name -> the partitions it is in (PartitionsByNode).
  NodeRecord Node(const node_info_t& node, const std::map<std::string, std::vector<std::string>>& partitions);

  // From a partition message, via the partitions' hostlists (slurm_load_node leaves
  // node_info_t.partitions empty: only scontrol fills it).
  static std::map<std::string, std::vector<std::string>> PartitionsByNode(const partition_info_msg_t* parts,
                                                                          std::string* error);
  // Each partition's state and the limits Slurm checks before it starts a job (records.h).
  static std::vector<PartitionRecord> Partitions(const partition_info_msg_t* parts);

 private:
  std::string UserName(const slurm_job_info_t& job);
  std::unordered_map<uint32_t, std::string> users_;
};

}  // namespace tidal::slurm
