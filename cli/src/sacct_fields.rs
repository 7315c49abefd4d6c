//! sacct's fields as Slurm 22.05 prints them in columns: each field's default width
//! and side (a negative width is left-justified: JobID's), names matched as sacct
//! matches them (a case-insensitive prefix, the first in its table), values cut to
//! the width with a `+` where they were longer, and a space after every column
//! (Slurm's `print_fields_str`).

/// Slurm 22.05's sacct fields and their default widths, in its table's order.
const WIDTHS: &[(&str, i32)] = &[
    ("Account", 10),
    ("AdminComment", 15),
    ("AllocCPUS", 10),
    ("AllocNodes", 10),
    ("AllocTRES", 10),
    ("AssocID", 7),
    ("AveCPU", 10),
    ("AveCPUFreq", 10),
    ("AveDiskRead", 14),
    ("AveDiskWrite", 14),
    ("AvePages", 10),
    ("AveRSS", 10),
    ("AveVMSize", 10),
    ("BlockID", 16),
    ("Cluster", 10),
    ("Comment", 14),
    ("Constraints", 19),
    ("ConsumedEnergy", 14),
    ("ConsumedEnergyRaw", 17),
    ("Container", 19),
    ("CPUTime", 10),
    ("CPUTimeRAW", 10),
    ("DBIndex", -10),
    ("DerivedExitCode", 15),
    ("Elapsed", 10),
    ("ElapsedRaw", 10),
    ("Eligible", 19),
    ("End", 19),
    ("ExitCode", 8),
    ("Flags", 19),
    ("GID", 6),
    ("Group", 9),
    ("JobID", -12),
    ("JobIDRaw", -12),
    ("JobName", 10),
    ("Layout", 9),
    ("MaxDiskRead", 12),
    ("MaxDiskReadNode", 15),
    ("MaxDiskReadTask", 15),
    ("MaxDiskWrite", 12),
    ("MaxDiskWriteNode", 16),
    ("MaxDiskWriteTask", 16),
    ("MaxPages", 8),
    ("MaxPagesNode", 12),
    ("MaxPagesTask", 14),
    ("MaxRSS", 10),
    ("MaxRSSNode", 10),
    ("MaxRSSTask", 10),
    ("MaxVMSize", 10),
    ("MaxVMSizeNode", 14),
    ("MaxVMSizeTask", 14),
    ("McsLabel", 12),
    ("MinCPU", 10),
    ("MinCPUNode", 10),
    ("MinCPUTask", 10),
    ("NCPUS", 10),
    ("NNodes", 8),
    ("NodeList", 15),
    ("NTasks", 8),
    ("Partition", 10),
    ("Priority", 10),
    ("QOS", 10),
    ("QOSRAW", 6),
    ("Reason", 22),
    ("ReqCPUFreq", 10),
    ("ReqCPUFreqGov", 13),
    ("ReqCPUFreqMax", 13),
    ("ReqCPUFreqMin", 13),
    ("ReqCPUS", 8),
    ("ReqMem", 10),
    ("ReqNodes", 8),
    ("ReqTRES", 10),
    ("Reservation", 20),
    ("ReservationId", 8),
    ("Reserved", 10),
    ("ResvCPU", 10),
    ("ResvCPURAW", 10),
    ("Start", 19),
    ("State", 10),
    ("Submit", 19),
    ("SubmitLine", 20),
    ("Suspended", 10),
    ("SystemComment", 15),
    ("SystemCPU", 10),
    ("Timelimit", 10),
    ("TimelimitRaw", 10),
    ("TotalCPU", 10),
    ("TRESUsageInAve", 14),
    ("TRESUsageInMax", 14),
    ("TRESUsageInMaxNode", 18),
    ("TRESUsageInMaxTask", 18),
    ("TRESUsageInMin", 14),
    ("TRESUsageInMinNode", 18),
    ("TRESUsageInMinTask", 18),
    ("TRESUsageInTot", 14),
    ("TRESUsageOutAve", 15),
    ("TRESUsageOutMax", 15),
    ("TRESUsageOutMaxNode", 19),
    ("TRESUsageOutMaxTask", 19),
    ("TRESUsageOutMin", 15),
    ("TRESUsageOutMinNode", 19),
    ("TRESUsageOutMinTask", 19),
    ("TRESUsageOutTot", 15),
    ("UID", 6),
    ("User", 9),
    ("UserCPU", 10),
    ("WCKey", 10),
    ("WCKeyID", 10),
    ("WorkDir", 20),
];

/// `sacct -e`: every field's name, four to a line, each 19 wide (sacct's
/// `_help_fields_msg`).
pub fn help_fields() -> String {
    let mut out = String::new();
    for (i, (name, _)) in WIDTHS.iter().enumerate() {
        if i % 4 != 0 {
            out.push(' ');
        } else if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{name:<19}"));
    }
    out.push('\n');
    out
}

