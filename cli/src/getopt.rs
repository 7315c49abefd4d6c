//! Slurm's commands read their options with glibc's `getopt_long`, and this module
//! reads them with the same function: the same abbreviations (a unique prefix of a
//! long option, or one shared only by spellings of the same option, as `--use` for
//! `--user`/`--users`), the same permutation of words, the same `-ofmt`, `-hj5`,
//! `--opt=val`, `--opt val` and optional values only after `=`, and the same messages
//! on standard error (`squeue: unrecognized option '--foo'`, `invalid option -- 'Z'`,
//! `option '--format' requires an argument`, `option '--no' is ambiguous;
//! possibilities: ...`). A table per command ([`Spec`]) names its options as the
//! command's source does; what the options then mean is the command's business.

use std::ffi::{CStr, CString, c_char, c_int};

/// Whether an option takes a value (`no_argument`, `required_argument`,
/// `optional_argument`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    No,
    Required,
    Optional,
}

/// One long option: its name, whether it takes a value, and the code it returns (a
/// short option's letter, or a code of its own at or above [`LONG_ONLY`]).
#[derive(Debug, Clone, Copy)]
pub struct Long<'a> {
    pub name: &'a str,
    pub arg: Arg,
    pub code: u32,
}

/// The first code of options that have no letter (Slurm's `OPT_LONG_*` are 0x100 on).
pub const LONG_ONLY: u32 = 0x100;

/// A command's options: the short option string and the long options.
#[derive(Debug, Clone, Copy)]
pub struct Spec<'a> {
    pub short: &'a str,
    pub long: &'a [Long<'a>],
}

/// An option as read: its code and its value, if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub code: u32,
    pub value: Option<String>,
}

/// The options read, in order, and the other words (operands), in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub options: Vec<Found>,
    pub operands: Vec<String>,
}

impl Parsed {
    /// Whether the option with this code was given.
    pub fn has(&self, code: impl Into<u32>) -> bool {
        let c = code.into();
        self.options.iter().any(|f| f.code == c)
    }

    /// The value of the last occurrence of this option, as Slurm's commands keep the
    /// last one for most options.
    pub fn last(&self, code: impl Into<u32>) -> Option<&str> {
        let c = code.into();
        self.options
            .iter()
            .rev()
            .find(|f| f.code == c)
            .and_then(|f| f.value.as_deref())
    }
}

/// Why the words were refused: glibc has already written its message (as the
/// program named by `argv[0]`) to standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused;

unsafe extern "C" {
    static mut optind: c_int;
    static mut opterr: c_int;
    static mut optarg: *mut c_char;
}

/// getopt keeps its state in globals: one caller at a time.
static GETOPT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Reads `argv` (the program's name first) as glibc's `getopt_long` does.
pub fn parse(argv: &[String], spec: &Spec<'_>) -> Result<Parsed, Refused> {
    let _one = GETOPT.lock().unwrap_or_else(|p| p.into_inner());
    // A word with a NUL byte cannot reach a C program; Slurm's commands never see one.
    let owned: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_str()).unwrap_or_else(|_| c"?".to_owned()))
        .collect();
    let mut ptrs: Vec<*mut c_char> = owned.iter().map(|c| c.as_ptr().cast_mut()).collect();
    ptrs.push(std::ptr::null_mut());
    let names: Vec<CString> = spec
        .long
        .iter()
        .map(|l| CString::new(l.name).expect("option names have no NUL"))
        .collect();
    let mut longs: Vec<libc::option> = spec
        .long
        .iter()
        .zip(&names)
        .map(|(l, n)| libc::option {
            name: n.as_ptr(),
            has_arg: match l.arg {
                Arg::No => 0,
                Arg::Required => 1,
                Arg::Optional => 2,
            },
            flag: std::ptr::null_mut(),
            val: l.code as c_int,
        })
        .collect();
    longs.push(libc::option {
        name: std::ptr::null(),
        has_arg: 0,
        flag: std::ptr::null_mut(),
        val: 0,
    });
    let short = CString::new(spec.short).expect("short options have no NUL");
    let argc = c_int::try_from(argv.len()).map_err(|_| Refused)?;
    let mut options = Vec::new();
    // SAFETY: `ptrs` is a NULL-terminated array of pointers to NUL-terminated strings
    // that outlive the calls (getopt only reorders the pointers), `short` and `longs`
    // (zero-terminated) likewise; optind = 0 makes glibc start over from argv[1] with
    // fresh state. The globals are touched under GETOPT alone.
    unsafe {
        optind = 0;
        opterr = 1;
        loop {
            let c = libc::getopt_long(
                argc,
                ptrs.as_ptr(),
                short.as_ptr(),
                longs.as_ptr(),
                std::ptr::null_mut(),
            );
            if c == -1 {
                break;
            }
            if c == '?' as c_int || c == ':' as c_int {
                return Err(Refused);
            }
            let value =
                (!optarg.is_null()).then(|| CStr::from_ptr(optarg).to_string_lossy().into_owned());
            options.push(Found {
                code: c as u32,
                value,
            });
        }
        let first = usize::try_from(optind)
            .unwrap_or(argv.len())
            .min(argv.len());
        let operands = ptrs[first..argv.len()]
            .iter()
            .map(|p| CStr::from_ptr(*p).to_string_lossy().into_owned())
            .collect();
        Ok(Parsed { options, operands })
    }
}

