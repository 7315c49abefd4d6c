# New sbatch cases (none copied from shared/conformance/sbatch).
# Each: (title, tags, args, directives, env, extra) ; extra may hold
#   'after': lines after the first command, 'shebang', 'raw' (whole script text),
#   'pre': lines between shebang and directives.
BODY = ['echo "job $SLURM_JOB_ID on $(hostname)"', 'sleep 1']

C = []


def case(title, tags, args=(), directives=(), env=None, **extra):
    C.append(dict(title=title, tags=list(tags), args=list(args),
                  directives=list(directives), env=env or {}, extra=extra))


# ---------------------------------------------------------------- precedence / env
case("env SBATCH_TIMELIMIT=45 beats script -t 10", ["env", "precedence", "time"], [], ["#SBATCH -t 10"], {"SBATCH_TIMELIMIT": "45"})
case("CLI --time=20 beats env SBATCH_TIMELIMIT=45", ["env", "precedence", "time"], ["--time=20"], [], {"SBATCH_TIMELIMIT": "45"})
case("env SBATCH_PARTITION=debug alone", ["env", "partition"], [], [], {"SBATCH_PARTITION": "debug"})
case("env SBATCH_JOB_NAME beats script -J", ["env", "precedence", "job-name"], [], ["#SBATCH -J scriptname"], {"SBATCH_JOB_NAME": "envname"})
case("env SBATCH_OUTPUT beats script -o", ["env", "precedence", "output"], [], ["#SBATCH -o script-%j.out"], {"SBATCH_OUTPUT": "env-%j.out"})
case("env SBATCH_MEM_PER_NODE=3G with script --mem-per-cpu=2G", ["env", "precedence", "mem"], [], ["#SBATCH --mem-per-cpu=2G"], {"SBATCH_MEM_PER_NODE": "3G"})
case("env SBATCH_GPUS=2 beats script --gpus=a100:1", ["env", "precedence", "gpus"], [], ["#SBATCH --gpus=a100:1"], {"SBATCH_GPUS": "2"})
case("env SBATCH_EXCLUSIVE=user", ["env", "exclusive"], [], [], {"SBATCH_EXCLUSIVE": "user"})
case("env SBATCH_NO_REQUEUE=1", ["env", "requeue"], [], [], {"SBATCH_NO_REQUEUE": "1"})
case("env SBATCH_ARRAY_INX=1-3", ["env", "array"], [], [], {"SBATCH_ARRAY_INX": "1-3"})
case("INVALID env SBATCH_TIMELIMIT=bad", ["env", "time", "invalid"], [], [], {"SBATCH_TIMELIMIT": "bad"})
case("env SBATCH_GPUS_PER_NODE=a100:2 with -N 2", ["env", "gpus"], ["-N", "2"], [], {"SBATCH_GPUS_PER_NODE": "a100:2"})
case("env SBATCH_ERROR=err-%x.txt with CLI -J", ["env", "error"], ["-J", "envjob"], [], {"SBATCH_ERROR": "err-%x.txt"})
case("env SBATCH_IGNORE_PBS=1 with #PBS -N", ["env", "pbs"], [], ["#PBS -N pbsname"], {"SBATCH_IGNORE_PBS": "1"})
case("env SBATCH_ACCOUNT and SBATCH_QOS (no accounting)", ["env", "account", "qos"], [], [], {"SBATCH_ACCOUNT": "physics", "SBATCH_QOS": "normal"})
case("env SBATCH_MEM_PER_CPU=512 with CLI --mem=2G", ["env", "precedence", "mem"], ["--mem=2G"], [], {"SBATCH_MEM_PER_CPU": "512"})
case("env SBATCH_INPUT=in-%j.txt", ["env", "input"], [], [], {"SBATCH_INPUT": "in-%j.txt"})
case("env SBATCH_PARTITION=debug, script -p batch, CLI none", ["env", "precedence", "partition"], [], ["#SBATCH -p batch"], {"SBATCH_PARTITION": "debug"})
case("env SBATCH_GRES=gpu:1g.10gb:2", ["env", "gres"], [], [], {"SBATCH_GRES": "gpu:1g.10gb:2"})
case("env SBATCH_GPUS_PER_TASK=1 with -n 2", ["env", "gpus"], ["-n", "2"], [], {"SBATCH_GPUS_PER_TASK": "1"})

# ---------------------------------------------------------------- option spelling
case("--time 90 with a space in script", ["spelling", "time", "script"], [], ["#SBATCH --time 90"])
case("--job-name=with=equals", ["spelling", "job-name"], [], ["#SBATCH --job-name=with=equals"])
case("--job-name \"quoted name\" in script", ["spelling", "job-name", "script"], [], ['#SBATCH --job-name "quoted name"'])
case("--job-name='single quoted' in script", ["spelling", "job-name", "script"], [], ["#SBATCH --job-name='single quoted'"])
case("-J name with unquoted spaces in script", ["spelling", "job-name", "script"], [], ["#SBATCH -J name with spaces"])
case("-n4 glued in script", ["spelling", "ntasks", "script"], [], ["#SBATCH -n4"])
case("clustered short options -Qn2", ["spelling", "ntasks"], ["-Qn2"])
case("abbreviation --tim=15", ["abbrev", "time"], ["--tim=15"])
case("abbreviation --part=debug", ["abbrev", "partition"], ["--part=debug"])
case("INVALID ambiguous abbreviation --mem-per=1G", ["abbrev", "mem", "invalid"], ["--mem-per=1G"])
case("abbreviation --ntasks-per-n=2 with -N 2", ["abbrev", "ntasks-per-node"], ["--ntasks-per-n=2", "-N", "2"])
case("abbreviation --dep=afterok:{P1}", ["abbrev", "dependency"], ["--dep=afterok:{P1}"])
case("INVALID ambiguous abbreviation --exc=n1", ["abbrev", "invalid"], ["--exc=n1"])
case("abbreviation --job=abbr", ["abbrev", "job-name"], ["--job=abbr"])
case("abbreviation in script #SBATCH --cpus-per=3", ["abbrev", "script"], [], ["#SBATCH --cpus-per=3"])
case("--nodes 2 with a space on CLI", ["spelling", "nodes"], ["--nodes", "2"])
case("--comment with spaces on CLI", ["spelling", "comment"], ["--comment", "two words here"])
case("--time twice on CLI (last wins)", ["spelling", "time", "precedence"], ["--time=10", "--time=20"])
case("--mem 4G with a space in script", ["spelling", "mem", "script"], [], ["#SBATCH --mem 4G"])
case("several options on one #SBATCH line", ["spelling", "script"], [], ["#SBATCH -N 2 -n 4 -t 10"])
case("-J with two words on CLI", ["spelling", "job-name"], ["-J", "two words"])

# ---------------------------------------------------------------- time
case("-t 90 minutes", ["time"], ["-t", "90"])
case("-t 0 (no limit)", ["time"], ["-t", "0"])
case("-t infinite", ["time"], ["-t", "infinite"])
case("-t UNLIMITED in debug (MaxTime 2h)", ["time", "partition"], ["-t", "UNLIMITED", "-p", "debug"])
case("-t 0:59 (MM:SS)", ["time", "rounding"], ["-t", "0:59"])
case("-t 0:61 (61 seconds)", ["time", "rounding"], ["-t", "0:61"])
case("-t 1:00:01 rounds up", ["time", "rounding"], ["-t", "1:00:01"])
case("-t 2-0 (D-HH)", ["time"], ["-t", "2-0"])
case("-t 1-0:0:30 (D-HH:MM:SS rounding)", ["time", "rounding"], ["-t", "1-0:0:30"])
case("-t 180 in debug (over MaxTime)", ["time", "partition"], ["-t", "180", "-p", "debug"])
case("INVALID -t -5", ["time", "invalid"], ["-t", "-5"])
case("INVALID -t 1.5", ["time", "invalid"], ["-t", "1.5"])
case("-t 00:00:30 rounds to 1 minute", ["time", "rounding"], ["-t", "00:00:30"])
case("-t 0:0:0 (zero in HH:MM:SS)", ["time", "edge"], ["-t", "0:0:0"])
case("--time-min=30 with -t 120", ["time-min"], ["--time-min=30", "-t", "120"])
case("--time-min=200 above -t 100", ["time-min", "edge"], ["--time-min=200", "-t", "100"])
case("--time-min alone in debug", ["time-min", "partition"], ["--time-min=10", "-p", "debug"])
case("--time-min=0:30 (seconds) with -t 60", ["time-min", "rounding"], ["--time-min=0:30", "-t", "60"])
case("-t 100:00 (MM:SS over 60 minutes)", ["time", "edge"], ["-t", "100:00"])
case("-t 1-", ["time", "edge"], ["-t", "1-"])

# ---------------------------------------------------------------- memory
case("--mem=2T", ["mem"], ["--mem=2T"])
case("--mem=1024K", ["mem"], ["--mem=1024K"])
case("--mem=0 (all of the node)", ["mem"], ["--mem=0"])
case("INVALID --mem=1.5G", ["mem", "invalid"], ["--mem=1.5G"])
case("--mem=16g lowercase", ["mem"], ["--mem=16g"])
case("--mem=600000 (more than a node)", ["mem", "edge"], ["--mem=600000"])
case("--mem-per-cpu=0", ["mem", "edge"], ["--mem-per-cpu=0"])
case("--mem-per-cpu=3000 -c 2", ["mem"], ["--mem-per-cpu=3000", "-c", "2"])
case("--mem-per-gpu=10G --gpus=2", ["mem", "gpus"], ["--mem-per-gpu=10G", "--gpus=2"])
case("--mem-per-gpu without GPUs", ["mem", "gpus", "edge"], ["--mem-per-gpu=10G"])
case("--mem and --mem-per-cpu both on CLI", ["mem", "conflict"], ["--mem=2G", "--mem-per-cpu=1G"])
case("INVALID --mem=abc", ["mem", "invalid"], ["--mem=abc"])
case("--mem=10G -N 2 (per node)", ["mem", "nodes"], ["--mem=10G", "-N", "2"])
case("--mem-per-cpu=512 -n 4 -c 2", ["mem", "ntasks"], ["--mem-per-cpu=512", "-n", "4", "-c", "2"])
case("--mem=1M (tiny)", ["mem", "edge"], ["--mem=1M"])
case("--mem-per-gpu and --mem both", ["mem", "conflict"], ["--mem-per-gpu=4G", "--mem=8G", "--gpus=1"])

# ---------------------------------------------------------------- nodes / tasks / cpus
case("-N 2 alone", ["nodes"], ["-N", "2"])
case("-N 2-3 -n 6", ["nodes", "ntasks"], ["-N", "2-3", "-n", "6"])
case("-N 2 --ntasks-per-node=3", ["nodes", "ntasks-per-node"], ["-N", "2", "--ntasks-per-node=3"])
case("-n 8 --ntasks-per-node=4", ["ntasks", "ntasks-per-node"], ["-n", "8", "--ntasks-per-node=4"])
case("-n 130 (more CPUs than one node)", ["ntasks"], ["-n", "130"])
case("-n 300 (more CPUs than the cluster)", ["ntasks", "edge"], ["-n", "300"])
case("-N 5 (more nodes than exist)", ["nodes", "edge"], ["-N", "5"])
case("-N 0", ["nodes", "edge"], ["-N", "0"])
case("-N 1-4 -n 2", ["nodes", "ntasks"], ["-N", "1-4", "-n", "2"])
case("-n 4 -c 16 (one node full)", ["ntasks", "cpus-per-task"], ["-n", "4", "-c", "16"])
case("-N 1 -n 3 -c 30 (90 CPUs on one node)", ["ntasks", "cpus-per-task", "edge"], ["-N", "1", "-n", "3", "-c", "30"])
case("--ntasks-per-node=2 alone", ["ntasks-per-node"], ["--ntasks-per-node=2"])
case("-N 2 -n 1 (fewer tasks than nodes)", ["nodes", "ntasks", "edge"], ["-N", "2", "-n", "1"])
case("--mincpus=8", ["mincpus"], ["--mincpus=8"])
case("--mincpus=8 -c 4 -n 2", ["mincpus", "cpus-per-task"], ["--mincpus=8", "-c", "4", "-n", "2"])
case("INVALID -c 0", ["cpus-per-task", "invalid"], ["-c", "0"])
case("-N 2-4 in debug (MaxNodes 2)", ["nodes", "partition"], ["-N", "2-4", "-p", "debug"])
case("--nodes=2- (open range)", ["nodes", "edge"], ["--nodes=2-"])
case("INVALID -N 1,2", ["nodes", "invalid"], ["-N", "1,2"])
case("-n 2 -N 2 --ntasks-per-node=2 (conflict)", ["nodes", "ntasks", "conflict"], ["-n", "2", "-N", "2", "--ntasks-per-node=2"])
case("-c 2 --ntasks-per-node=4 -N 2", ["cpus-per-task", "ntasks-per-node"], ["-c", "2", "--ntasks-per-node=4", "-N", "2"])
case("-n 4 in script, -N 2 on CLI", ["precedence", "nodes", "ntasks"], ["-N", "2"], ["#SBATCH -n 4"])
case("--ntasks=64 --cpus-per-task=2 (128 CPUs)", ["ntasks", "cpus-per-task"], ["--ntasks=64", "--cpus-per-task=2"])

