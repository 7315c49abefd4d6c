#!/usr/bin/env bash
# Bulkhead's sacct beside real sacct 22.05 with accounting: Debian's slurm-wlm with
# slurmdbd on a private MariaDB (its own data directory, loopback port 13306), a
# slurmctld and slurmd on loopback (ports 26817, 27001, slurmdbd 26819, their own
# munged), and a Bulkhead standalone cluster (port 26917, its own data directory),
# both offering one node `n1` of 4 CPUs and 8000 MB with 1024 MB a CPU by default,
# both run as root from the same directory. The same jobs on both (completed, failed,
# cancelled while running and while waiting, srun steps, an array, memory and task
# forms), then the same sacct commands: every field that does not depend on the run
# or the site, by name in parsable form, and the default, -X, -b and -o layouts.
# Values that differ by construction are left out: ids (made ID), times and
# durations, measured usage (memory, CPU time), the node's name and address, the
# account and QOS (slurmdbd's association here, Bulkhead's own accounts there).
# Slurm keeps job comments with `AccountingStoreFlags=job_comment` (Bulkhead always
# keeps them), so the real cluster is configured so.
# Prints each difference, then `sacct_compare_agree=N` and `sacct_compare_total=M`.
# Needs root; installs slurm-wlm, slurmdbd, mariadb-server and munge from Debian if
# missing; stops every daemon it started and removes its directory (EXIT trap).
#
#   cargo build --bins && bash tests/real-slurm/sacct-compare.sh
set -euo pipefail

NAME=sacct-compare
PACKAGES="slurmdbd mariadb-server"
NEEDS="slurmdbd sacct mariadbd mariadb-install-db"
# The database server stops last: slurmdbd writes to it until it stops.
CLEANUP_LAST='[ -f "$WORK/run/mariadb.pid" ] && kill "$(cat "$WORK/run/mariadb.pid")";
  for _ in $(seq 50); do pgrep -f "datadir=$WORK/db" >/dev/null || break; sleep 0.2; done'
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
mkdir -p "$WORK/db"

# A private MariaDB: its own data directory, loopback only, its own socket.
mariadb-install-db --no-defaults --datadir="$WORK/db" --auth-root-authentication-method=normal \
  --skip-test-db >"$WORK/log/mariadb-install.log" 2>&1
mariadbd --no-defaults --datadir="$WORK/db" --socket="$WORK/run/mariadb.sock" \
  --pid-file="$WORK/run/mariadb.pid" --bind-address=127.0.0.1 --port=13306 --user=root \
  --log-error="$WORK/log/mariadb.log" --innodb-flush-log-at-trx-commit=2 &
deadline=$((SECONDS + 60))
until mariadb --no-defaults -S "$WORK/run/mariadb.sock" -u root -e 'select 1' >/dev/null 2>&1; do
  [ $SECONDS -lt $deadline ] || { echo "MariaDB did not start" >&2; cat "$WORK/log/mariadb.log"; exit 1; }
  sleep 0.3
done
mariadb --no-defaults -S "$WORK/run/mariadb.sock" -u root -e \
  "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

cat > "$WORK/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$WORK/munge/munge.sock
DbdHost=$HOST
DbdAddr=127.0.0.1
DbdPort=26819
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=13306
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
PidFile=$WORK/run/slurmdbd.pid
LogFile=$WORK/log/slurmdbd.log
EOF
chmod 600 "$WORK/etc/slurmdbd.conf"
slurm_conf 26817 27001 "AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=26819
AccountingStoragePass=$WORK/munge/munge.sock
AccountingStoreFlags=job_comment"
start_munged
# slurmdbd reads slurmdbd.conf beside $SLURM_CONF.
slurmdbd
deadline=$((SECONDS + 60))
until sacctmgr -n list cluster >/dev/null 2>&1; do
  [ $SECONDS -lt $deadline ] || { echo "slurmdbd did not start" >&2; sacctmgr -n list cluster; tail "$WORK"/log/slurmdbd.log; exit 1; }
  sleep 0.5
done
sacctmgr -i add cluster bulkhead >/dev/null
start_clusters 26917

