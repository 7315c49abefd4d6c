use super::*;

fn cli(args: &[&str]) -> SubmitOpts {
    parse_words(args).expect("parse")
}

#[test]
fn the_task_layout_follows_sbatchs_options() {
    let r = cli(&["-N", "2", "--ntasks-per-node", "3", "-c", "2"])
        .resolve()
        .expect("resolve");
    assert_eq!(r.resources.nodes, 2);
    assert_eq!(r.resources.cpus, 6, "3 tasks of 2 CPUs on each node");
    let env: std::collections::HashMap<String, String> = r.layout.env().into_iter().collect();
    assert_eq!(env["SLURM_NTASKS"], "6");
    assert_eq!(env["SLURM_NTASKS_PER_NODE"], "3");
    assert_eq!(env["SLURM_CPUS_PER_TASK"], "2");
    assert_eq!(env["SLURM_TASKS_PER_NODE"], "3(x2)");
    // --ntasks with --ntasks-per-node and no --nodes: the nodes they need.
    let r = cli(&["-n", "5", "--ntasks-per-node", "2"])
        .resolve()
        .expect("resolve");
    assert_eq!(r.resources.nodes, 3);
    assert_eq!(r.layout.tasks_per_node, vec![2, 2, 1]);
    // Nothing asked: one task, no SLURM_NTASKS (as sbatch), the layout still said.
    let env: std::collections::HashMap<String, String> = cli(&[])
        .resolve()
        .expect("resolve")
        .layout
        .env()
        .into_iter()
        .collect();
    assert!(!env.contains_key("SLURM_NTASKS"));
    assert_eq!(env["SLURM_TASKS_PER_NODE"], "1");
    assert!(
        cli(&["-n", "5", "-N", "1", "--ntasks-per-node", "2"])
            .resolve()
            .is_err(),
        "5 tasks do not fit 2 per node on 1 node"
    );
    // --ntasks-per-node makes the tasks on the nodes known before the GPU options
    // (sbatch's `_opt_verify`): the second node --gpus-per-node adds brings no task,
    // and each node has the CPUs of the tasks laid out on it (`pn_min_cpus`).
    let r = cli(&[
        "--ntasks-per-node=2",
        "-c",
        "8",
        "--gpus=2",
        "--gpus-per-node=1",
    ])
    .resolve()
    .expect("resolve");
    assert_eq!(
        (r.resources.nodes, r.layout.ntasks, r.resources.cpus),
        (2, Some(2), 16)
    );
    let r = cli(&["-N", "2", "-n", "2", "--ntasks-per-node=2", "-c", "3"])
        .resolve()
        .expect("resolve");
    assert_eq!((r.layout.ntasks, r.resources.cpus), (Some(2), 6));
    // --ntasks-per-core and --ntasks-per-socket: read as parse_int reads them, kept
    // in 16 bits as slurmctld keeps them, shown only.
    let r = cli(&["--ntasks-per-core=2", "--ntasks-per-socket", " +3"])
        .resolve()
        .expect("resolve");
    assert_eq!((r.ntasks_per_core, r.ntasks_per_socket), (2, 3));
    assert_eq!(
        cli(&["--ntasks-per-core=65537"])
            .resolve()
            .expect("resolve")
            .ntasks_per_core,
        1
    );
    for bad in ["0", "2x", "-1", ""] {
        let e = cli(&["--ntasks-per-core", bad]).resolve().expect_err(bad);
        assert_eq!(e.exit_code(), 1, "{bad}: {e}");
    }
    // One task: no tasks laid out beside it (slurmctld: `num_tasks > 1`).
    let r = cli(&["-n", "1", "--ntasks-per-node=4", "-c", "2"])
        .resolve()
        .expect("resolve");
    assert_eq!(r.resources.cpus, 2);
}

#[test]
fn times_parse_in_every_slurm_form() {
    assert_eq!(parse_time("30"), Ok(Some(1800)));
    assert_eq!(parse_time("1:30"), Ok(Some(90)));
    assert_eq!(parse_time("25:00:00"), Ok(Some(90000)));
    assert_eq!(parse_time("1-12"), Ok(Some(129_600)));
    assert_eq!(parse_time("1-12:30"), Ok(Some(131_400)));
    assert_eq!(parse_time("1-12:30:05"), Ok(Some(131_405)));
    assert_eq!(parse_time("UNLIMITED"), Ok(None));
    assert_eq!(parse_time("infinite"), Ok(None));
    assert_eq!(parse_time("0"), Ok(None));
    // `time_str2secs` takes -1 as INFINITE (any other negative is refused).
    assert_eq!(parse_time("-1"), Ok(None));
    for bad in ["abc", "1-2-3-4", "1:2:3:4", "", "-5", "1:x", "-2"] {
        assert!(parse_time(bad).is_err(), "{bad} parsed");
    }
    assert_eq!(format_time(Some(90000)), "1-01:00:00");
    assert_eq!(format_time(Some(90)), "00:01:30");
    assert_eq!(format_time(None), "UNLIMITED");
}

#[test]
fn time_limits_are_capped_where_slurm_stops() {
    // The largest, in every form that reaches it.
    for max in [
        "24855-03:13:08",
        "596523:13:08",
        "35791393:08",
        "0-596523:13:08",
    ] {
        assert_eq!(parse_time(max), Ok(Some(MAX_TIME_LIMIT_S)), "{max}");
    }
    assert_eq!(parse_time("35791393"), Ok(Some(35_791_393 * 60)));
    assert_eq!(format_time(Some(MAX_TIME_LIMIT_S)), "24855-03:13:08");
    // One second more, the reviewer's values, and values that overflow u64 in
    // any part or in the sum.
    for over in [
        "24855-03:13:09",
        "35791394",
        "107000000000000-0",
        "99999999999999",
        "18446744073709551615",
        "99999999999999999999",
        "0-0:0:18446744073709551615",
        "307445734561825860-0",
    ] {
        let e = parse_time(over).expect_err(over);
        assert!(
            e.contains("longer than the maximum, 24855-03:13:08"),
            "{over}: {e}"
        );
    }
    let e = cli(&["-t", "107000000000000-0"]).resolve().unwrap_err();
    assert!(matches!(&e, OptsError::Value { opt: "time", .. }), "{e:?}");
    // sbatch says slurm_opt.c's words; bh what was wrong with the value.
    assert_eq!(
        e.slurm_message().as_deref(),
        Some("Invalid --time specification")
    );
    assert!(e.to_string().starts_with("invalid --time value "), "{e}");
}

