// InProcessCluster: a scheduler and N servers on loopback, each on its own threads inside the
// test process, for tests that need a real cluster without spawning processes.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/table_spec.h"
#include "ps/client.h"
#include "ps/server.h"
#include "scheduler/scheduler.h"

namespace ember::testing {

class InProcessCluster {
 public:
  InProcessCluster(std::vector<TableSpec> tables, uint32_t num_servers,
                   uint32_t num_partitions = 64, uint32_t worker_threads = 2);
  ~InProcessCluster();

  // OK once every server is serving.
  Status status() const { return status_; }
  const std::string& scheduler_endpoint() const { return scheduler_->endpoint(); }
  ps::Server& server(size_t i) { return *servers_[i]; }
  size_t num_servers() const { return servers_.size(); }
  Result<std::unique_ptr<ps::Client>> Connect(const std::string& name = "test-trainer");

 private:
  Status status_;
  std::unique_ptr<scheduler::Scheduler> scheduler_;
  std::thread scheduler_thread_;
  std::vector<std::unique_ptr<ps::Server>> servers_;
  std::vector<std::thread> server_threads_;
};

}  // namespace ember::testing