# ---------------------------------------------------------------- GPUs
case("--gres=gpu:a100:2", ["gres"], ["--gres=gpu:a100:2"])
case("--gres=gpu:1g.10gb:7", ["gres", "mig"], ["--gres=gpu:1g.10gb:7"])
case("--gres=gpu (no count)", ["gres", "edge"], ["--gres=gpu"])
case("--gres=gpu:a100:5 (more than a node has)", ["gres", "edge"], ["--gres=gpu:a100:5"])
case("--gpus=a100:6 (more than one node)", ["gpus"], ["--gpus=a100:6"])
case("--gpus-per-node=2", ["gpus-per-node"], ["--gpus-per-node=2"])
case("--gpus-per-node=1g.10gb:3 -N 2", ["gpus-per-node", "mig"], ["--gpus-per-node=1g.10gb:3", "-N", "2"])
case("--gpus-per-task=1 -n 4", ["gpus-per-task"], ["--gpus-per-task=1", "-n", "4"])
case("--gpus-per-task=a100:1 -n 2", ["gpus-per-task"], ["--gpus-per-task=a100:1", "-n", "2"])
case("--cpus-per-gpu=8 --gpus=2", ["cpus-per-gpu"], ["--cpus-per-gpu=8", "--gpus=2"])
case("--gpus=2 and --gres=gpu:1 together", ["gpus", "gres", "conflict"], ["--gpus=2", "--gres=gpu:1"])
case("INVALID --gres=gpu:h100:1 (unknown type)", ["gres", "invalid"], ["--gres=gpu:h100:1"])
case("INVALID --gres=nic:1 (unknown gres)", ["gres", "invalid"], ["--gres=nic:1"])
case("--gpus=0", ["gpus", "edge"], ["--gpus=0"])
case("-G 2 short option", ["gpus", "spelling"], ["-G", "2"])
case("--gpus-per-node=2 --gpus=4 -N 2", ["gpus", "gpus-per-node"], ["--gpus-per-node=2", "--gpus=4", "-N", "2"])
case("--gres=gpu:a100:1 in script, --gres=gpu:1g.10gb:1 on CLI", ["gres", "precedence"], ["--gres=gpu:1g.10gb:1"], ["#SBATCH --gres=gpu:a100:1"])
case("--gpus=a100:1,1g.10gb:2 (two types per job)", ["gpus", "mig"], ["--gpus=a100:1,1g.10gb:2"])

# ---------------------------------------------------------------- dependencies
case("afterok:{P1}:{P2}", ["dependency"], ["--dependency=afterok:{P1}:{P2}"])
case("afterany:{P1},afterok:{P2}", ["dependency"], ["--dependency=afterany:{P1},afterok:{P2}"])
case("after:{P1}+10 (delay)", ["dependency"], ["--dependency=after:{P1}+10"])
case("afterok on an array task {P5}_1", ["dependency", "array"], ["--dependency=afterok:{P5}_1"])
case("aftercorr:{P5} with --array=0-3", ["dependency", "array"], ["--dependency=aftercorr:{P5}", "--array=0-3"])
case("aftercorr on a non-array job", ["dependency", "edge"], ["--dependency=aftercorr:{P1}"])
case("singleton in script", ["dependency", "script"], [], ["#SBATCH --dependency=singleton"])
case("afternotok:{P4}?afterok:{P1}", ["dependency"], ["-d", "afternotok:{P4}?afterok:{P1}"])
case("INVALID afterok without job", ["dependency", "invalid"], ["--dependency=afterok"])
case("INVALID afterok:abc", ["dependency", "invalid"], ["--dependency=afterok:abc"])
case("INVALID unknown dependency type afterburn", ["dependency", "invalid"], ["--dependency=afterburn:{P1}"])
case("bare job id as dependency", ["dependency", "edge"], ["--dependency={P1}"])
case("afterok on a missing array task {P5}_7", ["dependency", "array", "edge"], ["--dependency=afterok:{P5}_7"])
case("after with two delayed jobs", ["dependency"], ["--dependency=after:{P1}+5:{P2}+10"])
case("mixing , and ? in one dependency", ["dependency", "edge"], ["--dependency=afterok:{P1},afterany:{P2}?afternotok:{P3}"])
case("afterany on the whole array {P5}", ["dependency", "array"], ["--dependency=afterany:{P5}"])
case("dependency in script, CLI overrides", ["dependency", "precedence"], ["--dependency=afterok:{P2}"], ["#SBATCH --dependency=afterany:{P1}"])
case("afterok:{P1}:{P1} duplicate", ["dependency", "edge"], ["--dependency=afterok:{P1}:{P1}"])

# ---------------------------------------------------------------- arrays
case("--array=1-10:3", ["array"], ["--array=1-10:3"])
case("--array=0-100%10", ["array"], ["--array=0-100%10"])
case("--array=5 single index", ["array"], ["--array=5"])
case("INVALID --array=3-1", ["array", "invalid"], ["--array=3-1"])
case("--array=1-5,10-12%3", ["array"], ["--array=1-5,10-12%3"])
case("INVALID --array=-1", ["array", "invalid"], ["--array=-1"])
case("--array=0-7 -o out-%A_%a.log", ["array", "output"], ["--array=0-7", "-o", "out-%A_%a.log"])
case("--array=1,1 duplicate index", ["array", "edge"], ["--array=1,1"])
case("-a 2-6:2 in script", ["array", "script"], [], ["#SBATCH -a 2-6:2"])
case("--array=0-3 -e err-%a-%j.txt", ["array", "error"], ["--array=0-3", "-e", "err-%a-%j.txt"])

# ---------------------------------------------------------------- begin
case("--begin=2030-01-01 (date only)", ["begin"], ["--begin=2030-01-01"])
case("--begin=2030-01-01T10:00 (no seconds)", ["begin"], ["--begin=2030-01-01T10:00"])
case("--begin=01/15/30 (MM/DD/YY)", ["begin"], ["--begin=01/15/30"])
case("--begin=now+1hour (relative, time-dependent)", ["begin", "volatile"], ["--begin=now+1hour"])
case("--begin=2020-01-01 (past)", ["begin", "edge"], ["--begin=2020-01-01"])
case("INVALID --begin=garbage", ["begin", "invalid"], ["--begin=garbage"])
case("-b 2030-03-04T05:06:07 short option", ["begin", "spelling"], ["-b", "2030-03-04T05:06:07"])

# ---------------------------------------------------------------- nice
case("--nice=10", ["nice"], ["--nice=10"])
case("--nice=-5 (root)", ["nice"], ["--nice=-5"])
case("INVALID --nice=abc", ["nice", "invalid"], ["--nice=abc"])
case("--nice=2147483647 huge", ["nice", "edge"], ["--nice=2147483647"])
case("#SBATCH --nice without value", ["nice", "script"], [], ["#SBATCH --nice"])

# ---------------------------------------------------------------- exclusive / oversubscribe / requeue
case("--exclusive", ["exclusive"], ["--exclusive"])
case("--exclusive=mcs", ["exclusive"], ["--exclusive=mcs"])
case("INVALID --exclusive=bogus", ["exclusive", "invalid"], ["--exclusive=bogus"])
case("--oversubscribe (-s)", ["oversubscribe"], ["-s"])
case("--exclusive then --oversubscribe", ["exclusive", "oversubscribe", "conflict"], ["--exclusive", "--oversubscribe"])
case("--exclusive user with a space in script", ["exclusive", "script", "edge"], [], ["#SBATCH --exclusive user"])
case("--no-requeue", ["requeue"], ["--no-requeue"])
case("--requeue", ["requeue"], ["--requeue"])
case("--requeue then --no-requeue", ["requeue", "precedence"], ["--requeue", "--no-requeue"])

# ---------------------------------------------------------------- comment / chdir / io
case("--comment with a comma", ["comment"], ["--comment=has, comma"])
case("-D absolute dir", ["chdir"], ["-D", "/tmp/slurmrec/other"])
case("-D relative dir", ["chdir"], ["-D", "sub"])
case("-o %x-%j.out with -J", ["output"], ["-o", "%x-%j.out", "-J", "named"])
case("-e err-%u.txt", ["error"], ["-e", "err-%u.txt"])
case("-o out-%N.txt", ["output"], ["-o", "out-%N.txt"])
case("-i input-%j.txt", ["input"], ["-i", "input-%j.txt"])
case("-o /dev/null", ["output"], ["-o", "/dev/null"])
case("-o %%literal-%j", ["output", "edge"], ["-o", "%%literal-%j"])
case("-D sub -o rel.out (relative to chdir)", ["chdir", "output"], ["-D", "sub", "-o", "rel.out"])
case("-o and -e same pattern", ["output", "error"], ["-o", "both-%j.log", "-e", "both-%j.log"])
case("-o %A.%a.%j.%x.%u (all patterns)", ["output"], ["-o", "%A.%a.%j.%x.%u"])
case("--output in script, --error on CLI", ["output", "error", "precedence"], ["--error=cli.err"], ["#SBATCH --output=script.out"])

# ---------------------------------------------------------------- partition / nodes
case("-p debug,batch", ["partition"], ["-p", "debug,batch"])
case("INVALID -p nosuch", ["partition", "invalid"], ["-p", "nosuch"])
case("-p debug -w n3 (node outside the partition)", ["partition", "nodelist", "edge"], ["-p", "debug", "-w", "n3"])
case("-w n[2-3]", ["nodelist"], ["-w", "n[2-3]"])
case("-w n1,n2 with -N 1", ["nodelist", "nodes"], ["-w", "n1,n2", "-N", "1"])
case("INVALID -w n9 (unknown node)", ["nodelist", "invalid"], ["-w", "n9"])
case("-x n[1-3]", ["exclude"], ["-x", "n[1-3]"])
case("-x n[1-4] (every node excluded)", ["exclude", "edge"], ["-x", "n[1-4]"])
case("-w n1 -x n1 (conflict)", ["nodelist", "exclude", "conflict"], ["-w", "n1", "-x", "n1"])
case("-p debug -N 2 -w n[1-2]", ["partition", "nodelist"], ["-p", "debug", "-N", "2", "-w", "n[1-2]"])
case("-x n9 (unknown node excluded)", ["exclude", "edge"], ["-x", "n9"])
case("-p batch,debug -t 3:00:00", ["partition", "time"], ["-p", "batch,debug", "-t", "3:00:00"])

# ---------------------------------------------------------------- deadline / signal / test-only / wrap
case("--deadline=2030-01-01T10:00:00", ["deadline"], ["--deadline=2030-01-01T10:00:00"])
case("--deadline before --begin", ["deadline", "begin", "conflict"], ["--deadline=2030-01-01T10:00:00", "--begin=2030-02-01"])
case("--deadline=now+2hours (relative, time-dependent)", ["deadline", "volatile"], ["--deadline=now+2hours"])
case("--deadline=2020-01-01 (past)", ["deadline", "edge"], ["--deadline=2020-01-01"])
case("--deadline with -t 60", ["deadline", "time"], ["--deadline=2030-01-01T10:00:00", "-t", "60"])
case("--signal=USR1@120", ["signal"], ["--signal=USR1@120"])
case("--signal=B:TERM", ["signal"], ["--signal=B:TERM"])
case("INVALID --signal=FOO", ["signal", "invalid"], ["--signal=FOO"])
case("INVALID --signal=USR1@abc", ["signal", "invalid"], ["--signal=USR1@abc"])
case("--test-only", ["test-only"], ["--test-only"])
case("--test-only -N 5", ["test-only", "edge"], ["--test-only", "-N", "5"])
case("--wrap with a script too", ["wrap", "invalid"], ["--wrap", "echo hi"])
case("--wrap in a #SBATCH line", ["wrap", "script"], [], ["#SBATCH --wrap=hostname"])

# ---------------------------------------------------------------- bad inputs
case("INVALID -n with the script as its value", ["invalid", "ntasks"], ["-n"])
case("INVALID unknown short option -Z", ["invalid"], ["-Z"])
case("INVALID --ntasks=abc", ["invalid", "ntasks"], ["--ntasks=abc"])
case("INVALID --cpus-per-task=-1", ["invalid", "cpus-per-task"], ["--cpus-per-task=-1"])
case("INVALID --gres=gpu:a100:abc", ["invalid", "gres"], ["--gres=gpu:a100:abc"])
case("INVALID unknown option in script", ["invalid", "script"], [], ["#SBATCH --bogus-option=1"])
case("#SBATCH with nothing after it", ["script", "edge"], [], ["#SBATCH", "#SBATCH -J afterempty"])
case("INVALID --hold=yes", ["invalid", "hold"], ["--hold=yes"])
case("INVALID --ntasks=4x", ["invalid", "ntasks"], ["--ntasks=4x"])
case("INVALID --nodes=abc", ["invalid", "nodes"], ["--nodes=abc"])
case("--open-mode=append and --mail-type=END (accepted, not shown)", ["ignored"], ["--open-mode=append", "--mail-type=END", "--mail-user=a@b.c"])
case("-C feature constraint (no such feature)", ["constraint", "edge"], ["-C", "bigmem"])

# ---------------------------------------------------------------- PBS
case("#PBS -N pbsname", ["pbs"], [], ["#PBS -N pbsname"])
case("#PBS -l walltime=01:30:00", ["pbs", "time"], [], ["#PBS -l walltime=01:30:00"])
case("#PBS -l nodes=2:ppn=4", ["pbs", "nodes"], [], ["#PBS -l nodes=2:ppn=4"])
case("#PBS -q debug", ["pbs", "partition"], [], ["#PBS -q debug"])
case("#PBS -o and -e", ["pbs", "output"], [], ["#PBS -o pbs.out", "#PBS -e pbs.err"])
case("#PBS -l mem=4gb", ["pbs", "mem"], [], ["#PBS -l mem=4gb"])
case("#PBS -t 1-5 array", ["pbs", "array"], [], ["#PBS -t 1-5"])
case("#PBS -W depend=afterok:{P1}", ["pbs", "dependency"], [], ["#PBS -W depend=afterok:{P1}"])
case("#SBATCH -J then #PBS -N (order)", ["pbs", "precedence"], [], ["#SBATCH -J sbatchname", "#PBS -N pbsname"])
case("--ignore-pbs on CLI with #PBS -N", ["pbs"], ["--ignore-pbs"], ["#PBS -N pbsname"])
case("#PBS -j oe", ["pbs", "output"], [], ["#PBS -j oe", "#PBS -o joined.out"])
case("#PBS -l walltime=10:00,mem=2gb", ["pbs", "time", "mem"], [], ["#PBS -l walltime=10:00,mem=2gb"])

