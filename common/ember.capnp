# ember's wire contract: every message between trainers, servers, the scheduler and tools.
#
# Evolution rules: never reuse or renumber an ordinal; new fields get new numbers; renaming is
# free. Every request carries `version` and the routing `epoch` it was built with.
# Bulk arrays (keys, rows, gradients) travel as Data holding raw little-endian values, so both
# sides copy them with memcpy instead of walking lists element by element.

@0xe7f6bc1046e3017b;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("ember::schema");

const protocolVersion :UInt32 = 1;  # bumped only on incompatible changes

enum StatusCode {
  # Mirrors ember::StatusCode (common/status.h); same numbers.
  ok @0;
  invalidArgument @1;
  notFound @2;
  failedPrecondition @3;
  unavailable @4;
  aborted @5;
  resourceExhausted @6;
  deadlineExceeded @7;
  dataLoss @8;
  internal @9;
  permissionDenied @10;
}

struct OptimizerSpec {
  kind @0 :Kind;
  enum Kind {
    sgd @0;
    adagrad @1;
    adam @2;
    ftrl @3;
  }
  learningRate @1 :Float32;        # step size (FTRL: alpha)
  initialAccumulator @2 :Float32;  # Adagrad: starting value of the squared-gradient sum
  epsilon @3 :Float32;             # Adagrad / Adam: added to the denominator
  beta1 @4 :Float32;               # Adam: first-moment decay
  beta2 @5 :Float32;               # Adam: second-moment decay
  l1 @6 :Float32;                  # FTRL: L1 strength
  l2 @7 :Float32;                  # FTRL: L2 strength
  ftrlBeta @8 :Float32;            # FTRL: beta in the per-coordinate learning rate
  weightDecay @9 :Float32;         # SGD / Adagrad / Adam: L2 penalty added to pushed rows' gradients
}

struct InitializerSpec {
  kind @0 :Kind;
  enum Kind {
    zeros @0;
    normal @1;
    uniform @2;
  }
  mean @1 :Float32;     # normal: mean
  stddev @2 :Float32;   # normal: standard deviation
  low @3 :Float32;      # uniform: lower bound
  high @4 :Float32;     # uniform: upper bound
}

struct TableSpec {
  name @0 :Text;                # unique table name; its hash is the table id in partitioning
  dim @1 :UInt32;               # floats per row
  seed @2 :UInt64;              # initialiser seed: row(key) = init(seed, key)
  optimizer @3 :OptimizerSpec;
  initializer @4 :InitializerSpec;
  admitAfter @5 :UInt32;        # requests a key must occur in before it gets a stored row; 0, 1: all
  ttlSeconds @6 :UInt32;        # rows not updated for this long are deleted; 0: never
}

struct ServerInfo {
  id @0 :UInt32;        # server index in the routing table, 0-based
  endpoint @1 :Text;    # ZeroMQ endpoint its data socket is bound to, e.g. tcp://127.0.0.1:5001
  publicKey @2 :Text;   # its CurveZMQ public key (Z85); empty when authentication is off
}

struct RoutingTable {
  epoch @0 :UInt64;            # bumped whenever the mapping changes; 0 means "not ready"
  numPartitions @1 :UInt32;    # P: partition = hash64(table id, key) % P, fixed for the cluster
  servers @2 :List(ServerInfo);
  owners @3 :Data;             # P little-endian uint32: owners[p] = server id of partition p
}

