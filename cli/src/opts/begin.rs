//! `--begin`'s (and sacct's `-S`/`-E`) time forms, as Slurm's `parse_time` reads them:
//! `now[{+|-}N[UNITS]]`,
//! `HH:MM[:SS][AM|PM]` (tomorrow if the time has passed today), `today`, `tomorrow`,
//! `midnight`, `noon`, `elevenses`, `fika`, `teatime`, and dates `YYYY-MM-DD`,
//! `MMDD[YY]`, `MM/DD[/YY]`, `MM.DD[.YY]`, each with an optional `THH:MM[:SS]`.
//! Local time, through the C library (the submitter's `TZ`).

/// The time `s` names, in Unix seconds, seen at `now` (Unix seconds).
pub fn parse_begin(s: &str, now: i64) -> Result<i64, String> {
    let t = s.trim().to_ascii_lowercase();
    let bad = || {
        format!(
            "invalid time specification {s:?}: use now[+N[seconds|minutes|hours|days|weeks]], HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY], today, tomorrow, midnight or noon"
        )
    };
    if let Some(rest) = t.strip_prefix("now") {
        // `now+N` or `now-N` (sacct's times look back), in seconds by default; blanks
        // may come between.
        let rest = rest.trim_start_matches([' ', '\t']);
        if rest.is_empty() {
            return Ok(now);
        }
        let (sign, rest) = match (rest.strip_prefix('+'), rest.strip_prefix('-')) {
            (Some(r), _) => (1, r),
            (None, Some(r)) => (-1, r),
            (None, None) => return Err(bad()),
        };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let n: i64 = rest[..digits]
            .parse::<i64>()
            .map_err(|_| bad())?
            .checked_mul(sign)
            .ok_or_else(bad)?;
        let unit = match &rest[digits..] {
            "" | "s" | "sec" | "secs" | "second" | "seconds" => 1,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "h" | "hour" | "hours" => 3600,
            "d" | "day" | "days" => 86_400,
            "w" | "week" | "weeks" => 604_800,
            _ => return Err(bad()),
        };
        return n
            .checked_mul(unit)
            .and_then(|d| now.checked_add(d))
            .filter(|t| (0..i64::from(i32::MAX)).contains(t))
            .ok_or_else(|| format!("time {s:?} is too far ahead"));
    }
    let mut tm = local(now)?;
    let named = |h: i32| -> Option<(i32, i32, i32)> { Some((h, 0, 0)) };
    let (date, time) = match t.split_once('t') {
        Some((d, tm)) if !d.is_empty() && d.as_bytes()[0].is_ascii_digit() => (Some(d), Some(tm)),
        _ => {
            if t.contains(':') || t.ends_with("am") || t.ends_with("pm") {
                (None, Some(t.as_str()))
            } else {
                (Some(t.as_str()), None)
            }
        }
    };
    // Whole words first.
    let word_time = match t.as_str() {
        "midnight" => named(0),
        "noon" => named(12),
        "elevenses" => named(11),
        "fika" => named(15),
        "teatime" => named(16),
        _ => None,
    };
    let mut explicit_date = false;
    if let Some((h, m, sec)) = word_time {
        set_time(&mut tm, h, m, sec);
    } else {
        match date {
            Some("today") => set_time(&mut tm, 0, 0, 0),
            Some("tomorrow") => {
                set_time(&mut tm, 0, 0, 0);
                tm.tm_mday += 1;
            }
            Some(d) => {
                let (y, mo, day) = parse_date(d, tm.tm_year + 1900).ok_or_else(bad)?;
                tm.tm_year = y - 1900;
                tm.tm_mon = mo - 1;
                tm.tm_mday = day;
                set_time(&mut tm, 0, 0, 0);
                explicit_date = true;
            }
            None => {}
        }
        if let Some(tt) = time {
            let (h, m, sec) = parse_clock(tt).ok_or_else(bad)?;
            set_time(&mut tm, h, m, sec);
        }
    }
    let mut at = to_unix(&mut tm)?;
    // A time of day without a date that has passed today means tomorrow, as Slurm has it.
    if !explicit_date && (date.is_none() || word_time.is_some()) && at <= now {
        tm.tm_mday += 1;
        tm.tm_isdst = -1;
        at = to_unix(&mut tm)?;
    }
    Ok(at)
}

fn set_time(tm: &mut libc::tm, h: i32, m: i32, s: i32) {
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = s;
    tm.tm_isdst = -1;
}

/// `HH:MM[:SS]` with an optional `am`/`pm`.
fn parse_clock(t: &str) -> Option<(i32, i32, i32)> {
    let (body, pm) = match (t.strip_suffix("pm"), t.strip_suffix("am")) {
        (Some(b), _) => (b.trim(), Some(true)),
        (_, Some(b)) => (b.trim(), Some(false)),
        _ => (t, None),
    };
    let parts: Vec<i32> = body
        .split(':')
        .map(|p| {
            (!p.is_empty() && p.len() <= 2 && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse().ok())
                .flatten()
        })
        .collect::<Option<_>>()?;
    let (mut h, m, s) = match parts.as_slice() {
        [h, m] => (*h, *m, 0),
        [h, m, s] => (*h, *m, *s),
        [h] if pm.is_some() => (*h, 0, 0),
        _ => return None,
    };
    match pm {
        Some(p) if !(1..=12).contains(&h) => {
            let _ = p;
            return None;
        }
        Some(true) if h != 12 => h += 12,
        Some(false) if h == 12 => h = 0,
        _ => {}
    }
    (h < 24 && m < 60 && s < 60).then_some((h, m, s))
}