# ---------------------------------------------------------------- script scanning
case("directive after set -e is ignored", ["script", "after-command"], [], ["#SBATCH -J before"], after=["#SBATCH -J after", "#SBATCH -t 5"], pre_body=["set -e"])
case("comments and blank lines between directives", ["script"], [], ["# a comment", "", "#SBATCH -J c1", "## another", "", "#SBATCH -t 7"])
case("#SBATCH with a tab before the option", ["script", "edge"], [], ["#SBATCH\t-J tabbed"])
case("#SBATCH-J glued (no space)", ["script", "edge"], [], ["#SBATCH-J glued"])
case("# SBATCH with a space is a comment", ["script"], [], ["# SBATCH -J spaced"])
case("#sbatch lowercase is a comment", ["script"], [], ["#sbatch -J lower"])
case("quoted # inside a directive", ["script", "comment"], [], ['#SBATCH --comment="a # b"'])
case("INVALID DOS line endings", ["script", "invalid"], [], ["#SBATCH -J dos"], crlf=True)
case("INVALID no shebang", ["script", "invalid"], [], ["#SBATCH -J noshebang"], shebang=None)
case("shebang with a space #! /bin/bash", ["script"], [], ["#SBATCH -J spaceshebang"], shebang="#! /bin/bash")
case("python script with #SBATCH", ["script"], [], ["#SBATCH -J py", "#SBATCH -t 3"], shebang="#!/usr/bin/env python3", body=['print("hi")'])
case("directive after a ':' command is ignored", ["script", "after-command"], [], [":", "#SBATCH -J notread"])
case("#SBATCH --export=NONE then CLI --export=ALL", ["script", "export", "precedence"], ["--export=ALL"], ["#SBATCH --export=NONE"])
case("#SBATCH -J x # trailing comment with -t", ["script", "comment"], [], ["#SBATCH -t 20 # twenty minutes"])
case("single-quoted value with spaces and -o", ["script", "output"], [], ["#SBATCH -o 'my out %j.log'"])

# ================================================================ second round
# Written 2026-12-03 around the shared cases' families (the held-out cases sit
# between the shared ones), then seeded random combinations shaped like the
# shared "random combo" cases. Indices 245 on.

# ---------------------------------------------------------------- ntasks / cpus
case("-n 4 on CLI", ["ntasks"], ["-n", "4"])
case("--ntasks=1", ["ntasks"], ["--ntasks=1"])
case("-n 64 (a whole node)", ["ntasks"], ["-n", "64"])
case("-n 65 (two nodes)", ["ntasks", "edge"], ["-n", "65"])
case("-n 2 then -n 3 on CLI", ["ntasks", "repeat"], ["-n", "2", "-n", "3"])
case("INVALID -n -1", ["ntasks", "invalid"], ["-n", "-1"])
case("-n 04 leading zero", ["ntasks", "edge"], ["-n", "04"])
case("--ntasks=8 -c 8", ["ntasks", "cpus-per-task"], ["--ntasks=8", "-c", "8"])
case("-n 1000 (beyond the cluster)", ["ntasks", "edge"], ["-n", "1000"])
case("--ntasks=0 in script", ["ntasks", "script"], [], ["#SBATCH --ntasks=0"])
case("-c 64", ["cpus-per-task"], ["-c", "64"])
case("--cpus-per-task 8 in script", ["cpus-per-task", "script"], [], ["#SBATCH --cpus-per-task 8"])
case("-c 2 -n 33 (66 CPUs)", ["cpus-per-task", "ntasks"], ["-c", "2", "-n", "33"])
case("-c 32 -N 2", ["cpus-per-task", "nodes"], ["-c", "32", "-N", "2"])
case("INVALID -c abc", ["cpus-per-task", "invalid"], ["-c", "abc"])
case("-c 65 -N 2", ["cpus-per-task", "edge"], ["-c", "65", "-N", "2"])
case("-c 16 --mem-per-cpu=4G", ["cpus-per-task", "mem-per-cpu"], ["-c", "16", "--mem-per-cpu=4G"])
case("-c4 glued in script", ["cpus-per-task", "glued"], [], ["#SBATCH -c4"])

# ---------------------------------------------------------------- nodes
case("-N 1", ["nodes"], ["-N", "1"])
case("-N 4", ["nodes"], ["-N", "4"])
case("-N 2-2", ["nodes", "range"], ["-N", "2-2"])
case("-N 1-3 -n 1", ["nodes", "range", "ntasks"], ["-N", "1-3", "-n", "1"])
case("--nodes=3-4 -n 8", ["nodes", "range", "ntasks"], ["--nodes=3-4", "-n", "8"])
case("-N 2 -p debug", ["nodes", "partition"], ["-N", "2", "-p", "debug"])
case("INVALID -N -1", ["nodes", "invalid"], ["-N", "-1"])
case("-N 01 leading zero", ["nodes", "edge"], ["-N", "01"])
case("-N 4-3 reversed", ["nodes", "invalid", "range"], ["-N", "4-3"])
case("-N 1-1 -n 65 (more CPUs than one node)", ["nodes", "range", "edge"], ["-N", "1-1", "-n", "65"])
case("--nodes 2 in script with -n 3", ["nodes", "script"], [], ["#SBATCH --nodes 2", "#SBATCH -n 3"])
case("-N 3 -n 2 (fewer tasks)", ["nodes", "ntasks", "edge"], ["-N", "3", "-n", "2"])
case("-N 2 -c 40 -n 3", ["nodes", "cpus-per-task"], ["-N", "2", "-c", "40", "-n", "3"])

# ---------------------------------------------------------------- memory
case("--mem=1G", ["mem"], ["--mem=1G"])
case("--mem=512M", ["mem"], ["--mem=512M"])
case("--mem=1024 (no suffix: MB)", ["mem"], ["--mem=1024"])
case("--mem=2048MB (two letters)", ["mem", "suffix"], ["--mem=2048MB"])
case("--mem=1TB", ["mem", "suffix"], ["--mem=1TB"])
case("--mem=515000 (exactly a node)", ["mem", "edge"], ["--mem=515000"])
case("--mem=515001 (just over a node)", ["mem", "edge"], ["--mem=515001"])
case("--mem=3G -N 4", ["mem", "nodes"], ["--mem=3G", "-N", "4"])
case("--mem=1000K (rounds up)", ["mem", "suffix-K"], ["--mem=1000K"])
case("--mem=1025K", ["mem", "suffix-K"], ["--mem=1025K"])
case("--mem=2gb lowercase two letters", ["mem", "suffix"], ["--mem=2gb"])
case("INVALID --mem=1X", ["mem", "invalid"], ["--mem=1X"])
case("INVALID --mem=-1", ["mem", "invalid"], ["--mem=-1"])
case("--mem=0M", ["mem", "edge"], ["--mem=0M"])
case("--mem-per-cpu=2G -c 4", ["mem-per-cpu", "cpus-per-task"], ["--mem-per-cpu=2G", "-c", "4"])
case("--mem-per-cpu=1024 -n 2 -N 2", ["mem-per-cpu", "nodes"], ["--mem-per-cpu=1024", "-n", "2", "-N", "2"])
case("script --mem=2G, CLI --mem-per-cpu=512", ["mem", "mem-per-cpu", "precedence"], ["--mem-per-cpu=512"], ["#SBATCH --mem=2G"])
case("--mem-per-cpu=600000 (over a node)", ["mem-per-cpu", "edge"], ["--mem-per-cpu=600000"])
case("--mem-per-cpu=8G -n 64", ["mem-per-cpu", "edge"], ["--mem-per-cpu=8G", "-n", "64"])
case("--mem-per-cpu=100K", ["mem-per-cpu", "suffix-K"], ["--mem-per-cpu=100K"])
case("script --mem-per-cpu=1G twice, second 3G", ["mem-per-cpu", "repeat"], [], ["#SBATCH --mem-per-cpu=1G", "#SBATCH --mem-per-cpu=3G"])
case("env SBATCH_MEM_PER_CPU=2G with script --mem=1G", ["mem", "env", "precedence"], [], ["#SBATCH --mem=1G"], {"SBATCH_MEM_PER_CPU": "2G"})
case("--mem-per-cpu=2G -n 4 --ntasks-per-node=2", ["mem-per-cpu", "ntasks"], ["--mem-per-cpu=2G", "-n", "4", "--ntasks-per-node=2"])

# ---------------------------------------------------------------- time
case("-t 5", ["time"], ["-t", "5"])
case("--time=1:00:00", ["time"], ["--time=1:00:00"])
case("-t 0-0:30 (D-HH:MM)", ["time"], ["-t", "0-0:30"])
case("-t 59:59 (MM:SS rounds up)", ["time", "rounding"], ["-t", "59:59"])
case("-t 1-00:00:01", ["time", "rounding"], ["-t", "1-00:00:01"])
case("-t 7-00:00:00", ["time"], ["-t", "7-00:00:00"])
case("-t 365-0", ["time", "edge"], ["-t", "365-0"])
case("-t 60:00:00", ["time"], ["-t", "60:00:00"])
case("INVALID -t 1:2:3:4", ["time", "invalid"], ["-t", "1:2:3:4"])
case("INVALID -t 1h", ["time", "invalid"], ["-t", "1h"])
case("-t 1:60 (60 seconds)", ["time", "edge"], ["-t", "1:60"])
case("-t 00:01 (one second)", ["time", "rounding"], ["-t", "00:01"])
case("--time 2:30:00 in script", ["time", "script"], [], ["#SBATCH --time 2:30:00"])
case("-t 10 in script, -t 20 on CLI", ["time", "precedence"], ["-t", "20"], ["#SBATCH -t 10"])
case("-t 1-12 (D-HH)", ["time"], ["-t", "1-12"])
case("-t 0:30:30 rounds up", ["time", "rounding"], ["-t", "0:30:30"])
case("INVALID -t 1-2-3", ["time", "invalid"], ["-t", "1-2-3"])
case("-t 000090", ["time", "edge"], ["-t", "000090"])
case("-t Infinite (mixed case)", ["time", "edge"], ["-t", "Infinite"])

# ---------------------------------------------------------------- partition
case("-p debug -t 120 (exactly MaxTime)", ["partition", "time"], ["-p", "debug", "-t", "120"])
case("-p debug -t 121", ["partition", "time", "limit"], ["-p", "debug", "-t", "121"])
case("-p debug -N 1-3", ["partition", "nodes", "range"], ["-p", "debug", "-N", "1-3"])
case("-p batch,nosuch", ["partition", "list"], ["-p", "batch,nosuch"])
case("-p nosuch,debug", ["partition", "list"], ["-p", "nosuch,debug"])
case("-p debug in script, no -t", ["partition", "default", "script"], [], ["#SBATCH -p debug"])
case("INVALID -p DEBUG (case)", ["partition", "invalid"], ["-p", "DEBUG"])
case("-p debug --time-min=60", ["partition", "time-min"], ["-p", "debug", "--time-min=60"])
case("-p debug -n 100", ["partition", "ntasks"], ["-p", "debug", "-n", "100"])
case("-p debug -n 129 (over the partition)", ["partition", "ntasks", "edge"], ["-p", "debug", "-n", "129"])
case("--partition=batch --time=3-0", ["partition", "time"], ["--partition=batch", "--time=3-0"])
case("-p debug,batch -N 3", ["partition", "list", "nodes"], ["-p", "debug,batch", "-N", "3"])
case("script -p debug, CLI -p batch", ["partition", "precedence"], ["-p", "batch"], ["#SBATCH -p debug"])
case("-p debug -t UNLIMITED in script", ["partition", "time", "script"], [], ["#SBATCH -p debug", "#SBATCH -t UNLIMITED"])

# ---------------------------------------------------------------- job name
case("-J a", ["job-name"], ["-J", "a"])
case("-J name,with,commas", ["job-name"], ["-J", "name,with,commas"])
case("-J with literal quotes on CLI", ["job-name"], ["-J", "'quoted'"])
case("-J 100-char name", ["job-name", "edge"], ["-J", "n" * 100])
case("-J %j literal", ["job-name", "edge"], ["-J", "job%j"])
case("--job-name twice in script and CLI", ["job-name", "precedence"], ["--job-name=cli"], ["#SBATCH --job-name=one", "#SBATCH --job-name=two"])
case("-J unicode", ["job-name"], ["-J", "n\u00e4me"])
case("--job-name= in script (empty)", ["job-name", "script", "edge"], [], ["#SBATCH --job-name="])
case("-J name with = sign", ["job-name"], ["-J", "a=b"])

# ---------------------------------------------------------------- output / error / patterns
case("-o %j.out", ["output", "pattern"], ["-o", "%j.out"])
case("-o %J", ["output", "pattern"], ["-o", "%J"])
case("-o out-%3j", ["output", "pattern"], ["-o", "out-%3j"])
case("-o %n-%t-%s", ["output", "pattern"], ["-o", "%n-%t-%s"])
case("-o %x without -J (script name)", ["output", "pattern"], ["-o", "%x.out"])
case("-e %x-%j.err -J foo", ["error", "pattern"], ["-e", "%x-%j.err", "-J", "foo"])
case("--output=/tmp/%u/%j", ["output", "absolute"], ["--output=/tmp/%u/%j"])
case("-o %% alone", ["output", "pattern", "edge"], ["-o", "%%"])
case("-o %10a with --array=1-2", ["output", "pattern", "array"], ["-o", "%10a", "--array=1-2"])
case("-o out.txt -D /tmp (absolute workdir)", ["output", "chdir"], ["-o", "out.txt", "-D", "/tmp"])
case("-o %b (unknown pattern letter)", ["output", "pattern", "edge"], ["-o", "x-%b-%q"])
case("-e only (stdout default)", ["error"], ["-e", "only.err"])
case("-o ~/home.out (tilde)", ["output", "edge"], ["-o", "~/home.out"])
case("-o with a space in CLI value", ["output"], ["-o", "my file.out"])
case("-o %A_%a without array", ["output", "pattern"], ["-o", "%A_%a.log"])
case("--output in script with %x and -J in script", ["output", "script"], [], ["#SBATCH -J scripted", "#SBATCH --output=%x.%j.log"])
case("-o %5A with --array=0-1", ["output", "array", "pattern"], ["-o", "%5A-%a", "--array=0-1"])
case("--error=/dev/null", ["error"], ["--error=/dev/null"])

