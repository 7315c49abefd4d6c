//! The tests of squeue's and scontrol's formats ([`super`]).
use super::*;

/// A pending job with every part filled in.
pub(crate) fn full_job() -> JobInfo {
    JobInfo {
        id: bulkhead_proto::JobId(42),
        name: "train".into(),
        user: "ann".into(),
        uid: 1001,
        gid: 1001,
        state: JobState::Pending,
        reason: Some("Resources".into()),
        exit_code: None,
        signal: None,
        node: None,
        node_id: None,
        resources: Default::default(),
        partition: "gpu".into(),
        workdir: "/home/ann".into(),
        stdout: "/home/ann/bh-42.out".into(),
        stderr: "/home/ann/bh-42.err".into(),
        submit_time_us: 1_700_000_000_000_000,
        start_time_us: None,
        end_time_us: None,
        denials: vec![],
        expected_start_us: Some(1_700_000_600_000_000),
        priority: Some(4242),
        array_task: None,
        array_pending: None,
        gpus: vec![],
        usage: None,
        account: "lab".into(),
        extra: bulkhead_proto::job::SubmitExtra {
            comment: Some("a note".into()),
            nice: 7,
            exclusive: bulkhead_proto::job::Exclusive::Node,
            ..Default::default()
        },
        dependency: "afterok:7(unfulfilled)".into(),
        reservation: Some("maint".into()),
        qos: Some("high".into()),
        args: vec!["--lr".into(), "0.1".into()],
        restarts: 0,
        shown: Some(Box::new(bulkhead_proto::job::JobShown {
            out_pattern: "bh-%j.out".into(),
            ..Default::default()
        })),
        array_last: false,
    }
}

/// Every field squeue can print reads the same from a listing that omits the
/// parts its format does not name: [`squeue_parts`] names all a field reads.
#[test]
fn a_listing_without_the_parts_a_format_omits_prints_the_same() {
    let full = full_job();
    let mut full = full;
    full.extra.script_path = Some("/home/ann/train.sh".into());
    full.extra.input = Some("in.txt".into());
    // sbatch's counts and GPU options, which the fields of `-O` read.
    full.extra.counts = Some(bulkhead_proto::job::TaskCounts {
        ntasks: 4,
        cpus_per_task: 2,
        ntasks_per_node: 2,
        min_cpus_node: 4,
        min_cpus: 8,
        nodes_max: 3,
        nodes_sent: 2,
        ntasks_per_core: 1,
        ..Default::default()
    });
    full.extra.tres = Some(bulkhead_proto::job::TresAsks {
        per_job: "gres:gpu:4".into(),
        per_task: "gres:gpu:1".into(),
        cpus_per_gpu: 3,
        mem_per_gpu_mb: 2048,
        ..Default::default()
    });
    full.extra.deadline_us = Some(1_700_086_400_000_000);
    full.extra.time_min_s = Some(600);
    full.shown.as_mut().expect("shown").whole_mem_mb = 64_000;
    full.extra.mem_whole = true;
    let letters = "iAFKPjuUgGatTMlLDCcmbNBRrSVeZpQqkyYEofxnwzh";
    let others = crate::slurm_fields::format_names().map(|(_, c)| c);
    for c in letters.chars().chain(others) {
        let fmt = format!("%{c}");
        let mut lean = full.clone();
        Parts::ALL.without(squeue_parts(&fmt)).clear(&mut lean);
        assert_eq!(
            squeue_field(&lean, c, 0),
            squeue_field(&full, c, 0),
            "%{c} reads a part its format does not ask for"
        );
    }
    // The default format asks for the reason alone: everything else is left out.
    assert_eq!(squeue_parts(SQUEUE_DEFAULT), Parts::REASON);
    let mut lean = full.clone();
    Parts::ALL.clear(&mut lean);
    assert_ne!(
        squeue_field(&lean, 'a', 0),
        squeue_field(&full, 'a', 0),
        "clearing the parts changes what they show"
    );
}

#[test]
fn cells_are_cut_and_padded_by_characters() {
    let mut out = String::new();
    cell(&mut out, "h\u{e9}llo", false, Some(2));
    cell(&mut out, "|", false, None);
    cell(&mut out, "ab", true, Some(4));
    cell(&mut out, "|", false, None);
    cell(&mut out, "ab", false, Some(4));
    assert_eq!(out, "h\u{e9}|  ab|ab  ");
}