struct TableStats {
  name @0 :Text;
  rows @1 :UInt64;         # rows stored on this server
  bytes @2 :UInt64;        # bytes held for them in memory (rows, optimizer state, index)
  residentRows @3 :UInt64; # rows in memory; equals rows unless the server has a memory budget
  diskBytes @4 :UInt64;    # bytes of the table's files in the server's data directory
  hits @5 :UInt64;         # requested keys found in memory (tiered tables only)
  misses @6 :UInt64;       # requested keys not in memory, read from disk or created
  evictions @7 :UInt64;    # rows dropped from memory to stay within the budget
  notAdmitted @8 :UInt64;  # requested keys served their initial row, not stored (admitAfter)
  updatesDropped @9 :UInt64; # pushed keys whose update was dropped because not yet admitted
  expired @10 :UInt64;     # rows deleted because not updated for ttlSeconds
  nonFiniteRefused @11 :UInt64; # pushes refused for a NaN or infinite gradient (policy refuse)
  nonFiniteSkipped @12 :UInt64; # rows left out of pushes for a NaN or infinite gradient (skip)
  hintedKeys @13 :UInt64;      # keys of look-ahead hints run (tiered tables only; a hint run
                               # again when pins were freed counts again)
  prefetchedRows @14 :UInt64;  # rows hints read from disk into memory ahead of their requests
  pinnedRows @15 :UInt64;      # rows pinned in memory by hints now
  pinnedBytes @16 :UInt64;     # their bytes, bounded by the server's pin budget
  pinsRefused @17 :UInt64;     # hinted rows left unpinned because the pin budget was full
  createdAhead @18 :UInt64;    # new rows hints created ahead of their requests
  trackedChangeKeys @19 :UInt64;  # keys of changed rows held for the next incremental cut (at
                                  # most about two per changed row; none when cuts are full)
  writebackBytes @20 :UInt64;  # bytes of changed rows written back to disk (evicted or flushed)
}

# How often a process refused something for one of its limits (common/limits.h).
struct LimitHit {
  limit @0 :Text;          # the key in the config's limits: section, e.g. "keys_per_message"
  count @1 :UInt64;        # requests refused (or messages dropped) for it since the start
}

struct ServerStats {
  serverId @0 :UInt32;
  tables @1 :List(TableStats);
  pullRequests @2 :UInt64;
  pushRequests @3 :UInt64;
  keysPulled @4 :UInt64;
  keysPushed @5 :UInt64;
  errors @6 :UInt64;           # requests answered with a non-OK status, malformed ones included
  partitionsOwned @7 :UInt32;
  limitsHit @8 :List(LimitHit); # the limits this server refused something for
}

# How row values travel: float32, or float16 to halve the bytes (servers keep float32).
enum RowFormat {
  f32 @0;
  f16 @1;
}

struct PullRequest {
  table @0 :Text;
  keys @1 :Data;              # n little-endian uint64 keys
  rowFormat @2 :RowFormat;    # format the rows of the reply should travel in
  moreTables @3 :List(TableKeys);  # further tables of the same pull (one request for all of a
                              # step's tables); the reply's rows follow table, then these in order
}

# One table's share of a pull that asks for several tables.
struct TableKeys {
  table @0 :Text;
  keys @1 :Data;              # n little-endian uint64 keys
}

struct PushRequest {
  table @0 :Text;
  keys @1 :Data;              # n little-endian uint64 keys, unique within the request
  gradients @2 :Data;         # n * dim little-endian values (gradientFormat), row-major
  clock @3 :UInt64;           # sender's training step
  gradientFormat @4 :RowFormat;
  trainer @5 :UInt32;         # sender's trainer id (from its registration)
  deferred @6 :Bool;          # bsp: hold until applyClock for `clock` instead of applying now
  sender @7 :UInt64;          # random id of the sending client; 0: no exactly-once record
  ackedBelow @8 :UInt64;      # every request id of `sender` below this one was answered
  releaseHint @9 :UInt64;     # non-zero: the hint of `sender` that announced these keys (hint
                              # request); the server unpins its rows
  learningRate @10 :Float32;  # > 0: the learning rate of this step (a trainer's schedule) in
                              # place of the table's; 0: the table's own
}

# A trainer's look-ahead (train.lookahead): the keys of a batch it will pull and push a few steps
# from now. The server reads those rows from disk into memory in the background and pins them
# there until a push of the same sender names the hint (releaseHint) or `ttlMs` passes. Advisory:
# answered once queued (or refused when the server's queue of hints is full); keys of partitions
# the server does not own are ignored, and nothing but speed depends on it.
struct HintRequest {
  table @0 :Text;
  keys @1 :Data;              # n little-endian uint64 keys
  hint @2 :UInt64;            # the sender's id for this hint, non-zero; a push names it again
  sender @3 :UInt64;          # random id of the sending client (as PushRequest.sender), non-zero
  ttlMs @4 :UInt32;           # the pins expire after this long (the server caps it)
}

