// LocalCluster implementation.
#include "local/local_cluster.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "common/thread_name.h"

namespace ember::local {

LocalCluster::LocalCluster(std::vector<TableSpec> tables, LocalClusterOptions options)
    : options_(options) {
  status_ = Start(std::move(tables));
}

Status LocalCluster::MakeKeys() {
  ASSIGN_OR_RETURN(KeyPair scheduler, GenerateKeyPair());
  ASSIGN_OR_RETURN(KeyPair server, GenerateKeyPair());
  ASSIGN_OR_RETURN(KeyPair admin, GenerateKeyPair());
  ASSIGN_OR_RETURN(KeyPair trainer, GenerateKeyPair());
  ASSIGN_OR_RETURN(KeyPair reader, GenerateKeyPair());
  const std::vector<TrustedKey> trusted = {{"servers", server.public_key, PeerRole::kServer},
                                           {"admin", admin.public_key, PeerRole::kAdmin},
                                           {"trainers", trainer.public_key, PeerRole::kTrainer},
                                           {"readers", reader.public_key, PeerRole::kReader}};
  scheduler_security_ = TransportSecurity{scheduler, "", trusted, false};
  server_security_ = TransportSecurity{server, scheduler.public_key, trusted, false};
  client_security_ = TransportSecurity{admin, scheduler.public_key, {}, false};
  trainer_security_ = TransportSecurity{trainer, scheduler.public_key, {}, false};
  reader_security_ = TransportSecurity{reader, scheduler.public_key, {}, false};
  return Status::Ok();
}

ps::ServerOptions LocalCluster::ServerOptionsFor(bool join) const {
  ps::ServerOptions server_options;
  if (!options_.data_dir.empty()) {
    server_options.data_dir = options_.data_dir + "/server-" + std::to_string(servers_.size());
    server_options.memory_budget_bytes = options_.memory_budget_bytes;
  }
  server_options.scheduler_endpoint = scheduler_->endpoint();
  server_options.worker_threads = WorkerThreads();
  server_options.register_timeout = options_.register_timeout;
  server_options.policy = options_.policy;
  server_options.security = server_security_;
  server_options.join = join;
  return server_options;
}

Status LocalCluster::Start(std::vector<TableSpec> tables) {
  if (options_.authenticate) RETURN_IF_ERROR(MakeKeys());
  scheduler::SchedulerOptions scheduler_options;
  scheduler_options.num_servers = options_.num_servers;
  scheduler_options.num_partitions = options_.num_partitions;
  scheduler_options.sync = options_.sync;
  scheduler_options.checkpoints = options_.checkpoints;
  scheduler_options.limits = options_.policy.limits;
  scheduler_options.tables = std::move(tables);
  scheduler_options.security = scheduler_security_;
  scheduler_ = std::make_unique<scheduler::Scheduler>(std::move(scheduler_options));
  RETURN_IF_ERROR(scheduler_->Start());
  scheduler_thread_ = std::thread([this] { scheduler_->Run(); });

  const std::set<pid_t> before = ThreadIdsOfThisProcess();
  for (uint32_t i = 0; i < options_.num_servers; ++i) {
    servers_.push_back(std::make_unique<ps::Server>(ServerOptionsFor(/*join=*/false)));
  }
  // Servers register concurrently: the scheduler answers none until all have registered.
  std::vector<Status> started(options_.num_servers);
  std::vector<std::thread> starters;
  for (uint32_t i = 0; i < options_.num_servers; ++i) {
    starters.emplace_back([this, i, &started] { started[i] = servers_[i]->Start(); });
  }
  for (auto& starter : starters) starter.join();
  for (const Status& status : started) RETURN_IF_ERROR(status.WithContext("starting a server"));
  for (auto& server : servers_) {
    server_threads_.emplace_back([s = server.get()] {
      SetThreadName("ps-router");
      s->Run();
    });
  }
  for (pid_t id : ThreadIdsOfThisProcess()) {
    if (!before.count(id)) server_thread_ids_.push_back(id);
  }
  return Status::Ok();
}

uint32_t LocalCluster::WorkerThreads() const {
  return options_.worker_threads != 0 ? options_.worker_threads
                                      : ps::DefaultWorkerThreads(options_.num_servers);
}

Result<uint32_t> LocalCluster::AddServer() {
  auto server = std::make_unique<ps::Server>(ServerOptionsFor(/*join=*/true));
  RETURN_IF_ERROR(server->Start().WithContext("starting a joining server"));
  const uint32_t id = server->server_id();
  server_threads_.emplace_back([s = server.get()] {
    SetThreadName("ps-router");
    s->Run();
  });
  servers_.push_back(std::move(server));
  return id;
}

LocalCluster::~LocalCluster() {
  for (auto& server : servers_) server->RequestStop();
  for (auto& thread : server_threads_) thread.join();
  servers_.clear();
  if (scheduler_) scheduler_->RequestStop();
  if (scheduler_thread_.joinable()) scheduler_thread_.join();
}

Result<std::unique_ptr<ps::Client>> LocalCluster::Connect(const std::string& name) const {
  ps::ClientOptions options;
  options.name = name;
  options.request_timeout = Millis(20'000);
  options.register_timeout = Millis(20'000);
  options.limits = options_.policy.limits;
  options.max_keys_per_message =
      std::min(options.max_keys_per_message, options_.policy.limits.keys_per_message);
  return Connect(std::move(options));
}

Result<std::unique_ptr<ps::Client>> LocalCluster::Connect(ps::ClientOptions options) const {
  options.scheduler_endpoint = scheduler_->endpoint();
  if (!options.security.enabled()) options.security = client_security_;
  return ps::Client::Connect(std::move(options));
}

}  // namespace ember::local
