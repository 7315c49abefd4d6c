# What compare.sh and sacct-compare.sh share (sourced, not run): the checks, the
# packages, a private working directory cleaned up at exit, a real Slurm 22.05
# (munged, slurmctld, slurmd on loopback) and a Bulkhead standalone cluster beside it,
# both one node `n1` of 4 CPUs and 8000 MB with 1024 MB a CPU by default, and the
# counting of agreements.
#
# The sourcing script sets NAME (its working directory's prefix) and PACKAGES (Debian
# packages it needs beyond slurm-wlm's), and may set CLEANUP_LAST (a command run at
# exit once Slurm's daemons are stopped, before the directory is removed).

HERE=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
BH_BIN_DIR=${BH_BIN_DIR:-$HERE/../../target/debug}
[ -x "$BH_BIN_DIR/bh" ] || { echo "no $BH_BIN_DIR/bh: cargo build --bins first" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }

# Debian's packages, installed where a command is missing (their services left stopped).
need=0
for b in munged slurmctld slurmd sbatch squeue $NEEDS; do command -v "$b" >/dev/null || need=1; done
if [ "$need" = 1 ]; then
  made=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; made=1
  fi
  apt-get update -qq >/dev/null
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    slurm-wlm slurmctld slurmd slurm-client munge $PACKAGES >/dev/null
  [ "$made" = 1 ] && rm -f /usr/sbin/policy-rc.d
fi

WORK=$(mktemp -d "/tmp/$NAME.XXXXXX")
chmod 755 "$WORK"
mkdir -p "$WORK"/{munge,etc,state,log,run,spool,cwd,bhbin}
chmod 711 "$WORK/munge"
PIDS=()
cleanup() {
  set +e
  SLURM_CONF=$WORK/etc/slurm.conf timeout 10 scancel -u root 2>/dev/null
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for f in "$WORK"/run/*.pid; do
    [ "$f" = "$WORK/run/mariadb.pid" ] || { [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; }
  done
  sleep 1
  # Slurm's step daemons of this instance, by their environment.
  for d in /proc/[0-9]*; do
    [ "$(cat "$d/comm" 2>/dev/null)" = slurmstepd ] || continue
    tr '\0' '\n' < "$d/environ" 2>/dev/null | grep -qx "SLURM_CONF=$WORK/etc/slurm.conf" \
      && kill -9 "${d#/proc/}" 2>/dev/null
  done
  [ -n "${CLEANUP_LAST:-}" ] && eval "$CLEANUP_LAST"
  rm -rf "$WORK"
}
trap cleanup EXIT

dd if=/dev/urandom of="$WORK/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$WORK/munge/munge.key"
HOST=$(hostname -s)

# slurm_conf CTLD_PORT SLURMD_PORT [LINES]: the cluster's slurm.conf, LINES added.
slurm_conf() {
  cat > "$WORK/etc/slurm.conf" <<EOF
ClusterName=bulkhead
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$1
SlurmdPort=$2
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$WORK/munge/munge.sock
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool/%n
SlurmctldPidFile=$WORK/run/slurmctld.pid
SlurmdPidFile=$WORK/run/slurmd-%n.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerParameters=batch_sched_delay=0
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=300
DefMemPerCPU=1024
NodeName=n1 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$2 CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=8000 State=UNKNOWN
PartitionName=batch Nodes=n1 Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
${3:-}
EOF
  export SLURM_CONF=$WORK/etc/slurm.conf
}

start_munged() {
  munged --socket="$WORK/munge/munge.sock" --key-file="$WORK/munge/munge.key" \
    --pid-file="$WORK/run/munged.pid" --log-file="$WORK/log/munged.log" --seed-file="$WORK/munge/seed"
}

# start_clusters BH_PORT: slurmctld, slurmd and the Bulkhead standalone cluster; waits
# for both nodes to be idle.
start_clusters() {
  slurmctld
  slurmd -N n1
  BH_ALLOW_ROOT_JOBS=true "$BH_BIN_DIR/bh" standalone --data-dir "$WORK/bh" \
    --listen "tcp://127.0.0.1:$1" --name n1 --cpus 4 --mem 8000 --kill-wait 2 > "$WORK/log/bh.log" 2>&1 &
  PIDS+=($!)
  "$BH_BIN_DIR/bh" install-slurm-commands "$WORK/bhbin" >/dev/null
  export BH_BROKER=tcp://127.0.0.1:$1 BH_MUNGE_SOCKET=$WORK/bh/munge/munge.socket
  local deadline=$((SECONDS + 60))
  until real sinfo -h -o %t 2>/dev/null | grep -q idle && bulk sinfo -h -o %t 2>/dev/null | grep -q idle; do
    [ $SECONDS -lt $deadline ] || { echo "the clusters did not come up" >&2; tail "$WORK"/log/*; exit 1; }
    sleep 0.5
  done
  cd "$WORK/cwd"
}

# real CMD... / bulk CMD...: the same command against each cluster.
real() { env -u BH_BROKER "$@"; }
bulk() { PATH="$WORK/bhbin:$PATH" "$@"; }

AGREE=0
TOTAL=0
same() { # same WHAT REAL BULK: counts, and prints a difference (with its lines' places)
  TOTAL=$((TOTAL + 1))
  if [ "$2" == "$3" ]; then AGREE=$((AGREE + 1)); else
    printf '## %s (< real, > bulkhead)\n' "$1"
    diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | head -24 || true
  fi
}