#[test]
fn control_characters_in_any_label_are_refused_naming_the_option() {
    for (args, opt) in [
        (&["-J", "x\nUserId=root(0)"][..], "--job-name"),
        (&["--comment", "c\u{1b}]0;t\u{7}"][..], "--comment"),
        (&["-o", "/tmp/o\u{1b}[2J"][..], "--output"),
        (&["-e", "e\r"][..], "--error"),
        (&["-D", "/tmp/\u{9b}31m"][..], "--chdir"),
        (&["-p", "batch\u{7f}"][..], "--partition"),
        (&["--qos", "q\0"][..], "--qos"),
        (&["--reservation", "r\t"][..], "--reservation"),
        (&["-d", "afterok:1\n"][..], "--dependency"),
    ] {
        let e = cli(args).resolve().expect_err(opt).to_string();
        assert!(e.starts_with(&format!("invalid {opt} value")), "{e}");
        assert!(e.contains("control character"), "{e}");
        assert!(!e.chars().any(bulkhead_proto::limits::is_control), "{e:?}");
    }
    // In a directive too.
    let o = script_opts("#!/bin/sh\n#SBATCH -J a\u{1b}b\n").expect("directives");
    assert!(o.resolve().is_err());
    // Environment values are data.
    assert!(cli(&["--export", "A=x\ny"]).resolve().is_ok());
}

/// Every option `bh submit --help` shows has a description and is accepted with a
/// sample value; every option of sbatch's that it hides is accepted with a warning
/// naming its reason, or refused by name with one.
#[test]
fn the_help_lists_what_works_and_the_rest_is_warned_or_refused() {
    let sample = |long: &str| -> Option<Vec<&'static str>> {
        Some(match long {
            "ntasks" | "ntasks-per-node" | "cpus-per-task" | "cpus" | "nodes" | "gpus"
            | "gpus-per-node" => vec!["1"],
            "mem" | "mem-per-cpu" => vec!["1G"],
            "time" | "time-min" => vec!["10"],
            "partition" | "job-name" | "qos" | "reservation" | "comment" | "account" => {
                vec!["x"]
            }
            "output" | "error" => vec!["o-%j"],
            "chdir" => vec!["/tmp"],
            "export" => vec!["ALL"],
            "gres" => vec!["gpu:1"],
            "dependency" => vec!["afterok:1?afternotok:2"],
            "array" => vec!["0-3"],
            "wrap" => vec!["true"],
            "begin" => vec!["now+1hour"],
            "gpus-per-task" => vec!["1", "-n", "2"],
            "ntasks-per-gpu" => vec!["2", "--gpus=2"],
            "mem-per-gpu" => vec!["1G", "--gpus=1"],
            "cpus-per-gpu" => vec!["2", "--gpus=1"],
            "kill-on-invalid-dep" => vec!["yes"],
            "nodelist" | "exclude" => vec!["n[1-2]"],
            "mincpus" => vec!["4"],
            "deadline" => vec!["now+2hours"],
            "input" => vec!["in-%j"],
            "nodefile" => vec!["/etc/hostname"],
            "signal" => vec!["B:USR1@90"],
            "priority" => vec!["TOP"],
            _ => return None,
        })
    };
    let mut cmd = command();
    cmd.build();
    let help = SubmitOpts::command().render_long_help().to_string();
    let mut shown = 0;
    for a in cmd.get_arguments() {
        let long = a.get_long().expect("every option has a long name");
        let flag = format!("--{long}");
        let takes = a.get_num_args().is_some_and(|n| n.min_values() > 0);
        if a.is_hide_set() {
            assert!(!help.contains(&flag), "{flag} is hidden but in the help");
            let words = if takes {
                // Values sbatch checks even where the option has no effect.
                let v = match long {
                    "mail-type" => "END",
                    "open-mode" => "append",
                    _ => "1",
                };
                vec![format!("{flag}={v}")]
            } else {
                vec![flag.clone()]
            };
            let o = parse_words(&words).expect("parses");
            match o.resolve() {
                Err(OptsError::Unsupported(name, why)) => {
                    assert_eq!(name, long);
                    assert!(!why.is_empty(), "{flag} refused without a reason");
                }
                Ok(r) => assert!(
                    r.warnings
                        .iter()
                        .any(|w| w.starts_with(&format!("{flag} has no effect here: "))),
                    "{flag} is hidden but neither refused nor warned: {:?}",
                    r.warnings
                ),
                Err(e) => panic!("{flag}: {e}"),
            }
            continue;
        }
        assert!(help.contains(&flag), "{flag} is missing from the help");
        assert!(
            a.get_long_help().or(a.get_help()).is_some(),
            "{flag} has no description"
        );
        let mut words = vec![flag.clone()];
        if takes {
            let v = sample(long).unwrap_or_else(|| panic!("no sample value for {flag}"));
            words[0] = format!("{flag}={}", v[0]);
            words.extend(v[1..].iter().map(|w| w.to_string()));
        }
        let o = parse_words(&words).unwrap_or_else(|e| panic!("{flag}: {e}"));
        assert!(o.resolve().is_ok(), "{words:?}: {:?}", o.resolve());
        shown += 1;
    }
    assert!(shown >= 35, "{shown} options shown");
    assert!(!help.to_lowercase().contains("not implement"), "{help}");
}