# A read-only pull, for serving: rows are read, never created, and nothing changes on the server
# (no row, no optimizer state, no admission count, no tier residency or eviction).
struct LookupRequest {
  table @0 :Text;
  keys @1 :Data;              # n little-endian uint64 keys
  rowFormat @2 :RowFormat;    # format the rows of the reply should travel in
  missing @3 :MissingRows;    # what the reply holds for a key without a row
  enum MissingRows {
    initial @0;               # the table's initial row for the key (computed, not stored)
    flag @1;                  # zeros
  }
}

# The answer to a lookup.
struct LookupReply {
  rows @0 :Data;              # n * dim little-endian rows (Response.rowFormat), in key order
  found @1 :Data;             # n bytes: 1 where the key has a row (in memory or on disk), else 0
}

# bsp: apply the deferred pushes of one clock, combined over the trainers listed; pushes of that
# clock from trainers not listed (one that died mid-step) are dropped. Idempotent: the answer
# comes once the clock is applied, whichever trainer asked first.
struct ApplyClock {
  clock @0 :UInt64;
  trainers @1 :Data;          # little-endian uint32 trainer ids whose pushes make up the clock
  combine @2 :Combine;
  signature @3 :Data;         # the scheduler's signature of the grant (ClockGrant.signature)
  enum Combine {
    mean @0;                  # the sum divided by the number of trainers listed
    sum @1;
  }
}

# A trainer finished step `clock` (its pushes acknowledged). In bsp/ssp the answer waits until the
# slowest live trainer has reached clock - staleness; `leave` ends the trainer's membership (it
# finished its data) and is answered at once.
struct TrainerClock {
  trainer @0 :UInt32;         # trainer id from the registration
  clock @1 :UInt64;           # steps the trainer has completed
  leave @2 :Bool;
}

# The scheduler's answer to trainerClock: who took part in the clock.
struct ClockGrant {
  clock @0 :UInt64;
  trainers @1 :Data;          # little-endian uint32 ids of the trainers whose pushes of `clock` count
  minClock @2 :UInt64;        # slowest live trainer's clock when granted
  # A checkpoint cut announced one step ahead (0: none): after completing clock `cutClock` the
  # trainer writes its file into `cutDir` and arrives at the cut (checkpointCut) before it pulls
  # again. Announced ahead so the trainer can note its data position before drawing the batch
  # after the cut.
  cutClock @3 :UInt64;
  cutDir @4 :Text;            # the checkpoint directory (absolute)
  cutKeep @5 :UInt32;         # periodic cuts: newest step-* directories beside cutDir to keep; 0: all
  cutChain @6 :UInt32;        # incremental cuts: checkpoints a chain may hold (base included); 0: full
  cutAfter @7 :Text;          # the checkpoint the cut extends as an increment (absolute); empty: none
  signature @8 :Data;         # the scheduler's Ed25519 signature of (clock, trainers, combine) that
                              # servers check before applying the clock; empty without keys
}

# To the scheduler, from a trainer at a checkpoint cut.
struct CheckpointCut {
  trainer @0 :UInt32;
  clock @1 :UInt64;           # the cut's clock
  phase @2 :Phase;
  enum Phase {
    arrive @0;                # my file is written and my pushes acknowledged; answered (cutInfo)
                              # when every trainer arrived (the last one coordinates) or when the
                              # cut is over (the others)
    done @1;                  # the coordinator wrote the servers' part and the manifest, or failed
  }
  error @3 :Text;             # done: why the coordinator failed; empty on success
}

# To the scheduler, from `ember checkpoint`: cut a checkpoint into `dir` as soon as every trainer
# can reach the same step; answered (cutInfo) once the cut is complete, or with the error.
struct CheckpointNow {
  dir @0 :Text;               # absolute path where the trainers and servers write
  after @1 :Text;             # absolute path of a checkpoint to extend as an increment
  chain @2 :Bool;             # without `after`: start a chain (a base); neither: a full checkpoint
}