# ---------------------------------------------------------------- GPUs / gres
case("--gres=gpu:1", ["gres"], ["--gres=gpu:1"])
case("--gres=gpu:a100:4", ["gres"], ["--gres=gpu:a100:4"])
case("--gres=gpu:0", ["gres", "edge"], ["--gres=gpu:0"])
case("--gres=gpu:3 -N 3", ["gres", "nodes"], ["--gres=gpu:3", "-N", "3"])
case("--gres=gpu:12 (both types on a node)", ["gres", "edge"], ["--gres=gpu:12"])
case("--gpus=4", ["gpus"], ["--gpus=4"])
case("--gpus=a100:4", ["gpus", "typed"], ["--gpus=a100:4"])
case("--gpus=16", ["gpus"], ["--gpus=16"])
case("--gpus=a100:17 (more than the cluster)", ["gpus", "unsatisfiable"], ["--gpus=a100:17"])
case("--gpus=1g.10gb:7", ["gpus", "mig"], ["--gpus=1g.10gb:7"])
case("--gpus-per-node=a100:4", ["gpus", "gpus-per-node"], ["--gpus-per-node=a100:4"])
case("--gpus-per-node=5", ["gpus", "gpus-per-node", "edge"], ["--gpus-per-node=5"])
case("--gpus-per-task=2 -n 3", ["gpus-per-task"], ["--gpus-per-task=2", "-n", "3"])
case("--gpus-per-task=1 -N 2 -n 4", ["gpus-per-task", "nodes"], ["--gpus-per-task=1", "-N", "2", "-n", "4"])
case("--gpus=2 -N 2", ["gpus", "nodes"], ["--gpus=2", "-N", "2"])
case("--gpus=3 -N 2", ["gpus", "nodes"], ["--gpus=3", "-N", "2"])
case("-G a100:1 --mem-per-gpu=8G", ["gpus", "mem"], ["-G", "a100:1", "--mem-per-gpu=8G"])
case("--cpus-per-gpu=4 --gres=gpu:2", ["gpus", "gres"], ["--cpus-per-gpu=4", "--gres=gpu:2"])
case("--gres=gpu:a100:1 --gres=gpu:a100:2 (last wins?)", ["gres", "repeat"], ["--gres=gpu:a100:1", "--gres=gpu:a100:2"])
case("--gpus=1 in script, --gpus=2 on CLI", ["gpus", "precedence"], ["--gpus=2"], ["#SBATCH --gpus=1"])
case("--gres=gpu:1g.10gb:1 -n 2", ["gres", "mig"], ["--gres=gpu:1g.10gb:1", "-n", "2"])
case("INVALID --gpus=-1", ["gpus", "invalid"], ["--gpus=-1"])
case("--gpus=a100:2 -N 3", ["gpus", "nodes", "edge"], ["--gpus=a100:2", "-N", "3"])
case("--gres=gpu:a100:2 -p debug -N 2", ["gres", "partition"], ["--gres=gpu:a100:2", "-p", "debug", "-N", "2"])
case("--gpus-per-task=a100:1 --ntasks-per-node=2 -N 2", ["gpus-per-task", "ntasks"], ["--gpus-per-task=a100:1", "--ntasks-per-node=2", "-N", "2"])
case("--gres=gpu:a100:1 --gpus=2", ["gres", "gpus", "conflict"], ["--gres=gpu:a100:1", "--gpus=2"])

# ---------------------------------------------------------------- dependency
case("afterany:{P1}", ["dependency"], ["--dependency=afterany:{P1}"])
case("afternotok:{P1}", ["dependency"], ["--dependency=afternotok:{P1}"])
case("afterok:{P1}?afterok:{P2}", ["dependency", "or"], ["--dependency=afterok:{P1}?afterok:{P2}"])
case("after:{P1}:{P2}", ["dependency"], ["--dependency=after:{P1}:{P2}"])
case("afterok:{P5} (whole array)", ["dependency", "array"], ["--dependency=afterok:{P5}"])
case("singleton on CLI", ["dependency"], ["--dependency=singleton"])
case("afterok:{P1},singleton", ["dependency"], ["--dependency=afterok:{P1},singleton"])
case("afterok:{P1}+5 (delay on afterok)", ["dependency", "edge"], ["--dependency=afterok:{P1}+5"])
case("-d {P1}:{P2} bare ids", ["dependency", "edge"], ["-d", "{P1}:{P2}"])
case("--dependency= empty", ["dependency", "edge"], ["--dependency="])
case("afterok:{P1} and afterok:999999", ["dependency", "edge"], ["--dependency=afterok:{P1}:999999"])
case("afterany:{P5}_2:{P5}_3", ["dependency", "array"], ["--dependency=afterany:{P5}_2:{P5}_3"])
case("-d after:{P1} in script", ["dependency", "script"], [], ["#SBATCH -d after:{P1}"])
case("INVALID afterok:{P1}:", ["dependency", "invalid"], ["--dependency=afterok:{P1}:"])
case("afternotok:{P1}?afterany:{P2}?after:{P3}", ["dependency", "or"], ["--dependency=afternotok:{P1}?afterany:{P2}?after:{P3}"])
case("aftercorr:{P5} without --array", ["dependency", "array", "edge"], ["--dependency=aftercorr:{P5}"])

# ---------------------------------------------------------------- arrays
case("--array=0-3", ["array"], ["--array=0-3"])
case("--array=1-3,7", ["array", "list"], ["--array=1-3,7"])
case("--array=0-9:2", ["array", "step"], ["--array=0-9:2"])
case("--array=0-9%1", ["array", "throttle"], ["--array=0-9%1"])
case("--array=0-100001 (over MaxArraySize)", ["array", "invalid"], ["--array=0-100001"])
case("--array=0-9999", ["array", "edge"], ["--array=0-9999"])
case("INVALID --array=a-b", ["array", "invalid"], ["--array=a-b"])
case("--array=1-3:0 (step 0)", ["array", "invalid"], ["--array=1-3:0"])
case("--array 1,2,3 in script", ["array", "script"], [], ["#SBATCH --array 1,2,3"])
case("--array=1-3 -o %A-%a", ["array", "output"], ["--array=1-3", "-o", "%A-%a.out"])
case("--array=0-7%0", ["array", "throttle", "edge"], ["--array=0-7%0"])
case("--array=5-5", ["array", "edge"], ["--array=5-5"])
case("--array=0-15:4%2 in script, CLI --array=1-2", ["array", "precedence"], ["--array=1-2"], ["#SBATCH --array=0-15:4%2"])
case("--array=3,1,2 unordered", ["array", "list"], ["--array=3,1,2"])
case("--array=1-10:3%2 -J arr", ["array", "step", "throttle"], ["--array=1-10:3%2", "-J", "arr"])

# ---------------------------------------------------------------- export
case("--export=ALL,FOO=bar", ["export"], ["--export=ALL,FOO=bar"])
case("--export=FOO", ["export"], ["--export=FOO"])
case("--export=NONE,FOO=bar", ["export"], ["--export=NONE,FOO=bar"])
case("--export=ALL", ["export"], ["--export=ALL"])
case("SBATCH_EXPORT=ALL with --export=NONE on CLI", ["export", "env", "precedence"], ["--export=NONE"], [], {"SBATCH_EXPORT": "ALL"})
case("--export=NIL", ["export", "edge"], ["--export=NIL"])
case("--export in script", ["export", "script"], [], ["#SBATCH --export=A=1"])

# ---------------------------------------------------------------- exclusive
case("--exclusive=user in script", ["exclusive", "script"], [], ["#SBATCH --exclusive=user"])
case("--exclusive=user -N 2", ["exclusive", "nodes"], ["--exclusive=user", "-N", "2"])
case("--oversubscribe", ["exclusive"], ["--oversubscribe"])
case("--exclusive -n 1", ["exclusive"], ["--exclusive", "-n", "1"])
case("--exclusive --mem=1G -N 2", ["exclusive", "mem"], ["--exclusive", "--mem=1G", "-N", "2"])
case("--exclusive in script", ["exclusive", "script"], [], ["#SBATCH --exclusive"])

# ---------------------------------------------------------------- begin
case("--begin=2030-06-01", ["begin"], ["--begin=2030-06-01"])
case("--begin=2030-06-01T12:00:00", ["begin"], ["--begin=2030-06-01T12:00:00"])
case("--begin=2030-06-01T12 (hour only)", ["begin", "edge"], ["--begin=2030-06-01T12"])
case("INVALID --begin=2030-13-01", ["begin", "invalid"], ["--begin=2030-13-01"])
case("--begin=063030 (MMDDYY)", ["begin", "format"], ["--begin=063030"])
case("--begin=06/30/30", ["begin", "format"], ["--begin=06/30/30"])
case("--begin=2030-06-01T12:00:00.5", ["begin", "invalid"], ["--begin=2030-06-01T12:00:00.5"])
case("--begin in script", ["begin", "script"], [], ["#SBATCH --begin=2031-01-02T03:04:05"])
case("--begin=2030-02-30 (no such day)", ["begin", "edge"], ["--begin=2030-02-30"])

# ---------------------------------------------------------------- nice
case("--nice=0", ["nice"], ["--nice=0"])
case("--nice=-10", ["nice"], ["--nice=-10"])
case("--nice=10000", ["nice", "edge"], ["--nice=10000"])
case("--nice 5 on CLI (optional argument)", ["nice", "cli"], ["--nice", "5"])
case("--nice=+5", ["nice", "edge"], ["--nice=+5"])
case("--nice=2147483646", ["nice", "edge"], ["--nice=2147483646"])
case("--nice=-2147483647", ["nice", "edge"], ["--nice=-2147483647"])
case("--nice=5 in script", ["nice", "script"], [], ["#SBATCH --nice=5"])
case("--nice=5 in script, --nice=7 on CLI", ["nice", "precedence"], ["--nice=7"], ["#SBATCH --nice=5"])

# ---------------------------------------------------------------- invalid options
case("INVALID --bogus", ["invalid"], ["--bogus"])
case("INVALID --time with no value at the end", ["invalid", "time"], ["-J", "x", "--time"])
case("INVALID --nodes= empty", ["invalid", "nodes"], ["--nodes="])
case("INVALID --gpus= empty", ["invalid", "gpus"], ["--gpus="])
case("INVALID -q without value before script", ["invalid"], ["-Y"])
case("INVALID --ntasks-per-nod (ambiguous?)", ["invalid", "abbrev"], ["--ntasks-per-nod=2"])
case("INVALID --jobname (no such option)", ["invalid"], ["--jobname=x"])
case("INVALID --cpus-per-task=", ["invalid", "cpus-per-task"], ["--cpus-per-task="])
case("INVALID --mem=", ["invalid", "mem"], ["--mem="])
case("INVALID unknown option in script after valid ones", ["invalid", "script"], [], ["#SBATCH -J ok", "#SBATCH --frobnicate"])
case("INVALID --array=", ["invalid", "array"], ["--array="])
case("INVALID -p empty", ["invalid", "partition"], ["-p", ""])

# ---------------------------------------------------------------- script parsing
case("#SBATCH with two spaces before the option", ["script-parse", "whitespace"], [], ["#SBATCH  --job-name=twospace"])
case("#SBATCH -J a -J b on one line", ["script-parse", "repeat"], [], ["#SBATCH -J a -J b"])
case("#!/bin/zsh shebang", ["script", "shebang"], [], ["#SBATCH -n 3"], shebang="#!/bin/zsh")
case("#!/usr/bin/env bash", ["script", "shebang"], [], ["#SBATCH -n 3"], shebang="#!/usr/bin/env bash")
case("blank line then directive", ["script-parse"], [], ["", "", "#SBATCH -n 6"])
case("directive after echo is ignored", ["script-parse", "after-command"], [], ["#SBATCH -n 2"], after=["#SBATCH -n 9"])
case("--job-name=x#y (no space before #)", ["script-parse", "comments"], [], ["#SBATCH --job-name=x#y"])
case("#SBATCH -J 'a b' -t 5", ["script-parse"], [], ["#SBATCH -J 'a b' -t 5"])
case("#SBATCH --export=A=\"x y\"", ["script-parse", "export"], [], ['#SBATCH --export=A="x y"'])
case("#SBATCH -o out.txt # comment", ["script-parse", "comments"], [], ["#SBATCH -o out.txt # comment"])
case("#SBATCH after exit 0 is ignored", ["script-parse", "after-command"], [], ["#SBATCH -J first"], pre_body=["exit 0"], after=["#SBATCH -J second"])
case("tab-indented #SBATCH is a comment", ["script-parse", "indent"], [], ["\t#SBATCH -J tabbed"])
case("#SBATCH -t 10#no space comment", ["script-parse", "comments"], [], ["#SBATCH -t 10#ten"])
case("## SBATCH double hash", ["script-parse", "comments"], [], ["##SBATCH -J doublehash"])
case("#SBATCH --comment=\"quoted, with comma\"", ["script-parse", "comment"], [], ['#SBATCH --comment="quoted, with comma"'])
case("#SBATCH line with trailing spaces", ["script-parse", "whitespace"], [], ["#SBATCH -n 3   "])
case("#SBATCH -n 2 after a here-doc-like comment block", ["script-parse", "comments"], [], ["# ----", "# header", "# ----", "#SBATCH -n 2"])
case("shebang with args #!/bin/bash -l", ["script", "shebang"], [], ["#SBATCH -n 2"], shebang="#!/bin/bash -l")
case("#SBATCH -J \"unterminated", ["script-parse", "edge"], [], ['#SBATCH -J "unterminated'])
case("#SBATCH --comment='it''s'", ["script-parse", "edge"], [], ["#SBATCH --comment='it''s'"])