/// What the new options ask of the job, as Slurm reads them.
#[test]
fn begin_nice_hold_and_friends_reach_the_submission() {
    let r = cli(&[
        "--begin=now+1hour",
        "--nice=5",
        "-H",
        "--comment=c",
        "--requeue",
    ])
    .resolve()
    .expect("resolves");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_micros() as u64;
    let b = r.extra.begin_us.expect("begin");
    assert!(
        b > now + 3_500_000_000 && b < now + 3_700_000_000,
        "{b} vs {now}"
    );
    assert_eq!(
        (
            r.extra.nice,
            r.extra.hold,
            r.extra.comment.as_deref(),
            r.extra.requeue
        ),
        (5, true, Some("c"), Some(true))
    );
    assert_eq!(cli(&["--nice"]).resolve().expect("nice").extra.nice, 100);
    // Read as strtoll reads it: no number is 0, a number's tail ignored.
    assert_eq!(cli(&["--nice=x"]).resolve().expect("nice").extra.nice, 0);
    assert_eq!(cli(&["--nice=-7z"]).resolve().expect("nice").extra.nice, -7);
    assert_eq!(
        cli(&["--nice=2147483647"])
            .resolve()
            .expect_err("range")
            .exit_code(),
        255
    );
    // Dependencies: a bare id is afterany; one `?` makes all any-of; repeats once.
    let r = cli(&["-d", "afterok:6?AFTEROK:6,5"])
        .resolve()
        .expect("deps");
    assert_eq!(
        (r.deps, r.extra.deps_any),
        (
            vec![
                Dependency::AfterOk(JobId(6)),
                Dependency::AfterAny(JobId(5))
            ],
            true
        )
    );
    // Bare ids are the old form only where no `:` follows: slurmctld reads
    // `5,afterok:6` and `5:6` as a type it does not know.
    for v in [
        "5,afterok:6",
        "5:6",
        "afterok:6x",
        "afterok:0",
        "afterok:6+0",
    ] {
        assert!(cli(&["-d", v]).resolve().is_err(), "{v}");
    }
    // +MINUTES is waited by `after`, kept and shown for the others.
    let r = cli(&["-d", "afterok:6+5,after:7+2"])
        .resolve()
        .expect("delays");
    assert_eq!(
        r.deps,
        vec![
            Dependency::Delayed(bulkhead_proto::job::DepKind::AfterOk, JobId(6), 5),
            Dependency::AfterDelay(JobId(7), 2)
        ]
    );
    assert!(cli(&["-d", ""]).resolve().expect("none").deps.is_empty());
    // afterburstbuffer (no burst buffers here: as afterany, named as given); expand is
    // refused by name.
    let r = cli(&["-d", "AfterBurstBuffer:6:7_2"])
        .resolve()
        .expect("afterburstbuffer");
    assert_eq!(
        r.deps,
        vec![
            Dependency::AfterBurstBuffer(JobId(6)),
            Dependency::Task(bulkhead_proto::job::DepKind::AfterBurstBuffer, JobId(7), 2)
        ]
    );
    assert!(matches!(
        cli(&["-d", "expand:6"]).resolve(),
        Err(OptsError::Unsupported("dependency type expand", _))
    ));
    // Seconds round up to whole minutes.
    assert_eq!(
        cli(&["-t", "1:30"])
            .resolve()
            .expect("t")
            .resources
            .time_limit_s,
        Some(120)
    );
    // bh's own commands keep the seconds.
    let mut o = cli(&["-t", "1:30"]);
    o.bh_defaults = true;
    assert_eq!(o.resolve().expect("t").resources.time_limit_s, Some(90));
    // Abbreviated long options, as getopt_long takes them.
    let r = cli(&["--part=debug", "--job-n=x", "--ntasks-per-n=2"])
        .resolve()
        .expect("abbrev");
    assert_eq!(r.resources.partition.as_deref(), Some("debug"));
    assert_eq!(r.name.as_deref(), Some("x"));
    assert_eq!(r.layout.ntasks_per_node, Some(2));
    assert!(
        parse_words(["--gpus-per"]).is_err(),
        "ambiguous: -node or -task"
    );
    // Fewer tasks than nodes: the nodes come down to the tasks, with sbatch's warning.
    let r = cli(&["-N", "4", "-n", "2"]).resolve().expect("n<N");
    assert_eq!(r.resources.nodes, 2);
    assert!(r.warnings.iter().any(|w| w.contains("setting nnodes to 2")));
    // --gpus-per-task needs tasks; GPUs per node follow the tasks on a node.
    assert!(matches!(
        cli(&["--gpus-per-task=1"]).resolve(),
        Err(OptsError::Refused(m)) if m.contains("--gpus-per-task used without")
    ));
    // An exact -N implies a task per node, and --gpus the tasks.
    let r = cli(&["--gpus-per-task=1", "-N", "2"])
        .resolve()
        .expect("-N");
    assert_eq!((r.resources.nodes, r.resources.gpus), (2, 1));
    let r = cli(&["--gpus-per-task=1", "--gpus=2", "-N", "2-4"])
        .resolve()
        .expect("--gpus");
    assert_eq!((r.layout.ntasks, r.nodes_max), (Some(2), Some(2)));
    let r = cli(&["--gpus-per-task=2", "-n", "3"])
        .resolve()
        .expect("gpt");
    assert_eq!(r.resources.gpus, 6);
    let r = cli(&["--gpus=2", "--mem-per-gpu=10G", "--cpus-per-gpu=4"])
        .resolve()
        .expect("per gpu");
    assert_eq!((r.resources.mem_mb, r.resources.cpus), (20_480, 8));
    assert_eq!(
        cli(&["--mem=1G", "--mem-per-gpu=1G", "--gpus=1"]).resolve(),
        Err(OptsError::MemExclusive)
    );
    // --mem=0: all of each node's memory; --exclusive: whole nodes (or =user).
    assert!(cli(&["--mem=0"]).resolve().expect("mem=0").extra.mem_whole);
    use bulkhead_proto::job::Exclusive;
    for (words, want) in [
        (&["--exclusive"][..], Exclusive::Node),
        (&["--exclusive=user"][..], Exclusive::User),
        (&[][..], Exclusive::Shared),
    ] {
        assert_eq!(
            cli(words).resolve().expect("exclusive").extra.exclusive,
            want
        );
    }
    assert!(matches!(
        cli(&["--exclusive=mcs"]).resolve(),
        Err(OptsError::Unsupported("exclusive=mcs", _))
    ));
    assert!(cli(&["--exclusive=bogus"]).resolve().is_err());
    // --kill-on-invalid-dep: either word in any case (Slurm's `xstrcasecmp`).
    for (words, keep) in [
        (&["--kill-on-invalid-dep=no"][..], Some(false)),
        (&["--kill-on-invalid-dep=NO"][..], Some(false)),
        (&["--kill-on-invalid-dep=Yes"][..], Some(true)),
        (&[][..], None),
    ] {
        let r = cli(words).resolve().expect("kill-on-invalid-dep");
        assert_eq!(r.extra.kill_on_invalid_dep, keep, "{words:?}");
    }
    assert!(matches!(
        cli(&["--kill-on-invalid-dep=maybe"]).resolve(),
        Err(OptsError::Value {
            opt: "kill-on-invalid-dep",
            ..
        })
    ));
    // Dependencies: `?` any of, `+MINUTES` after a start.
    assert_eq!(
        parse_dependency_any("afterok:3?afternotok:4"),
        Ok((
            vec![
                Dependency::AfterOk(JobId(3)),
                Dependency::AfterNotOk(JobId(4))
            ],
            true
        ))
    );
    assert_eq!(
        parse_dependency_any("after:7+10:8"),
        Ok((
            vec![
                Dependency::AfterDelay(JobId(7), 10),
                Dependency::After(JobId(8))
            ],
            false
        ))
    );
    assert_eq!(
        parse_dependency_any("afterok:3?afterok:4,afterok:5").map(|(d, any)| (d.len(), any)),
        Ok((3, true)),
        "one `?` makes the whole list any-of"
    );
    // One task of an array, all of them (`_*`: the array's id), corresponding tasks.
    use bulkhead_proto::job::DepKind;
    assert_eq!(
        parse_dependency_any("afterok:3_1:4_*,afternotok:5_0,aftercorr:6"),
        Ok((
            vec![
                Dependency::Task(DepKind::AfterOk, JobId(3), 1),
                Dependency::AfterOk(JobId(4)),
                Dependency::Task(DepKind::AfterNotOk, JobId(5), 0),
                Dependency::AfterCorr(JobId(6)),
            ],
            false
        ))
    );
    for bad in ["afterok:3_x", "afterok:0", "aftercorr:3_1", "after:3_1+5"] {
        assert!(
            matches!(parse_dependency_any(bad), Err(OptsError::Value { .. })),
            "{bad}: {:?}",
            parse_dependency_any(bad)
        );
    }
    assert!(matches!(
        parse_dependency_any("expand:3"),
        Err(OptsError::Unsupported(..))
    ));
}