/// A line's fields cut and padded where they are written: right and left,
/// wider than a run of blanks, cut, unpadded; a value with a control character
/// Sizes as squeue's `convert_num_unit` writes them, and as `--noconvert` leaves
/// them.
#[test]
fn sizes_convert_as_squeue_converts_them() {
    let conv = |n: u64, unit: usize, convert: bool| {
        let mut v = String::new();
        convert_num_unit(n, unit, convert, &mut v);
        v
    };
    // As real squeue 22.05 printed them (2026-12-05): 1500M and 4G.
    assert_eq!(conv(1024, 2, true), "1G");
    assert_eq!(conv(1500, 2, true), "1500M");
    assert_eq!(conv(1536, 2, true), "1.50G");
    assert_eq!(conv(4096, 2, true), "4G");
    assert_eq!(conv(500, 2, true), "500M");
    assert_eq!(conv(1_048_576, 2, true), "1T");
    assert_eq!(conv(1024, 2, false), "1024M");
    assert_eq!(conv(0, 2, true), "0");
    assert_eq!(conv(2048, 0, true), "2K");
    assert_eq!(conv(1000, 0, true), "1000");
    assert_eq!(conv(64, 0, true), "64");
    let mut j = full_job();
    j.resources.mem_mb = 4096;
    let line = |fmt: &str, convert: bool| squeue(std::slice::from_ref(&j), fmt, true, convert, 0);
    assert_eq!(line("%m %d", true), "4G 0\n");
    assert_eq!(line("%m", false), "4096M\n");
}

/// Every letter squeue 22.05 knows has a value here, a letter it does not know is
/// written as given (`%` and the letter, header and value alike), and `%all` is
/// every letter between bars.
#[test]
fn every_squeue_letter_and_an_unknown_one() {
    let j = full_job();
    let line = |fmt: &str, noheader: bool| squeue(std::slice::from_ref(&j), fmt, noheader, true, 0);
    assert_eq!(
        line("%H|%I|%J|%z|%O|%X|%v|%W|%f|%w|%Y|%o", true),
        "*|*|*|*:*:*|0|N/A|maint|(null)|(null)|(null)|(null)|(null)\n"
    );
    // The reservation and QOS as asked; without them `(null)` and `normal`.
    assert_eq!(line("%v %q", true), "maint high\n");
    let mut plain = full_job();
    plain.reservation = None;
    plain.qos = None;
    assert_eq!(
        squeue(std::slice::from_ref(&plain), "%v %q", true, true, 0),
        "(null) normal\n"
    );
    assert_eq!(
        line("%.5H %d %s|%!", false),
        "SOCKE MIN_TMP_DISK |%!\n    * 0 |%!\n"
    );
    let letters: Vec<char> = SQUEUE_ALL
        .split('|')
        .map(|f| f.chars().nth(1).expect("letter"))
        .collect();
    assert_eq!(letters.len(), 52);
    for c in letters {
        assert!(c == 's' || !header(c).is_empty(), "%{c} has no header");
    }
}

/// A field of a type squeue does not know is its text, width and all, as real
/// squeue 22.05 printed `%!` and `%.5!` (2026-12-05).
#[test]
fn unknown_fields_are_written_as_given() {
    let (f, bad) = squeue_unknown_fields("%i|%!|%.5!|%%|x%5j");
    assert_eq!(f, "%i|%%!|%%.5!|%%|x%5j");
    assert_eq!(bad, ['!', '!']);
    let j = full_job();
    let line = squeue(std::slice::from_ref(&j), &f, false, true, 0);
    // The last field padded as the others: real squeue's `xNAME ` ends in a blank.
    assert!(line.starts_with("JOBID|%!|%.5!|%|xNAME \n"), "{line}");
}

