#!/usr/bin/env bash
# Runs scripts/slurm/ember.sbatch across nodes: a Slurm cluster of 3 nodes made on this machine,
# each node a network namespace (its own address on a bridge, its own host name and /etc/hosts)
# running its own slurmd, with slurmctld on a fourth namespace and one munged. Phase 1 trains a
# small synthetic model with a scheduler, 3 servers and 2 trainers spread over the nodes (bound to
# every interface, advertising host names, with the job's keys) and checks placement, exit status
# and the trainers' summaries. Phase 2 starts a longer job, SIGKILLs its scheduler (the batch
# script starts it again on its state and the trainers go on), then kills every process of one
# server's node (its slurmd included) mid-job, and checks that the job fails with an error naming the lost
# server. Everything started is stopped by PID at the end (also on failure) and the namespaces
# deleted. Exits 77 (skipped) where it cannot run: not root, a tool missing, no namespaces.
#
# usage: slurm_nodes_test.sh EMBER_BINARY
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
EMBER="$(realpath "${1:-$ROOT/build/ember}")"
JOB_TIMEOUT_S=240
NODES=(node1 node2 node3)
SUBNET=10.199.0

skip() { echo "SKIP: $*"; exit 77; }
if [[ $(id -u) -ne 0 ]]; then
  skip "needs root (network namespaces; slurmd launches tasks as root)"
fi
export PATH="$PATH:/usr/sbin:/sbin"
for tool in munged munge unmunge slurmctld slurmd sbatch srun sinfo squeue scancel scontrol \
            ip nsenter unshare mount hostname python3; do
  command -v "$tool" >/dev/null ||
    skip "$tool is not installed (scripts/setup.sh installs slurmctld slurmd slurm-client munge;" \
         "iproute2 and util-linux give ip, nsenter and unshare)"
done
[[ -x "$EMBER" ]] || { echo "FAIL: no ember binary at $EMBER"; exit 1; }

TAG="ember$$"
CTL_NS="$TAG-ctl"
SCRATCH="$(mktemp -d /tmp/ember-slurm-nodes-test.XXXXXX)"
chmod 755 "$SCRATCH"  # munged wants its socket's folders searchable by all
PIDS=()
NAMESPACES=()
JOB_IDS=()

# Runs a command in the controller's network namespace (nsenter, not `ip netns exec`, which
# mounts a fresh /sys without the cgroup folders slurmd looks for).
ctl() { nsenter --net="/run/netns/$CTL_NS" "$@"; }