/// The field `asked` names as sacct finds it (`jobid`, `elap`), and its default width.
pub fn resolve(asked: &str) -> Option<(&'static str, i32)> {
    let asked = asked.trim();
    if asked.is_empty() {
        return None;
    }
    WIDTHS.iter().copied().find(|(name, _)| {
        name.len() >= asked.len() && name[..asked.len()].eq_ignore_ascii_case(asked)
    })
}

/// sstat 22.05's fields (`src/sstat/sstat.c`'s `fields[]`), in its order: a word
/// names the first whose name it begins, as there. Their widths are sacct's for the
/// same names ([`sstat_width`]).
pub const SSTAT_FIELDS: &[&str] = &[
    "AveCPU",
    "AveCPUFreq",
    "AveDiskRead",
    "AveDiskWrite",
    "AvePages",
    "AveRSS",
    "AveVMSize",
    "ConsumedEnergy",
    "ConsumedEnergyRaw",
    "JobID",
    "MaxDiskRead",
    "MaxDiskReadNode",
    "MaxDiskReadTask",
    "MaxDiskWrite",
    "MaxDiskWriteNode",
    "MaxDiskWriteTask",
    "MaxPages",
    "MaxPagesNode",
    "MaxPagesTask",
    "MaxRSS",
    "MaxRSSNode",
    "MaxRSSTask",
    "MaxVMSize",
    "MaxVMSizeNode",
    "MaxVMSizeTask",
    "MinCPU",
    "MinCPUNode",
    "MinCPUTask",
    "Nodelist",
    "NTasks",
    "Pids",
    "ReqCPUFreq",
    "ReqCPUFreqMin",
    "ReqCPUFreqMax",
    "ReqCPUFreqGov",
    "TRESUsageInAve",
    "TRESUsageInMax",
    "TRESUsageInMaxNode",
    "TRESUsageInMaxTask",
    "TRESUsageInMin",
    "TRESUsageInMinNode",
    "TRESUsageInMinTask",
    "TRESUsageInTot",
    "TRESUsageOutAve",
    "TRESUsageOutMax",
    "TRESUsageOutMaxNode",
    "TRESUsageOutMaxTask",
    "TRESUsageOutMin",
    "TRESUsageOutMinNode",
    "TRESUsageOutMinTask",
    "TRESUsageOutTot",
];

/// An sstat field's width: sacct's for the same field, but for the few sstat sizes
/// otherwise (`AveDiskRead` 12 where sacct has 14) and those sacct has none of.
pub fn sstat_width(name: &str) -> i32 {
    match name {
        "AveDiskRead" | "AveDiskWrite" => 12,
        "Nodelist" | "Pids" => 20,
        n => width(n).unwrap_or(10),
    }
}

/// sstat's fields when none are asked (`STAT_FIELDS`).
pub const SSTAT_DEFAULT: &str = "jobid,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss,maxrssnode,maxrsstask,averss,maxpages,maxpagesnode,maxpagestask,avepages,mincpu,mincpunode,mincputask,avecpu,ntasks,avecpufreq,reqcpufreqmin,reqcpufreqmax,reqcpufreqgov,consumedenergy,maxdiskread,maxdiskreadnode,maxdiskreadtask,avediskread,maxdiskwrite,maxdiskwritenode,maxdiskwritetask,avediskwrite,tresusageinave,tresusageinmax,tresusageinmaxn,tresusageinmaxt,tresusageinmin,tresusageinminn,tresusageinmint,tresusageintot,tresusageoutave,tresusageoutmax,tresusageoutmaxn,tresusageoutmaxt,tresusageoutmin,tresusageoutminn,tresusageoutmint,tresusageouttot";

/// sstat `-i` (`STAT_FIELDS_PID`).
pub const SSTAT_PIDS: &str = "jobid,nodelist,pids";

/// The sstat field a word names (`maxrss`, `avec`, `maxrss%20`) and its width; `None`
/// for a word that names none (sstat's "Invalid field requested").
pub fn resolve_sstat(word: &str) -> Option<(&'static str, i32)> {
    let (name, width) = match word.trim().split_once('%') {
        Some((n, w)) => (n, Some(w.trim().parse::<i32>().unwrap_or(0))),
        None => (word.trim(), None),
    };
    if name.is_empty() {
        return None;
    }
    SSTAT_FIELDS
        .iter()
        .find(|f| f.len() >= name.len() && f[..name.len()].eq_ignore_ascii_case(name))
        .map(|&f| (f, width.unwrap_or_else(|| sstat_width(f))))
}

/// The default width of field \`name\` (its exact name), if Slurm has it.
pub fn width(name: &str) -> Option<i32> {
    WIDTHS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, w)| *w)
}