/// `scontrol show job`'s keys, in the order real scontrol 22.05 printed them for a
/// recorded held job (`cli/tests/recorded-sbatch/cases/001`: the file keeps
/// scontrol's order), memory per node here where that job had it per CPU; a
/// running job's batch host on a line of its own, its comment after WorkDir.
#[test]
fn scontrol_show_job_has_slurms_keys_in_slurms_order() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/recorded-sbatch/cases/001/slurm.json"
    );
    let text = std::fs::read_to_string(path).expect("recorded case");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("json");
    let fields = doc["fields"].as_object().expect("fields");
    let at = |k: &str| text.find(&format!("\"{k}\":")).expect("key in file");
    let mut want: Vec<&str> = fields.keys().map(String::as_str).collect();
    want.sort_by_key(|k| at(k));
    let want: Vec<&str> = want
        .into_iter()
        .map(|k| {
            if k == "MinMemoryCPU" {
                "MinMemoryNode"
            } else {
                k
            }
        })
        .collect();
    let mut j = full_job();
    j.extra.comment = None;
    j.reservation = None;
    j.qos = None;
    let keys = |out: &str| -> Vec<String> {
        out.split_whitespace()
            .filter_map(|w| w.split_once('=').map(|(k, _)| k.to_string()))
            .collect()
    };
    assert_eq!(keys(&scontrol_job(&j, 0)), want);
    // Running, with a comment.
    j.state = JobState::Running;
    j.node = Some("n1".into());
    j.start_time_us = Some(j.submit_time_us);
    j.extra.comment = Some("a note".into());
    j.reservation = Some("maint".into());
    j.qos = Some("high".into());
    let out = scontrol_job(&j, 0);
    assert!(out.contains("\n   NodeList=n1\n   BatchHost=n1\n"), "{out}");
    // A reservation on its own line after Features, as job_info.c prints it.
    assert!(
        out.contains("DelayBoot=00:00:00\n   Reservation=maint\n   OverSubscribe="),
        "{out}"
    );
    assert!(out.contains(" QOS=high\n"), "{out}");
    // An explicit --kill-on-invalid-dep on its own line after Power, as job_info.c
    // prints it (recorded: `KillOInInvalidDependent=No`).
    assert!(!out.contains("KillOInInvalidDependent"), "{out}");
    j.extra.kill_on_invalid_dep = Some(false);
    let out = scontrol_job(&j, 0);
    assert!(
        out.contains("\n   Power=\n   KillOInInvalidDependent=No\n"),
        "{out}"
    );
    // Options without effect here, shown as job_info.c shows them (recorded cases
    // 1416, 1480, 1484, 1485, 1408, 971): the flags line's flags one after the other.
    j.extra.shown = Some(Box::new(bulkhead_proto::job::ShownOnly {
        tmp_mb: 10 * 1024,
        contiguous: true,
        reboot: true,
        spread_job: true,
        delay_boot_s: 300,
        sockets: 1,
        cores: 2,
        threads: 1,
    }));
    let out = scontrol_job(&j, 0);
    for want in [
        " Reboot=1 ",
        " ReqB:S:C:T=0:0:2:1\n",
        "   Socks/Node=1 ",
        " MinTmpDiskNode=10G\n",
        " DelayBoot=00:05:00\n",
        " Contiguous=1 ",
        "\n   KillOInInvalidDependent=NoSpreadJob=Yes\n",
    ] {
        assert!(out.contains(want), "{want:?} not in {out}");
    }
    j.extra.shown = None;
    j.extra.kill_on_invalid_dep = None;
    // What sbatch counted, kept with the job: tasks, CPUs per task, tasks per node,
    // socket and core, the CPUs a node needs, memory per CPU.
    j.extra.counts = Some(bulkhead_proto::job::TaskCounts {
        ntasks: 4,
        cpus_per_task: 2,
        ntasks_per_node: 2,
        min_cpus_node: 4,
        mem: bulkhead_proto::job::MemForm::PerCpu(512),
        ntasks_per_socket: 0,
        ntasks_per_core: 1,
        ..Default::default()
    });
    let out = scontrol_job(&j, 0);
    for want in [
        " NumTasks=4 CPUs/Task=2 ",
        " NtasksPerN:B:S:C=2:0:*:1 ",
        "MinCPUsNode=4 MinMemoryCPU=512M ",
    ] {
        assert!(out.contains(want), "{want} not in {out}");
    }
    assert!(
        out.contains("\n   WorkDir=/home/ann\n   Comment=a note \n"),
        "{out}"
    );
    // An array's first line, as real scontrol printed one (2026-12-05): its ids and
    // throttle before the name; a task's ids; no throttle key without a throttle.
    let mut a = full_job();
    a.array_pending = Some("2-5%2".into());
    let first = |j: &JobInfo| scontrol_job(j, 0).lines().next().unwrap_or("").to_string();
    assert_eq!(
        first(&a),
        "JobId=42 ArrayJobId=42 ArrayTaskId=2-5%2 ArrayTaskThrottle=2 JobName=train"
    );
    a.array_pending = Some("0-3".into());
    assert_eq!(
        first(&a),
        "JobId=42 ArrayJobId=42 ArrayTaskId=0-3 JobName=train"
    );
    a.array_pending = None;
    a.array_task = Some((bulkhead_proto::JobId(40), 1));
    assert_eq!(
        first(&a),
        "JobId=42 ArrayJobId=40 ArrayTaskId=1 JobName=train"
    );
}