/// `#PBS` lines are read after every `#SBATCH` line (they win), past the first command,
/// unless --ignore-pbs.
#[test]
fn pbs_directives_are_read_unless_ignored() {
    let script = "#!/bin/sh\n#SBATCH -J a\n#PBS -N b -l walltime=1:00:00\n";
    let o = script_opts(script).expect("reads");
    assert_eq!(o.job_name.as_deref(), Some("b"));
    assert_eq!(o.time.as_deref(), Some("1:00:00"));
    let o = script_opts_with(script, true).expect("reads");
    assert_eq!(
        (o.job_name.as_deref(), o.time.as_deref()),
        (Some("a"), None)
    );
    let o = script_opts("#!/bin/sh\n#PBS -N b\n#SBATCH -J a\n").expect("reads");
    assert_eq!(o.job_name.as_deref(), Some("b"));
    let o =
        script_opts("#!/bin/sh\n#SBATCH -J a\necho hi\n#PBS -N b\n#SBATCH -t 5\n").expect("reads");
    assert_eq!(
        (o.job_name.as_deref(), o.time.as_deref()),
        (Some("b"), None)
    );
}

/// SBATCH_* variables set options beneath the command line, every one of the table
/// naming an option sbatch knows.
#[test]
fn sbatch_variables_set_their_options() {
    let cmd = command();
    for (var, long) in table::SBATCH_ENV {
        assert!(
            cmd.get_arguments().any(|a| a.get_long() == Some(long)),
            "{var} names --{long}, which is not an option"
        );
    }
    let env = |k: &str| match k {
        "SBATCH_TIMELIMIT" => Some("5".to_string()),
        "SBATCH_REQUEUE" => Some(String::new()),
        "SBATCH_EXCLUSIVE" => Some(String::new()),
        "SBATCH_GPUS_PER_TASK" => Some("1".to_string()),
        _ => None,
    };
    let o = env_opts(env).expect("env");
    assert_eq!(o.time.as_deref(), Some("5"));
    assert!(o.requeue);
    assert_eq!(o.exclusive.as_deref(), Some("node"));
    assert_eq!(o.gpus_per_task.as_deref(), Some("1"));
    assert_eq!(
        env_opts(|k| (k == "SBATCH_FOO_UNKNOWN").then(String::new)).expect("unknown"),
        SubmitOpts::default()
    );
    let o = env_opts(|k| (k == "SBATCH_NO_KILL").then(|| "x".to_string())).expect("no-kill");
    assert_eq!(o.ignored, vec!["no-kill"]);
}

#[test]
fn memory_sizes_parse_with_slurm_suffixes() {
    assert_eq!(parse_mem("512"), Ok(512));
    assert_eq!(parse_mem("500K"), Ok(1));
    assert_eq!(parse_mem("2048K"), Ok(2));
    assert_eq!(parse_mem("4GB"), Ok(4096));
    assert_eq!(parse_mem("4g"), Ok(4096));
    assert_eq!(parse_mem("1T"), Ok(1 << 20));
    assert!(parse_mem("12X").is_err());
    assert!(parse_mem("G").is_err());
    assert!(parse_mem("99999999999999999999T").is_err());
}

#[test]
fn words_split_like_a_shell_and_stop_at_comments() {
    assert_eq!(
        split_words(" -J \"two words\" -n 2 # two tasks").expect("split"),
        ["-J", "two words", "-n", "2"]
    );
    assert_eq!(split_words("-t 30 #half").expect("split"), ["-t", "30"]);
    // As sbatch reads them: a `#` within a word ends the line too, a backslash
    // escapes it, quotes keep it, and an empty word ends the line.
    assert_eq!(
        split_words("--export A=1#x -t 5").expect("split"),
        ["--export", "A=1"]
    );
    assert_eq!(split_words("-J x\\#y").expect("split"), ["-J", "x#y"]);
    assert_eq!(
        split_words("-J 'a # b' -t 5").expect("split"),
        ["-J", "a # b", "-t", "5"]
    );
    assert_eq!(split_words("-J \"\" -t 5").expect("split"), ["-J"]);
    assert_eq!(
        split_words("-J \"it\\\"s\"").expect("split"),
        ["-J", "it\"s"]
    );
    assert!(split_words("-J \"open").is_err());
    assert!(split_words(":x").is_err());
}

#[test]
fn directives_stop_at_the_first_command() {
    let s = "#!/bin/bash\n#SBATCH -n 2\n\n   \n# a comment\n  #SBATCH -n 9\n#BH -J named\necho hi\n#SBATCH -t 5\n";
    let o = script_opts(s).expect("directives");
    assert_eq!(o.ntasks.as_deref(), Some("2"));
    assert_eq!(o.job_name.as_deref(), Some("named"));
    assert_eq!(o.time, None);
}

#[test]
fn later_directives_win_and_the_command_line_beats_the_script() {
    let s = "#!/bin/sh\n#SBATCH -J first\n#SBATCH -J second\n#SBATCH --mem=2G\n";
    let script = script_opts(s).expect("script");
    assert_eq!(script.job_name.as_deref(), Some("second"));
    let merged = cli(&["--mem=3G"]).over(&script);
    assert_eq!(merged.resolve().expect("resolve").resources.mem_mb, 3072);
}