/// A date: `YYYY-MM-DD`, `MMDD[YY]`, `MM/DD[/YY]` or `MM.DD[.YY]`; without a year,
/// this year.
fn parse_date(d: &str, this_year: i32) -> Option<(i32, i32, i32)> {
    let num = |p: &str| -> Option<i32> {
        (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse().ok())
            .flatten()
    };
    let year2 = |y: i32| if y < 100 { 2000 + y } else { y };
    let (y, m, day) = if d.contains('-') {
        let p: Vec<&str> = d.split('-').collect();
        match p.as_slice() {
            [y, m, dd] if y.len() == 4 => (num(y)?, num(m)?, num(dd)?),
            _ => return None,
        }
    } else if let Some(sep) = ['/', '.'].into_iter().find(|c| d.contains(*c)) {
        let p: Vec<&str> = d.split(sep).collect();
        match p.as_slice() {
            [m, dd] => (this_year, num(m)?, num(dd)?),
            [m, dd, y] => (year2(num(y)?), num(m)?, num(dd)?),
            _ => return None,
        }
    } else {
        match d.len() {
            4 => (this_year, num(&d[..2])?, num(&d[2..])?),
            6 => (year2(num(&d[4..])?), num(&d[..2])?, num(&d[2..4])?),
            _ => return None,
        }
    };
    ((1..=12).contains(&m) && (1..=31).contains(&day) && (1970..=2099).contains(&y))
        .then_some((y, m, day))
}

fn local(now: i64) -> Result<libc::tm, String> {
    let t: libc::time_t = now;
    // SAFETY: zeroed is a valid `tm`; localtime_r writes it and reads only `t`.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    if ok {
        Ok(tm)
    } else {
        Err("cannot read the local time".into())
    }
}

fn to_unix(tm: &mut libc::tm) -> Result<i64, String> {
    // SAFETY: `tm` is a valid, initialized `tm`; mktime normalizes it in place.
    let t = unsafe { libc::mktime(tm) };
    if t == -1 {
        return Err("the time is out of range".into());
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The local (hour, minute, second) and day offset from `now`'s local date.
    fn local_hms(t: i64, now: i64) -> (i32, i32, i32, i64) {
        let a = local(t).expect("local");
        let b = local(now).expect("local");
        let day = |tm: &libc::tm| i64::from(tm.tm_year) * 400 + i64::from(tm.tm_yday);
        (a.tm_hour, a.tm_min, a.tm_sec, day(&a) - day(&b))
    }

    #[test]
    fn slurm_time_forms_read_as_slurm_reads_them() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs() as i64;
        assert_eq!(parse_begin("now", now), Ok(now));
        assert_eq!(parse_begin("now+60", now), Ok(now + 60));
        assert_eq!(parse_begin("now+2hours", now), Ok(now + 7200));
        assert_eq!(parse_begin("NOW+1day", now), Ok(now + 86_400));
        // A time of day: today if still ahead, else tomorrow.
        for (spec, h) in [
            ("16:00", 16),
            ("4pm", 16),
            ("teatime", 16),
            ("noon", 12),
            ("9:30am", 9),
        ] {
            let t = parse_begin(spec, now).expect(spec);
            let (hh, _, ss, _) = local_hms(t, now);
            assert_eq!((hh, ss), (h, 0), "{spec}");
            assert!(t > now && t <= now + 86_400 + 3600, "{spec}: {t} vs {now}");
        }
        let mid = parse_begin("midnight", now).expect("midnight");
        assert_eq!(local_hms(mid, now), (0, 0, 0, 1));
        assert_eq!(parse_begin("tomorrow", now), Ok(mid));
        let today = parse_begin("today", now).expect("today");
        assert_eq!(local_hms(today, now), (0, 0, 0, 0));
        let xmas = parse_begin("2030-12-24T18:30", now).expect("date");
        let tm = local(xmas).expect("local");
        assert_eq!(
            (
                tm.tm_year + 1900,
                tm.tm_mon + 1,
                tm.tm_mday,
                tm.tm_hour,
                tm.tm_min
            ),
            (2030, 12, 24, 18, 30)
        );
        assert_eq!(parse_begin("12/24/30T18:30", now), Ok(xmas));
        assert_eq!(parse_begin("122430", now), parse_begin("2030-12-24", now));
        assert_eq!(parse_begin("12.24.30", now), parse_begin("2030-12-24", now));
        // `now-N`: Slurm's parse_time looks back too (a past --begin is no delay).
        assert_eq!(parse_begin("now-5", now), Ok(now - 5));
        assert_eq!(parse_begin("now +2minutes", now), Ok(now + 120));
        for bad in ["later", "now+x", "25:00", "2026-13-01", "now*5", "13pm", ""] {
            assert!(parse_begin(bad, now).is_err(), "{bad}");
        }
    }
}