/// An array record whose started tasks run is shown as its tasks to start, waiting
/// on its throttle, and `-r` makes a line of each, as real squeue showed such an
/// array (2026-12-05: `700009_[2-5%2] PD (JobArrayTaskLimit)`, `-r`: `700009_2
/// PD` ...); `%A` is a job's own id, `%F` its array's, `%K` the tasks left.
#[test]
fn an_array_record_shows_its_waiting_tasks() {
    let mut a = full_job();
    a.state = JobState::Running;
    a.reason = None;
    a.node = Some("n1".into());
    a.start_time_us = Some(a.submit_time_us);
    a.array_pending = Some("2-4,7%2".into());
    let line = |j: &JobInfo| {
        squeue(
            std::slice::from_ref(j),
            "%i|%A|%F|%K|%t|%M|%R",
            true,
            true,
            10,
        )
    };
    assert_eq!(
        line(&a),
        "42_[2-4,7%2]|42|42|2-4,7%2|PD|0:00|(JobArrayTaskLimit)\n"
    );
    let tasks = array_tasks(&a, 100);
    let ids: Vec<u32> = tasks
        .iter()
        .filter_map(|t| t.array_task.map(|(_, i)| i))
        .collect();
    assert_eq!(ids, [2, 3, 4, 7]);
    assert_eq!(
        line(&tasks[0]),
        "42_2|42|42|2|PD|0:00|(JobArrayTaskLimit)\n"
    );
    assert_eq!(array_tasks(&a, 2).len(), 2, "bounded");
    // Unthrottled, its tasks wait for resources; all started: the record is itself.
    a.array_pending = Some("5".into());
    assert_eq!(shown_reason(&a), "Resources");
    a.array_pending = Some(String::new());
    assert_eq!(shown_state(&a), JobState::Running);
    assert!(array_tasks(&a, 100).is_empty());
    // A task started is its own job: `%A` its id, `%F` its array's.
    let mut t = full_job();
    t.id = bulkhead_proto::JobId(44);
    t.array_task = Some((bulkhead_proto::JobId(42), 0));
    assert_eq!(
        squeue(std::slice::from_ref(&t), "%i %A %F %K", true, true, 0),
        "42_0 44 42 0\n"
    );
}

/// A running job ends, as squeue's `%e` and scontrol's `EndTime` show it, at its
/// start plus its limit (real squeue: started 08:36:14 with 1:30:00, `%e`
/// 10:06:14); a job without a limit has no end yet; an ended job its end.
#[test]
fn the_end_time_of_a_running_job_is_its_start_and_limit() {
    let mut j = full_job();
    j.state = JobState::Running;
    j.start_time_us = Some(1_000_000_000);
    j.resources.time_limit_s = Some(5400);
    assert_eq!(end_time_us(&j), Some(1_000_000_000 + 5_400_000_000));
    j.resources.time_limit_s = None;
    assert_eq!(end_time_us(&j), None);
    j.state = JobState::Completed;
    j.end_time_us = Some(7);
    assert_eq!(end_time_us(&j), Some(7));
}

/// `print_date()`'s layout.
#[test]
fn the_date_line_is_ctimes_without_its_newline() {
    let d = date_line(0);
    let parts: Vec<&str> = d.split(' ').collect();
    assert_eq!(parts.len(), 5, "{d}");
    assert!(["Wed", "Thu"].contains(&parts[0]), "{d}");
    assert_eq!(parts[2].len(), 2, "{d}");
    assert_eq!(parts[3].len(), 8, "{d}");
}

/// escaped and cut by characters; the last field padded as the others (real squeue
/// 22.05 ends such a line in blanks).
#[test]
fn a_lines_fields_are_cut_and_padded_in_place() {
    let mut j = full_job();
    j.name = "tr\tain\u{e9}".into();
    let out = squeue(
        std::slice::from_ref(&j),
        "%.40i|%5u|%.2P|%j|%.12j|%3t|%.5D|%6a",
        true,
        true,
        0,
    );
    let shown = "tr\\tain\u{e9}";
    let want = format!(
        "{:>40}|ann  |gp|{shown}|{shown:>12}|PD |    1|lab   \n",
        j.id.0
    );
    assert_eq!(out, want);
}