# The scheduler's answer about a checkpoint cut.
struct CutInfo {
  clock @0 :UInt64;
  dir @1 :Text;
  coordinate @2 :Bool;        # arrive: the receiver checkpoints the servers, writes the manifest
                              # and reports done
  keep @3 :UInt32;            # as cutKeep
  chain @4 :UInt32;           # as cutChain
  after @5 :Text;             # as cutAfter
}

struct RegisterServer {
  endpoint @0 :Text;          # where the server's data socket listens
  join @1 :Bool;              # join a formed cluster (it takes a fair share of partitions)
}

# A partition moving from one server to another (the target runs the move).
struct PartitionMove {
  partition @0 :UInt32;
  from @1 :UInt32;            # server id
  to @2 :UInt32;              # server id
}

# The scheduler's answer to a server's heartbeat: the routing table as it stands, the moves this
# server should run now, and whether it may exit (it drained).
struct ServerOrders {
  routing @0 :RoutingTable;
  moves @1 :List(PartitionMove);
  exit @2 :Bool;
  movesOut @3 :List(PartitionMove);    # moves in flight out of this server (it is their source)
  plannedOut @4 :List(PartitionMove);  # moves planned out of it, not started yet: with movesOut
                                       # the only ones it may copy or hand over
}

# To the scheduler: a move's outcome. The target commits after it holds every row; the source
# (hand-over waited too long) or the target (failure) aborts. The first decision stands.
struct MoveDecision {
  move @0 :PartitionMove;
  commit @1 :Bool;
  reason @2 :Text;            # abort: why
}

struct ServerStatus {
  id @0 :UInt32;
  endpoint @1 :Text;
  state @2 :Text;             # live, draining, drained, dead
  partitions @3 :UInt32;
}

# The scheduler's view of the cluster, for `ember status`.
struct ClusterStatus {
  routing @0 :RoutingTable;
  servers @1 :List(ServerStatus);
  movesInFlight @2 :UInt32;
  movesPlanned @3 :UInt32;
  movesDone @4 :UInt64;
  limitsHit @5 :List(LimitHit); # the limits the scheduler refused something for
}

# To the source server of a move, from its target.
struct PartitionTransfer {
  partition @0 :UInt32;
  phase @1 :Phase;
  enum Phase {
    copy @0;                  # every row of the partition (all tables) while the source serves;
                              # the source notes which rows change from now on
    handover @1;              # the source holds the partition (requests get "moving, retry") and
                              # sends the rows changed since the copy; refused ("retry") while
                              # it holds bsp pushes of the partition (hand-overs are between clocks)
    release @2;               # committed: the source drops the partition
    resume @3;                # aborted: the source serves the partition again
  }
  offset @2 :UInt64;          # copy and handover come in chunks: 0 starts the phase, a chunk's
                              # reply names the offset of the next (0 after the last)
}

struct RegisterTrainer {
  name @0 :Text;              # free-form, for logs
}

# To a server, from a serving replica: the rows of `table` changed since this follower's last
# follow request (common/wire_follow.h). A partition the follower starts (or starts again) comes
# whole. Answered with followReply.
struct FollowRequest {
  follower @0 :UInt64;        # the replica's own random id, non-zero
  table @1 :Text;
  start @2 :List(UInt32);     # partitions to follow from now, every row of them first
  maxRows @3 :UInt32;         # rows in the reply at most (0: the server's default)
  leave @4 :Bool;             # the follower stops: the server forgets it for this table
}

struct FollowReply {
  keys @0 :Data;              # n little-endian uint64 keys whose rows changed
  rows @1 :Data;              # n * dim little-endian float32 rows (weights only), in key order
  deleted @2 :Data;           # little-endian uint64 keys whose rows no longer exist
  following @3 :List(UInt32); # the partitions this server streams to the follower now
  lost @4 :List(UInt32);      # partitions it stopped streaming (no longer owned here)
  more @5 :Bool;              # changed rows beyond maxRows wait for the next request
}

struct RegisterReader {
  name @0 :Text;              # free-form, for logs
}

struct Barrier {
  name @0 :Text;              # barriers with the same name meet each other
  count @1 :UInt32;           # how many participants release it
}

