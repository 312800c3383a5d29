// InProcessCluster implementation.
#include "tests/ps/in_process_cluster.h"

namespace ember::testing {

InProcessCluster::InProcessCluster(std::vector<TableSpec> tables, uint32_t num_servers,
                                   uint32_t num_partitions, uint32_t worker_threads) {
  scheduler::SchedulerOptions options;
  options.num_servers = num_servers;
  options.num_partitions = num_partitions;
  options.tables = std::move(tables);
  scheduler_ = std::make_unique<scheduler::Scheduler>(std::move(options));
  status_ = scheduler_->Start();
  if (!status_.ok()) return;
  scheduler_thread_ = std::thread([this] { scheduler_->Run(); });
  // Servers register concurrently: the scheduler answers none until all have registered.
  std::vector<Status> started(num_servers);
  std::vector<std::thread> starters;
  for (uint32_t i = 0; i < num_servers; ++i) {
    ps::ServerOptions server_options;
    server_options.scheduler_endpoint = scheduler_->endpoint();
    server_options.worker_threads = worker_threads;
    server_options.register_timeout = Millis(20'000);
    servers_.push_back(std::make_unique<ps::Server>(std::move(server_options)));
  }
  for (uint32_t i = 0; i < num_servers; ++i) {
    starters.emplace_back([this, i, &started] { started[i] = servers_[i]->Start(); });
  }
  for (auto& t : starters) t.join();
  for (const Status& s : started) {
    if (!s.ok() && status_.ok()) status_ = s;
  }
  if (!status_.ok()) return;
  for (auto& server : servers_) {
    server_threads_.emplace_back([s = server.get()] { s->Run(); });
  }
}

InProcessCluster::~InProcessCluster() {
  for (auto& server : servers_) server->RequestStop();
  for (auto& t : server_threads_) t.join();
  servers_.clear();
  if (scheduler_) scheduler_->RequestStop();
  if (scheduler_thread_.joinable()) scheduler_thread_.join();
}

Result<std::unique_ptr<ps::Client>> InProcessCluster::Connect(const std::string& name) {
  ps::ClientOptions options;
  options.scheduler_endpoint = scheduler_->endpoint();
  options.name = name;
  options.request_timeout = Millis(20'000);
  options.register_timeout = Millis(20'000);
  return ps::Client::Connect(std::move(options));
}

}  // namespace ember::testing
