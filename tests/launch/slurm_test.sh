#!/usr/bin/env bash
# Runs scripts/slurm/ember.sbatch on a single-node Slurm started here: munged, slurmctld and slurmd
# with their configs, state, key, sockets and logs in a scratch folder, on loopback ports the OS
# picked, stopped by PID at the end (also on failure). The job trains a small synthetic model with
# a scheduler, 2 servers and 2 trainers; the test checks the job's exit status and the trainers'
# summaries. Exits 77 (skipped) where it cannot run: not root, or Slurm or munge not installed.
#
# usage: slurm_test.sh EMBER_BINARY
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
EMBER="$(realpath "${1:-$ROOT/build/ember}")"
JOB_TIMEOUT_S=240

skip() { echo "SKIP: $*"; exit 77; }
if [[ $(id -u) -ne 0 ]]; then
  skip "needs root (slurmd launches tasks as root; SlurmUser=root)"
fi
for tool in munged munge slurmctld slurmd sbatch srun sinfo squeue scancel scontrol python3; do
  command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] ||
    skip "$tool is not installed (scripts/setup.sh installs slurmctld slurmd slurm-client munge)"
done
export PATH="$PATH:/usr/sbin"
[[ -x "$EMBER" ]] || { echo "FAIL: no ember binary at $EMBER"; exit 1; }

SCRATCH="$(mktemp -d /tmp/ember-slurm-test.XXXXXX)"
chmod 755 "$SCRATCH"  # munged wants its socket's folders searchable by all
PIDS=()
JOB_ID=""

cleanup() {
  local pid t
  if [[ -n "$JOB_ID" ]] && squeue --noheader --jobs "$JOB_ID" 2>/dev/null | grep -q .; then
    scancel --signal=KILL "$JOB_ID" 2>/dev/null
    for ((t = 0; t < 100; ++t)); do
      squeue --noheader --jobs "$JOB_ID" 2>/dev/null | grep -q . || break
      sleep 0.2
    done
  fi
  # slurmd, slurmctld, munged: newest first, SIGTERM then SIGKILL after 10 s.
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
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
trap "exit 1" TERM INT

fail() {
  echo "FAIL: $*"
  for log in "$SCRATCH"/log/*.log "$SCRATCH"/job/*.out "$SCRATCH"/job/ember/logs/*.log; do
    [[ -f "$log" ]] || continue
    echo "---- $log (last lines)"
    tail -n 25 "$log"
  done
  exit 1
}

# Three free loopback ports: slurmctld, slurmd, the ember scheduler.
read -r CTLD_PORT SLURMD_PORT EMBER_PORT < <(python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
EOF
)

mkdir -p "$SCRATCH"/{state,spool,log,job}
mkdir -m 755 "$SCRATCH/munge"
mkdir -m 700 "$SCRATCH/munge-key"
head -c 1024 /dev/urandom >"$SCRATCH/munge-key/munge.key"
chmod 400 "$SCRATCH/munge-key/munge.key"
SOCKET="$SCRATCH/munge/munge.socket"
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

HOST="$(hostname -s 2>/dev/null || uname -n | cut -d. -f1)"
export SLURM_CONF="$SCRATCH/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=embertest
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$SCRATCH/state
SlurmdSpoolDir=$SCRATCH/spool
SlurmctldPidFile=$SCRATCH/slurmctld.pid
SlurmdPidFile=$SCRATCH/slurmd.pid
SlurmctldLogFile=$SCRATCH/log/slurmctld.log
SlurmdLogFile=$SCRATCH/log/slurmd.log
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
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
: >"$SCRATCH/plugstack.conf"

slurmctld -D -i -f "$SLURM_CONF" >>"$SCRATCH/log/slurmctld.out.log" 2>&1 </dev/null &
PIDS+=($!)
slurmd -D -f "$SLURM_CONF" >>"$SCRATCH/log/slurmd.out.log" 2>&1 </dev/null &
PIDS+=($!)
state=""
for ((t = 0; t < 600; ++t)); do
  state="$(sinfo --noheader --format '%T' 2>/dev/null)"
  [[ "$state" == idle ]] && break
  sleep 0.1
done
[[ "$state" == idle ]] || fail "the Slurm node is not idle after 60 s (state '$state')"

# The small synthetic job: two one-slot towers of dim-16 rows, a few hundred CPU steps.
cat >"$SCRATCH/job/job.yaml" <<'EOF'
cluster:
  servers: 2
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
  log_every: 100
  user_tables: [u0]
  item_tables: [i0]
EOF

STEPS=250
mkdir -p "$SCRATCH/node-local"
cd "$SCRATCH/job" || fail "no job folder"
submitted="$(EMBER="$EMBER" EMBER_SERVERS=2 EMBER_TRAINERS=2 EMBER_JOB_DIR="$SCRATCH/job/ember" \
  EMBER_SCHEDULER_PORT="$EMBER_PORT" EMBER_DATA_DIR="" TMPDIR="$SCRATCH/node-local" \
  sbatch --parsable --output="$SCRATCH/job/slurm-%j.out" --time=10 \
  "$ROOT/scripts/slurm/ember.sbatch" job.yaml --steps "$STEPS")" || fail "sbatch refused the job"
JOB_ID="${submitted%%;*}"
echo "submitted job $JOB_ID"

job_state=""
for ((t = 0; t < JOB_TIMEOUT_S * 5; ++t)); do
  job_state="$(scontrol show job "$JOB_ID" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')"
  case "$job_state" in
    COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE) break ;;
  esac
  sleep 0.2
done
exit_code="$(scontrol show job "$JOB_ID" 2>/dev/null | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p')"
echo "job $JOB_ID: $job_state, exit code $exit_code"
[[ "$job_state" == COMPLETED && "$exit_code" == 0:0 ]] ||
  fail "job $JOB_ID ended $job_state (exit code $exit_code) or not within $JOB_TIMEOUT_S s"
cat "$SCRATCH/job/slurm-$JOB_ID.out"

python3 - "$SCRATCH/job/ember" "$STEPS" <<'EOF' || fail "the trainers' summaries are wrong"
import json, sys
job_dir, steps = sys.argv[1], int(sys.argv[2])
for rank in range(2):
    with open(f"{job_dir}/trainer-{rank}.json") as f:
        summary = json.load(f)
    assert summary["steps"] == steps, (rank, summary["steps"])
    assert summary["loss_end"] < summary["loss_start"], (rank, summary)
    servers = summary["servers"]
    assert len(servers) == 2 and all(s["rows"] > 0 and s["errors"] == 0 for s in servers), servers
    print(f"trainer {rank}: {steps} steps, loss {summary['loss_start']:.3f} -> "
          f"{summary['loss_end']:.3f}")
EOF
for role in scheduler server-0 server-1 trainer-0 trainer-1; do
  [[ -s "$SCRATCH/job/ember/logs/$role.log" ]] || fail "no log for $role"
done
# The servers' node-local data directories are gone with the job.
if compgen -G "$SCRATCH/node-local/ember-$JOB_ID*" >/dev/null; then
  fail "the job left its node-local data directories"
fi
echo "PASS"