/// A clap command's options as getopt_long's table, in `+` mode (the first word that
/// is neither an option nor an option's value ends them, as Slurm's commands read
/// theirs): the short option string, the long options (aliases too), and for each
/// code the clap argument it stands for.
pub fn spec_of(cmd: &clap::Command) -> (String, Vec<Long<'_>>, Vec<(u32, &clap::Arg)>) {
    let mut short = String::from("+");
    let mut long: Vec<Long<'_>> = Vec::new();
    let mut args = Vec::new();
    for (i, a) in cmd
        .get_arguments()
        .filter(|a| !a.is_positional())
        .enumerate()
    {
        let arg = if !a.get_action().takes_values() {
            Arg::No
        } else if a.is_require_equals_set() || a.get_num_args().is_some_and(|n| n.min_values() == 0)
        {
            Arg::Optional
        } else {
            Arg::Required
        };
        let code = match a.get_short() {
            Some(c) => {
                short.push(c);
                short.push_str(match arg {
                    Arg::No => "",
                    Arg::Required => ":",
                    Arg::Optional => "::",
                });
                c as u32
            }
            None => LONG_ONLY + i as u32,
        };
        for name in a
            .get_long()
            .into_iter()
            .chain(a.get_all_aliases().into_iter().flatten())
        {
            long.push(Long { name, arg, code });
        }
        args.push((code, a));
    }
    (short, long, args)
}

/// `argv` (the program's name first) read by getopt_long in `+` mode with `cmd`'s
/// options ([`spec_of`]), written again as clap reads them without doubt: each option
/// as its long name with `=VALUE` (an abbreviation, a value glued to its letter
/// (`-n1`), a value that begins with `-` are getopt's business here, not clap's), then
/// `--`, then the operands, which begin at the first word that is neither an option
/// nor an option's value (srun's command and its arguments). A word getopt refuses
/// has had getopt's message written.
pub fn canonical_words(argv: &[String], cmd: &clap::Command) -> Result<Vec<String>, Refused> {
    let (short, long, args) = spec_of(cmd);
    let parsed = parse(
        argv,
        &Spec {
            short: &short,
            long: &long,
        },
    )?;
    let mut words = Vec::with_capacity(argv.len() + 1);
    for f in &parsed.options {
        let Some(a) = args.iter().find(|(c, _)| *c == f.code).map(|(_, a)| a) else {
            continue;
        };
        let name = match (a.get_long(), a.get_short()) {
            (Some(l), _) => format!("--{l}"),
            (None, Some(c)) => format!("-{c}"),
            (None, None) => continue,
        };
        words.push(match (&f.value, a.get_long()) {
            (Some(v), Some(_)) => format!("{name}={v}"),
            (Some(v), None) => format!("{name}{v}"),
            (None, _) => name,
        });
    }
    words.push("--".into());
    words.extend(parsed.operands);
    Ok(words)
}

/// `print_slurm_version()`: what `-V/--version` prints for every Slurm command here.
pub const VERSION: &str = "slurm 22.05.8 (Bulkhead)";

#[cfg(test)]
mod tests {
    use super::*;