#[test]
fn mem_and_mem_per_cpu_exclude_each_other_across_sources() {
    let script =
        script_opts("#!/bin/sh\n#SBATCH --mem-per-cpu=2G\n#SBATCH -n 2\n").expect("script");
    assert_eq!(script.resolve().expect("resolve").resources.mem_mb, 4096);
    assert_eq!(
        cli(&["--mem=6G"]).over(&script).resolve(),
        Err(OptsError::MemExclusive)
    );
}

#[test]
fn bad_directives_and_values_are_refused_with_the_line() {
    match script_opts("#!/bin/sh\n#SBATCH --nice 10\n") {
        Err(OptsError::Directive { line: 2, .. }) => {}
        other => panic!("{other:?}"),
    }
    match script_opts("#!/bin/sh\n#SBATCH --frobnicate\n") {
        Err(OptsError::Directive { line: 2, detail }) => {
            assert!(detail.contains("frobnicate"), "{detail}")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        cli(&["-n", "0"]).resolve(),
        Err(OptsError::Value { opt: "ntasks", .. })
    ));
    assert!(matches!(
        cli(&["-N", "4-2"]).resolve(),
        Err(OptsError::Value { opt: "nodes", .. })
    ));
    match cli(&["--constraint=ib"]).resolve() {
        Err(e @ OptsError::Unsupported("constraint", why)) => {
            assert!(why.contains("features"), "{why}");
            assert!(
                e.to_string().starts_with("--constraint is not supported"),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        parse_array("0-15:4%2"),
        Ok(ArraySpec {
            ranges: vec![(0, 15, 4)],
            throttle: Some(2)
        })
    );
    assert_eq!(parse_array("1,3,5").map(|a| a.count()), Ok(3));
    assert!(parse_array("5-1").is_err());
    // A throttle alone: index 0, as slurmctld reads it (recorded case 1273).
    assert_eq!(
        parse_array("%2"),
        Ok(ArraySpec {
            ranges: vec![(0, 0, 1)],
            throttle: Some(2)
        })
    );
    assert!(parse_array("").is_err());
    // `%0` is no limit, as slurmctld takes it.
    assert_eq!(parse_array("0-9%0").map(|a| a.throttle), Ok(None));
    assert!(parse_array("0-99999999").is_err(), "too many tasks");
    assert_eq!(
        parse_dependency("afterok:12:13,afternotok:14,singleton"),
        Ok(vec![
            Dependency::AfterOk(JobId(12)),
            Dependency::AfterOk(JobId(13)),
            Dependency::AfterNotOk(JobId(14)),
            Dependency::Singleton
        ])
    );
    assert!(parse_dependency("afterok").is_err());
    assert!(parse_dependency("before:3").is_err());
    assert!(parse_dependency("afterok:x").is_err());
}

#[test]
fn gpu_spellings_parse_to_the_same_request() {
    let gpu = |args: &[&str]| {
        let r = cli(args).resolve().expect("resolves").resources;
        (r.gpus, r.gpu_model, r.mig)
    };
    let slice = |n: u32| {
        Some(MigAsk {
            profile: "1g.10gb".into(),
            count: n,
        })
    };
    // Whole GPUs, any model.
    assert_eq!(gpu(&["--gres=gpu:2"]), (2, None, None));
    assert_eq!(gpu(&["--gpus=2"]), gpu(&["--gres=gpu:2"]));
    assert_eq!(gpu(&["-G", "2"]), gpu(&["--gpus-per-node=2"]));
    assert_eq!(gpu(&["--gres=gpu"]), (1, None, None));
    // A model.
    assert_eq!(gpu(&["--gres=gpu:a100:2"]), (2, Some("a100".into()), None));
    assert_eq!(gpu(&["--gpus=a100:2"]), gpu(&["--gres=gpu:a100:2"]));
    assert_eq!(gpu(&["--gpus=h100:4"]), (4, Some("h100".into()), None));
    // A MIG slice.
    assert_eq!(gpu(&["--gres=gpu:1g.10gb:1"]), (0, None, slice(1)));
    assert_eq!(gpu(&["--gpus=1g.10gb:1"]), gpu(&["--gres=gpu:1g.10gb:1"]));
    assert_eq!(gpu(&["--gpus-per-node", "1g.10gb:3"]), (0, None, slice(3)));
    // Whole GPUs and slices together (Slurm's case 125).
    assert_eq!(
        gpu(&["--gres=gpu:a100:1,gpu:1g.10gb:2"]),
        (1, Some("a100".into()), slice(2))
    );
    // --gpus is for the job: spread over its nodes; none is none, as Slurm takes it.
    assert_eq!(gpu(&["-N", "2", "--gpus=8"]), (4, None, None));
    assert_eq!(gpu(&["--gpus=0"]), (0, None, None));
    assert_eq!(gpu(&["--gpus=h100:0"]), (0, None, None));
    assert_eq!(gpu(&["--gres=gpu:0"]), (0, None, None));
    assert_eq!(gpu(&["--gpus="]), (0, None, None));
    // --gpus over a count per node: the job is that many nodes.
    let r = cli(&["--gpus=4", "--gres=gpu:2"]).resolve().expect("4/2");
    assert_eq!((r.resources.nodes, r.resources.gpus), (2, 2));
    // Refused, with the reason.
    for (args, why) in [
        (&["--gres=fpga:1"][..], "unknown generic resource"),
        (&["--gpus=abc"][..], "unknown GPU type"),
        (&["--gres=gpu:a100:1,gpu:h100:1"][..], "one GPU model"),
        (
            &["--gres=gpu:1g.10gb:1,gpu:3g.40gb:1"][..],
            "one MIG profile",
        ),
        (&["-N", "4", "--gpus=2"][..], "--gpus < -N"),
        (
            &["--gpus=2", "--gres=gpu:a100:1"][..],
            "with and without type",
        ),
        (&["--gpus=1", "--gres=gpu:2"][..], "Failed to ensure"),
        // A bare value starting with a digit is a count to Slurm (recorded case 1277).
        (&["--gpus=1g.10gb"][..], "Invalid Trackable RESource"),
        (&["--gpus-per-node=2x"][..], "Invalid Trackable RESource"),
        // Types match with their case (case 1275: Slurm's job never runs).
        (&["--gres=gpu:A100:1"][..], "did you mean \"a100\""),
        (&["--gpus=H100:2"][..], "did you mean \"h100\""),
    ] {
        let e = cli(args).resolve().expect_err(why).to_string();
        assert!(e.contains(why), "{args:?}: {e}");
    }
}

#[test]
fn exports_parse() {
    assert_eq!(parse_export("ALL"), Export::All(vec![]));
    assert_eq!(parse_export("NONE"), Export::Only(vec![]));
    assert_eq!(
        parse_export("A=1,B=two words,C"),
        Export::Only(vec![
            ("A".into(), Some("1".into())),
            ("B".into(), Some("two words".into())),
            ("C".into(), None)
        ])
    );
    assert_eq!(
        parse_export("ALL,X=2"),
        Export::All(vec![("X".into(), "2".into())])
    );
}

/// What the processes get: ALL with its pairs winning; names and pairs alone, with
/// the `SLURM_*` variables only where srun keeps them (`--export=NONE`).
#[test]
fn exported_env_is_all_or_only_what_is_named() {
    let vars = || {
        vec![
            ("A".to_string(), "1".to_string()),
            ("B".to_string(), "2".to_string()),
            ("SLURM_JOB_ID".to_string(), "7".to_string()),
        ]
    };
    let pairs = |e: Vec<(String, String)>| {
        let mut e: Vec<String> = e.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
        e.sort();
        e
    };
    assert_eq!(
        pairs(exported_env(parse_export("ALL,B=x"), vars(), true)),
        ["A=1", "B=x", "SLURM_JOB_ID=7"]
    );
    assert_eq!(
        pairs(exported_env(parse_export("NONE"), vars(), true)),
        ["SLURM_JOB_ID=7"]
    );
    assert_eq!(
        pairs(exported_env(parse_export("B,C=3,D"), vars(), false)),
        ["B=2", "C=3"]
    );
}

fn w(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_script_starts_after_the_options_and_their_values() {
    // Abbreviated and table options take their values as the parser gives them.
    assert_eq!(
        split_at_script(&w(&["--part", "debug", "--mail-user", "me", "job.sh"])).expect("split"),
        4
    );
    assert_eq!(
        split_at_script(&w(&["-n", "2", "job.sh", "-x"])).expect("split"),
        2
    );
    assert_eq!(
        split_at_script(&w(&["--mem=2G", "-Jname", "job.sh"])).expect("split"),
        2
    );
    assert_eq!(
        split_at_script(&w(&["--time", "5", "--nice", "job.sh"])).expect("split"),
        3
    );
    assert_eq!(split_at_script(&w(&["-t", "5"])).expect("split"), 2);
    assert_eq!(split_at_script(&w(&["-"])).expect("split"), 0);
}

#[test]
fn sbatch_sets_its_options_variables() {
    let r = cli(&[
        "--gpus=2",
        "--mem-per-cpu=2G",
        "-d",
        "afterok:5",
        "--export=NONE",
    ])
    .resolve()
    .expect("resolve");
    let get = |k: &str| {
        r.option_env
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(get("SLURM_GPUS"), Some("2"));
    assert_eq!(get("SLURM_MEM_PER_CPU"), Some("2048"));
    assert_eq!(get("SLURM_JOB_DEPENDENCY"), Some("afterok:5"));
    assert_eq!(get("SLURM_EXPORT_ENV"), Some("NONE"));
    assert!(get("SLURM_PRIO_PROCESS").is_some_and(|v| v.parse::<i32>().is_ok()));
    assert_eq!(get("SLURM_GPUS_PER_TASK"), None);
}

/// -w, -x and -F name nodes as host lists; the job has at least as many nodes as it
/// named, and a maximum below them is slurmctld's error. --mincpus raises the CPUs of
/// each node (the tasks' count is what a pending job shows); --deadline without a
/// limit sets a one-minute TimeMin; --input keeps its pattern ("none": /dev/null).
#[test]
fn node_names_mincpus_deadline_and_input_reach_the_submission() {
    let r = cli(&["-w", "n[1-3]", "-x", "m7,m9"])
        .resolve()
        .expect("resolve");
    assert_eq!(r.extra.nodelist, ["n1", "n2", "n3"]);
    assert_eq!(r.extra.exclude, ["m7", "m9"]);
    assert_eq!(r.resources.nodes, 3, "as many nodes as named");
    let r = cli(&["-N", "4", "-w", "n1"]).resolve().expect("resolve");
    assert_eq!(r.resources.nodes, 4, "more nodes than named");
    let r = cli(&["-N", "1-4", "-w", "n[1-2]"])
        .resolve()
        .expect("resolve");
    assert_eq!((r.resources.nodes, r.nodes_max), (2, Some(4)));
    let e = cli(&["-N", "1", "-w", "n[1-2]"])
        .resolve()
        .expect_err("too few");
    assert_eq!(e.to_string(), "Node count specification invalid");
    assert_eq!(e.exit_code(), 1);
    assert!(cli(&["-w", "n[1-"]).resolve().is_err(), "unbalanced");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("hosts");
    std::fs::write(&file, "n1 n2\n# a comment\ngpu[1-2]\n").expect("write");
    for opt in ["-F", "-w"] {
        let r = cli(&[opt, &file.to_string_lossy()])
            .resolve()
            .expect("resolve");
        assert_eq!(r.extra.nodelist, ["n1", "n2", "gpu1", "gpu2"], "{opt}");
    }

    let r = cli(&["-n", "2", "--mincpus", "8"])
        .resolve()
        .expect("resolve");
    assert_eq!(
        (r.resources.cpus, r.cpus_asked, r.extra.mincpus),
        (8, 2, Some(8))
    );
    let r = cli(&["--mem-per-cpu", "100", "--mincpus", "4"])
        .resolve()
        .expect("resolve");
    assert_eq!(
        r.resources.mem_mb, 400,
        "memory for every CPU the node gives"
    );
    assert_eq!(
        cli(&["--mincpus", "x"])
            .resolve()
            .expect_err("bad")
            .exit_code(),
        1
    );

    let r = cli(&["--deadline", "now+1hour"])
        .resolve()
        .expect("resolve");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let by = r.extra.deadline_us.expect("deadline") / 1_000_000;
    assert!((now + 3590..=now + 3610).contains(&by), "{by} vs {now}");
    // TimeMin for a deadline without a limit is the broker's to set: it knows the
    // partition's default.
    assert_eq!(r.extra.time_min_s, None);
    let e = cli(&["--deadline", "someday"]).resolve().expect_err("bad");
    assert!(
        e.to_string().contains("Invalid --deadline specification"),
        "{e}"
    );
    assert_eq!(e.exit_code(), 255);

    assert_eq!(
        cli(&["-i", "in-%j"])
            .resolve()
            .expect("resolve")
            .extra
            .input
            .as_deref(),
        Some("in-%j")
    );
    assert_eq!(
        cli(&["--input=none"])
            .resolve()
            .expect("resolve")
            .extra
            .input,
        None
    );
}

/// `--signal` as Slurm's get_signal_opts reads it.
#[test]
fn signal_specifications_read_as_slurm_reads_them() {
    use bulkhead_proto::job::JobSignal;
    let sig = |v: &str| parse_signal(v).map(|(s, r)| (s.signal, s.before_s, s.batch, r));
    assert_eq!(sig("USR1"), Some((10, 60, false, false)), "60 s by default");
    assert_eq!(sig("SIGUSR2@90"), Some((12, 90, false, false)));
    assert_eq!(sig("B:usr1@30"), Some((10, 30, true, false)));
    assert_eq!(sig("B:10@0"), Some((10, 0, true, false)));
    assert_eq!(sig("R:TERM@5"), Some((15, 5, false, true)));
    assert_eq!(sig("BR:TERM"), Some((15, 60, true, true)));
    for bad in ["", "NOPE", "0", "65", "USR1@", "USR1@x", "USR1@-1", "B:"] {
        assert_eq!(sig(bad), None, "{bad:?}");
    }
    let r = cli(&["--signal=B:USR1@120"]).resolve().expect("resolve");
    assert_eq!(
        r.extra.signal,
        Some(JobSignal {
            signal: 10,
            before_s: 120,
            batch: true
        })
    );
    let e = cli(&["--signal=BOGUS"]).resolve().expect_err("bad");
    assert!(
        e.to_string().contains("Invalid --signal specification"),
        "{e}"
    );
    assert_eq!(e.exit_code(), 255);
}

/// An option that needs a value takes the next word whatever it starts with, as
/// getopt_long does; an explicit UNLIMITED is kept as such.
#[test]
fn values_may_start_with_a_dash_and_unlimited_is_explicit() {
    let r = cli(&["-J", "-x", "--comment", "--not-an-option"])
        .resolve()
        .expect("resolve");
    assert_eq!(r.name.as_deref(), Some("-x"));
    assert_eq!(r.extra.comment.as_deref(), Some("--not-an-option"));
    let r = cli(&["-t", "UNLIMITED"]).resolve().expect("resolve");
    assert_eq!((r.resources.time_limit_s, r.extra.no_limit), (None, true));
    let r = cli(&[]).resolve().expect("resolve");
    assert_eq!((r.resources.time_limit_s, r.extra.no_limit), (None, false));
}

/// `--ntasks-per-gpu` as slurmctld reads it (`gres_job_state_validate`): with GPUs the
/// tasks are theirs times it, whatever -n said; without, an exact -N or -n makes the
/// job's GPUs (the tasks over it, a multiple); with neither, or beside
/// `--gpus-per-task` or `--ntasks-per-node`, it is refused.
#[test]
fn ntasks_per_gpu_makes_tasks_from_gpus_or_gpus_from_tasks() {
    let tasks_gpus = |words: &[&str]| -> Result<(Option<u32>, u32, u32), OptsError> {
        let r = parse_words(words.iter().map(|w| w.to_string()).collect::<Vec<_>>())
            .expect("parses")
            .resolve()?;
        Ok((r.layout.ntasks, r.resources.gpus, r.resources.nodes))
    };
    assert_eq!(
        tasks_gpus(&["--ntasks-per-gpu=2", "--gpus=2", "-n", "3"]).unwrap(),
        (Some(4), 2, 1)
    );
    assert_eq!(
        tasks_gpus(&["--ntasks-per-gpu=2", "--gres=gpu:2", "-N", "2"]).unwrap(),
        (Some(8), 2, 2)
    );
    // No GPU options: the GPUs come from the tasks (2 for the job, 1 on each node).
    assert_eq!(
        tasks_gpus(&["--ntasks-per-gpu=2", "-N", "2"]).unwrap(),
        (Some(4), 1, 2)
    );
    assert_eq!(
        tasks_gpus(&["--ntasks-per-gpu=2", "-n", "4"]).unwrap(),
        (Some(4), 2, 1)
    );
    for bad in [
        &["--ntasks-per-gpu=2"][..],
        &["--ntasks-per-gpu=3", "-n", "7"],
        &["--ntasks-per-gpu=2", "--gpus-per-task=1", "-n", "2"],
        &["--ntasks-per-gpu=2", "--ntasks-per-node=2", "--gpus=2"],
    ] {
        assert!(
            matches!(tasks_gpus(bad), Err(OptsError::Refused(_))),
            "{bad:?}: {:?}",
            tasks_gpus(bad)
        );
    }
}

/// `--priority` as arg_set_priority reads it: TOP, strtoll's leading integer, 0 as
/// none, a negative or too large value refused (exit 255), and `--hold` over it.
#[test]
fn priority_is_read_as_sbatch_reads_it() {
    let p = |words: &[&str]| cli(words).resolve().map(|r| r.extra.priority);
    assert_eq!(p(&["--priority=top"]).expect("top"), Some(0xffff_fffd));
    assert_eq!(p(&["--priority=100x"]).expect("100x"), Some(100));
    assert_eq!(p(&["--priority", "0"]).expect("0"), None);
    assert_eq!(p(&["--priority=abc"]).expect("abc"), None);
    assert_eq!(
        p(&["--priority=4294967293"]).expect("max"),
        Some(4_294_967_293)
    );
    assert_eq!(p(&["--priority=9", "--hold"]).expect("held"), None);
    for bad in ["-1", "4294967294"] {
        let e = p(&["--priority", bad]).expect_err(bad);
        assert_eq!(e.exit_code(), 255, "{bad}: {e}");
    }
}

/// Array lists as slurmctld's `_valid_array_inx` reads them: empty items skipped,
/// numbers read by `strtol` (leading blanks, `+`), brackets around them dropped.
#[test]
fn array_lists_are_read_item_by_item_as_slurmctld_reads_them() {
    let indices = |v: &str| parse_array(v).map(|a| a.indices().into_iter().collect::<Vec<u32>>());
    for (v, want) in [
        (" 1-2", vec![1, 2]),
        ("1-2,", vec![1, 2]),
        (",1,,3", vec![1, 3]),
        ("[1-3]", vec![1, 2, 3]),
        ("+2", vec![2]),
        ("1-7:+3", vec![1, 4, 7]),
        ("00-03", vec![0, 1, 2, 3]),
    ] {
        assert_eq!(indices(v).expect(v), want, "{v}");
    }
    for bad in [
        "-1", "1-x", "1-3:0", "1-3:-1", "5-1", "a", "1 -2", "1-2x", "",
    ] {
        assert!(parse_array(bad).is_err(), "{bad:?} accepted");
    }
}

/// Values of options without effect here that sbatch still checks: `--open-mode`
/// by its first letter, `--mail-type` as `parse_mail_type` reads it (exit 255).
#[test]
fn open_mode_and_mail_type_values_are_checked_as_sbatch_checks_them() {
    let p = |words: &[&str]| {
        let w: Vec<String> = words
            .iter()
            .map(|s| s.to_string())
            .chain(["x.sh".into()])
            .collect();
        command_line(&w)
    };
    for ok in ["append", "A", "truncate", "Tx"] {
        p(&["--open-mode", ok]).expect(ok);
    }
    for ok in [
        "END",
        "begin,end",
        "bogus,FAIL",
        "NONE",
        "bogus,none",
        "time_limit_90",
    ] {
        p(&["--mail-type", ok]).expect(ok);
    }
    for (opt, bad) in [
        ("--open-mode", "bogus"),
        ("--open-mode", ""),
        ("--mail-type", "bogus"),
        ("--mail-type", ","),
    ] {
        let e = p(&[opt, bad]).expect_err(bad);
        assert_eq!(e.exit_code(), 255, "{opt} {bad}: {e}");
        assert!(
            e.to_string()
                .contains(&format!("Invalid {opt} specification")),
            "{e}"
        );
    }
}

/// `-O/--overcommit`: each node gives one task's CPUs, the tasks keep their count,
/// the job gets `SLURM_OVERCOMMIT=1`, and nothing is warned of; a waiting job shows
/// one CPU a node, as sbatch sends `min_cpus`.
#[test]
fn overcommit_asks_one_tasks_cpus_on_each_node() {
    let r = cli(&["-n", "6", "-O"]).resolve().expect("-O");
    assert_eq!((r.resources.cpus, r.layout.ntasks), (1, Some(6)));
    assert!(r.overcommit);
    assert!(
        r.option_env
            .iter()
            .any(|(k, v)| k == "SLURM_OVERCOMMIT" && v == "1"),
        "{:?}",
        r.option_env
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let r = cli(&["-n", "6", "-c", "2", "--overcommit"])
        .resolve()
        .expect("-O -c");
    assert_eq!(r.resources.cpus, 2, "one task's two CPUs");
    let r = cli(&["-n", "6"]).resolve().expect("no -O");
    assert_eq!(r.resources.cpus, 6, "without -O each task its own CPU");
    assert!(!r.option_env.iter().any(|(k, _)| k == "SLURM_OVERCOMMIT"));
}

/// `--reboot` makes the job exclusive, as slurmctld does (`shared = 0`), even after
/// `-s`; `--uid`/`--gid` naming the submitter change nothing, another is refused.
#[test]
fn reboot_is_exclusive_and_uid_may_name_the_submitter() {
    let r = cli(&["-s", "--reboot"]).resolve().expect("--reboot");
    assert_eq!(r.extra.exclusive, Exclusive::Node);
    assert!(!r.extra.oversubscribe);
    let me = nix::unistd::geteuid().as_raw().to_string();
    let gid = nix::unistd::getegid().as_raw().to_string();
    cli(&["--uid", &me, "--gid", &gid])
        .resolve()
        .expect("own uid and gid");
    let other = (nix::unistd::geteuid().as_raw() + 1).to_string();
    assert!(matches!(
        cli(&["--uid", &other]).resolve(),
        Err(OptsError::Unsupported("uid", _))
    ));
}

/// sbatch's "massage the numbers": with an exact -N or -B and no -n, the socket, core
/// and thread counts multiply the tasks (a task per node by default); a range of
/// nodes or -n leaves them alone, and `*` or a missing part counts for nothing.
#[test]
fn socket_core_thread_counts_make_the_tasks_as_sbatch_does() {
    let tasks = |a: &[&str]| {
        let r = cli(a).resolve().expect("resolve");
        (
            r.layout.ntasks.unwrap_or(r.resources.nodes),
            r.resources.cpus,
        )
    };
    assert_eq!(tasks(&["-B", "1:2:1"]), (2, 2));
    assert_eq!(tasks(&["-B", "2:*:2"]), (4, 4));
    assert_eq!(tasks(&["-B", "2-4"]), (2, 2), "a range's minimum");
    assert_eq!(tasks(&["-N", "2", "--cores-per-socket", "4"]).0, 8);
    assert_eq!(
        tasks(&["-N", "2", "--cores-per-socket", "4", "-B", "1"]).0,
        2
    );
    assert_eq!(tasks(&["--threads-per-core", "2"]), (1, 1), "no -N, no -B");
    assert_eq!(tasks(&["-N", "1-3", "--cores-per-socket", "4"]).0, 1);
    assert_eq!(tasks(&["-n", "3", "-B", "2:2"]), (3, 3), "-n wins");
    assert!(cli(&["-B", "x"]).resolve().is_err());
    assert!(
        cli(&["-N", "1", "--sockets-per-node", "2x"])
            .resolve()
            .is_err()
    );
}

/// Options without effect here are kept as sbatch reads them, for scontrol to show:
/// `--tmp` a size in MB, `--delay-boot` minutes, `-B` counts (a range's least, `*`
/// none) with each count's own option over it, `--hint=nomultithread` one thread a
/// core; a script's directive under the command line's; a bad size refused.
#[test]
fn options_without_effect_are_kept_for_scontrol() {
    let r = cli(&[
        "--tmp=10G",
        "--delay-boot=5",
        "-B",
        "2-4:*:2",
        "--cores-per-socket=8",
        "--hint=nomultithread",
        "--contiguous",
        "--spread-job",
    ])
    .resolve()
    .expect("resolves");
    let s = r.extra.shown();
    assert_eq!(
        (s.tmp_mb, s.delay_boot_s, s.sockets, s.cores, s.threads),
        (10 * 1024, 300, 2, 8, 1)
    );
    assert!(s.contiguous && s.spread_job && !s.reboot);
    let merged = cli(&["--tmp=1"]).over(&cli(&["--tmp=2G", "--reboot"]));
    let s = merged.resolve().expect("resolves").extra.shown();
    assert_eq!((s.tmp_mb, s.reboot), (1, true));
    assert!(cli(&["--tmp=lots"]).resolve().is_err());
    assert_eq!(
        cli(&[]).resolve().expect("resolves").extra.shown,
        None,
        "none given: none kept"
    );
}
