#!/usr/bin/env bash
# Bulkhead's Slurm commands beside real Slurm 22.05 (Debian's slurm-wlm) on this host:
# the same submissions and the same commands against a private slurmctld + slurmd
# (loopback, ports 16817/17001, its own munged) and a Bulkhead standalone cluster (port
# 16917, its own data directory), both offering one node `n1` of 4 CPUs and 8000 MB
# with 1024 MB a CPU by default, both run as root from the same directory. Compares:
#   1. every squeue -O field (all 117 names), one job at a time, for a set of
#      submissions (held, running, arrays, begin times, memory forms, ...);
#   2. squeue --json's job objects, key by key;
#   3. the default, long and other layouts of squeue, sinfo and scontrol;
#   4. the SLURM_* variables a batch script and a step see (names, and values where
#      they do not depend on the run);
#   5. messages and exit statuses for options and ids the commands refuse.
# Values that differ by construction are left out: job ids (replaced by ID), times,
# priorities (Slurm's priority/basic against Bulkhead's multifactor), the submit
# host's session, the node's load, free memory, address and version, Account and QOS
# (real Slurm here has no accounting).
# Prints each difference, then `slurm_compare_agree=N` and `slurm_compare_total=M`.
# Needs root; installs slurm-wlm and munge from Debian if missing; stops every daemon
# it started and removes its directory (EXIT trap).
#
#   cargo build --bins && bash tests/real-slurm/compare.sh      (or: cargo xtask slurm-compare)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
BH_BIN_DIR=${BH_BIN_DIR:-$HERE/../../target/debug}
[ -x "$BH_BIN_DIR/bh" ] || { echo "no $BH_BIN_DIR/bh: cargo build --bins first" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }

need=0
for b in munged slurmctld slurmd sbatch squeue; do command -v "$b" >/dev/null || need=1; done
if [ "$need" = 1 ]; then
  made=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; made=1
  fi
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    slurm-wlm slurmctld slurmd slurm-client munge >/dev/null
  [ "$made" = 1 ] && rm -f /usr/sbin/policy-rc.d
fi

