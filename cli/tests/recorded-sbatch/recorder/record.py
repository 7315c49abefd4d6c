#!/usr/bin/env python3
"""Record real Slurm 22.05's reading of sbatch submissions, in the layout of
shared/conformance/sbatch/cases.  Usage: record.py [first_index [last_index]]"""
import json, os, re, shutil, subprocess, sys

ROOT = "/tmp/slurmrec"
WORK = f"{ROOT}/work"
OUT = f"{ROOT}/cases"
CONF = f"{ROOT}/slurm.conf"
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root", "USER": "root", "LOGNAME": "root", "SHELL": "/bin/bash",
    "LANG": "C", "TZ": "UTC", "SLURM_CONF": CONF,
}
KEYS = set("""Account AccrueTime AdminComment AllocNode:Sid ArrayJobId ArrayTaskId
ArrayTaskThrottle BatchFeatures BatchFlag BatchHost BurstBuffer BurstBufferState CPUs/Task
ClusterFeatures Command Comment Container Contiguous CoreSpec CpusPerTres CronJob
CrontabSpec Deadline DelayBoot Dependency DerivedExitCode EligibleTime EndTime ExcNodeList
ExitCode Features FedActiveSiblings FedOrigin FedViableSiblings GresEnforceBind GroupId
HetJobId HetJobIdSet HetJobOffset JobId JobName JobState KillOInInvalidDependent
LastSchedEval Licenses MCS_label MailType MailUser MemPerTres MinCPUsNode MinMemoryCPU
MinMemoryNode MinTmpDiskNode Network Nice NodeList NtasksPerN:B:S:C NtasksPerTRES NumCPUs
NumNodes NumTasks OverSubscribe Partition Power PreemptEligibleTime PreemptTime Prefer
Priority QOS Reason Reboot ReqB:S:C:T ReqNodeList Requeue Reservation ResizeTime Restarts
RunTime SELinuxContext Scheduler SecsPreSuspend Socks/Node SpreadJob StartTime StdErr
StdIn StdOut SubmitTime SuspendTime Switches SystemComment TRES ThreadSpec TimeLimit
TimeMin TresBind TresFreq TresPerJob TresPerNode TresPerSocket TresPerTask UserId WCKey
WorkDir""".split())
KEY_RE = re.compile(r"(?:^| )(" + "|".join(re.escape(k) for k in sorted(KEYS, key=len, reverse=True)) + r")=")

VOL_FIELDS = ["SubmitTime", "LastSchedEval", "AllocNode:Sid", "EligibleTime", "StartTime",
              "AccrueTime", "EndTime"]
VOL_SQUEUE = ["submit_time", "last_sched_evaluation", "eligible_time", "start_time",
              "accrue_time", "end_time", "preempt_time"]
VOL_PROBE = VOL_FIELDS + ["Priority", "Reason"]


def parse_line(line):
    line = line.rstrip("\n")
    ms = list(KEY_RE.finditer(line))
    out = {}
    for i, m in enumerate(ms):
        end = ms[i + 1].start() if i + 1 < len(ms) else len(line)
        v = line[m.end():end]
        # scontrol ends some fields with their own space ("Comment=%s " + " "):
        # values are kept trimmed, as the shared recordings keep them
        out[m.group(1)] = v.strip(" ")
    return out


