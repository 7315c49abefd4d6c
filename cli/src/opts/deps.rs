//! sbatch's `--array` and `--dependency` values read as Slurm reads them: index
//! lists with steps and a throttle; every dependency form (`after:J+N`, `afterok:J_N`,
//! `aftercorr`, `singleton`, `?` for any of them).

use super::resolve::strtol;
use super::*;

/// Parses `--array`: `0-999`, `1,3,5`, `0-15:4`, with an optional `%N` throttle.
pub fn parse_array(v: &str) -> Result<ArraySpec, OptsError> {
    let bad = |d: &str| value_err("array", v, d.to_string());
    let (list, throttle) = match v.split_once('%') {
        Some((l, t)) => (
            l,
            // `%0` is no limit, as slurmctld takes it.
            t.parse::<u32>()
                .map_err(|_| bad("the throttle after % must be a whole number"))
                .map(|t| (t > 0).then_some(t))?,
        ),
        None => (v, None),
    };
    // `%2` alone: slurmctld reads the empty list before the throttle as index 0
    // (recorded: `ArrayTaskId=0%2`).
    let list = if list.is_empty() && v.contains('%') {
        "0"
    } else {
        list
    };
    let mut ranges = Vec::new();
    // slurmctld's `_valid_array_inx`: `strtok` on commas (empty items are skipped:
    // `1-2,` is `1-2`), each item read by `_parse_array_tok` with `strtol` (leading
    // blanks and a `+` taken, `[` and `]` around the numbers dropped).
    for item in list.split(',').filter(|i| !i.is_empty()) {
        let not_int = || bad("indices must be integers");
        let item = item.strip_prefix('[').unwrap_or(item);
        let (a, rest) = strtol(item).ok_or_else(not_int)?;
        let rest = rest.strip_prefix(']').unwrap_or(rest);
        let (b, step, rest) = match rest.strip_prefix('-') {
            Some(r) => {
                let (b, r) = strtol(r).ok_or_else(not_int)?;
                let r = r.strip_prefix(']').unwrap_or(r);
                match r.strip_prefix(':') {
                    Some(r) => {
                        let (st, r) = strtol(r)
                            .filter(|(st, _)| *st > 0)
                            .ok_or_else(|| bad("a step must be a positive integer"))?;
                        (b, st, r.strip_prefix(']').unwrap_or(r))
                    }
                    None => (b, 1, r),
                }
            }
            None => (a, 1, rest),
        };
        if !rest.is_empty() {
            return Err(not_int());
        }
        if a < 0 {
            return Err(bad("indices must not be negative"));
        }
        if b < a {
            return Err(bad("a range must not run backwards"));
        }
        let index = |n: i64| u32::try_from(n).map_err(|_| bad("an index over the largest array"));
        ranges.push((index(a)?, index(b)?, index(step)?));
    }
    let spec = ArraySpec { ranges, throttle };
    spec.validate().map_err(|e| bad(&e.to_string()))?;
    Ok(spec)
}

/// Parses `--dependency` where all must hold (see [`parse_dependency_any`]).
pub fn parse_dependency(v: &str) -> Result<Vec<Dependency>, OptsError> {
    match parse_dependency_any(v)? {
        (deps, false) => Ok(deps),
        (_, true) => Err(value_err(
            "dependency",
            v,
            "`?` (any of) where all must hold",
        )),
    }
}