WORK=$(mktemp -d /tmp/slurm-compare.XXXXXX)
chmod 755 "$WORK"
mkdir -p "$WORK"/{munge,etc,state,log,run,spool,cwd,bhbin}
chmod 711 "$WORK/munge"
PIDS=()
cleanup() {
  set +e
  SLURM_CONF=$WORK/etc/slurm.conf timeout 10 scancel -u root 2>/dev/null
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for f in "$WORK"/run/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  sleep 1
  # Slurm's step daemons of this instance, by their environment.
  for d in /proc/[0-9]*; do
    [ "$(cat "$d/comm" 2>/dev/null)" = slurmstepd ] || continue
    tr '\0' '\n' < "$d/environ" 2>/dev/null | grep -qx "SLURM_CONF=$WORK/etc/slurm.conf" \
      && kill -9 "${d#/proc/}" 2>/dev/null
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

dd if=/dev/urandom of="$WORK/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$WORK/munge/munge.key"
HOST=$(hostname -s)
cat > "$WORK/etc/slurm.conf" <<EOF
ClusterName=bulkhead
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=17001
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
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerParameters=batch_sched_delay=0
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=300
DefMemPerCPU=1024
NodeName=n1 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=17001 CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=8000 State=UNKNOWN
PartitionName=batch Nodes=n1 Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
export SLURM_CONF=$WORK/etc/slurm.conf
munged --socket="$WORK/munge/munge.sock" --key-file="$WORK/munge/munge.key" \
  --pid-file="$WORK/run/munged.pid" --log-file="$WORK/log/munged.log" --seed-file="$WORK/munge/seed"
slurmctld
slurmd -N n1

BH_ALLOW_ROOT_JOBS=true "$BH_BIN_DIR/bh" standalone --data-dir "$WORK/bh" --listen tcp://127.0.0.1:16917 \
  --name n1 --cpus 4 --mem 8000 --kill-wait 2 > "$WORK/log/bh.log" 2>&1 &
PIDS+=($!)
"$BH_BIN_DIR/bh" install-slurm-commands "$WORK/bhbin" >/dev/null
export BH_BROKER=tcp://127.0.0.1:16917 BH_MUNGE_SOCKET=$WORK/bh/munge/munge.socket

deadline=$((SECONDS + 60))
until sinfo -h -o %t 2>/dev/null | grep -q idle && \
      PATH="$WORK/bhbin:$PATH" sinfo -h -o %t 2>/dev/null | grep -q idle; do
  [ $SECONDS -lt $deadline ] || { echo "the clusters did not come up" >&2; tail "$WORK"/log/*; exit 1; }
  sleep 0.5
done

cd "$WORK/cwd"
AGREE=0
TOTAL=0
# real CMD... / bulk CMD...: the same command against each cluster.
real() { env -u BH_BROKER "$@"; }
bulk() { PATH="$WORK/bhbin:$PATH" "$@"; }
same() { # same WHAT REAL BULK: counts, and prints a difference
  TOTAL=$((TOTAL + 1))
  if [ "$2" == "$3" ]; then AGREE=$((AGREE + 1)); else
    printf '## %s (< real, > bulkhead)\n' "$1"
    diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | grep '^[<>]' | head -20  || true
  fi
}
# A command's output with this job's id (and array tasks' ids) made ID.
ids() { sed -E "s/\b$1\b/ID/g"; }
cancel_all() { real scancel -u root; bulk scancel -u root; sleep 1; }

# 1 and 2: every -O field and squeue --json's keys, for each submission, held and
# (where it can start at once) running.
# squeue 22.05's job field names (src/squeue/opts.c).
FIELDS=$(cat "$HERE/squeue-fields.txt")
SKIP_FIELD='^(allocsid|allocnodes|priority|prioritylong|lastschedeval|submittime|starttime|endtime|accruetime|eligibletime|timeused|timeleft|pendingtime|deadline|account|qos)$'
json_flat() {
  python3 -c '
import json, sys
d = json.load(sys.stdin)
jobs = [j for j in d["jobs"] if j["job_state"] == sys.argv[1]]
def flat(o, p=""):
    for k, v in sorted(o.items()):
        if isinstance(v, dict): yield from flat(v, p + k + ".")
        else: yield p + k, json.dumps(v)
skip = ("job_id", "array_job_id", "submit_time", "start_time", "end_time", "eligible_time",
        "accrue_time", "last_sched_evaluation", "priority", "account", "qos", "alloc_sid",
        "alloc_node", "pre_sus_time", "resize_time", "suspend_time", "preempt_time",
        "time.", "association_id", "cluster")
for k, v in flat(jobs[-1]) if jobs else []:
    if not any(k == s or k.startswith(s) for s in skip): print(k + "=" + v)' "$1"
}
for submit in "-H" "-H -n 2 -t 30" "-H -c 2 --mem-per-cpu=500M" "-H --mem=3G -n 3" \
    "-H -N 1-2 --ntasks-per-node=2" "-H --begin=now+1hour -J named --nice=5 --comment=hi" \
    "-H --exclusive --no-requeue -o out-%j.txt -e err-%j.txt" "-H --time-min=30 -t 2:00:00" \
    "-H -n 4 --mem=0" "-H --array=1-4%2" "-n 2 -t 30" "--array=1-3 -t 5" "-c 3"; do
  R=$(real sbatch --parsable $submit --wrap 'sleep 30')
  B=$(bulk sbatch --parsable $submit --wrap 'sleep 30')
  state=PENDING; [[ " $submit " == *" -H "* ]] || state=RUNNING
  [ $state = RUNNING ] && sleep 2
  for f in $FIELDS; do
    [[ $f =~ $SKIP_FIELD ]] && continue
    same "squeue -O $f ($submit)" \
      "$(real squeue -h -j "$R" -O "$f:60" 2>&1 | ids "$R" | sed 's/ *$//')" \
      "$(bulk squeue -h -j "$B" -O "$f:60" 2>&1 | ids "$B" | sed 's/ *$//')"
  done
  same "squeue --json ($submit)" \
    "$(real squeue --json -j "$R" | json_flat $state)" "$(bulk squeue --json -j "$B" | json_flat $state)"
  same "scontrol show job ($submit)" \
    "$(real scontrol show job "$R" | ids "$R" | sed -E 's/(Time|Priority|Account|QOS|AllocNode:Sid|LastSchedEval|EligibleTime|AccrueTime|StartTime|EndTime|RunTime|SubmitTime)=[^ ]*/\1=X/g; s/JobId=[0-9]+/JobId=ID/g')" \
    "$(bulk scontrol show job "$B" | ids "$B" | sed -E 's/(Time|Priority|Account|QOS|AllocNode:Sid|LastSchedEval|EligibleTime|AccrueTime|StartTime|EndTime|RunTime|SubmitTime)=[^ ]*/\1=X/g; s/JobId=[0-9]+/JobId=ID/g')"
  cancel_all
done

# 3: layouts, with a running job, a held one and a throttled array in each.
for c in "-n 2" "-H" "--array=1-3%1"; do
  real sbatch -Q $c --wrap 'sleep 60'; bulk sbatch -Q $c --wrap 'sleep 60'
done
sleep 2
strip() { sed -E 's/\b[0-9]{1,7}(_|\b)/ID\1/g; s/[0-9]+:[0-9]{2}\b/T/g; s/20[0-9]{2}-[0-9-]+T[0-9:]+/DATE/g; s/ *$//'; }
for c in "squeue" "squeue -l" "squeue -r" "squeue -t all" "squeue -o %all" "sinfo" "sinfo -s" \
    "sinfo -l" "sinfo -N -l" "sinfo -R" "squeue -s" "scontrol show partition"; do
  same "$c" "$(real $c 2>&1 | grep -v '^[A-Z][a-z][a-z] [A-Z][a-z][a-z] ' | strip)" \
    "$(bulk $c 2>&1 | grep -v '^[A-Z][a-z][a-z] [A-Z][a-z][a-z] ' | strip)"
done
same "scontrol show node" \
  "$(real scontrol show node n1 | sed -E 's/(CPULoad|FreeMem|Version|NodeAddr|NodeHostName|AllocMem)=[^ ]*/\1=X/g; s/(BootTime|SlurmdStartTime|LastBusyTime)=[^ ]*/\1=T/g; s/ *$//')" \
  "$(bulk scontrol show node n1 | sed -E 's/(CPULoad|FreeMem|Version|NodeAddr|NodeHostName|AllocMem)=[^ ]*/\1=X/g; s/(BootTime|SlurmdStartTime|LastBusyTime)=[^ ]*/\1=T/g; s/ *$//')"
cancel_all

# 4: the variables a batch script and a step see (their names).
cat > vars.sh <<'VARS'
env | grep -E '^(SLURM_|SRUN_)' | cut -d= -f1 |
  grep -vE '^SLURM_(CONF|WORKING_CLUSTER|JOB_ACCOUNT|JOB_QOS|SRUN_COMM_HOST|SRUN_COMM_PORT|STEP_LAUNCHER_PORT|LAUNCH_NODE_IPADDR)$'
VARS
for s in "-n 2" "-n 2 --mem=1500" "-c 2 --mem-per-cpu=600" "--array=1-2"; do
  real sbatch -Q -W $s -o real-%j.env --wrap "sh vars.sh; srun -n1 sh vars.sh | sed 's/^/step /'" >/dev/null
  bulk sbatch -Q -W $s -o bulk-%j.env --wrap "sh vars.sh; srun -n1 sh vars.sh | sed 's/^/step /'" >/dev/null
  same "job and step variables ($s)" \
    "$(cat real-*.env | sort -u)" "$(cat bulk-*.env | sort -u)"
  rm -f real-*.env bulk-*.env
done

# 5: refusals: message (the program's path removed) and exit status.
for c in "sbatch --wrong" "sbatch -y" "srun --wrong true" "srun -y true" "salloc -y" \
    "squeue --wrong" "sinfo -Z" "scancel --wrong" "scontrol --wrong" "srun -n1" \
    "squeue -j 99999" "scontrol show job 99999" "scancel 99999" "sbatch --time=abc --wrap true" \
    "squeue -O nosuchfield" "scontrol show partition nope"; do
  same "$c" "$(real $c 2>&1 | sed -E 's|^/[^:]*/||'; echo "exit $?")" \
    "$(bulk $c 2>&1 | sed -E 's|^/[^:]*/||'; echo "exit $?")"
done

echo "slurm_compare_agree=$AGREE"
echo "slurm_compare_total=$TOTAL"
