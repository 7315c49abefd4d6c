//! `sacctmgr list|show` and `sshare` over the broker's accounts: the accounting tree
//! the configuration holds (accounts, their parents and shares, and the account each
//! user charges), printed in those commands' layouts (`format=` fields with `%WIDTH`,
//! `-n`, `-P`/`--parsable2`, `-p`/`--parsable`) so that tools that ask which accounts a
//! user may charge (Snakemake's Slurm executor) work unchanged. Bulkhead's accounts
//! are configured, not managed: `sacctmgr add|modify|delete` are refused.

use bulkhead_proto::msg::Association;

/// A field of `sacctmgr`/`sshare` output: its canonical name, its header and its
/// default width (negative: left-justified).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub header: &'static str,
    pub width: i32,
}

const fn f(name: &'static str, header: &'static str, width: i32) -> Field {
    Field {
        name,
        header,
        width,
    }
}

/// The fields Bulkhead knows, with sacctmgr's and sshare's headers and widths.
pub const FIELDS: &[Field] = &[
    f("Account", "Account", 10),
    f("Admin", "Admin", 9),
    f("Cluster", "Cluster", 10),
    f("DefaultAccount", "Def Acct", 10),
    f("Descr", "Descr", 20),
    f("Org", "Org", 20),
    f("ParentName", "Par Name", 10),
    f("Partition", "Partition", 10),
    f("Share", "Share", 9),
    f("User", "User", 10),
    // sshare's
    f("RawShares", "RawShares", 10),
    f("NormShares", "NormShares", 11),
    f("RawUsage", "RawUsage", 11),
    f("EffectvUsage", "EffectvUsage", 13),
    f("NormUsage", "NormUsage", 11),
    f("FairShare", "FairShare", 10),
];

/// sshare's default columns.
pub const SSHARE_DEFAULT: &str =
    "Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare";

/// The fields a `format=` list (or `-o`) names: names matched without case and by
/// unambiguous prefix, each with its `%WIDTH` when given.
pub fn parse_format(spec: &str) -> Result<Vec<(Field, Option<i32>)>, String> {
    spec.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|item| {
            let (name, width) = match item.split_once('%') {
                Some((n, w)) => (
                    n.trim(),
                    Some(
                        w.trim()
                            .parse::<i32>()
                            .map_err(|_| format!("Invalid field width in {item:?}"))?,
                    ),
                ),
                None => (item.trim(), None),
            };
            let exact = FIELDS.iter().find(|f| f.name.eq_ignore_ascii_case(name));
            let found = exact.or_else(|| {
                let mut m = FIELDS.iter().filter(|f| {
                    f.name.len() >= name.len() && f.name[..name.len()].eq_ignore_ascii_case(name)
                });
                match (m.next(), m.next()) {
                    (Some(f), None) => Some(f),
                    _ => None,
                }
            });
            found
                .map(|f| (*f, width))
                .ok_or_else(|| format!("Invalid field requested: \"{name}\""))
        })
        .collect()
}

/// How lines are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub header: bool,
    /// `-P` (`|` between fields) or `-p` (and after the last).
    pub parsable: Option<bool>,
}

/// Prints rows of values under `fields` as sacctmgr's `print_fields` does: columns
/// of their width, right-justified (left for a negative width), cut with a `+` when
/// longer, separated by a space, the header underlined with dashes; or `|`-separated.
pub fn render(fields: &[(Field, Option<i32>)], rows: &[Vec<String>], layout: Layout) -> String {
    let mut out = String::new();
    let line = |cells: &mut dyn Iterator<Item = (String, i32)>, out: &mut String| {
        let cells: Vec<(String, i32)> = cells.collect();
        match layout.parsable {
            Some(trailing) => {
                let joined: Vec<String> = cells.into_iter().map(|(v, _)| v).collect();
                out.push_str(&joined.join("|"));
                if trailing {
                    out.push('|');
                }
            }
            None => {
                let parts: Vec<String> = cells
                    .into_iter()
                    .map(|(v, w)| {
                        let n = w.unsigned_abs() as usize;
                        let v = if v.chars().count() > n && n > 0 {
                            let mut cut: String = v.chars().take(n - 1).collect();
                            cut.push('+');
                            cut
                        } else {
                            v
                        };
                        if w < 0 {
                            format!("{v:<n$}")
                        } else {
                            format!("{v:>n$}")
                        }
                    })
                    .collect();
                out.push_str(&parts.join(" "));
            }
        }
        out.push('\n');
    };
    let width = |(f, w): &(Field, Option<i32>)| w.unwrap_or(f.width);
    if layout.header {
        line(
            &mut fields.iter().map(|x| (x.0.header.to_string(), width(x))),
            &mut out,
        );
        if layout.parsable.is_none() {
            line(
                &mut fields
                    .iter()
                    .map(|x| ("-".repeat(width(x).unsigned_abs() as usize), width(x))),
                &mut out,
            );
        }
    }
    for r in rows {
        line(
            &mut fields
                .iter()
                .zip(r)
                .map(|(x, v)| (crate::output::escape(v).into_owned(), width(x))),
            &mut out,
        );
    }
    out
}