# The jobs, submitted to both in the same order; each side's ids kept by name.
declare -A R B
sub() { # sub NAME SBATCH-WORDS...: one job on each cluster
  local name=$1; shift
  R[$name]=$(real sbatch --parsable -J "$name" "$@")
  B[$name]=$(bulk sbatch --parsable -J "$name" "$@")
}
sub done --wrap 'true'
sub failed --wrap 'exit 3'
# A step holds the job's every CPU on its nodes unless --exact (implied by -c).
sub steps -n 2 --wrap 'srun true; srun -n1 false; srun --exact -n1 true; srun -c1 -n1 true; srun --overlap -n1 true; true'
# Steps whose tasks die of signals: alone, beside a sibling's exit code on the node,
# and a step whose tasks exit 0 and 5.
sub signals -n 2 --wrap 'srun -n1 sh -c "ulimit -c 0; kill -SEGV \$\$"; srun -n1 sh -c "kill -TERM \$\$"; srun -n2 sh -c "[ \$SLURM_PROCID = 1 ] && exit 2; sleep 0.5; kill -USR1 \$\$"; srun -n2 sh -c "exit \$((SLURM_PROCID * 5))"; true'
sub mem --mem=1500 -c 2 --wrap 'true'
sub percpu --mem-per-cpu=600 -n 3 --comment=note --wrap 'true'
sub limit -t 90 --wrap 'true'
sub arr --array=1-3 --wrap 'true'
sub running --wrap 'sleep 300'
sub held -H --wrap 'true'
# Everything but the two to cancel ends; they are cancelled once running or held.
wait_ended() { # wait_ended SIDE: no job but `running` and `held` left in the queue
  local side=$1 deadline=$((SECONDS + 120))
  until [ "$($side squeue -h -o %j | grep -vcE '^(running|held)$')" = 0 ]; do
    [ $SECONDS -lt $deadline ] || { echo "jobs did not end on $side" >&2; $side squeue; exit 1; }
    sleep 0.5
  done
}
wait_ended real; wait_ended bulk
real scancel "${R[running]}" "${R[held]}"; bulk scancel "${B[running]}" "${B[held]}"
sleep 3
# slurmdbd takes the last records a moment after slurmctld ends the jobs.
deadline=$((SECONDS + 60))
until [ "$(real sacct -n -X -P -o State -j "${R[running]}")" = "CANCELLED by 0" ]; do
  [ $SECONDS -lt $deadline ] || { echo "slurmdbd did not record the cancels" >&2; real sacct -X -S now-1hour; exit 1; }
  sleep 0.5
done

# Jobs alive while compared: one running on half the node, one waiting for the node
# whole, one waiting for its begin time an hour away.
sub busy -c 2 --wrap 'sleep 300'
sub queued -c 4 --wrap 'true'
sub later --begin=now+1hour --wrap 'true'
deadline=$((SECONDS + 60))
until [ "$(real sacct -n -X -P -o State -j "${R[busy]},${R[queued]}" | sort | tr '\n' ' ')" = "PENDING RUNNING " ] &&
      [ "$(bulk squeue -h -o %T -j "${B[busy]}")" = RUNNING ]; do
  [ $SECONDS -lt $deadline ] || { echo "the live jobs did not settle" >&2; real sacct -X; exit 1; }
  sleep 0.5
done