def run(argv, env=None, timeout=60):
    e = dict(BASE_ENV)
    if env:
        e.update(env)
    p = subprocess.run(argv, cwd=WORK, env=e, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def newest_job(known):
    """A job submitted quietly (-Q prints no id): the newest job not yet known."""
    rc, out, err = run(["squeue", "-h", "-o", "%F", "-u", "root"])
    cand = [int(x) for x in out.split() if x.isdigit() and int(x) > max(known)]
    return max(cand) if cand else None


def job_id_of(stdout):
    m = re.search(r"Submitted batch job (\d+)", stdout) or re.match(r"^(\d+)(;\S*)?\s*$", stdout)
    return int(m.group(1)) if m else None


def build_script(c):
    ex = c["extra"]
    lines = []
    sb = ex.get("shebang", "#!/bin/bash")
    if sb is not None:
        lines.append(sb)
    lines += c["directives"]
    main = list(ex.get("pre_body", [])) + list(ex.get("body") or ['echo "job $SLURM_JOB_ID on $(hostname)"', "sleep 1"])
    main = main[:1] + list(ex.get("after", [])) + main[1:]
    lines += main
    nl = "\r\n" if ex.get("crlf") else "\n"
    return nl.join(lines) + nl


class Subst:
    def __init__(self, ids):
        self.pairs = sorted(((v, k) for k, v in ids.items() if v is not None), key=lambda p: -len(str(p[0])))

    def __call__(self, s):
        if s is None:
            return None
        if isinstance(s, str):
            s = s.replace(WORK, "{SUBMIT_DIR}")
            for v, k in self.pairs:
                s = re.sub(r"(?<!\d)%d(?!\d)" % v, "{%s}" % k, s)
            return s
        if isinstance(s, list):
            return [self(x) for x in s]
        if isinstance(s, dict):
            return {k: self(v) for k, v in s.items()}
        return s


def squeue_json(jid):
    rc, out, err = run(["squeue", "--json"])
    if rc != 0:
        return None
    try:
        for j in json.loads(out)["jobs"]:
            if j.get("job_id") == jid:
                return j
    except Exception:
        return None
    return None


def scontrol(jid):
    rc, out, err = run(["scontrol", "show", "job", "-o", str(jid)])
    if rc != 0:
        return [], {}, err.strip() or f"rc={rc}"
    lines = [l for l in out.splitlines() if l.strip()]
    return lines, (parse_line(lines[0]) if lines else {}), None


def wait_idle():
    import time
    for _ in range(100):
        rc, out, err = run(["sinfo", "-h", "-N", "-o", "%t"])
        if out.split() and all(t == "idle" for t in out.split()):
            return
        time.sleep(0.1)
    raise SystemExit("nodes not idle: " + out)


def record(idx, c):
    cid = "%03d" % idx
    d = os.path.join(OUT, cid)
    os.makedirs(d, exist_ok=True)
    script = build_script(c)
    with open(os.path.join(d, "script.sh"), "w", newline="") as f:
        f.write(script)
    with open(os.path.join(d, "args.json"), "w") as f:
        json.dump(c["args"], f)
    if c["env"]:
        with open(os.path.join(d, "env.json"), "w") as f:
            json.dump(c["env"], f, indent=1)
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump({"id": cid, "title": c["title"], "tags": c["tags"]}, f, indent=1)

    # parents
    ids = {}
    for n in range(1, 5):
        rc, out, err = run(["sbatch", "--parsable", "--hold", "-J", f"parent{n}", "--wrap", "true"])
        ids[f"P{n}"] = job_id_of(out)
    rc, out, err = run(["sbatch", "--parsable", "--hold", "--array=0-3", "--wrap", "true"])
    ids["P5"] = job_id_of(out)
    assert all(ids.values()), (ids, err)

    def fill(t):
        for k, v in ids.items():
            t = t.replace("{%s}" % k, str(v))
        return t

    with open(os.path.join(WORK, "script.sh"), "w", newline="") as f:
        f.write(fill(script))
    args = [fill(a) for a in c["args"]]
    argv = ["sbatch", "--hold"] + args + ["script.sh"]
    rc, out, err = run(argv, c["env"])
    jid = job_id_of(out) if rc == 0 else None
    if rc == 0 and jid is None and "--test-only" not in args:
        jid = newest_job(list(ids.values()))
    lines, fields, serr, sq = [], {}, None, None
    if jid:
        ids["JOBID"] = jid
        lines, fields, serr = scontrol(jid)
        sq = squeue_json(jid)
    # unheld probe: same submission without --hold, nodes drained
    run(["scontrol", "update", "nodename=n[1-4]", "state=drain", "reason=probe"])
    pargv = ["sbatch"] + args + ["script.sh"]
    prc, pout, perr = run(pargv, c["env"])
    pjid = job_id_of(pout) if prc == 0 else None
    if prc == 0 and pjid is None and "--test-only" not in args:
        pjid = newest_job(list(ids.values()))
    pfields, pserr = {}, None
    if pjid:
        ids["PROBE_JOBID"] = pjid
        _, pfields, pserr = scontrol(pjid)
    sub = Subst(ids)
    vol_fields = list(VOL_FIELDS) if jid else []
    if "volatile" in c["tags"]:
        for k in ("Deadline", "TimeLimit"):
            if jid and k not in vol_fields:
                vol_fields.append(k)
    rec = {
        "case": cid,
        "argv": sub(["sbatch", "--hold"] + c["args"] + ["script.sh"]),
        "env_extra": c["env"] or None,
        "exit": rc,
        "stdout": sub(out),
        "stderr": sub(err),
        "accepted": jid is not None,
        "job_id": "{JOBID}" if jid else None,
        "fields": sub(fields),
        "derived": {},
        "scontrol_lines": sub(lines),
        "scontrol_error": serr,
        "squeue_json": sub(sq),
        "job_environment": None,
        "stored_script_identical": None,
        "unheld_probe": {
            "argv": ["sbatch"] + c["args"] + ["script.sh"],
            "exit": prc,
            "stdout": sub(pout),
            "stderr": sub(perr),
            "accepted": pjid is not None,
            "fields": sub(pfields),
            "scontrol_error": pserr,
        },
        "volatile": {
            "fields": vol_fields,
            "squeue_json": VOL_SQUEUE if jid else [],
            "unheld_probe.fields": VOL_PROBE,
            "job_environment": ["not recorded"],
        },
        "ids": ids,
    }
    with open(os.path.join(d, "slurm.json"), "w") as f:
        json.dump(rec, f, indent=1)
    # cancel everything of this case
    allids = [str(v) for v in ids.values() if v]
    run(["scancel"] + allids)
    run(["scontrol", "update", "nodename=n[1-4]", "state=resume"])
    wait_idle()
    return rec


def main():
    sys.path.insert(0, ROOT)
    from cases_def import C
    os.makedirs(WORK, exist_ok=True)
    os.makedirs(OUT, exist_ok=True)
    lo = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    hi = int(sys.argv[2]) if len(sys.argv) > 2 else len(C)
    wait_idle()
    for i in range(lo, hi + 1):
        r = record(i, C[i - 1])
        print("%03d exit=%d acc=%s probe=%s %s | %s" % (i, r["exit"], r["accepted"], r["unheld_probe"]["accepted"],
              C[i - 1]["title"], r["stderr"].strip().replace("\n", " / ")[:160]), flush=True)


if __name__ == "__main__":
    main()