    const OPT_ME: u32 = LONG_ONLY;
    const SPEC: Spec<'static> = Spec {
        short: "ahj::o:u:",
        long: &[
            Long {
                name: "all",
                arg: Arg::No,
                code: 'a' as u32,
            },
            Long {
                name: "jobs",
                arg: Arg::Optional,
                code: 'j' as u32,
            },
            Long {
                name: "format",
                arg: Arg::Required,
                code: 'o' as u32,
            },
            Long {
                name: "user",
                arg: Arg::Required,
                code: 'u' as u32,
            },
            Long {
                name: "users",
                arg: Arg::Required,
                code: 'u' as u32,
            },
            Long {
                name: "me",
                arg: Arg::No,
                code: OPT_ME,
            },
            Long {
                name: "noheader",
                arg: Arg::No,
                code: 'h' as u32,
            },
            Long {
                name: "noconvert",
                arg: Arg::No,
                code: LONG_ONLY + 1,
            },
        ],
    };

    fn words(w: &[&str]) -> Vec<String> {
        std::iter::once("squeue")
            .chain(w.iter().copied())
            .map(String::from)
            .collect()
    }

    fn found(code: char, value: Option<&str>) -> Found {
        Found {
            code: code as u32,
            value: value.map(String::from),
        }
    }

    /// srun's words as its getopt_long reads them, for clap: a value glued to its
    /// letter (`-n1`, which clap took for the command when the command may begin with
    /// `-`), an abbreviation, a value that begins with `-`, and the command from the
    /// first word that is not an option, its own options kept.
    #[test]
    fn canonical_words_end_the_options_where_getopt_does() {
        let cmd = clap::Command::new("run")
            .arg(clap::Arg::new("ntasks").short('n').long("ntasks"))
            .arg(clap::Arg::new("ntasks-per-node").long("ntasks-per-node"))
            .arg(clap::Arg::new("job-name").short('J').long("job-name"))
            .arg(
                clap::Arg::new("label")
                    .short('l')
                    .long("label")
                    .action(clap::ArgAction::SetTrue),
            )
            .arg(clap::Arg::new("cmd").num_args(1..).trailing_var_arg(true));
        let argv = |w: &[&str]| -> Vec<String> {
            std::iter::once("srun")
                .chain(w.iter().copied())
                .map(String::from)
                .collect()
        };
        let got = canonical_words(
            &argv(&["-ln1", "-J", "-x", "--ntasks-per=2", "echo", "-n", "hi"]),
            &cmd,
        )
        .expect("valid");
        assert_eq!(
            got,
            [
                "--label",
                "--ntasks=1",
                "--job-name=-x",
                "--ntasks-per-node=2",
                "--",
                "echo",
                "-n",
                "hi"
            ]
        );
        let got = canonical_words(&argv(&["-n", "2", "--", "-weird"]), &cmd).expect("valid");
        assert_eq!(got, ["--ntasks=2", "--", "-weird"]);
        // An option srun does not know is refused (getopt said so), not run.
        assert_eq!(
            canonical_words(&argv(&["--bogus", "true"]), &cmd),
            Err(Refused)
        );
        assert_eq!(canonical_words(&argv(&["-Z", "true"]), &cmd), Err(Refused));
    }

    #[test]
    fn reads_options_as_getopt_long_does() {
        let p = parse(
            &words(&["-hofmt", "x", "--use", "bob", "--for=%i", "-j5"]),
            &SPEC,
        )
        .expect("valid");
        assert_eq!(
            p.options,
            vec![
                found('h', None),
                found('o', Some("fmt")),
                found('u', Some("bob")),
                found('o', Some("%i")),
                found('j', Some("5")),
            ]
        );
        // The operand is moved after the options, as GNU getopt permutes them.
        assert_eq!(p.operands, vec!["x".to_string()]);
        assert_eq!(p.last('o'), Some("%i"));
        // An optional value only after `=` or joined: `-j 5` leaves 5 an operand.
        let p = parse(&words(&["-j", "5", "--me"]), &SPEC).expect("valid");
        assert_eq!(p.options[0], found('j', None));
        assert_eq!(p.options[1].code, OPT_ME);
        assert_eq!(p.operands, vec!["5".to_string()]);
        // `--` ends the options.
        let p = parse(&words(&["--", "-a"]), &SPEC).expect("valid");
        assert!(p.options.is_empty());
        assert_eq!(p.operands, vec!["-a".to_string()]);
    }

    #[test]
    fn refuses_what_getopt_long_refuses() {
        for bad in [
            &["--foo"][..],
            &["-Z"],
            &["-o"],
            &["--format"],
            &["--no"], // --noheader or --noconvert
            &["--all=1"],
        ] {
            assert_eq!(parse(&words(bad), &SPEC), Err(Refused), "{bad:?}");
        }
        // Parsing again after a refusal starts afresh.
        assert!(parse(&words(&["-a"]), &SPEC).is_ok());
    }
}
