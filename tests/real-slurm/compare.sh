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
#   5. messages and exit statuses for options and ids the commands refuse;
#   6. sbcast into a running job: the copy, its refusals and their exit statuses;
#   7. steps' names, and srun --mpi=none said nothing of;
#   8. srun's lines for its tasks' ends.
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

NAME=slurm-compare
PACKAGES=
NEEDS=
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
slurm_conf 16817 17001 "AccountingStorageType=accounting_storage/none"
start_munged
start_clusters 16917

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

# 6: sbcast into a running job: the copy (bytes, mode), then again without and with -f,
# into a missing directory, from a missing source, into a waiting job and with no job.
cancel_all
head -c 300000 /dev/urandom > sb-src && chmod 750 sb-src
mkdir -p sb-real sb-bulk
RJ=$(real sbatch --parsable --wrap 'sleep 300'); BJ=$(bulk sbatch --parsable --wrap 'sleep 300')
RH=$(real sbatch --parsable -H --wrap true); BH=$(bulk sbatch --parsable -H --wrap true)
deadline=$((SECONDS + 60))
until [ "$(real squeue -h -j "$RJ" -o %T)" = RUNNING ] && [ "$(bulk squeue -h -j "$BJ" -o %T)" = RUNNING ]; do
  [ $SECONDS -lt $deadline ] || { echo "the sbcast jobs did not start" >&2; exit 1; }
  sleep 0.5
done
sb() { # sb SIDE JOB DIR ARGS...: sbcast's messages and exit status, the job id made ID
  local side=$1 job=$2 dir=$3; shift 3
  (cd "$dir" && $side sbcast -j "$job" "$@" 2>&1; echo "exit $?") | ids "$job"
}
for args in "../sb-src copy" "../sb-src copy" "-f -p ../sb-src copy" "../sb-src nodir/x" \
    "../no-such-src x" "../sb-src /"; do
  # shellcheck disable=SC2086
  same "sbcast $args" "$(sb real "$RJ" sb-real $args)" "$(sb bulk "$BJ" sb-bulk $args)"
done
same "sbcast's copy (mode, bytes)" "$(stat -c %a sb-real/copy; cmp sb-src sb-real/copy && echo same)" \
  "$(stat -c %a sb-bulk/copy; cmp sb-src sb-bulk/copy && echo same)"
same "sbcast -p keeps the times" "$(stat -c %Y sb-real/copy)" "$(stat -c %Y sb-bulk/copy)"
same "sbcast into a waiting job" "$(sb real "$RH" sb-real ../sb-src y)" "$(sb bulk "$BH" sb-bulk ../sb-src y)"
same "sbcast with no job" "$(cd sb-real && real env -u SLURM_JOB_ID sbcast ../sb-src z 2>&1; echo "exit $?")" \
  "$(cd sb-bulk && bulk env -u SLURM_JOB_ID sbcast ../sb-src z 2>&1; echo "exit $?")"
cancel_all

# 7: steps' names as srun gives them (`-J`, else the command's base name), read while
# the steps run side by side; and `srun --mpi=none` (Open MPI's mpirun's line) quiet.
mkdir -p sub; printf '#!/bin/sh\nsleep "$1"\n' > sub/x.sh; chmod +x sub/x.sh
cat > steps.sh <<'STEPS'
#!/bin/sh
srun --overlap -n1 /bin/sleep 5 &
srun --overlap -n1 -J named sleep 5 &
srun --overlap -n1 ./sub/../sub/x.sh 5 &
until [ "$(squeue -s -h -j "$SLURM_JOB_ID" | wc -l)" -ge 4 ]; do sleep 0.2; done
squeue -s -h -o '%j' -j "$SLURM_JOB_ID" | sort
srun --mpi=none -n1 true 2>&1
wait
STEPS
real sbatch -W -o real-steps.out steps.sh >/dev/null; bulk sbatch -W -o bulk-steps.out steps.sh >/dev/null
same "steps' names, srun --mpi=none" "$(cat real-steps.out)" "$(cat bulk-steps.out)"

# 8: what srun says of its tasks' ends (`_task_finish`): exit codes, a line per kind
# of end by lowest task, glibc's words for a signal, tasks killed together in one
# line, a step the job has no room for, and SLURM_SRUN_REDUCE_TASK_EXIT_MSG.
cat > ends.sh <<'ENDS'
#!/bin/sh
#SBATCH -n 3
srun -n2 sh -c 'exit 3'; echo "exit $?"
srun -n3 sh -c '[ $SLURM_PROCID = 1 ] && exit 4; sleep 0.3; exit 2'; echo "exit $?"
srun -n1 sh -c 'ulimit -c 0; kill -SEGV $$'; echo "exit $?"
srun -n2 sh -c 'kill -USR1 $$'; echo "exit $?"
srun -n4 true; echo "exit $?"
SLURM_SRUN_REDUCE_TASK_EXIT_MSG=1 srun -n2 sh -c 'sleep 0.$((SLURM_PROCID * 5)); exit 5'; echo "exit $?"
ENDS
RJ=$(real sbatch --parsable -W -o real-ends.out ends.sh); BJ=$(bulk sbatch --parsable -W -o bulk-ends.out ends.sh)
same "srun's lines for its tasks' ends" "$(ids "$RJ" < real-ends.out)" "$(ids "$BJ" < bulk-ends.out)"