#[test]
fn format_names_become_the_letters_they_stand_for() {
    assert_eq!(
        format_from_names("jobid,state:10,name:.30|"),
        ("%20A%10T%.30j|".to_string(), vec![])
    );
    assert_eq!(
        format_from_names("UserName,timelimit"),
        ("%20u%20l".to_string(), vec![])
    );
    // An unknown name is named, and only its suffix is printed where it would be.
    assert_eq!(
        format_from_names("jobid:8,frobnicate:.5|,state"),
        ("%8A|%20T".to_string(), vec!["frobnicate".to_string()])
    );
    // squeue -s's names: the step fields.
    assert_eq!(
        crate::slurm_fields::step_format_from_names("stepid:12,stepstate,numtasks:.5,state"),
        (
            "%12i%20\u{E10A}%.5\u{E102}".to_string(),
            vec!["state".to_string()]
        )
    );
}

/// A job's command (its script as sbatch found it, then its arguments) and its
/// restarts, as scontrol, squeue's `%o` and `-O` names show them; `(null)` for a job
/// without a script path.
#[test]
fn the_command_and_restarts_are_shown_as_slurm_shows_them() {
    let mut j = full_job();
    j.extra.script_path = Some("/home/ann/train.sh".into());
    j.args = vec!["--lr".into(), "0.1".into()];
    j.restarts = 2;
    let out = scontrol_job(&j, 0);
    assert!(
        out.contains("\n   Command=/home/ann/train.sh --lr 0.1\n"),
        "{out}"
    );
    assert!(out.contains(" Restarts=2 "), "{out}");
    let fields = |spec: &str, j: &JobInfo| {
        let fmt = format_from_names(spec).0;
        parse_format(&fmt)
            .iter()
            .filter_map(|p| match p {
                Piece::Field { kind, .. } => Some(squeue_field(j, *kind, 0)),
                Piece::Text(_) => None,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        fields("command,restartcnt,requeue,stdin", &j),
        vec![
            "/home/ann/train.sh --lr 0.1".to_string(),
            "2".into(),
            "1".into(),
            "/dev/null".into()
        ]
    );
    j.extra.script_path = None;
    assert!(scontrol_job(&j, 0).contains("\n   Command=(null)\n"));
    assert_eq!(fields("command", &j), vec!["(null)".to_string()]);
}

/// `scontrol show hostlist` keeps the names' order, as `hostlist_create` does: a
/// name extends the range before it only when it follows it; neighbouring ranges of
/// one prefix share brackets, zero-padding kept.
#[test]
fn unsorted_hostlists_keep_their_order() {
    assert_eq!(
        hostlist_unsorted(&["n3", "n1", "n2", "gpu1", "n4"]),
        "n[3,1-2],gpu1,n4"
    );
    assert_eq!(
        hostlist_unsorted(&["gpu01", "gpu02", "gpu03"]),
        "gpu[01-03]"
    );
    assert_eq!(hostlist_unsorted(&["login", "n7"]), "login,n7");
    assert_eq!(hostlist_unsorted(&["n9", "n10"]), "n[9-10]");
    assert_eq!(hostlist_unsorted(&["n09", "n10"]), "n[09-10]");
    assert_eq!(hostlist_unsorted(&[]), "");
}

/// `SLURM_TIME_FORMAT` as `slurm_make_time_str` reads it, and `relative`'s forms by
/// the distance in days.
#[test]
fn slurm_time_format_is_read_as_slurm_reads_it() {
    assert!(matches!(
        TimeFormat::parse(None),
        (TimeFormat::Standard, None)
    ));
    assert!(matches!(
        TimeFormat::parse(Some("standard")),
        (TimeFormat::Standard, None)
    ));
    assert!(matches!(
        TimeFormat::parse(Some("relative")),
        (TimeFormat::Relative, None)
    ));
    assert!(matches!(
        TimeFormat::parse(Some("%s")),
        (TimeFormat::Custom(_), None)
    ));
    let (f, why) = TimeFormat::parse(Some("seconds"));
    assert!(matches!(f, TimeFormat::Standard));
    assert_eq!(
        why.as_deref(),
        Some("invalid SLURM_TIME_FORMAT = 'seconds'")
    );
    assert!(
        TimeFormat::parse(Some(&"%Y".repeat(16))).1.is_some(),
        "32 bytes"
    );
    // SAFETY: zeroed is a valid `tm`.
    let day = |year: i32, yday: i32| {
        let mut t: libc::tm = unsafe { std::mem::zeroed() };
        t.tm_year = year - 1900;
        t.tm_yday = yday;
        t
    };
    let now = day(2026, 339);
    let form = |t: libc::tm| relative_format(&t, Some(&now)).to_str().unwrap_or("");
    assert_eq!(form(day(2026, 339)), "%H:%M:%S");
    assert_eq!(form(day(2026, 338)), "Ystday %H:%M");
    assert_eq!(form(day(2026, 340)), "Tomorr %H:%M");
    assert_eq!(form(day(2026, 343)), "%a %H:%M");
    assert_eq!(form(day(2026, 300)), "%-d %b %H:%M");
    assert_eq!(form(day(2028, 10)), "%-d %b %Y");
}

#[test]
fn hostlists_compress_as_slurm_writes_them() {
    assert_eq!(hostlist(&["n1", "n2", "n3", "n5"]), "n[1-3,5]");
    // Widths as Slurm's `_width_equiv` takes them: unpadded numbers of any width
    // share a range, padded ones only with their width.
    assert_eq!(hostlist(&["n10", "n9", "n11"]), "n[9-11]");
    assert_eq!(hostlist(&["n9", "n010"]), "n[9,010]");
    assert_eq!(hostlist(&["n1"]), "n1");
    assert_eq!(hostlist(&["gpu01", "gpu02", "login"]), "gpu[01-02],login");
    assert_eq!(hostlist(&[]), "");
}

#[test]
fn times_are_spelt_as_squeue_spells_them() {
    assert_eq!(elapsed(0), "0:00");
    assert_eq!(elapsed(65), "1:05");
    assert_eq!(elapsed(3_725), "1:02:05");
    assert_eq!(elapsed(90_061), "1-01:01:01");
    assert_eq!(elapsed(59), "0:59");
    assert_eq!(elapsed(3_600), "1:00:00");
    assert_eq!(elapsed(86_400), "1-00:00:00");
    assert_eq!(elapsed(100 * 86_400 + 36_005), "100-10:00:05");
    assert_eq!(limit(None), "UNLIMITED");
}

#[test]
fn formats_parse_with_widths_and_justification() {
    assert_eq!(
        parse_format("%.18i %j%%"),
        vec![
            Piece::Field {
                right: true,
                width: Some(18),
                kind: 'i'
            },
            Piece::Text(" ".into()),
            Piece::Field {
                right: false,
                width: None,
                kind: 'j'
            },
            Piece::Text("%".into()),
        ]
    );
    let mut s = String::new();
    cell(&mut s, "abcdefghij", true, Some(8));
    assert_eq!(s, "abcdefgh");
    s.clear();
    cell(&mut s, "ab", true, Some(4));
    assert_eq!(s, "  ab");
}

/// An ended job's reason as slurmctld leaves it (`_job_complete`), one word whatever
/// Bulkhead's own account of the end says: a non-zero exit `NonZeroExitCode`, a signal
/// `JobLaunchFailure`, and so on; squeue's `%r`, `%R` and scontrol's `Reason=` alike.
#[test]
fn an_ended_jobs_reason_is_the_one_slurmctld_leaves() {
    let mut j = full_job();
    j.node = None;
    j.reason = Some("cancelled by bhtest1".into());
    let cases: [(JobState, Option<i32>, Option<i32>, &str); 9] = [
        (JobState::Completed, Some(0), None, "None"),
        (JobState::Cancelled, None, None, "None"),
        (JobState::Failed, Some(3), None, "NonZeroExitCode"),
        (JobState::Failed, None, Some(9), "JobLaunchFailure"),
        (JobState::Failed, None, None, "JobLaunchFailure"),
        (JobState::Timeout, None, Some(15), "TimeLimit"),
        (JobState::OutOfMemory, None, Some(9), "OutOfMemory"),
        (JobState::NodeFail, None, None, "NodeDown"),
        (JobState::Deadline, None, None, "DeadLine"),
    ];
    for (state, code, signal, want) in cases {
        j.state = state;
        j.exit_code = code;
        j.signal = signal;
        assert_eq!(shown_reason(&j), want, "{state:?}");
        // `%R`: the reason of one ended by a limit or a failure; the nodes (none
        // here) of one completed, cancelled or whose node failed, as squeue's.
        let listed = if matches!(
            state,
            JobState::Completed | JobState::Cancelled | JobState::NodeFail
        ) {
            String::new()
        } else {
            format!("({want})")
        };
        assert_eq!(
            squeue(std::slice::from_ref(&j), "%t %r %R", true, true, 0),
            format!("{} {want} {listed}\n", state.short()),
            "{state:?}"
        );
    }
    // Waiting, its reason is its own.
    j.state = JobState::Pending;
    j.reason = Some("Dependency".into());
    assert_eq!(shown_reason(&j), "Dependency");
}

/// squeue's `-O` fields that no letter stands for, as squeue 22.05's `print.c` writes
/// them: what sbatch asked (counts, GPU options, deadline, minimum time), the times
/// of a job's life, and what Slurm prints for the things Bulkhead has none of.
#[test]
fn long_fields_print_as_squeue_prints_them() {
    let mut j = full_job();
    j.extra.counts = Some(bulkhead_proto::job::TaskCounts {
        ntasks: 4,
        cpus_per_task: 2,
        ntasks_per_node: 2,
        min_cpus: 8,
        nodes_max: 3,
        ntasks_per_core: 1,
        ..Default::default()
    });
    j.extra.tres = Some(bulkhead_proto::job::TresAsks {
        per_task: "gres:gpu:1".into(),
        cpus_per_gpu: 3,
        ..Default::default()
    });
    j.extra.time_min_s = Some(5400);
    let fields = |spec: &str, j: &JobInfo, now_us: u64| {
        let fmt = format_from_names(spec).0;
        parse_format(&fmt)
            .iter()
            .filter_map(|p| match p {
                Piece::Field { kind, .. } => Some(squeue_field(j, *kind, now_us)),
                Piece::Text(_) => None,
            })
            .collect::<Vec<_>>()
            .join("|")
    };
    let now = j.submit_time_us + 75_000_000;
    assert_eq!(
        fields(
            "cpuspertask,cpus-per-task,ntpernode,ntpercore,ntpersocket,ntperboard,maxnodes,mintime",
            &j,
            now
        ),
        "2|2|2|1|N/A|0|3|1:30:00"
    );
    assert_eq!(
        fields(
            "cpus-per-tres,mem-per-tres,tres-per-task,tres-per-job,tres-per-node,tres-bind",
            &j,
            now
        ),
        "gres:gpu:3|N/A|gres:gpu:1|N/A|N/A|N/A"
    );
    // A waiting job: pending since it came, eligible then, no deadline.
    assert_eq!(
        fields("pendingtime,deadline,preempttime,resizetime", &j, now),
        "75|N/A|N/A|N/A"
    );
    assert_eq!(
        fields("eligibletime,accruetime", &j, now),
        format!("{t}|{t}", t = local_time(Some(j.submit_time_us)))
    );
    j.extra.hold = true;
    assert_eq!(fields("eligibletime", &j, now), "N/A");
    // Started 30 s after it came: pending 30 s, whatever the time now.
    j.state = JobState::Running;
    j.start_time_us = Some(j.submit_time_us + 30_000_000);
    assert_eq!(fields("pendingtime", &j, now + 3_600_000_000), "30");
    assert_eq!(
        fields(
            "cluster,batchflag,associd,hetjobid,packjoboffset,origin,siblingsviableraw,\
             burstbuffer,container,mcslabel,profile,reboot,boardspernode,derivedec",
            &j,
            now
        ),
        format!(
            "{}|1|0|N/A|N/A|NA|NA|(null)|(null)|(null)|NotSet|0|0|0",
            crate::opts::CLUSTER_NAME
        )
    );
    // The header line names them as squeue does, its own misspelling kept.
    let fmt = format_from_names("tres,mintime,siblingsviableraw").0;
    let heads: Vec<_> = parse_format(&fmt)
        .iter()
        .filter_map(|p| match p {
            Piece::Field { kind, .. } => Some(header(*kind)),
            Piece::Text(_) => None,
        })
        .collect();
    assert_eq!(heads, ["TRES_ALLOC", "TIME_MIN", "VIALBLE_SIBLINGS_RAW"]);
    // `%b` and `tres-per-node`: the GPUs a node as slurmctld keeps them.
    j.extra.tres = None;
    j.resources.gpus = 2;
    assert_eq!(
        fields("gres,tres-per-node", &j, now),
        "gres:gpu:2|gres:gpu:2"
    );
}

/// An array whose first tasks run and whose other indices wait: its own line is
/// waiting, with no start or end and its whole time left, as real squeue 22.05 lists
/// `23_[3-4%2]` beside its running tasks.
#[test]
fn an_arrays_waiting_indices_have_no_start_end_or_time_used() {
    let mut j = full_job();
    j.state = JobState::Running;
    j.start_time_us = Some(j.submit_time_us);
    j.array_pending = Some("3-4%2".into());
    j.resources.time_limit_s = Some(300);
    let now = j.submit_time_us + 4_000_000;
    let got: Vec<String> = "tSeLM".chars().map(|c| squeue_field(&j, c, now)).collect();
    assert_eq!(got, ["PD", "N/A", "N/A", "5:00", "0:00"]);
}

/// An array's record is listed while some index waits, and never once none does (all
/// made into tasks, or the array ended): real squeue lists only the tasks then.
#[test]
fn a_spent_array_record_is_not_listed() {
    let mut j = full_job();
    j.array_pending = Some("3-4%2".into());
    assert!(!spent_array_record(&j));
    j.array_pending = Some("%2".into());
    assert!(spent_array_record(&j));
    j.array_pending = Some(String::new());
    assert!(spent_array_record(&j));
    j.array_pending = Some("3".into());
    j.state = JobState::Completed;
    assert!(spent_array_record(&j), "an ended array");
    j.array_pending = None;
    assert!(!spent_array_record(&j), "not an array");
    j.array_task = Some((j.id, 1));
    j.array_pending = Some("%2".into());
    assert!(!spent_array_record(&j), "a task");
}

/// `scontrol show job A_T`: the task's own record, else the array's waiting record
/// shown as that index; an index neither made nor waiting is none.
#[test]
fn a_task_is_its_record_or_the_arrays_waiting_one() {
    use bulkhead_proto::JobId;
    let array = JobId(50);
    let mut record = full_job();
    record.id = array;
    record.array_pending = Some("3-4%2".into());
    let mut task = record.clone();
    task.id = JobId(51);
    task.array_task = Some((array, 1));
    task.array_pending = None;
    let all = vec![record, task];
    assert_eq!(
        array_task_record(all.clone(), array, 1).map(|j| j.id),
        Some(JobId(51))
    );
    let waiting = array_task_record(all.clone(), array, 4).expect("index 4 waits");
    assert_eq!(
        (waiting.id, waiting.array_pending.as_deref()),
        (array, Some("4%2"))
    );
    assert!(array_task_record(all, array, 7).is_none());
}

/// An interactive allocation (salloc's, srun's outside a job) is not a batch job:
/// `BatchFlag=0` in scontrol, squeue's `batchflag` and `--json`'s `batch_flag`.
#[test]
fn an_allocation_has_no_batch_flag() {
    let mut j = full_job();
    let flags = |j: &JobInfo| {
        let fmt = format_from_names("batchflag").0;
        let squeued = parse_format(&fmt)
            .iter()
            .filter_map(|p| match p {
                Piece::Field { kind, .. } => Some(squeue_field(j, *kind, 0)),
                Piece::Text(_) => None,
            })
            .collect::<String>();
        (
            scontrol_job(j, 0).contains(" BatchFlag=1 "),
            squeued,
            crate::slurm_json::job(j, "g")["batch_flag"].clone(),
        )
    };
    assert_eq!(flags(&j), (true, "1".into(), serde_json::json!(true)));
    j.shown.as_mut().expect("shown").interactive = true;
    assert_eq!(flags(&j), (false, "0".into(), serde_json::json!(false)));
}

/// The task of an array's last index is shown under the array's id, as slurmctld's
/// last task is the array's own record: `%A` and `JobId=` say the array's, `%i` and
/// `ArrayTaskId` the task's; another task keeps its own id.
#[test]
fn an_arrays_last_task_shows_the_arrays_id() {
    let mut j = full_job();
    j.id = bulkhead_proto::JobId(43);
    j.array_task = Some((bulkhead_proto::JobId(40), 3));
    j.array_last = true;
    assert_eq!(squeue_field(&j, 'A', 0), "40");
    assert_eq!(squeue_field(&j, 'i', 0), "40_3");
    assert_eq!(squeue_field(&j, 'F', 0), "40");
    assert!(
        crate::slurm_show::scontrol_job(&j, 0).starts_with("JobId=40 ArrayJobId=40 ArrayTaskId=3 "),
        "{}",
        crate::slurm_show::scontrol_job(&j, 0)
    );
    j.array_last = false;
    assert_eq!(squeue_field(&j, 'A', 0), "43");
    assert!(crate::slurm_show::scontrol_job(&j, 0).starts_with("JobId=43 ArrayJobId=40 "));
}