/// How Slurm's `print_fields` lays a table out (sacct's, sstat's): a header line and
/// its dashes unless `header` is off; `parsable` joins the cells with `delim` (and
/// ends each line with it where `ending`), else each cell is [`cell`].
#[derive(Debug, Clone, Copy)]
pub struct Table<'a> {
    pub header: bool,
    pub parsable: bool,
    pub ending: bool,
    pub delim: &'a str,
}

impl Table<'_> {
    /// The table of `names` (columns of `widths`) and `rows`.
    pub fn render(
        &self,
        names: &[&str],
        widths: &[i32],
        rows: impl IntoIterator<Item = Vec<String>>,
    ) -> String {
        let mut out = String::new();
        let line = |cells: &[String], out: &mut String| {
            if self.parsable {
                out.push_str(&cells.join(self.delim));
                if self.ending {
                    out.push_str(self.delim);
                }
            } else {
                for (c, w) in cells.iter().zip(widths) {
                    out.push_str(&cell(c, *w));
                }
            }
            out.push('\n');
        };
        if self.header {
            if self.parsable {
                let head: Vec<String> = names.iter().map(|n| n.to_string()).collect();
                line(&head, &mut out);
            } else {
                // print_fields_header: each name cut to its column (`%*.*s`), with
                // no `+` where it was cut (`ExitCode%5` heads its column `ExitC`).
                for (n, w) in names.iter().zip(widths) {
                    let cut: String = n.chars().take(w.unsigned_abs() as usize).collect();
                    out.push_str(&cell(&cut, *w));
                }
                out.push('\n');
            }
            if !self.parsable {
                for w in widths {
                    out.push_str(&"-".repeat(w.unsigned_abs() as usize));
                    out.push(' ');
                }
                out.push('\n');
            }
        }
        for r in rows {
            line(&r, &mut out);
        }
        out
    }
}

/// One column's cell: `width` wide, right-justified unless negative, cut with a `+`,
/// followed by a space.
pub fn cell(value: &str, width: i32) -> String {
    let w = width.unsigned_abs() as usize;
    let mut v: String = value.chars().take(w).collect();
    if value.chars().count() > w && w > 0 {
        v.pop();
        v.push('+');
    }
    if width < 0 {
        format!("{v:<w$} ")
    } else {
        format!("{v:>w$} ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_resolve_and_print_as_sacct_prints_them() {
        assert_eq!(resolve("jobid"), Some(("JobID", -12)));
        assert_eq!(resolve("JobIDRaw"), Some(("JobIDRaw", -12)));
        assert_eq!(resolve_sstat("maxrss"), Some(("MaxRSS", 10)));
        assert_eq!(resolve_sstat("avec"), Some(("AveCPU", 10)));
        assert_eq!(resolve_sstat("jobid%20"), Some(("JobID", 20)));
        assert_eq!(
            resolve_sstat("tresusageinmaxn"),
            Some(("TRESUsageInMaxNode", 18))
        );
        assert_eq!(resolve_sstat("nosuch"), None);
        assert!(SSTAT_DEFAULT.split(',').all(|w| resolve_sstat(w).is_some()));
        assert_eq!(resolve_sstat("avediskr"), Some(("AveDiskRead", 12)));
        assert_eq!(resolve_sstat("maxdiskreadn"), Some(("MaxDiskReadNode", 15)));
        assert_eq!(resolve_sstat("pids"), Some(("Pids", 20)));
        assert_eq!(resolve("elap"), Some(("Elapsed", 10)));
        assert_eq!(resolve("state"), Some(("State", 10)));
        assert_eq!(resolve("nosuch"), None);
        assert_eq!(cell("2", -12), "2            ");
        assert_eq!(cell("COMPLETED", 10), " COMPLETED ");
        assert_eq!(cell("a-very-long-name", 10), "a-very-lo+ ");
    }

    /// print_fields' layouts: columns with a dashed line under the header, `-p` with
    /// the delimiter after each cell, `-P` between them, `-n` without the header.
    #[test]
    fn tables_are_laid_out_as_print_fields_does() {
        let rows = || vec![vec!["12".to_string(), "RUNNING".to_string()]];
        let t = Table {
            header: true,
            parsable: false,
            ending: false,
            delim: "|",
        };
        assert_eq!(
            t.render(&["JobID", "State"], &[-5, 8], rows()),
            "JobID    State \n----- -------- \n12     RUNNING \n"
        );
        let p = Table {
            parsable: true,
            ending: true,
            ..t
        };
        assert_eq!(
            p.render(&["JobID", "State"], &[-5, 8], rows()),
            "JobID|State|\n12|RUNNING|\n"
        );
        let p2 = Table {
            header: false,
            ending: false,
            ..p
        };
        assert_eq!(
            p2.render(&["JobID", "State"], &[-5, 8], rows()),
            "12|RUNNING\n"
        );
    }
}