# 9: steps ended from outside: scancel of a step (killed alone, the script goes on)
# and of the job while its next step runs: the lines slurmstepd and srun write into
# the job's output (sorted: Slurm's daemons race to write them; times, the kill wait
# and slurmstepd's node suffix in Debian's build left out), scancel's answer for a
# step the job does not have, and squeue -j of the ended job (listed only with -t).
cat > cancel.sh <<'CANCEL'
#!/bin/sh
srun sh -c 'touch up.$W.$SLURM_STEP_ID; exec sleep 300'; echo "after $?"
srun sh -c 'touch up.$W.$SLURM_STEP_ID; exec sleep 300'; echo "second $?"
CANCEL
cancels() { # cancels WHICH: what it saw, its job's id made ID
  local w=$1 j n
  rm -f "up.$w".*
  j=$($w sbatch --parsable --export=ALL,W="$w" -o "$w-cancel.out" cancel.sh)
  {
    for n in 0 1; do
      for _ in $(seq 300); do [ -e "up.$w.$n" ] && break; sleep 0.2; done
      if [ "$n" = 0 ]; then
        $w scancel "$j.7"; echo "scancel of a step it does not have: $?"
        $w scancel "$j.0"; echo "scancel of its step: $?"
      fi
    done
    $w scancel "$j"
    for _ in $(seq 300); do [ -z "$($w squeue -h -j "$j" -o %t)" ] && break; sleep 0.2; done
    echo "squeue -j: [$($w squeue -h -j "$j" -o %t)] -t all: [$($w squeue -h -j "$j" -t all -o %t)]"
    sed -E 's/^slurmstepd-[^:]*:/slurmstepd:/; s/CANCELLED AT [0-9T:-]+/CANCELLED AT TIME/;
      s/Waiting up to [0-9]+ seconds/Waiting up to N seconds/; s/^(srun: error: )[^:]*: /\1NODE: /;
      s/ ON [^ ]+ CANCELLED/ ON NODE CANCELLED/' "$w-cancel.out" | sort
  } 2>&1 | ids "$j"
}
RC=$(cancels real); BC=$(cancels bulk)
same "steps ended from outside (scancel J.S, scancel J)" "$RC" "$BC"

# 10: scancel of steps of jobs not running: of a job that ended, of one never there,
# of a waiting (held) job, and of an array's tasks: one waiting (throttled), one the
# array does not have, and the running one (its step killed, its script going on).
cat > tstep.sh <<'TSTEP'
#!/bin/sh
srun sh -c 'touch up.$W.$SLURM_ARRAY_TASK_ID; exec sleep 300'; echo "after $?"
TSTEP
stepcancels() { # stepcancels WHICH: what scancel said and exited with
  local w=$1 e h a
  rm -f "up.$w".*
  e=$($w sbatch --parsable -W --wrap true)
  h=$($w sbatch --parsable -H --wrap true)
  a=$($w sbatch --parsable --array=1-2%1 --export=ALL,W="$w" -o "$w-tstep-%a.out" tstep.sh)
  {
    $w scancel "$e.0"; echo "of an ended job's step: $?"
    $w scancel 999999.0; echo "of a job never there: $?"
    $w scancel "$h.0"; echo "of a waiting job's step: $?"
    for _ in $(seq 300); do [ -e "up.$w.1" ] && break; sleep 0.2; done
    $w scancel "${a}_2.0"; echo "of a waiting task's step: $?"
    $w scancel "${a}_9.0"; echo "of a task it does not have: $?"
    $w scancel "${a}_1.0"; echo "of the running task's step: $?"
    for _ in $(seq 300); do [ -e "up.$w.2" ] && break; sleep 0.2; done
    $w scancel "$a" "$h"
    for _ in $(seq 300); do [ -z "$($w squeue -h -j "$a" -o %t)" ] && break; sleep 0.2; done
    echo "task 1's script: $(grep after "$w-tstep-1.out")"
  } 2>&1 | sed "s/\b${a}_/ID_/g" | ids "$e" | ids "$h" | ids "$a"
}
RC=$(stepcancels real); BC=$(stepcancels bulk)
same "scancel of steps of jobs not running, and of array tasks' steps" "$RC" "$BC"

echo "slurm_compare_agree=$AGREE"
echo "slurm_compare_total=$TOTAL"
