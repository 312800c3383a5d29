// Replica: one serving replica process, a read-only copy of a training cluster's tables kept fresh
// by the stream of changed rows, answering lookups (`ember replica`; docs/serving.md).
//
// Start() binds its socket, registers with the training cluster's scheduler as a reader (its key
// must be trusted there as a reader, trainer or admin), makes its tables as the cluster defines
// them and fills them: from its data directory when it saved rows there before (a restart), else
// from a checkpoint when given one, else from the stream alone. Then a feed thread follows the
// training servers (ReplicaFeed) while Run() answers clients (ReplicaService) on one thread.
// With a data directory it saves its rows there every `save_interval` and when it stops, and
// binds the endpoint it bound before, so that clients' connections come back by themselves.
//
// Lifecycle: Start(), then Run() until RequestStop() (safe from a signal handler).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "common/limits.h"
#include "common/status.h"
#include "common/transport.h"
#include "ps/client/scheduler_client.h"
#include "ps/replica/replica_feed.h"
#include "ps/replica/replica_service.h"
#include "ps/replica/replica_store.h"

namespace ember::ps {

struct ReplicaOptions {
  std::string scheduler_endpoint;          // the training cluster's scheduler
  std::string bind = "tcp://127.0.0.1:*";  // the socket clients connect to; '*' picks a port
  std::string advertise;                   // HOST[:PORT] clients connect to, when not `bind`
  std::string name = "replica";            // in the scheduler's log
  std::string data_dir;    // saves its rows here and starts from them again; empty: none
  std::string checkpoint;  // a checkpoint to start from when the data directory has no rows
  Millis save_interval{60'000};
  Millis register_timeout{60'000};
  FeedOptions feed;
  // Its key pair, the training scheduler's public key, and the keys it lets look rows up (a
  // reader, trainer or admin role); none: plain, loopback only.
  TransportSecurity security;
  Limits limits;  // keys_per_message and socket_queue apply
};

class Replica {
 public:
  explicit Replica(ReplicaOptions options);
  ~Replica();
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  Status Start();
  // Answers clients until RequestStop(); then stops the feed, saves and closes.
  void Run();
  void RequestStop() { stop_.store(true, std::memory_order_relaxed); }
  std::atomic<bool>* stop_flag() { return &stop_; }

  const std::string& endpoint() const { return endpoint_; }
  // Whether it holds a whole copy (loaded, or streamed until a round found nothing waiting).
  bool ready() const;
  ReplicaStore& store() { return *store_; }
  FeedStats feed_stats() const { return feed_->stats(); }

 private:
  std::string RecordedEndpoint() const;
  Status RecordEndpoint() const;
  Status LoadRows();
  Status Save() const;
  void SaveLoop();
  void Shutdown();

  const ReplicaOptions options_;
  std::shared_ptr<Context> context_;
  Socket frontend_;
  std::string endpoint_;
  std::unique_ptr<SchedulerClient> scheduler_;
  std::unique_ptr<ReplicaStore> store_;
  std::unique_ptr<ReplicaService> service_;
  std::unique_ptr<ReplicaFeed> feed_;
  bool loaded_ = false;
  bool started_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<bool> threads_stop_{false};
  std::thread feed_thread_;
  std::thread save_thread_;
};

}  // namespace ember::ps