/// One value of an association line.
pub fn value(a: &Association, field: &str, all: &[Association]) -> String {
    match field {
        "Account" => a.account.clone(),
        "Admin" => "None".into(),
        "Cluster" => crate::opts::CLUSTER_NAME.into(),
        "DefaultAccount" => a.user.as_ref().map_or(String::new(), |_| a.account.clone()),
        "Descr" | "Org" => a.account.clone(),
        "ParentName" => a.parent.clone().unwrap_or_default(),
        "Partition" => String::new(),
        "Share" | "RawShares" => a.shares.to_string(),
        "User" => a.user.clone().unwrap_or_default(),
        // This account's shares over its siblings' (a user's line: its account's).
        "NormShares" => {
            let parent = all
                .iter()
                .find(|x| x.user.is_none() && x.account == a.account)
                .and_then(|x| x.parent.clone());
            let siblings: u64 = all
                .iter()
                .filter(|x| x.user.is_none() && x.parent == parent)
                .map(|x| u64::from(x.shares))
                .sum();
            if siblings == 0 {
                "0.000000".into()
            } else {
                format!("{:.6}", f64::from(a.shares) / siblings as f64)
            }
        }
        // Fair-share as the broker's scheduler keeps it (Slurm's classic factor,
        // `2^(-usage/share)`, on every line, as sshare prints it without Fair Tree).
        "RawUsage" => format!("{}", a.raw_usage.max(0.0) as u64),
        "EffectvUsage" | "NormUsage" => format!("{:.6}", a.effective_usage),
        "FairShare" => format!("{:.6}", a.fair_share),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Vec<Association> {
        let acct = |a: &str, parent: Option<&str>, shares| Association {
            account: a.into(),
            parent: parent.map(str::to_string),
            user: None,
            shares,
            raw_usage: 0.0,
            effective_usage: 0.0,
            fair_share: 1.0,
        };
        vec![
            acct("physics", None, 3),
            acct("bio", None, 1),
            Association {
                user: Some("ann".into()),
                ..acct("physics", None, 3)
            },
        ]
    }

    #[test]
    fn fields_are_found_by_name_or_prefix_with_their_width() {
        let f = parse_format("account%256,User,defaultacc").expect("fields");
        assert_eq!(
            f.iter().map(|(f, w)| (f.name, *w)).collect::<Vec<_>>(),
            [
                ("Account", Some(256)),
                ("User", None),
                ("DefaultAccount", None)
            ]
        );
        assert!(parse_format("nosuch").is_err());
    }

    #[test]
    fn lines_are_laid_out_as_sacctmgr_prints_them() {
        let t = tree();
        let fields = parse_format("User,Account%-8,NormShares").expect("fields");
        let rows: Vec<Vec<String>> = t
            .iter()
            .filter(|a| a.user.is_some())
            .map(|a| fields.iter().map(|(f, _)| value(a, f.name, &t)).collect())
            .collect();
        let table = render(
            &fields,
            &rows,
            Layout {
                header: true,
                parsable: None,
            },
        );
        assert_eq!(
            table,
            "      User Account   NormShares\n---------- -------- -----------\n       ann physics     0.750000\n"
        );
        let parsable = render(
            &fields,
            &rows,
            Layout {
                header: false,
                parsable: Some(false),
            },
        );
        assert_eq!(parsable, "ann|physics|0.750000\n");
        // Longer than its column: cut, with a `+`.
        let cut = render(
            &parse_format("Account%4").expect("f"),
            &[vec!["physics".into()]],
            Layout {
                header: false,
                parsable: None,
            },
        );
        assert_eq!(cut, "phy+\n");
        // Fair-share standing: usage whole, the ratios as %f.
        let mut a = tree().remove(0);
        a.raw_usage = 1234.7;
        a.effective_usage = 0.25;
        a.fair_share = 0.5;
        let fields = parse_format(SSHARE_DEFAULT).expect("default");
        let row: Vec<String> = fields.iter().map(|(f, _)| value(&a, f.name, &[])).collect();
        assert_eq!(
            row,
            [
                "physics", "", "3", "0.000000", "1234", "0.250000", "0.500000"
            ]
        );
    }
}