/// Parses `--dependency` as slurmctld's `update_job_dependency` reads it:
/// `TYPE:JOB[:JOB...]` items (TYPE in any case: after, afterany, afterok, afternotok,
/// aftercorr) separated by `,` (all must hold) or `?` (any one suffices: one `?`
/// makes the whole list any-of), or `singleton`. A JOB may name one task of an array
/// (`J_N`) or all of them (`J_*`) and carry `+MINUTES` (waited by `after` alone,
/// shown for the others). Job ids alone (`J[,J...]`) are the old form, each
/// `afterany`, and only where no `:` follows in the rest of the value, as slurmctld
/// decides. Returns the dependencies and whether any one suffices.
pub fn parse_dependency_any(v: &str) -> Result<(Vec<Dependency>, bool), OptsError> {
    let problem =
        |why: String| value_err("dependency", v, format!("Job dependency problem: {why}"));
    let any = v.contains('?');
    let mut out: Vec<Dependency> = Vec::new();
    // Nothing to wait for.
    if v.is_empty() || v == "0" {
        return Ok((out, false));
    }
    let push = |out: &mut Vec<Dependency>, d: Dependency| {
        // The same type on the same job (or task) once, as slurmctld keeps them.
        if !out.contains(&d) {
            out.push(d);
        }
    };
    let mut rest = v;
    loop {
        if rest.len() >= 9
            && rest.is_char_boundary(9)
            && rest[..9].eq_ignore_ascii_case("singleton")
        {
            push(&mut out, Dependency::Singleton);
            rest = &rest[9..];
        } else if !rest.contains(':') {
            // The old form: job ids alone, each `afterany`.
            if !rest.starts_with(|c: char| c.is_ascii_digit()) {
                return Err(problem(format!("{rest:?} names no dependency type")));
            }
            let (job, task, after) = job_ref(rest).map_err(problem)?;
            if after.starts_with(['+', ':', '?', '(']) {
                return Err(problem(format!("{rest:?} is not a job id")));
            }
            push(
                &mut out,
                on_job(DepKind::AfterAny, job, task, None).map_err(problem)?,
            );
            rest = after;
        } else {
            const TYPES: [(&str, Option<DepKind>); 6] = [
                ("afterburstbuffer:", Some(DepKind::AfterBurstBuffer)),
                ("afternotok:", Some(DepKind::AfterNotOk)),
                ("aftercorr:", None),
                ("afterany:", Some(DepKind::AfterAny)),
                ("afterok:", Some(DepKind::AfterOk)),
                ("after:", Some(DepKind::After)),
            ];
            let typed = |t: &str| {
                rest.len() >= t.len()
                    && rest.is_char_boundary(t.len())
                    && rest[..t.len()].eq_ignore_ascii_case(t)
            };
            if typed("expand:") {
                return Err(OptsError::Unsupported(
                    "dependency type expand",
                    "a job is not grown by another here; use after, afterany, afterok, afternotok, aftercorr, afterburstbuffer or singleton",
                ));
            }
            let Some((t, kind)) = TYPES.iter().find(|(t, _)| typed(t)) else {
                let name = rest.split([':', ',', '?']).next().unwrap_or("");
                return Err(problem(format!("unknown dependency type {name:?}")));
            };
            rest = &rest[t.len()..];
            loop {
                let (job, task, mut after) = job_ref(rest).map_err(problem)?;
                let mut delay = None;
                if let Some(m) = after.strip_prefix('+') {
                    let end = m.find(|c: char| !c.is_ascii_digit()).unwrap_or(m.len());
                    let minutes =
                        m[..end]
                            .parse::<u32>()
                            .ok()
                            .filter(|n| *n > 0)
                            .ok_or_else(|| {
                                problem(format!("{:?} is not a number of minutes", &m[..end]))
                            })?;
                    delay = Some(minutes);
                    after = &m[end..];
                }
                if after.starts_with('(') {
                    return Err(problem(
                        "a dependency's state in parentheses is not read here".into(),
                    ));
                }
                let dep = match kind {
                    Some(k) => on_job(*k, job, task, delay).map_err(problem)?,
                    None if task.is_some() => {
                        return Err(problem(
                            "aftercorr names a whole array (its tasks correspond to this array's)"
                                .into(),
                        ));
                    }
                    None => Dependency::AfterCorr(job),
                };
                push(&mut out, dep);
                match after.strip_prefix(':') {
                    Some(r) => rest = r,
                    None => {
                        rest = after;
                        break;
                    }
                }
            }
        }
        match rest.as_bytes().first() {
            None => break,
            Some(b',' | b'?') => rest = &rest[1..],
            Some(_) => return Err(problem(format!("unexpected {rest:?}"))),
        }
    }
    Ok((out, any))
}

/// A job reference at the start of `s`: the job, the array task it names (`J_N`;
/// `J_*` is the whole array), and what follows. The next character must be one
/// slurmctld allows after a job id.
fn job_ref(s: &str) -> Result<(JobId, Option<u32>, &str), String> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let job = s[..end]
        .parse::<u64>()
        .ok()
        .filter(|j| *j > 0)
        .map(JobId)
        .ok_or_else(|| {
            format!(
                "{:?} is not a job id",
                s.split([':', ',', '?', '+']).next().unwrap_or("")
            )
        })?;
    let mut after = &s[end..];
    let mut task = None;
    if let Some(t) = after.strip_prefix('_') {
        if let Some(r) = t.strip_prefix('*') {
            after = r;
        } else {
            let e = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            task = Some(
                t[..e]
                    .parse::<u32>()
                    .map_err(|_| format!("{:?} is not an array task index", &t[..e]))?,
            );
            after = &t[e..];
        }
    }
    if !(after.is_empty() || after.starts_with([',', '?', ':', '+', '('])) {
        return Err(format!("{s:?} is not a job id"));
    }
    Ok((job, task, after))
}

/// A dependency of kind `k` on `job` (or one of its tasks), with `+delay` minutes.
fn on_job(
    k: DepKind,
    job: JobId,
    task: Option<u32>,
    delay: Option<u32>,
) -> Result<Dependency, String> {
    Ok(match (task, delay) {
        (Some(n), None) => Dependency::Task(k, job, n),
        (Some(_), Some(_)) => return Err("+MINUTES is for a whole job, not one array task".into()),
        (None, Some(m)) if k == DepKind::After => Dependency::AfterDelay(job, m),
        (None, Some(m)) => Dependency::Delayed(k, job, m),
        (None, None) => match k {
            DepKind::After => Dependency::After(job),
            DepKind::AfterAny => Dependency::AfterAny(job),
            DepKind::AfterOk => Dependency::AfterOk(job),
            DepKind::AfterNotOk => Dependency::AfterNotOk(job),
            DepKind::AfterBurstBuffer => Dependency::AfterBurstBuffer(job),
        },
    })
}