# Every process left in a namespace of ours (slurmstepd and the job's tasks included), by PID.
kill_namespace() {
  local pid
  for pid in $(ip netns pids "$1" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
}

cleanup() {
  local pid t ns id
  for id in "${JOB_IDS[@]}"; do ctl scancel --signal=KILL "$id" 2>/dev/null; done
  for ((t = 0; t < 50 && ${#JOB_IDS[@]} > 0; ++t)); do
    ctl squeue --noheader --jobs "$(IFS=,; echo "${JOB_IDS[*]}")" 2>/dev/null | grep -q . || break
    sleep 0.2
  done
  # slurmds, slurmctld, munged: newest first, SIGTERM then SIGKILL after 10 s.
  for ((i = ${#PIDS[@]} - 1; i >= 0; --i)); do
    pid="${PIDS[i]}"
    kill -TERM "$pid" 2>/dev/null || continue
    for ((t = 0; t < 100; ++t)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  # What is left in the namespaces (job steps), then the namespaces: deleting one deletes its
  # links (veth pairs, the bridge) with it.
  for ns in "${NAMESPACES[@]}"; do
    kill_namespace "$ns"
    ip netns delete "$ns" 2>/dev/null
  done
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
trap "exit 1" TERM INT

fail() {
  echo "FAIL: $*"
  for log in "$SCRATCH"/log/*.log "$SCRATCH"/job/*.out "$SCRATCH"/job/*/logs/*.log; do
    [[ -f "$log" ]] || continue
    echo "---- $log (last lines)"
    tail -n 25 "$log"
  done
  exit 1
}

# Runs a command as host NAME in namespace NS: its own host name and the test's /etc/hosts.
HOSTS="$SCRATCH/hosts"
as_host() {
  local ns="$1" name="$2"
  shift 2
  # shellcheck disable=SC2016  # expanded by the inner bash
  nsenter --net="/run/netns/$ns" unshare --uts --mount --propagation private -- \
    bash -c 'mount --bind "$0" /etc/hosts && hostname "$1" && shift && exec "$@"' \
    "$HOSTS" "$name" "$@"
}
net() { ip "$@" 2>&1 || skip "cannot make the test's network: ip $* failed"; }

# The network: the bridge lives in the controller's namespace (10.199.0.1), each node's namespace
# has one end of a veth pair (10.199.0.11, .12, ...), the other end on the bridge. Nothing is
# added to this machine's own namespace.
ip netns add "$CTL_NS" 2>/dev/null || skip "cannot make network namespaces (ip netns add)"
NAMESPACES+=("$CTL_NS")
printf '127.0.0.1 localhost\n%s.1 controller\n' "$SUBNET" >"$HOSTS"
as_host "$CTL_NS" controller true ||
  skip "cannot give a network namespace its own host name and /etc/hosts (unshare, mount)"
net -n "$CTL_NS" link set lo up
net -n "$CTL_NS" link add br0 type bridge
net -n "$CTL_NS" addr add "$SUBNET.1/24" dev br0
net -n "$CTL_NS" link set br0 up
for ((n = 0; n < ${#NODES[@]}; ++n)); do
  ns="$TAG-${NODES[n]}"
  net netns add "$ns"
  NAMESPACES+=("$ns")
  net -n "$CTL_NS" link add "veth$n" type veth peer name eth0 netns "$ns"
  net -n "$CTL_NS" link set "veth$n" master br0 up
  net -n "$ns" link set lo up
  net -n "$ns" addr add "$SUBNET.$((11 + n))/24" dev eth0
  net -n "$ns" link set eth0 up
  echo "$SUBNET.$((11 + n)) ${NODES[n]}" >>"$HOSTS"
done

mkdir -p "$SCRATCH"/{state,log,job,node-local}
mkdir -m 755 "$SCRATCH/munge"
mkdir -m 700 "$SCRATCH/munge-key"
head -c 1024 /dev/urandom >"$SCRATCH/munge-key/munge.key"
chmod 400 "$SCRATCH/munge-key/munge.key"
SOCKET="$SCRATCH/munge/munge.socket"
# One munged for every namespace: its socket is a path in the scratch folder, which all share.
munged --foreground --socket="$SOCKET" --key-file="$SCRATCH/munge-key/munge.key" \
  --pid-file="$SCRATCH/munge/munged.pid" --log-file="$SCRATCH/log/munged.log" \
  --seed-file="$SCRATCH/munge-key/seed" >>"$SCRATCH/log/munged.log" 2>&1 &
PIDS+=($!)
for ((t = 0; t < 100; ++t)); do
  [[ -S "$SOCKET" ]] && break
  sleep 0.1
done
munge --socket="$SOCKET" --no-input | unmunge --socket="$SOCKET" >/dev/null ||
  fail "munged did not come up"

export SLURM_CONF="$SCRATCH/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=embernodes
SlurmctldHost=controller($SUBNET.1)
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$SCRATCH/state
SlurmdSpoolDir=$SCRATCH/spool-%n
SlurmctldPidFile=$SCRATCH/slurmctld.pid
SlurmdPidFile=$SCRATCH/slurmd-%n.pid
SlurmctldLogFile=$SCRATCH/log/slurmctld.log
SlurmdLogFile=$SCRATCH/log/slurmd-%n.log
PlugStackConfig=$SCRATCH/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdTimeout=90
NodeName=DEFAULT CPUs=$(nproc) State=UNKNOWN
EOF
for ((n = 0; n < ${#NODES[@]}; ++n)); do
  echo "NodeName=${NODES[n]} NodeAddr=$SUBNET.$((11 + n))" >>"$SLURM_CONF"
  mkdir -m 755 "$SCRATCH/spool-${NODES[n]}"
done
NODELIST="$(IFS=,; echo "${NODES[*]}")"
echo "PartitionName=test Nodes=$NODELIST Default=YES MaxTime=INFINITE State=UP" >>"$SLURM_CONF"
: >"$SCRATCH/plugstack.conf"

as_host "$CTL_NS" controller slurmctld -D -i -f "$SLURM_CONF" \
  >>"$SCRATCH/log/slurmctld.out.log" 2>&1 </dev/null &
PIDS+=($!)
declare -A SLURMD
for node in "${NODES[@]}"; do
  as_host "$TAG-$node" "$node" slurmd -D -N "$node" -f "$SLURM_CONF" \
    >>"$SCRATCH/log/slurmd-$node.out.log" 2>&1 </dev/null &
  PIDS+=($!)
  SLURMD[$node]=$!
done
states=""
for ((t = 0; t < 600; ++t)); do
  states="$(ctl sinfo --noheader --Node --format '%N=%T' 2>/dev/null | sort | tr '\n' ' ')"
  [[ "$states" == "node1=idle node2=idle node3=idle " ]] && break
  sleep 0.1
done
[[ "$states" == "node1=idle node2=idle node3=idle " ]] ||
  fail "the Slurm nodes are not idle after 60 s (${states:-no answer})"
echo "nodes: $states"

# The small synthetic job: two one-slot towers of dim-16 rows, a few hundred CPU steps.
cat >"$SCRATCH/job/job.yaml" <<'EOF'
cluster:
  servers: 3
  server_threads: 1
  partitions: 64
tables:
  - {name: u0, dim: 16, optimizer: {kind: adagrad, learning_rate: 0.05}}
  - {name: i0, dim: 16, optimizer: {kind: adagrad, learning_rate: 0.05}}
model:
  embedding_dim: 16
  user_slots: 1
  item_slots: 1
  hidden: [32]
  output_dim: 16
  temperature: 0.1
  learning_rate: 0.003
data:
  kind: synthetic
  synthetic: {user_slots: 1, item_slots: 1, vocabulary: 5000, exponent: 1.05, seed: 3,
              num_clusters: 16, signal: 0.95}
train:
  steps: 300
  batch_size: 128
  backend: cpu
  log_every: 50
  user_tables: [u0]
  item_tables: [i0]
EOF

# Submits the job (3 nodes, 3 servers, 2 trainers) with its files in job/NAME; prints its id.
submit() {
  local name="$1" submitted
  shift
  submitted="$(cd "$SCRATCH/job" && EMBER="$EMBER" EMBER_SERVERS=3 EMBER_TRAINERS=2 \
    EMBER_JOB_DIR="$SCRATCH/job/$name" EMBER_SCHEDULER_PORT=7000 EMBER_DATA_DIR="" \
    EMBER_STOP_WAIT_S=10 TMPDIR="$SCRATCH/node-local" \
    ctl sbatch --parsable --nodes=3 --output="$SCRATCH/job/$name.out" --time=10 \
    "$ROOT/scripts/slurm/ember.sbatch" job.yaml "$@")" || return 1
  echo "${submitted%%;*}"
}

# Waits up to JOB_TIMEOUT_S for job $1 to end; sets job_state and exit_code.
wait_job() {
  local t info
  job_state=""
  exit_code=""
  for ((t = 0; t < JOB_TIMEOUT_S * 5; ++t)); do
    info="$(ctl scontrol show job "$1" 2>/dev/null)"
    job_state="$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$info")"
    exit_code="$(sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p' <<<"$info")"
    case "$job_state" in
      COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE) return 0 ;;
    esac
    sleep 0.2
  done
  return 1
}

# ---- Phase 1: a job across the three nodes trains to the end.
STEPS=250
JOB_ID="$(submit train --steps "$STEPS")" || fail "sbatch refused the job"
JOB_IDS+=("$JOB_ID")
echo "phase 1: job $JOB_ID, 3 nodes, 3 servers, 2 trainers, $STEPS steps"
wait_job "$JOB_ID" || fail "job $JOB_ID did not end within $JOB_TIMEOUT_S s (state $job_state)"
echo "job $JOB_ID: $job_state, exit code $exit_code"
[[ "$job_state" == COMPLETED && "$exit_code" == 0:0 ]] ||
  fail "job $JOB_ID ended $job_state (exit code $exit_code)"
cat "$SCRATCH/job/train.out"
DIR="$SCRATCH/job/train"
python3 - "$DIR" "$STEPS" <<'EOF' || fail "the trainers' summaries are wrong"
import json, sys
job_dir, steps = sys.argv[1], int(sys.argv[2])
for rank in range(2):
    with open(f"{job_dir}/trainer-{rank}.json") as f:
        summary = json.load(f)
    assert summary["steps"] == steps, (rank, summary["steps"])
    assert summary["loss_end"] < summary["loss_start"], (rank, summary)
    servers = summary["servers"]
    assert len(servers) == 3 and all(s["rows"] > 0 and s["errors"] == 0 for s in servers), servers
    print(f"trainer {rank}: {steps} steps, loss {summary['loss_start']:.3f} -> "
          f"{summary['loss_end']:.3f}")
EOF
# Placement, from what the processes themselves logged: each server advertises its node's host
# name (it registered from there), the scheduler's node is named by its slurmstepd.
for role in scheduler server-0 server-1 server-2 trainer-0 trainer-1; do
  [[ -s "$DIR/logs/$role.log" ]] || fail "no log for $role"
done
grep -q 'listening on tcp://0.0.0.0:7000' "$DIR/logs/scheduler.log" ||
  fail "the scheduler did not bind every interface"
[[ $(grep -l 'bound at tcp://0.0.0.0:' "$DIR"/logs/server-*.log | wc -l) == 3 ]] ||
  fail "not every server bound every interface"
scheduler_node="$(sed -n 's/.*STEP [0-9.]* ON \([a-z0-9]*\) CANCELLED.*/\1/p' \
  "$DIR/logs/scheduler.log")"
server_nodes="$(sed -n 's/.*server [0-9]* registered at tcp:\/\/\([a-z0-9]*\):.*/\1/p' \
  "$DIR/logs/scheduler.log" | sort | tr '\n' ' ')"
echo "placement: scheduler on $scheduler_node, servers on $server_nodes(advertised host names)"
[[ "$scheduler_node" == node1 && "$server_nodes" == "node1 node2 node3 " ]] ||
  fail "expected the scheduler on node1 and a server on each node"
for key in scheduler admin server-0 server-1 server-2 trainer-0 trainer-1; do
  [[ -s "$DIR/keys/$key.key" && -s "$DIR/keys/$key.pub" ]] || fail "no key pair for $key"
done

# ---- Phase 2: a long job loses a server's node mid-job: its slurmd, slurmstepd and server are
# killed (SIGKILL, as in a crash; its address still answers, with resets).
JOB_ID="$(submit long --steps 1000000)" || fail "sbatch refused the second job"
JOB_IDS+=("$JOB_ID")
DIR="$SCRATCH/job/long"
echo "phase 2: job $JOB_ID, the same shape, 1000000 steps"
for ((t = 0; t < 600; ++t)); do
  [[ -s "$DIR/trainer-0.jsonl" && -s "$DIR/trainer-1.jsonl" ]] && break
  sleep 0.2
done
[[ -s "$DIR/trainer-0.jsonl" && -s "$DIR/trainer-1.jsonl" ]] ||
  fail "job $JOB_ID's trainers made no progress in 120 s"
# Placement of the running processes: the ember roles in each node's namespace.
declare -A ROLES
for node in "${NODES[@]}"; do
  ROLES[$node]=""
  for pid in $(ip netns pids "$TAG-$node"); do
    role="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null |
            awk -v e="$EMBER" '$1 == e { print $2 }')"
    [[ -n "$role" ]] && ROLES[$node]+="$role "
  done
  echo "  $node: ${ROLES[$node]}"
done
# The node to lose: one running a server but not the scheduler, preferably nothing else of the job
# (Slurm does not always place the trainers the same way; a trainer on it dies with it).
VICTIM=""
for node in "${NODES[@]:1}"; do
  [[ "${ROLES[$node]}" == *server* && -z "$VICTIM" ]] && VICTIM="$node"
done
for node in "${NODES[@]:1}"; do
  [[ "${ROLES[$node]}" == "server " ]] && VICTIM="$node"
done
[[ "${ROLES[node1]}" == *scheduler* && -n "$VICTIM" ]] ||
  fail "expected the scheduler on node1 and a server on another node"
# The cluster answers an admin holding the job's keys, from the controller's host, and nobody
# without them (the scheduler drops a connection that fails the CurveZMQ handshake unanswered).
as_host "$CTL_NS" controller "$EMBER" status --scheduler tcp://node1:7000 \
  --key "$DIR/keys/admin.key" --scheduler-key "$DIR/keys/scheduler.pub" ||
  fail "ember status with the job's admin key failed"
if as_host "$CTL_NS" controller timeout 60 "$EMBER" status --scheduler tcp://node1:7000 \
     >"$SCRATCH/status-no-keys.out" 2>&1; then
  fail "ember status without keys was answered"
fi
cat "$SCRATCH/status-no-keys.out"

# The scheduler SIGKILLed mid-job (its node stays): the batch script's step starts it again on its
# state in the job folder, and the trainers go on.
scheduler_pid=""
for pid in $(ip netns pids "$TAG-node1"); do
  [[ "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" == "$EMBER scheduler "* ]] &&
    scheduler_pid="$pid"
done
[[ -n "$scheduler_pid" ]] || fail "no scheduler process on node1"
logged_before="$(wc -l <"$DIR/trainer-0.jsonl")"
kill -KILL "$scheduler_pid"
echo "killed the scheduler (pid $scheduler_pid) at $(date +%T)"
for ((t = 0; t < 600; ++t)); do
  grep -q "restarted from" "$DIR/logs/scheduler.log" &&
    (($(wc -l <"$DIR/trainer-0.jsonl") > logged_before + 1)) && break
  sleep 0.2
done
grep -q "the scheduler died (status 137); starting it again" "$DIR/logs/scheduler.log" ||
  fail "the batch script did not start the killed scheduler again"
grep "restarted from" "$DIR/logs/scheduler.log" || fail "the scheduler did not restart on its state"
(($(wc -l <"$DIR/trainer-0.jsonl") > logged_before + 1)) ||
  fail "the trainers made no progress after the scheduler's restart"
echo "the trainers went on: trainer 0 logged $(($(wc -l <"$DIR/trainer-0.jsonl") - logged_before))" \
  "progress lines since the kill"

lost="$(sed -n "s|.*server \([0-9]*\) registered at tcp://$VICTIM:.*|\1|p" \
  "$DIR/logs/scheduler.log")"
[[ -n "$lost" ]] || fail "no server registered from $VICTIM"
echo "killing every process of $VICTIM (server $lost) at $(date +%T):"
mapfile -t victim_pids < <(ip netns pids "$TAG-$VICTIM")
ps -o pid=,args= "${victim_pids[@]}" | cut -c1-100
kill_start=$SECONDS
kill_namespace "$TAG-$VICTIM"
wait "${SLURMD[$VICTIM]}" 2>/dev/null
# Once the scheduler has declared the server dead (10 s without heartbeats), an admin sees it so.
for ((t = 0; t < 300; ++t)); do
  grep -q "server $lost (.*) is dead" "$DIR/logs/scheduler.log" && break
  sleep 0.2
done
as_host "$CTL_NS" controller timeout 60 "$EMBER" status --scheduler tcp://node1:7000 \
  --key "$DIR/keys/admin.key" --scheduler-key "$DIR/keys/scheduler.pub" \
  >"$SCRATCH/status-after-kill.out" 2>&1
echo "ember status $((SECONDS - kill_start)) s after the kill:"
cat "$SCRATCH/status-after-kill.out"
# Bounded wait for the end, noting when the batch script printed the trainers' status.
script_end=""
for ((t = 0; t < JOB_TIMEOUT_S * 5; ++t)); do
  if [[ -z "$script_end" ]] && grep -q '^ember: trainers finished' "$SCRATCH/job/long.out"; then
    script_end=$((SECONDS - kill_start))
  fi
  info="$(ctl scontrol show job "$JOB_ID" 2>/dev/null)"
  job_state="$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$info")"
  exit_code="$(sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p' <<<"$info")"
  [[ "$job_state" =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|PENDING)$ ]] && break
  sleep 0.2
done
echo "job $JOB_ID: $job_state, exit code $exit_code, $((SECONDS - kill_start)) s after the kill;" \
  "trainers' status printed after ${script_end:-?} s"
for f in "$DIR"/logs/trainer-*.log; do grep -v '^step ' "$f" | tail -n 2; done
grep ' is dead' "$DIR/logs/scheduler.log" | head -n 1
sed -n '/^routing epoch/,$p' "$SCRATCH/job/long.out"
ctl sinfo --Node --noheader --format '%N %T' | tr '\n' ' '
echo
# What docs/operations.md says: the trainers fail at their request deadline naming the lost server
# and its node, the batch script ends with their status, and the job fails (FAILED with the
# trainers' exit code, or NODE_FAIL when Slurm declares the node down before the script ended);
# it is not requeued.
case "$job_state" in
  FAILED) [[ "$exit_code" != 0:0 ]] || fail "job $JOB_ID FAILED with exit code $exit_code" ;;
  NODE_FAIL) ;;
  *) fail "job $JOB_ID ended $job_state after losing $VICTIM" ;;
esac
# Every trainer that was not on the lost node fails naming the lost server.
endpoint="tcp://$VICTIM:[0-9]+"
named=0
for rank in 0 1; do
  if grep -Eq "^ember train: DEADLINE_EXCEEDED: .* by server $lost \($endpoint, connection lost\)" \
       "$DIR/logs/trainer-$rank.log"; then
    named=$((named + 1))
  fi
done
trainers_lost=0
[[ "${ROLES[$VICTIM]}" == *train* ]] && trainers_lost=1
((named >= 2 - trainers_lost)) ||
  fail "$named trainer(s) failed naming server $lost ($trainers_lost died with $VICTIM)"
grep -Eq "server $lost \($endpoint\) is dead" "$DIR/logs/scheduler.log" ||
  fail "the scheduler did not declare server $lost dead"
grep -Eq "^$lost +$endpoint +dead " "$SCRATCH/status-after-kill.out" ||
  fail "ember status after the kill does not show server $lost dead"
# The batch script reports the trainers' failure, unless a trainer died with the node: then its
# step waits for the node, and Slurm ends the job NODE_FAIL before the script ends.
if [[ -n "$script_end" ]]; then
  grep -Eq "^$lost +$endpoint +dead " "$SCRATCH/job/long.out" ||
    fail "the job's ember status does not show server $lost dead"
  grep -Eq '^ember: trainers finished with status [1-9][0-9]*$' "$SCRATCH/job/long.out" ||
    fail "the batch script did not report the trainers' failure"
elif ((trainers_lost == 1)) && [[ "$job_state" == NODE_FAIL ]]; then
  echo "a trainer died with $VICTIM: its step waited for the node, and the job ended NODE_FAIL" \
    "before the batch script did"
else
  fail "the batch script did not report the trainers' failure"
fi
[[ "$(ctl sinfo --Node --noheader --nodes "$VICTIM" --format '%T')" == down* ]] ||
  fail "Slurm did not mark $VICTIM down"
echo "PASS"