# ---------------------------------------------------------------- env
case("SBATCH_TIMELIMIT=1:00:00", ["env", "time"], [], [], {"SBATCH_TIMELIMIT": "1:00:00"})
case("SBATCH_JOB_NAME empty", ["env", "job-name", "edge"], [], [], {"SBATCH_JOB_NAME": ""})
case("SBATCH_PARTITION=nosuch", ["env", "partition", "invalid"], [], [], {"SBATCH_PARTITION": "nosuch"})
case("SBATCH_GRES=gpu:2", ["env", "gres"], [], [], {"SBATCH_GRES": "gpu:2"})
case("SBATCH_CPUS_PER_GPU=4 with --gpus=1", ["env", "gpus"], ["--gpus=1"], [], {"SBATCH_CPUS_PER_GPU": "4"})
case("SBATCH_MEM_PER_GPU=2G with --gpus=2", ["env", "gpus", "mem"], ["--gpus=2"], [], {"SBATCH_MEM_PER_GPU": "2G"})
case("SBATCH_REQUEUE=1", ["env", "requeue"], [], [], {"SBATCH_REQUEUE": "1"})
case("SBATCH_NTASKS is not read", ["env", "ntasks"], [], [], {"SBATCH_NTASKS": "7"})
case("SLURM_NTASKS in the environment", ["env", "ntasks"], [], [], {"SLURM_NTASKS": "7"})
case("SBATCH_EXCLUSIVE empty", ["env", "exclusive"], [], [], {"SBATCH_EXCLUSIVE": ""})
case("SBATCH_TIMELIMIT with script -t and CLI -t", ["env", "time", "precedence"], ["-t", "3"], ["#SBATCH -t 10"], {"SBATCH_TIMELIMIT": "45"})
case("SBATCH_GPUS_PER_TASK with -n 3", ["env", "gpus-per-task"], ["-n", "3"], [], {"SBATCH_GPUS_PER_TASK": "a100:1"})
case("SBATCH_ARRAY_INX=0-5%2", ["env", "array"], [], [], {"SBATCH_ARRAY_INX": "0-5%2"})
case("SBATCH_OUTPUT and CLI -o", ["env", "output", "precedence"], ["-o", "cli.out"], [], {"SBATCH_OUTPUT": "env.out"})
case("SBATCH_NO_REQUEUE=0", ["env", "requeue", "edge"], [], [], {"SBATCH_NO_REQUEUE": "0"})

# ---------------------------------------------------------------- random combinations
# Seeded; shaped like the shared "random combo" cases: options spread over the
# command line and the script, spelled every way getopt allows, noise lines,
# directives after the first command (not read), and one option in both places.
import random as _random

_R = _random.Random(20261203)
_POOLS = {
    "ntasks": [("-n", "4"), ("--ntasks", "16"), ("-n", "8"), ("--ntasks", "2"), ("-n", "130")],
    "nodes": [("-N", "2"), ("--nodes", "2-4"), ("--nodes", "1-2"), ("-N", "1"), ("-N", "3")],
    "cpus-per-task": [("-c", "2"), ("--cpus-per-task", "8"), ("-c", "64")],
    "gpus": [("--gpus", "1"), ("--gpus", "1g.10gb:3"), ("--gpus", "a100:2"), ("-G", "2"), ("-G", "a100:5")],
    "gres": [("--gres", "gpu:a100:2"), ("--gres", "gpu:1"), ("--gres", "gpu:1g.10gb:2"), ("--gres", "gpu:2")],
    "comment": [("--comment", "random combo"), ("--comment", "combo, with comma")],
    "export": [("--export", "NONE"), ("--export", "ALL"), ("--export", "COMBO=1")],
    "array": [("-a", "0-15:4"), ("--array", "0-99%5"), ("--array", "0-15"), ("-a", "1,3,5")],
    "chdir": [("--chdir", "/scratch/oracle"), ("--chdir", "rel"), ("-D", "/tmp")],
    "mem-per-cpu": [("--mem-per-cpu", "1G"), ("--mem-per-cpu", "256"), ("--mem-per-cpu", "2048K")],
    "mem": [("--mem", "512"), ("--mem", "2048K"), ("--mem", "4G"), ("--mem", "1T")],
    "output": [("--output", "%x-%j.log"), ("--output", "o-%j.out"), ("-o", "/scratch/oracle/%u-%j.out"), ("-o", "%A_%a.out")],
    "error": [("--error", "%x.err"), ("-e", "e-%j.txt")],
    "partition": [("-p", "batch"), ("--partition", "debug"), ("-p", "debug,batch"), ("-p", "batch,debug")],
    "time": [("--time", "30"), ("-t", "30:15"), ("-t", "1-0"), ("--time", "2:00:00"), ("-t", "150")],
    "dependency": [("--dependency", "afterok:{P1}"), ("--dependency", "afterany:{P1}:{P3}"),
                   ("-d", "afterok:{P2},afternotok:{P3}"), ("--dependency", "singleton"),
                   ("-d", "afterok:{P5}_2"), ("--dependency", "after:{P4}+3")],
    "begin": [("--begin", "2030-06-01T12:00:00"), ("-b", "2031-02-03")],
    "job-name": [("-J", "combo"), ("-J", "two words"), ("--job-name", "named")],
    "nice": [("--nice", "5"), ("--nice", "-3")],
    "time-min": [("--time-min", "10")],
    "gpus-per-task": [("--gpus-per-task", "1")],
    "ntasks-per-node": [("--ntasks-per-node", "2")],
    "exclusive": [("--exclusive", None), ("--exclusive", "user")],
    "hold": [("-H", None)],
}
_NOISE = ["## note: #SBATCH -n 999 is not a directive here",
          "# SBATCH --mem=1T (not a directive: space)", ""]
_AFTER = ["cd $SLURM_SUBMIT_DIR", "set -euo pipefail", "module load foo", "srun hostname"]
_JUNK = ["#SBATCH --ntasks=99", "#SBATCH --partition=nosuch", "#SBATCH -t 1-2-3-4"]


def _spell_cli(opt, val):
    if val is None:
        return [opt]
    if opt.startswith("--"):
        return [f"{opt}={val}"] if _R.random() < 0.6 else [opt, val]
    return [f"{opt}{val}"] if _R.random() < 0.4 else [opt, val]


def _spell_script(opt, val):
    if val is None:
        return f"#SBATCH {opt}"
    if " " in val or "," in val and _R.random() < 0.5:
        val = f'"{val}"'
    if opt.startswith("--"):
        return f"#SBATCH {opt}={val}" if _R.random() < 0.6 else f"#SBATCH {opt} {val}"
    return f"#SBATCH {opt}{val}" if _R.random() < 0.3 else f"#SBATCH {opt} {val}"


def _combos(label, count, pools, most, noise, after, env=None, pbs=None):
    """`count` cases from `pools` with the module's `_R`: 3 to `most` options, each on
    the command line, in the script or both; a noise line after an option with
    probability `noise`; `env` = (probability, variables): some set; `pbs` =
    (probability, lines): one added; directives after the first command with
    probability `after`."""
    for n in range(count):
        tags = _R.sample(sorted(pools), _R.randint(3, most))
        args, dirs, extra_tags = [], [], []
        for t in tags:
            opt, val = _R.choice(pools[t])
            where = _R.random()
            if where < 0.45:
                args += _spell_cli(opt, val)
            elif where < 0.85:
                dirs.append(_spell_script(opt, val))
            else:  # both: the command line wins
                o2, v2 = _R.choice(pools[t])
                dirs.append(_spell_script(o2, v2))
                args += _spell_cli(opt, val)
                extra_tags.append("precedence")
            if _R.random() < noise:
                dirs.append(_R.choice(_NOISE))
        if pbs is not None and _R.random() < pbs[0]:
            dirs.append(_R.choice(pbs[1]))
            extra_tags.append("pbs")
        variables = {}
        if env is not None and _R.random() < env[0]:
            for k, v in _R.sample(env[1], _R.randint(1, 2)):
                variables[k] = v
            extra_tags.append("env")
        ex = {}
        if _R.random() < after:
            extra_tags.append("after-command")
            ex["pre_body"] = [_R.choice(_AFTER)]
            ex["body"] = _JUNK + ['echo "job $SLURM_JOB_ID"']
        _R.shuffle(dirs)
        all_tags = sorted(set(tags + extra_tags))
        case("%s %d: %s" % (label, n, " ".join(all_tags)), ["random"] + all_tags, args, dirs,
             variables, **ex)


_combos("random combo", 110, _POOLS, 7, 0.25, 0.5)

# ---------------------------------------------------------------- third round: wider random combinations
# Seeded; more options, environment variables, and values at the edges.
_R = _random.Random(20261205)
_POOLS3 = dict(_POOLS)
_POOLS3.update({
    "ntasks": [("-n", "4"), ("--ntasks", "16"), ("-n", "1"), ("--ntasks", "65"), ("-n", "3")],
    "nodes": [("-N", "2"), ("--nodes", "2-4"), ("--nodes", "1-3"), ("-N", "1"), ("-N", "4"), ("-N", "1-1")],
    "mem-per-gpu": [("--mem-per-gpu", "8G"), ("--mem-per-gpu", "1024")],
    "cpus-per-gpu": [("--cpus-per-gpu", "4"), ("--cpus-per-gpu", "2")],
    "gpus-per-node": [("--gpus-per-node", "2"), ("--gpus-per-node", "a100:1"), ("--gpus-per-node", "1g.10gb:2")],
    "gpus-per-task": [("--gpus-per-task", "1"), ("--gpus-per-task", "a100:1")],
    "nodelist": [("-w", "n1"), ("--nodelist", "n[1-2]"), ("-w", "n3,n4")],
    "exclude": [("-x", "n1"), ("--exclude", "n[3-4]")],
    "requeue": [("--requeue", None), ("--no-requeue", None)],
    "qos": [("--qos", "normal"), ("-q", "high")],
    "account": [("-A", "physics"), ("--account", "bio")],
    "mail": [("--mail-type", "END"), ("--mail-user", "a@b.c")],
    "open-mode": [("--open-mode", "append")],
    "mincpus": [("--mincpus", "8")],
    "deadline": [("--deadline", "2031-01-01T00:00:00")],
    "input": [("-i", "in-%j.txt")],
    "signal": [("--signal", "USR1@60"), ("--signal", "B:TERM")],
    "wckey": [("--wckey", "k1")],
    "reservation": [("--reservation", "nosuchresv")],
    "time": [("--time", "30"), ("-t", "30:15"), ("-t", "1-0"), ("--time", "2:00:00"), ("-t", "150"), ("-t", "0"), ("-t", "UNLIMITED"), ("-t", "45:30")],
    "mem": [("--mem", "512"), ("--mem", "2048K"), ("--mem", "4G"), ("--mem", "0"), ("--mem", "600G")],
    "partition": [("-p", "batch"), ("--partition", "debug"), ("-p", "debug,batch"), ("-p", "batch,debug"), ("-p", "nosuch")],
    "array": [("-a", "0-15:4"), ("--array", "0-99%5"), ("--array", "0-15"), ("-a", "1,3,5"), ("--array", "1-3%0"), ("-a", "2")],
    "dependency": _POOLS["dependency"] + [("-d", "afterany:{P5}"), ("--dependency", "afterok:{P1}?afternotok:{P2}"), ("-d", "aftercorr:{P5}")],
})
_ENV3 = [("SBATCH_TIMELIMIT", "20"), ("SBATCH_PARTITION", "debug"), ("SBATCH_JOB_NAME", "envname"),
         ("SBATCH_MEM_PER_CPU", "2G"), ("SBATCH_GPUS", "1"), ("SBATCH_EXPORT", "NONE"),
         ("SBATCH_REQUEUE", "1"), ("SBATCH_OUTPUT", "env-%j.out"), ("SBATCH_ARRAY_INX", "0-2"),
         ("SBATCH_EXCLUSIVE", "user"), ("SBATCH_GRES", "gpu:1"), ("SBATCH_ACCOUNT", "envacct")]

_combos("wide combo", 150, _POOLS3, 8, 0.2, 0.4, env=(0.35, _ENV3))

# ---------------------------------------------------------------- fourth round: spellings, PBS, abbreviations
_R = _random.Random(20261206)
_POOLS4 = dict(_POOLS3)
_POOLS4.update({
    "abbrev": [("--tim", "15"), ("--part", "debug"), ("--nod", "2"), ("--ntasks-per-n", "2"), ("--cpus-per-t", "2"), ("--job", "abbr"), ("--outp", "ab-%j.out"), ("--dep", "afterok:{P1}")],
    "oversubscribe": [("-s", None), ("--oversubscribe", None)],
    "kill-on-invalid-dep": [("--kill-on-invalid-dep", "yes")],
    "comment": [("--comment", "random combo"), ("--comment", "combo, with comma"), ("--comment", "it's # here")],
    "export": [("--export", "NONE"), ("--export", "ALL"), ("--export", "COMBO=1"), ("--export", "ALL,A=1,B=2")],
    "job-name": [("-J", "combo"), ("-J", "two words"), ("--job-name", "named"), ("-J", "a,b")],
    "output": [("--output", "%x-%j.log"), ("-o", "%A_%a.out"), ("-o", "out-%4j.txt"), ("-o", "/dev/null"), ("--output", "%%-%j")],
    "nice": [("--nice", "5"), ("--nice", "-3"), ("--nice", "0")],
    "begin": [("--begin", "2030-06-01T12:00:00"), ("-b", "2031-02-03"), ("--begin", "2030-06-01T12:00")],
    "time-min": [("--time-min", "10"), ("--time-min", "1:00:00"), ("--time-min", "45")],
})
_PBS = ["#PBS -N pbsjob", "#PBS -l walltime=00:30:00", "#PBS -l nodes=2:ppn=2", "#PBS -q debug", "#PBS -o pbs.out", "#PBS -l mem=2gb", "#PBS -j oe"]

_combos("spelled combo", 150, _POOLS4, 8, 0.2, 0.4, env=(0.3, _ENV3), pbs=(0.2, _PBS))