# Ids made ID where sacct writes them, the first column (`ID`, `ID_2`, `ID.batch`)
# and, in parsable lines, the second (JobIDRaw); counts and sizes elsewhere are kept.
ids() { # ids SIDE-ARRAY-NAME: a sed script replacing that side's ids with ID
  local -n m=$1; local s=""
  for id in "${m[@]}"; do
    s+="s/^${id}([_.|: ]|\$)/ID\\1/;s/^([^|]*)\\|${id}([._|])/\\1|ID\\2/;"
  done
  printf '%s' "$s"
}
RID=$(ids R); BID=$(ids B)
# The account each side gave root's jobs, made ACCT in the layouts that show it.
RACCT=$(real sacct -n -X -P -o Account -j "${R[done]}")
BACCT=$(bulk sacct -n -X -P -o Account -j "${B[done]}")
# Padded to the name's length, so that a column keeps its width.
acct() { local pad=$(( ${#1} > 4 ? ${#1} - 4 : 0 )); printf 's/\\b%s\\b/%*sACCT/' "$1" "$pad" ''; }
RA=$(acct "$RACCT"); BA=$(acct "$BACCT")
window=(-S now-1hour)
# An array task's own id (its JobIDRaw) is numbered as each cluster numbers jobs.
RAW='s/^(ID_[0-9]+[^|]*)\|[0-9]+/\1|RAW/'

# The fields that depend on neither the run nor the site, by name.
FIELDS="JobID,JobIDRaw,JobName,Partition,AllocCPUS,State,ExitCode,DerivedExitCode,\
ReqMem,ReqTRES,AllocTRES,NNodes,NCPUS,NTasks,ReqCPUS,ReqNodes,AllocNodes,Timelimit,\
TimelimitRaw,WorkDir,Cluster,User,UID,Group,GID,Comment,Reservation,Constraints,\
Suspended,Layout,Reason"
for name in done failed steps mem percpu limit arr running held busy queued later; do
  same "sacct -P -o FIELDS -j ($name)" \
    "$(real sacct -P -o "$FIELDS" -j "${R[$name]}" 2>&1 | sed -E "$RID; $RAW")" \
    "$(bulk sacct -P -o "$FIELDS" -j "${B[$name]}" 2>&1 | sed -E "$BID; $RAW")"
done
# The first column's padding follows its id's length, which differs by construction.
strip() { sed -E 's/^(ID[^ ]*) +/\1 /; s/20[0-9]{2}-[0-9-]+T[0-9:]+/DATE/g; s/\b[0-9]{2}:[0-9]{2}:[0-9]{2}\b/T/g; s/ *$//'; }
for c in "sacct" "sacct -X" "sacct -b" "sacct -X -o JobID,JobName%20,State%30,ExitCode" \
    "sacct -P -X -o JobID,State" "sacct -p -o JobID,State,ExitCode" "sacct -n -X -s CA" \
    "sacct -X -s CA,F -E now -o JobName,State" "sacct -X -s R,PD -E now -o JobName" \
    "sacct -X -s PD -o JobName,State,Reason" "sacct -X -s R -o JobName,State,Reason" \
    "sacct -X --units=K -o JobID,ReqMem,ReqNodes" "sacct -X --noconvert -o JobID,ReqMem,ReqTRES%40" \
    "sacct -X --name=done,failed -o JobName,State" "sacct -X -s F,CD -o JobName,State" \
    "sacct -o JobID,JobName -X --delimiter=: -P" "sacct -X -o jobid,state%-12,exitcode%5"; do
  same "$c" "$(real $c "${window[@]}" 2>&1 | sed -E "$RID; $RA" | strip)" \
    "$(bulk $c "${window[@]}" 2>&1 | sed -E "$BID; $BA" | strip)"
done
# Jobs and steps named: an array by its id and one task, a step, the batch step.
named() { # named SIDE-ARRAY-NAME: the -j lists of these for that side
  local -n m=$1
  printf '%s\n' "${m[arr]}" "${m[arr]}_2" "${m[steps]}.0" "${m[steps]}.batch,${m[done]}" \
    "${m[held]},${m[failed]}"
}
mapfile -t RN < <(named R); mapfile -t BN < <(named B)
for i in "${!RN[@]}"; do
  same "sacct -j (case $i) -o JobID,JobName,State" \
    "$(real sacct -j "${RN[$i]}" -o JobID,JobName,State 2>&1 | sed -E "$RID" | strip)" \
    "$(bulk sacct -j "${BN[$i]}" -o JobID,JobName,State 2>&1 | sed -E "$BID" | strip)"
done
# Refusals: message and exit status.
for c in "sacct --wrong" "sacct -o nosuchfield" "sacct --units=Q" "sacct -j abc"; do
  same "$c" "$(real $c 2>&1 | sed -E 's|^/[^:]*/||'; echo "exit $?")" \
    "$(bulk $c 2>&1 | sed -E 's|^/[^:]*/||'; echo "exit $?")"
done

echo "sacct_compare_agree=$AGREE"
echo "sacct_compare_total=$TOTAL"