# To servers: write, verify or load the checkpoint files of every partition the server owns, of
# every table (layout in ps/checkpoint.h). Answered once done; restore verifies every file of the
# server before it changes any row, and a restoring client first has every server verify.
struct Checkpoint {
  dir @0 :Text;               # checkpoint directory as the server sees it (absolute path)
  action @1 :Action;
  enum Action {
    write @0;
    restore @1;
    verify @2;                # check the files as restore would, change nothing
  }
  # Write: the cut's id (0: a full checkpoint outside any chain), the id of the cut it follows
  # (0: none; a partition whose changes since that cut the server tracked is written as a delta)
  # and whether to track changes from this cut on. Restore and verify read the chain from `dir`.
  cut @2 :UInt64;
  previousCut @3 :UInt64;
  track @4 :Bool;
}

struct Request {
  version @0 :UInt32;         # protocolVersion of the sender
  requestId @1 :UInt64;       # echoed in the response; unique per sender connection
  epoch @2 :UInt64;           # routing epoch the sender used (0 for control requests)
  union {
    ping @3 :Void;
    pull @4 :PullRequest;
    push @5 :PushRequest;
    stats @6 :Void;
    registerServer @7 :RegisterServer;
    registerTrainer @8 :RegisterTrainer;
    getRouting @9 :Void;
    barrier @10 :Barrier;
    applyClock @11 :ApplyClock;    # to servers
    trainerClock @12 :TrainerClock;  # to the scheduler
    heartbeat @13 :UInt32;         # to the scheduler: trainer id, "still alive"
    checkpoint @14 :Checkpoint;    # to servers
    checkpointCut @15 :CheckpointCut;  # to the scheduler
    checkpointNow @16 :CheckpointNow;  # to the scheduler
    serverHeartbeat @17 :UInt32;       # to the scheduler: server id; answered with serverOrders
    moveDecision @18 :MoveDecision;    # to the scheduler; answered with the routing table
    drain @19 :UInt32;                 # to the scheduler: move every partition off this server
    clusterStatus @20 :Void;           # to the scheduler
    partitionTransfer @21 :PartitionTransfer;  # to a server
    lookup @22 :LookupRequest;         # to a server
    hint @23 :HintRequest;             # to a server
    registerReader @24 :RegisterReader;  # to the scheduler: a read-only client (lookups)
    follow @25 :FollowRequest;         # to a server, from a serving replica
  }
}

struct Registration {
  id @0 :UInt32;              # server id or trainer id assigned by the scheduler
  tables @1 :List(TableSpec);
  routing @2 :RoutingTable;
  clock @3 :UInt64;           # trainers: the clock to start from (a late joiner joins here)
  grantKey @4 :Data;          # servers: the key clock grants are signed with (empty: unsigned)
  sync @5 :SyncSettings;      # trainers: how the run's steps are synchronised
}

# How a run's trainers synchronise their steps (common/sync_options.h), as a trainer must follow.
struct SyncSettings {
  mode @0 :Mode;
  staleness @1 :UInt32;       # ssp: clocks a trainer may run ahead of the slowest
  combine @2 :ApplyClock.Combine;  # bsp: how a clock's pushes combine
  trainers @3 :UInt32;        # trainers the run expects
  clockTimeoutMs @4 :UInt32;  # the longest wait of a trainer for its clock
  enum Mode {
    asp @0;
    bsp @1;
    ssp @2;
  }
}

struct Response {
  requestId @0 :UInt64;       # the request's id; 0 when the request could not be decoded
  status @1 :StatusCode;
  message @2 :Text;           # human-readable error, empty on success
  epoch @3 :UInt64;           # responder's current routing epoch
  union {
    none @4 :Void;
    pull @5 :Data;            # n * dim little-endian rows (rowFormat), in request key order
    stats @6 :ServerStats;
    registration @7 :Registration;
    routing @8 :RoutingTable;
    clockGrant @10 :ClockGrant;
    cutInfo @11 :CutInfo;
    serverOrders @12 :ServerOrders;
    clusterStatus @13 :ClusterStatus;
    partitionData @14 :Data;  # partitionTransfer: a chunk of rows (layout in ps/server/shard_service_moves.cc)
    lookup @15 :LookupReply;
    followReply @16 :FollowReply;
  }
  rowFormat @9 :RowFormat;    # format of `pull` and of `lookup.rows`
}