# ---------------------------------------------------------------- fifth round (2026-12-04): edges not yet probed, then combos
case("--mem=100m (lower-case suffix)", ["mem", "suffix"], ["--mem=100m"])
case("--mem=1024MB", ["mem", "suffix", "edge"], ["--mem=1024MB"])
case("--mem=2T in script", ["mem", "suffix", "script"], [], ["#SBATCH --mem=2T"])
case("--mem-per-cpu=1.5G", ["mem-per-cpu", "edge"], ["--mem-per-cpu=1.5G"])
case("INVALID --mem=abc", ["mem", "invalid"], ["--mem=abc"])
case("--mem=4096 -N 2", ["mem", "nodes"], ["--mem=4096", "-N", "2"])
case("-t INFINITE", ["time", "edge"], ["-t", "INFINITE"])
case("-t 60:00 (an hour as MM:SS)", ["time", "format"], ["-t", "60:00"])
case("-t 2-0:0", ["time", "format"], ["-t", "2-0:0"])
case("-t 0:59 in debug", ["time", "partition"], ["-t", "0:59", "-p", "debug"])
case("INVALID -t 1:2:3:4", ["time", "invalid"], ["-t", "1:2:3:4"])
case("-t 121 in debug (over MaxTime 2h)", ["time", "partition", "limit"], ["-t", "121", "-p", "debug"])
case("-t 3:00:00 in batch,debug", ["time", "partition", "list"], ["-t", "3:00:00", "-p", "batch,debug"])
case("--ntasks-per-node=0", ["ntasks-per-node", "edge"], ["--ntasks-per-node=0"])
case("--ntasks-per-node=3 -N 2", ["ntasks-per-node", "nodes"], ["--ntasks-per-node=3", "-N", "2"])
case("--ntasks-per-node=4 -n 6", ["ntasks-per-node", "ntasks"], ["--ntasks-per-node=4", "-n", "6"])
case("-n 5 -N 2-3", ["ntasks", "nodes", "range"], ["-n", "5", "-N", "2-3"])
case("-N 2- (open range)", ["nodes", "range", "edge"], ["-N", "2-"])
case("-N 3 -n 2 (fewer tasks than nodes)", ["nodes", "ntasks"], ["-N", "3", "-n", "2"])
case("-c 16 -n 8 (two nodes' CPUs)", ["cpus-per-task", "ntasks"], ["-c", "16", "-n", "8"])
case("--mincpus=65", ["mincpus", "unsatisfiable"], ["--mincpus=65"])
case("--mincpus=4 -c 8", ["mincpus", "cpus-per-task"], ["--mincpus=4", "-c", "8"])
case("--gpus=a100:0", ["gpus", "edge"], ["--gpus=a100:0"])
case("--gres=gpu:a100 (no count)", ["gres", "edge"], ["--gres=gpu:a100"])
case("--gres=none", ["gres", "edge"], ["--gres=none"])
case("--gres=gpu:1g.10gb:7 -N 2", ["gres", "mig", "nodes"], ["--gres=gpu:1g.10gb:7", "-N", "2"])
case("--gpus-per-node=a100:4 --gpus-per-task=1 -N 1", ["gpus", "gpus-per-task"], ["--gpus-per-node=a100:4", "--gpus-per-task=1", "-N", "1"])
case("--gpus=3 -N 2", ["gpus", "nodes"], ["--gpus=3", "-N", "2"])
case("--gpus=a100:2,1g.10gb:3", ["gpus", "typed", "mig"], ["--gpus=a100:2,1g.10gb:3"])
case("INVALID --gpus-per-node=0x2", ["gpus", "invalid"], ["--gpus-per-node=0x2"])
case("--mem-per-gpu=10G --gpus=2", ["mem-per-gpu", "gpus"], ["--mem-per-gpu=10G", "--gpus=2"])
case("--cpus-per-gpu=8 --gres=gpu:2", ["cpus-per-gpu", "gres"], ["--cpus-per-gpu=8", "--gres=gpu:2"])
case("--ntasks-per-gpu=2 --gpus=2", ["ntasks-per-gpu", "gpus"], ["--ntasks-per-gpu=2", "--gpus=2"])
case("--array=0-3,7", ["array", "list"], ["--array=0-3,7"])
case("INVALID --array=5-1", ["array", "invalid"], ["--array=5-1"])
case("--array=3-3", ["array", "edge"], ["--array=3-3"])
case("--array=1-7:3", ["array", "step"], ["--array=1-7:3"])
case("INVALID --array=0-1000001 (over MaxArraySize)", ["array", "limit"], ["--array=0-1000001"])
case("--array=0-3 -o %A-%a.log", ["array", "output"], ["--array=0-3", "-o", "%A-%a.log"])
case("--export=ALL,VAR (a name without a value)", ["export"], ["--export=ALL,VAR"])
case("--export= (empty)", ["export", "edge"], ["--export="])
case("--export=NONE,A=1 in script", ["export", "script"], [], ["#SBATCH --export=NONE,A=1"])
case("-o %%j literal", ["output", "pattern"], ["-o", "%%j.out"])
case("-o out-%x with -J two words", ["output", "pattern", "job-name"], ["-o", "out-%x", "-J", "two words"])
case("-e without -o", ["error", "output"], ["-e", "only-%j.err"])
case("INVALID -o '' (empty)", ["output", "edge"], ["-o", ""])
case("-o dir/ relative path", ["output", "path"], ["-o", "logs/%j.out"])
case("-D /tmp with relative -o", ["chdir", "output"], ["-D", "/tmp", "-o", "rel-%j.out"])
case("--nice=2147483645 (over the limit)", ["nice", "limit"], ["--nice=2147483645"])
case("--nice=-10001", ["nice", "edge"], ["--nice=-10001"])
case("--nice=+7", ["nice", "spelling"], ["--nice=+7"])
case("--begin=2030-06-01", ["begin", "date"], ["--begin=2030-06-01"])
case("--begin=06/01/30 (MM/DD/YY)", ["begin", "date"], ["--begin=06/01/30"])
case("INVALID --begin=2030-06-01T25:00:00", ["begin", "invalid"], ["--begin=2030-06-01T25:00:00"])
case("--begin=2030-06-01T12 (hour only)", ["begin", "date", "edge"], ["--begin=2030-06-01T12"])
case("-d afterok:{P1}+5", ["dependency", "plus"], ["-d", "afterok:{P1}+5"])
case("INVALID -d afterok: (no job)", ["dependency", "invalid"], ["-d", "afterok:"])
case("-d afterok:{P1}, (trailing comma)", ["dependency", "edge"], ["-d", "afterok:{P1},"])
case("-d afterany:{P5}_1:{P5}_3", ["dependency", "array"], ["-d", "afterany:{P5}_1:{P5}_3"])
case("-d singleton,afterok:{P2}", ["dependency", "singleton"], ["-d", "singleton,afterok:{P2}"])
case("INVALID -d afterfoo:{P1}", ["dependency", "invalid"], ["-d", "afterfoo:{P1}"])
case("-p batch, (trailing comma)", ["partition", "edge"], ["-p", "batch,"])
case("-p debug -N 2 -n 130", ["partition", "ntasks", "unsatisfiable"], ["-p", "debug", "-N", "2", "-n", "130"])
case("--priority=100 (as root)", ["priority"], ["--priority=100"])
case("--distribution=cyclic", ["distribution"], ["--distribution=cyclic"])
case("--threads-per-core=1", ["threads-per-core"], ["--threads-per-core=1"])
case("--sockets-per-node=1", ["sockets-per-node"], ["--sockets-per-node=1"])
case("--spread-job", ["spread-job"], ["--spread-job"])
case("--use-min-nodes -N 1-3", ["use-min-nodes", "nodes"], ["--use-min-nodes", "-N", "1-3"])
case("--parsable -J p", ["parsable"], ["--parsable", "-J", "p"])
case("-J name of 200 characters", ["job-name", "edge"], ["-J", "x" * 200])
case("--comment='' (empty)", ["comment", "edge"], ["--comment="])
case("#SBATCH after a blank line and a comment", ["script-parse"], [], ["", "# a comment", "#SBATCH -n 3"])
case("#SBATCH with a tab after it", ["script-parse", "whitespace"], [], ["#SBATCH\t-n 2"])
case("#SBATCH-n 2 (no space)", ["script-parse", "spelling"], [], ["#SBATCH-n 2"])
case("#sbatch lower case", ["script-parse", "case"], [], ["#sbatch -n 2"])
case("#SBATCH --ntasks=2 # trailing comment with --mem", ["script-parse", "comments"], [], ["#SBATCH --ntasks=2 # --mem=9G"])
case("env SBATCH_NTASKS_PER_NODE=2 -N 2", ["env", "ntasks-per-node"], ["-N", "2"], [], {"SBATCH_NTASKS_PER_NODE": "2"})
case("env SBATCH_CPUS_PER_GPU=4 with --gpus=1", ["env", "cpus-per-gpu"], ["--gpus=1"], [], {"SBATCH_CPUS_PER_GPU": "4"})
case("env SBATCH_MEM_PER_GPU=4G with --gpus=1", ["env", "mem-per-gpu"], ["--gpus=1"], [], {"SBATCH_MEM_PER_GPU": "4G"})
case("env SBATCH_DEPENDENCY (not read by sbatch)", ["env", "dependency"], [], [], {"SBATCH_DEPENDENCY": "afterok:{P1}"})
case("env SBATCH_HOLD=1 unheld probe", ["env", "hold"], [], [], {"SBATCH_HOLD": "1"})
case("env SBATCH_NICE (not a variable sbatch reads)", ["env", "nice"], [], [], {"SBATCH_NICE": "5"})
case("env SBATCH_DEADLINE=2031-01-01", ["env", "deadline"], [], [], {"SBATCH_DEADLINE": "2031-01-01"})
case("env SBATCH_WAIT_ALL_NODES=1", ["env"], [], [], {"SBATCH_WAIT_ALL_NODES": "1"})
case("env SBATCH_TIMELIMIT=1-0 in debug", ["env", "time", "partition"], ["-p", "debug"], [], {"SBATCH_TIMELIMIT": "1-0"})

_R = _random.Random(20261207)
_POOLS5 = dict(_POOLS4)
_POOLS5.update({
    "mem": [("--mem", "512"), ("--mem", "100m"), ("--mem", "4G"), ("--mem", "0"), ("--mem", "1024MB"), ("--mem", "16g")],
    "ntasks-per-node": [("--ntasks-per-node", "2"), ("--ntasks-per-node", "4"), ("--ntasks-per-node", "1")],
    "array": [("-a", "0-15:4"), ("--array", "0-99%5"), ("--array", "0-3,7"), ("-a", "1,3,5"), ("--array", "1-7:3%2")],
    "time": [("--time", "30"), ("-t", "60:00"), ("-t", "1-0"), ("--time", "2:00:00"), ("-t", "INFINITE"), ("-t", "0:59"), ("-t", "2-0:0")],
    "gpus-per-task": [("--gpus-per-task", "1"), ("--gpus-per-task", "a100:1"), ("--gpus-per-task", "2")],
    "gres": [("--gres", "gpu:a100:2"), ("--gres", "gpu:1"), ("--gres", "gpu:1g.10gb:2"), ("--gres", "gpu:a100"), ("--gres", "none")],
    "dependency": _POOLS3["dependency"] + [("-d", "afterok:{P1}+5"), ("-d", "afterany:{P5}_1:{P5}_3"), ("-d", "singleton,afterok:{P2}")],
})
_ENV5 = _ENV3 + [("SBATCH_NTASKS_PER_NODE", "2"), ("SBATCH_CPUS_PER_GPU", "2"), ("SBATCH_MEM_PER_GPU", "4G"),
                 ("SBATCH_GPUS_PER_NODE", "1"), ("SBATCH_NO_REQUEUE", "1"), ("SBATCH_HOLD", "1")]

_combos("fifth combo", 70, _POOLS5, 8, 0.2, 0.4, env=(0.3, _ENV5), pbs=(0.15, _PBS))

# Probes of what the fifth round found (GPU-derived tasks and CPUs, --ntasks-per-gpu,
# empty items in a partition list, --gres=none, zero GPUs of a type).
for _a in (["--gpus=a100:2", "--gpus-per-task=a100:1"], ["--gpus=2", "--gpus-per-task=1"],
           ["--gpus=2", "--gpus-per-task=1", "-c", "2"], ["--gpus=2", "--gpus-per-task=1", "--mem-per-gpu=1024"],
           ["--gpus=4", "--gpus-per-task=1", "-N", "2"], ["--gpus=4", "--gpus-per-task=2", "-n", "2", "-c", "3"],
           ["--ntasks-per-gpu=2", "--gpus=2", "-c", "2"], ["--ntasks-per-gpu=2", "--gpus=2", "-n", "3"],
           ["--ntasks-per-gpu=2", "-n", "4"], ["--ntasks-per-gpu=2"], ["--ntasks-per-gpu=2", "-N", "2"],
           ["--ntasks-per-gpu=2", "--gres=gpu:2", "-N", "2"], ["--ntasks-per-gpu=2", "--gpus-per-node=1", "-N", "2"],
           ["--ntasks-per-gpu=1", "--gpus=a100:3"], ["--ntasks-per-gpu=2", "--gpus-per-task=1", "-n", "2"],
           ["--ntasks-per-gpu=2", "--ntasks-per-node=2", "--gpus=2"], ["--ntasks-per-gpu=3", "-n", "7"],
           ["--gres=none", "-N", "2"], ["--gres=gpu:a100:0"], ["--gpus=0"],
           ["-p", ",batch"], ["-p", "batch,,debug"], ["-p", ","], ["-p", "debug,"]):
    case("probe: " + " ".join(_a), ["probe"], _a)

# ---------------------------------------------------------------- sixth round (2026-12-04): #PBS and #BSUB as
# xlate.c reads them, --priority, then combos with wrapper lines. Indices 1084 on.
for _d, _t in [
    (["#PBS -a 1830"], "#PBS -a hhmm"),
    (["#PBS -a 12241830"], "#PBS -a MMDDhhmm"),
    (["#PBS -a 202612241830"], "#PBS -a CCYYMMDDhhmm"),
    (["#PBS -a 2031-01-01T10:00:00"], "#PBS -a in --begin's form"),
    (["#PBS -p 5"], "#PBS -p 5 (nice)"),
    (["#PBS -p -3"], "#PBS -p -3 (negative nice, as root)"),
    (["#PBS -J 1-4"], "#PBS -J 1-4 (PBS Pro array)"),
    (["#PBS -t 0-9%2"], "#PBS -t 0-9%2"),
    (["#PBS -r n"], "#PBS -r n"),
    (["#SBATCH --export=NONE", "#PBS -V"], "#PBS -V after --export=NONE"),
    (["#PBS -v A=1,B=2"], "#PBS -v A=1,B=2"),
    (["#SBATCH --export=NONE", "#PBS -v A=1"], "#PBS -v after --export=NONE"),
    (["#PBS -h"], "#PBS -h"),
    (["#PBS -A physics"], "#PBS -A physics"),
    (["#PBS -m abe -M a@b.c"], "#PBS -m abe -M"),
    (["#PBS -W depend=afterok:{P1}:{P2}"], "#PBS -W depend two ids"),
    (["#PBS -W DEPEND=afterany:{P1}"], "#PBS -W DEPEND= upper case"),
    (["#PBS -W umask=077"], "#PBS -W umask=077"),
    (["#PBS -W depend=afterok:{P1},umask=022"], "#PBS -W depend then umask in one value"),
    (["#PBS -N", "#PBS nextline"], "#PBS -N value on the next line"),
    (["#PBS pbsname"], "INVALID #PBS word that is no option"),
    (["#PBS -X"], "INVALID #PBS -X unknown"),
    (["#PBS --job_name=longname"], "#PBS --job_name=longname"),
    (["#PBS --job_n=abbr"], "#PBS --job_n abbreviated long option"),
    (["#PBS -hN glued"], "#PBS -hN glued cluster"),
    (["#PBS -l select=2:ncpus=8:mpiprocs=4"], "#PBS -l select ncpus mpiprocs"),
    (["#PBS -l select=1:ncpus=4"], "#PBS -l select=1:ncpus=4"),
    (["#PBS -l ncpus=4"], "#PBS -l ncpus=4"),
    (["#PBS -l procs=4"], "#PBS -l procs=4"),
    (["#PBS -l pmem=1gb"], "#PBS -l pmem=1gb"),
    (["#PBS -l mem=2000mb"], "#PBS -l mem=2000mb"),
    (["#PBS -l mem=1024"], "#PBS -l mem=1024 (no unit)"),
    (["#PBS -l naccelerators=2"], "#PBS -l naccelerators=2"),
    (["#PBS -l nodes=1:ppn=2:gpus=1"], "#PBS -l nodes ppn gpus"),
    (["#PBS -l nodes=n1+n2"], "#PBS -l nodes=n1+n2"),
    (["#PBS -l nodes=2+1:ppn=2"], "#PBS -l nodes=2+1:ppn=2"),
    (["#PBS -l walltime=3600"], "#PBS -l walltime=3600"),
    (["#PBS -l cput=10:00"], "#PBS -l cput=10:00"),
    (["#PBS -l nice=7"], "#PBS -l nice=7"),
    (["#PBS -l accelerator=true"], "#PBS -l accelerator=true"),
    (["#PBS -l file=10gb"], "#PBS -l file=10gb"),
    (["#PBS -l walltime=1:00:00", "#PBS -l nodes=2"], "#PBS two -l lines"),
    (["#SBATCH -p batch", "#PBS -q debug"], "#PBS -q over #SBATCH -p"),
    (["#PBS -l mem=4gb", "#SBATCH --mem-per-cpu=1G"], "#PBS mem with #SBATCH mem-per-cpu"),
    (["#SBATCH --gres=gpu:1g.10gb:1", "#PBS -l naccelerators=1"], "#PBS naccelerators added to #SBATCH gres"),
    (["#PBS -z -I -k oe -S /bin/sh -u root -c n -C /tmp"], "#PBS options without a counterpart"),
    (["#PBS-N gluedmagic"], "#PBS-N glued to the magic word"),
    (["#PBSX -N x"], "INVALID #PBSX (magic prefix, then a word)"),
    (["  #PBS -N indented"], "indented #PBS is no directive"),
    (["#PBS -o out.%j", "#PBS -e err.txt -j oe"], "#PBS -o -e -j"),
    (["#PBS -l walltime=00:10:00,xnodes=3"], "#PBS -l key inside another word"),
    (["#PBS -l naccelerators=abc"], "INVALID #PBS -l naccelerators=abc"),
    (["#PBS -l mpiprocs=2,walltime=5"], "#PBS -l mpiprocs to the next colon"),
]:
    case(_t, ["pbs", "sixth"], [], _d)
case("#PBS -N pbs, CLI -J cli", ["pbs", "precedence"], ["-J", "cli"], ["#PBS -N pbs"])
case("#PBS -l walltime after the first command", ["pbs", "after-command"], [], ["#SBATCH -J x"], after=["#PBS -l walltime=00:07:00"])
for _d, _t in [
    (["#BSUB -J lsfname"], "#BSUB -J"),
    (["#BSUB -n 4"], "#BSUB -n 4"),
    (["#BSUB -n 2,8"], "#BSUB -n 2,8 (the maximum)"),
    (["#BSUB -W 90"], "#BSUB -W 90"),
    (["#BSUB -W 1:30"], "#BSUB -W 1:30"),
    (["#BSUB -q debug"], "#BSUB -q debug"),
    (["#BSUB -o lsf.%J.out -e lsf.err"], "#BSUB -o -e"),
    (["#BSUB -M 2000000"], "#BSUB -M 2000000 (KB)"),
    (["#BSUB -M 2G"], "#BSUB -M 2G"),
    (["#BSUB -cwd /tmp"], "#BSUB -cwd /tmp"),
    (["#BSUB -x"], "#BSUB -x"),
    (["#BSUB -m 'n1 n2'"], "#BSUB -m two hosts"),
    (["#BSUB -J lsf", "#PBS -N pbs"], "#BSUB and #PBS: #BSUB alone read"),
    (["#BSUB -P proj"], "INVALID #BSUB -P unknown"),
    (["#BSUB -n 2,"], "INVALID #BSUB -n 2,"),
    (["#SBATCH -t 5", "#BSUB -W 10"], "#BSUB -W over #SBATCH -t"),
]:
    case(_t, ["bsub", "sixth"], [], _d)
case("--ignore-pbs with #BSUB", ["bsub", "ignore-pbs"], ["--ignore-pbs"], ["#BSUB -J lsf"])
for _a, _t in [
    (["--priority=TOP"], "--priority=TOP"),
    (["--priority=0"], "--priority=0"),
    (["--priority=-1"], "INVALID --priority=-1"),
    (["--priority=4294967294"], "INVALID --priority=4294967294"),
    (["--priority=4294967293"], "--priority=4294967293"),
    (["--priority=abc"], "--priority=abc"),
    (["--priority", "50x"], "--priority 50x"),
    (["--prio=5"], "--prio=5 abbreviated"),
]:
    case(_t, ["priority", "sixth"], _a)
case("#SBATCH --priority=7", ["priority", "script"], [], ["#SBATCH --priority=7"])

_R = _random.Random(20261208)
_PBS6 = _PBS + ["#PBS -p 3", "#PBS -J 0-3", "#PBS -l select=2:ncpus=4:mpiprocs=2", "#PBS -l ncpus=2",
                "#PBS -l naccelerators=1", "#PBS -W depend=afterok:{P1}", "#PBS -h", "#PBS -l cput=20",
                "#PBS -l nodes=1:ppn=3", "#BSUB -n 3", "#BSUB -W 45", "#BSUB -J lsf", "#BSUB -q debug"]
_combos("sixth combo", 60, _POOLS5, 8, 0.2, 0.4, env=(0.3, _ENV5), pbs=(0.35, _PBS6))

# ---------------------------------------------------------------- seventh round (2026-12-05): edges of the shared
# families not probed before, then seeded combinations in the shared cases' shape.
# Indices 1225 on.
for _a, _t in [
    (["-n", "0", "-N", "2"], "INVALID -n 0 with -N 2"),
    (["--ntasks=1", "--ntasks-per-node=2"], "--ntasks=1 with --ntasks-per-node=2"),
    (["-n", "3", "-c", "22"], "-n 3 -c 22 (66 CPUs: two nodes)"),
    (["-c", "0"], "INVALID -c 0"),
    (["-N", "0"], "-N 0"),
    (["-N", "5"], "-N 5 (more nodes than the cluster)"),
    (["-N", "1-4", "-n", "2"], "-N 1-4 -n 2"),
    (["--mem=1.5G"], "--mem=1.5G"),
    (["--mem=0.5G"], "--mem=0.5G"),
    (["--mem=2048M", "-N", "2"], "--mem=2048M -N 2"),
    (["--mem=515000"], "--mem=515000 (a whole node)"),
    (["--mem=515001"], "--mem=515001 (over a node)"),
    (["--mem-per-cpu=8G", "-c", "64"], "--mem-per-cpu=8G -c 64 (over a node)"),
    (["--mem=4g", "--mem-per-cpu=1g"], "INVALID --mem with --mem-per-cpu on the command line"),
    (["-t", "0-0:0:1"], "-t 0-0:0:1"),
    (["-t", "1-"], "-t 1-"),
    (["-t", "00:00:00"], "-t 00:00:00"),
    (["-t", "5:"], "-t 5:"),
    (["-t", ":30"], "-t :30"),
    (["-t", "90:00:00"], "-t 90:00:00"),
    (["-t", "unlimited"], "-t unlimited (lower case)"),
    (["-t", "1-0", "-p", "debug"], "-t 1-0 in debug (over MaxTime)"),
    (["-o", "%N-%j.out"], "-o %N-%j.out"),
    (["-o", "%n-%t-%s.out"], "-o %n-%t-%s.out"),
    (["-o", "%5a_%A.out", "--array=1-2"], "-o %5a_%A.out with an array"),
    (["-o", "dir/%x.%j"], "-o into a relative directory"),
    (["-e", "%j.err", "-o", "%j.err"], "-e and -o the same file"),
    (["-J", ""], "-J '' (empty)"),
    (["-J", "x" * 200], "-J of 200 characters"),
    (["-J", "tab\there"], "-J with a tab"),
    (["-p", "DEBUG"], "-p DEBUG (case)"),
    (["-p", "batch,nosuch"], "-p batch,nosuch"),
    (["--export=NIL"], "--export=NIL"),
    (["--export=ALL,NONE"], "--export=ALL,NONE"),
    (["--export=A=1,ALL"], "--export=A=1,ALL"),
    (["--dependency=afterok:{P1}:{P1}"], "--dependency=afterok:P1:P1"),
    (["--dependency=afterok:{P1},afterok:{P2}"], "--dependency two afterok items"),
    (["--dependency=expand:{P1}"], "--dependency=expand"),
    (["-d", "afterany:{P5}_9"], "-d afterany on a task the array does not have"),
    (["-d", "afterok"], "INVALID -d afterok without a job"),
    (["--nice=+5"], "--nice=+5"),
    (["--nice=2147483645"], "--nice=2147483645"),
    (["--nice=-2147483645"], "--nice=-2147483645"),
    (["--array=0-3:0"], "INVALID --array=0-3:0"),
    (["--array=5-1"], "INVALID --array=5-1"),
    (["--array=1-10:3%3"], "--array=1-10:3%3"),
    (["--array=3,1,2"], "--array=3,1,2 (unsorted)"),
    (["--array=1-3,2-4"], "--array=1-3,2-4 (overlapping)"),
    (["--array=%2"], "INVALID --array=%2"),
    (["--gres=gpu:a100:1,gpu:1g.10gb:2"], "--gres two types"),
    (["--gres=gpu:A100:1"], "--gres=gpu:A100:1 (case)"),
    (["--gres=gpu"], "--gres=gpu (no count)"),
    (["--gpus=1g.10gb"], "--gpus=1g.10gb (type, no count)"),
    (["--gpus=a100:1,1g.10gb:1"], "--gpus two types"),
    (["--gpus-per-node=3", "-N", "2", "--gpus=4"], "--gpus-per-node with --gpus"),
    (["--gpus-per-task=1", "-n", "5"], "--gpus-per-task=1 -n 5 (over a node's a100)"),
    (["--exclusive", "-n", "2"], "--exclusive -n 2"),
    (["--exclusive=mcs"], "--exclusive=mcs"),
    (["--begin=2030-06-01"], "--begin=2030-06-01 (date only)"),
    (["--begin=2030-06-01T25:00:00"], "INVALID --begin hour 25"),
    (["--comment="], "--comment= (empty)"),
    (["--chdir=/nonexistent/dir"], "--chdir to a directory that does not exist"),
]:
    case(_t, ["seventh"] + [w.lstrip("-").split("=")[0] for w in _a[:1]], _a)
case("#SBATCH after an indented command", ["seventh", "script"], [], ["#SBATCH -J first"], after=["  #SBATCH -J second"])
case("#SBATCH with a trailing tab", ["seventh", "script"], [], ["#SBATCH -J tabbed\t"])
case("#SBATCH --export=A='x y'", ["seventh", "export", "script"], [], ["#SBATCH --export=A='x y'"])
case("#SBATCH -n4 -c2 on one line", ["seventh", "script"], [], ["#SBATCH -n4 -c2"])
case("#SBATCH --mem=2G # comment", ["seventh", "script"], [], ["#SBATCH --mem=2G # comment"])
case("#SBATCH --job-name='single quoted'", ["seventh", "script"], [], ["#SBATCH --job-name='single quoted'"])
case("#!/usr/bin/env bash shebang", ["seventh", "shebang"], [], ["#SBATCH -J envbash"], shebang="#!/usr/bin/env bash")
case("#!/bin/bash -l shebang", ["seventh", "shebang"], [], ["#SBATCH -J login"], shebang="#!/bin/bash -l")

_R = _random.Random(20261209)
_combos("seventh combo", 100, _POOLS5, 7, 0.25, 0.5, env=(0.2, _ENV5), pbs=(0.1, _PBS))

# ---------------------------------------------------------------- eighth round (2026-12-06): options and spellings
# not probed before in the shared families, then seeded combinations. Indices 1395 on.
for _a, _t in [
    (["-n", "010"], "-n 010 (leading zero)"),
    (["-n", "2k"], "INVALID -n 2k"),
    (["--ntasks=4", "--ntasks-per-core=1"], "--ntasks-per-core=1 -n 4"),
    (["-n", "4", "-O"], "-n 4 -O (overcommit)"),
    (["-n", "128", "--overcommit"], "-n 128 --overcommit"),
    (["-c", "4", "--ntasks-per-node=16", "-N", "1"], "-c 4 --ntasks-per-node=16 -N 1 (a whole node)"),
    (["-c", "4", "--ntasks-per-node=17", "-N", "1"], "-c 4 --ntasks-per-node=17 -N 1 (over a node)"),
    (["-c", "2", "-n", "3", "-N", "2"], "-c 2 -n 3 -N 2"),
    (["-N", "2", "-w", "n1"], "-N 2 -w n1 (fewer listed than asked)"),
    (["-N", "1", "-w", "n[1-2]"], "-N 1 -w n[1-2] (more listed than asked)"),
    (["-N", "2", "-x", "n[1-3]"], "-N 2 -x n[1-3] (one node left)"),
    (["-w", "n1", "-x", "n1"], "-w n1 -x n1"),
    (["-N", "01-02"], "-N 01-02"),
    (["--contiguous", "-N", "2"], "--contiguous -N 2"),
    (["--mem=0", "-N", "2"], "--mem=0 -N 2"),
    (["--mem-per-cpu=0"], "--mem-per-cpu=0"),
    (["--mem=2048", "--mem-per-gpu=2G", "--gpus=1"], "INVALID --mem with --mem-per-gpu"),
    (["--mem=1.5"], "--mem=1.5 (a fraction of a megabyte)"),
    (["--mem=-1"], "INVALID --mem=-1"),
    (["--mem=8P"], "--mem=8P"),
    (["--mem-per-cpu=600G"], "--mem-per-cpu=600G (over a node)"),
    (["--tmp=10G"], "--tmp=10G"),
    (["-t", "1:00:00:00"], "INVALID -t 1:00:00:00"),
    (["-t", "1-0:00:00"], "-t 1-0:00:00"),
    (["-t", "90", "-p", "debug"], "-t 90 in debug"),
    (["-t", "0", "-p", "debug"], "-t 0 in debug (no limit asked, MaxTime 2h)"),
    (["--time-min=20", "-t", "10"], "--time-min over --time"),
    (["--time-min=abc"], "INVALID --time-min=abc"),
    (["-t", "2:30", "--time-min", "1:30"], "-t 2:30 --time-min 1:30"),
    (["-t", "-1"], "-t -1"),
    (["-J", "name,with,commas"], "-J with commas"),
    (["-J", "a" * 50, "-o", "%x.out"], "-J of 50 with -o %x"),
    (["-o", "%x_%A_%a.out"], "-o %x_%A_%a without an array"),
    (["-o", "%j.%N.out", "--array=1-2"], "-o %j.%N with an array"),
    (["-o", "%%"], "-o %% alone"),
    (["-o", "%"], "-o % alone"),
    (["-o", "%10j"], "-o %10j"),
    (["-o", "%y"], "-o %y (unknown pattern)"),
    (["--open-mode=truncate"], "--open-mode=truncate"),
    (["--open-mode=bogus"], "INVALID --open-mode=bogus"),
    (["-i", "/dev/null"], "-i /dev/null"),
    (["--gres=gpu:a100:1,gpu:a100:2"], "--gres the same type twice"),
    (["--gres=gpu:a100:2", "--gpus-per-node=1"], "--gres with --gpus-per-node"),
    (["--gpus=2", "--gpus-per-node=2", "-N", "1"], "--gpus=2 --gpus-per-node=2 -N 1"),
    (["--gpus-per-task=1", "--ntasks-per-node=2", "-N", "2"], "--gpus-per-task with --ntasks-per-node -N 2"),
    (["--cpus-per-gpu=4", "--gpus-per-task=1", "-n", "2"], "--cpus-per-gpu with --gpus-per-task -n 2"),
    (["--gpus-per-socket=1"], "--gpus-per-socket=1"),
    (["--gpus=a100:1", "--gres=gpu:1g.10gb:1"], "--gpus and --gres of two types"),
    (["--gres=gpu:a100:1(S:0)"], "--gres with a socket spec"),
    (["--gres=mps:50"], "--gres=mps:50 (not configured)"),
    (["--gpu-bind=closest", "--gpus=1"], "--gpu-bind=closest"),
    (["-d", "after:{P1}+0"], "-d after:P1+0"),
    (["-d", "aftercorr:{P5}", "--array=0-3"], "-d aftercorr on an array from an array"),
    (["-d", "afterburstbuffer:{P1}"], "-d afterburstbuffer"),
    (["-d", "afterok:{P1}?afterany:{P2},afterok:{P3}"], "INVALID -d mixing ? and ,"),
    (["-d", "AfterOK:{P1}"], "-d AfterOK (mixed case)"),
    (["-d", "{P1}"], "-d a bare job id"),
    (["-d", "afterok:{P5}_*"], "-d afterok on every task of an array"),
    (["--array=00-03"], "--array=00-03"),
    (["--array=0-3%1"], "--array=0-3%1"),
    (["--array=1,2-4:2"], "--array=1,2-4:2"),
    (["--array=0-3:-1"], "INVALID --array step -1"),
    (["--array= 1-2"], "--array with a leading space"),
    (["--array=1-2,"], "--array=1-2, (trailing comma)"),
    (["--export=NONE,FOO"], "--export=NONE,FOO (a name unset)"),
    (["--export=ALL,PATH"], "--export=ALL,PATH"),
    (["--export=A=1,B"], "--export=A=1,B"),
    (["--export=\"A=1\""], "--export=\"A=1\" (quoted on the command line)"),
    (["--exclusive", "--oversubscribe"], "--exclusive then --oversubscribe"),
    (["--exclusive=topo"], "--exclusive=topo"),
    (["--exclusive=bogus"], "INVALID --exclusive=bogus"),
    (["--begin=2030-06-01T12:00:00.5"], "INVALID --begin with a fraction of a second"),
    (["--begin=2030-13-01"], "INVALID --begin month 13"),
    (["--nice=abc"], "INVALID --nice=abc"),
    (["--nice=-0"], "--nice=-0"),
    (["--nice", "3", "--nice=4"], "--nice twice"),
    (["--requeue", "--no-requeue"], "--requeue then --no-requeue"),
    (["--kill-on-invalid-dep=no"], "--kill-on-invalid-dep=no"),
    (["--mail-type=BEGIN,END"], "--mail-type=BEGIN,END"),
    (["--mail-type=bogus"], "INVALID --mail-type=bogus"),
    (["--hint=nomultithread"], "--hint=nomultithread"),
    (["--core-spec=1"], "--core-spec=1"),
    (["--thread-spec=1"], "--thread-spec=1"),
    (["--switches=1"], "--switches=1"),
    (["--licenses=foo:1"], "--licenses=foo:1 (not configured)"),
    (["-B", "1:2:1"], "-B 1:2:1"),
    (["--cores-per-socket=4"], "--cores-per-socket=4"),
    (["--get-user-env"], "--get-user-env"),
    (["--no-kill"], "--no-kill"),
    (["--reboot"], "--reboot"),
    (["--delay-boot=5"], "--delay-boot=5"),
    (["--acctg-freq=task=30"], "--acctg-freq=task=30"),
    (["--propagate=NONE"], "--propagate=NONE"),
    (["--cpu-freq=high"], "--cpu-freq=high"),
    (["--uid=0"], "--uid=0"),
    (["--gid=0"], "--gid=0"),
    (["--bogus"], "INVALID --bogus"),
    (["-Z"], "INVALID -Z"),
    (["--ntasks"], "INVALID --ntasks without a value"),
    (["--exclusive=user", "--exclusive"], "--exclusive=user then --exclusive"),
]:
    case(_t, ["eighth"] + [w.lstrip("-").split("=")[0] for w in _a[:1]], _a)
case("#SBATCH -J a b (two words unquoted)", ["eighth", "script"], [], ["#SBATCH -J a b"])
case("#SBATCH --comment with double spaces", ["eighth", "script"], [], ['#SBATCH --comment="a  b"'])
case("#SBATCH then an empty #SBATCH", ["eighth", "script"], [], ["#SBATCH -n 2", "#SBATCH"])
case("#SBATCH --ntasks=2 after #!/bin/bash twice", ["eighth", "script"], [], ["#!/bin/bash", "#SBATCH -n 2"])
case("#SBATCH -n 2 after a line of spaces", ["eighth", "script"], [], ["   ", "#SBATCH -n 2"])
case("#SBATCH -n 2 after a tab-only line", ["eighth", "script"], [], ["\t", "#SBATCH -n 2"])
case("#SBATCH --mem 2G (space, no =)", ["eighth", "script"], [], ["#SBATCH --mem 2G"])
case("#SBATCH -o 'with space.out'", ["eighth", "script"], [], ["#SBATCH -o 'with space.out'"])
case("env SBATCH_MEM_PER_NODE=2G", ["eighth", "env"], [], [], {"SBATCH_MEM_PER_NODE": "2G"})
case("env SBATCH_MEM_PER_NODE=2G with --mem-per-cpu in script", ["eighth", "env"], [], ["#SBATCH --mem-per-cpu=1G"], {"SBATCH_MEM_PER_NODE": "2G"})
case("env SBATCH_GPUS_PER_TASK=1 -n 2", ["eighth", "env"], ["-n", "2"], [], {"SBATCH_GPUS_PER_TASK": "1"})
case("env SBATCH_OVERCOMMIT=1 -n 128", ["eighth", "env"], ["-n", "128"], [], {"SBATCH_OVERCOMMIT": "1"})
case("env SBATCH_OPEN_MODE=append", ["eighth", "env"], [], [], {"SBATCH_OPEN_MODE": "append"})
case("env SBATCH_ERROR=err-%j", ["eighth", "env"], [], [], {"SBATCH_ERROR": "err-%j"})
case("env SBATCH_SIGNAL=USR1@30", ["eighth", "env"], [], [], {"SBATCH_SIGNAL": "USR1@30"})
case("env SBATCH_QOS=normal", ["eighth", "env"], [], [], {"SBATCH_QOS": "normal"})
case("env SBATCH_WCKEY=w", ["eighth", "env"], [], [], {"SBATCH_WCKEY": "w"})
case("env SBATCH_CONSTRAINT=x", ["eighth", "env"], [], [], {"SBATCH_CONSTRAINT": "x"})
case("env SBATCH_TIMELIMIT=abc", ["eighth", "env", "invalid"], [], [], {"SBATCH_TIMELIMIT": "abc"})
case("env SBATCH_PARTITION=nosuch with -p batch", ["eighth", "env"], ["-p", "batch"], [], {"SBATCH_PARTITION": "nosuch"})
case("env SBATCH_GRES=gpu:a100:1 with --gres in script", ["eighth", "env"], [], ["#SBATCH --gres=gpu:2"], {"SBATCH_GRES": "gpu:a100:1"})
case("env SBATCH_JOB_NAME with -J in script", ["eighth", "env"], [], ["#SBATCH -J script"], {"SBATCH_JOB_NAME": "envname"})

_R = _random.Random(20261210)
_POOLS8 = dict(_POOLS5)
_POOLS8.update({
    "overcommit": [("-O", None), ("--overcommit", None)],
    "open-mode": [("--open-mode", "append"), ("--open-mode", "truncate")],
    "nodelist": [("-w", "n1"), ("--nodelist", "n[1-2]"), ("-w", "n3,n4"), ("-w", "n[2-4]")],
    "ntasks-per-core": [("--ntasks-per-core", "1"), ("--ntasks-per-core", "2")],
    "tmp": [("--tmp", "1G")],
    "cpus-per-gpu": [("--cpus-per-gpu", "4"), ("--cpus-per-gpu", "2")],
    "mem-per-gpu": [("--mem-per-gpu", "8G"), ("--mem-per-gpu", "1024")],
})
_ENV8 = _ENV5 + [("SBATCH_MEM_PER_NODE", "2G"), ("SBATCH_GPUS_PER_TASK", "1"), ("SBATCH_OVERCOMMIT", "1"),
                 ("SBATCH_OPEN_MODE", "append"), ("SBATCH_ERROR", "env-%j.err")]
_combos("eighth combo", 80, _POOLS8, 8, 0.25, 0.45, env=(0.3, _ENV8), pbs=(0.1, _PBS))

# ---------------------------------------------------------------- ninth round (2026-12-06): seeded combinations in
# the shared cases' shape only (the first round's pools), to measure agreement on
# submissions like the held-out ones. Indices 1597 on.
_R = _random.Random(20261211)
_combos("ninth combo", 100, _POOLS, 7, 0.25, 0.5)

# ---------------------------------------------------------------- tenth round (2026-12-06): wider seeded combinations
# (the third round's pools and variables, the fourth's #PBS lines). Indices 1697 on.
_R = _random.Random(20261212)
_combos("tenth combo", 100, _POOLS4, 8, 0.2, 0.4, env=(0.35, _ENV5), pbs=(0.15, _PBS))

# ---------------------------------------------------------------- eleventh round (2026-12-06): seeded combinations with
# the fifth round's pools (edges of memory, arrays, times, GPU options), variables and
# #PBS lines. Indices 1797 on.
_R = _random.Random(20261213)
_combos("eleventh combo", 100, _POOLS5, 8, 0.2, 0.4, env=(0.3, _ENV5), pbs=(0.1, _PBS))
