//! Fair-share: a tree of accounts with shares, usage decayed with a half-life, and the
//! factor that makes accounts over their share sink.
//!
//! An account's normalised share is its shares over its siblings', times its parent's
//! normalised share. Its usage is the billing it was charged (GPU-seconds and
//! CPU-seconds, weighted), decayed by half every `half_life`; its parent's usage includes
//! its children's. The factor is Slurm's classic `2^(-usage/share)`, with usage
//! normalised by the whole cluster's: 1 for an account that used nothing, 0.5 for one
//! that used exactly its share, towards 0 beyond. Because it only orders jobs, an
//! account's idle share is not held back for it: others run meanwhile.

use crate::model::{AccountIdx, AccountSpec, Time};

#[derive(Debug, Clone)]
pub struct FairShare {
    accounts: Vec<AccountSpec>,
    norm_shares: Vec<f64>,
    usage: Vec<f64>,
    /// Usage of each user within each account (users are the tree's leaves).
    user_usage: std::collections::HashMap<(AccountIdx, u32), f64>,
    /// Users known in each account, who share its part equally.
    users: std::collections::HashMap<AccountIdx, std::collections::BTreeSet<u32>>,
    last: Time,
    half_life: Time,
}

impl FairShare {
    pub fn new(accounts: Vec<AccountSpec>, half_life: Time) -> FairShare {
        let n = accounts.len();
        let norm: Vec<f64> = (0..n).map(|i| Self::share_of(&accounts, i)).collect();
        FairShare {
            accounts,
            norm_shares: norm,
            usage: vec![0.0; n],
            user_usage: Default::default(),
            users: Default::default(),
            last: 0,
            half_life: half_life.max(1),
        }
    }

    fn share_of(accounts: &[AccountSpec], i: usize) -> f64 {
        let a = &accounts[i];
        let siblings: u32 = accounts
            .iter()
            .filter(|s| s.parent == a.parent)
            .map(|s| s.shares)
            .sum();
        let mine = if siblings == 0 {
            0.0
        } else {
            f64::from(a.shares) / f64::from(siblings)
        };
        match a.parent {
            Some(p) => mine * Self::share_of(accounts, p.0 as usize),
            None => mine,
        }
    }

    pub fn accounts(&self) -> &[AccountSpec] {
        &self.accounts
    }

    /// Decays all usage to `now`.
    pub fn decay_to(&mut self, now: Time) {
        if now <= self.last {
            return;
        }
        let k = 0.5f64.powf((now - self.last) as f64 / self.half_life as f64);
        for u in &mut self.usage {
            *u *= k;
        }
        for u in self.user_usage.values_mut() {
            *u *= k;
        }
        self.last = now;
    }

    /// Makes a user one of an account's leaves (from its first job on).
    pub fn add_user(&mut self, account: AccountIdx, user: u32) {
        self.users.entry(account).or_default().insert(user);
    }

    /// Charges a user's usage, within the account, and the account's.
    pub fn charge_user(&mut self, account: AccountIdx, user: u32, amount: f64) {
        self.add_user(account, user);
        *self.user_usage.entry((account, user)).or_default() += amount;
        self.charge(account, amount);
    }

    /// The fair-share factor of a user within an account: the account's share divided
    /// equally among its users, against the user's own usage. One user alone is the
    /// account.
    pub fn user_factor(&self, account: AccountIdx, user: u32) -> f64 {
        let n = self.users.get(&account).map_or(0, |u| u.len());
        if n <= 1 {
            return self.factor(account);
        }
        let share = self.norm_share(account) / n as f64;
        if share <= 0.0 {
            return 0.0;
        }
        2f64.powf(-self.user_effective_usage(account, user) / share)
    }

    /// Charges `amount` of billing to an account and its ancestors.
    pub fn charge(&mut self, account: AccountIdx, amount: f64) {
        let mut a = Some(account);
        while let Some(i) = a {
            let Some(u) = self.usage.get_mut(i.0 as usize) else {
                return;
            };
            *u += amount;
            a = self.accounts[i.0 as usize].parent;
        }
    }

    /// Total usage of the root accounts.
    fn total(&self) -> f64 {
        self.accounts
            .iter()
            .zip(&self.usage)
            .filter(|(a, _)| a.parent.is_none())
            .map(|(_, u)| *u)
            .sum()
    }

    /// The fair-share factor of an account, in [0, 1].
    pub fn factor(&self, account: AccountIdx) -> f64 {
        let i = account.0 as usize;
        let share = self.norm_shares.get(i).copied().unwrap_or(0.0);
        if share <= 0.0 {
            return 0.0;
        }
        let total = self.total();
        let usage = if total > 0.0 {
            self.usage[i] / total
        } else {
            0.0
        };
        2f64.powf(-usage / share)
    }

    /// Every account's decayed usage, by name, and the time it is decayed to: what the
    /// caller stores so that fair-share survives its restart.
    pub fn snapshot(&self) -> (Time, Vec<(String, f64)>) {
        let mut out: Vec<(String, f64)> = self
            .accounts
            .iter()
            .zip(&self.usage)
            .map(|(a, u)| (a.name.clone(), *u))
            .collect();
        for ((a, user), u) in &self.user_usage {
            if let Some(acc) = self.accounts.get(a.0 as usize) {
                out.push((format!("{}@{user}", acc.name), *u));
            }
        }
        (self.last, out)
    }

    /// Restores a [`FairShare::snapshot`]; accounts no longer configured are dropped.
    pub fn restore(&mut self, at: Time, usage: &[(String, f64)]) {
        for (name, u) in usage {
            if let Some((account, user)) = name.rsplit_once('@')
                && let (Some(i), Ok(uid)) = (
                    self.accounts.iter().position(|a| a.name == account),
                    user.parse::<u32>(),
                )
            {
                if u.is_finite() && *u >= 0.0 {
                    let a = AccountIdx(i as u32);
                    self.add_user(a, uid);
                    self.user_usage.insert((a, uid), *u);
                }
                continue;
            }
            if let Some(i) = self.accounts.iter().position(|a| &a.name == name)
                && u.is_finite()
                && *u >= 0.0
            {
                self.usage[i] = *u;
            }
        }
        self.last = self.last.max(at);
    }

    /// An account's usage over the whole cluster's (sshare's `EffectvUsage`).
    pub fn effective_usage(&self, account: AccountIdx) -> f64 {
        ratio(self.usage(account), self.total())
    }

    /// A user's usage within an account.
    pub fn user_usage(&self, account: AccountIdx, user: u32) -> f64 {
        self.user_usage
            .get(&(account, user))
            .copied()
            .unwrap_or(0.0)
    }

    /// A user's usage within an account over the whole cluster's.
    pub fn user_effective_usage(&self, account: AccountIdx, user: u32) -> f64 {
        ratio(self.user_usage(account, user), self.total())
    }

    pub fn usage(&self, account: AccountIdx) -> f64 {
        self.usage.get(account.0 as usize).copied().unwrap_or(0.0)
    }

    pub fn norm_share(&self, account: AccountIdx) -> f64 {
        self.norm_shares
            .get(account.0 as usize)
            .copied()
            .unwrap_or(0.0)
    }
}

/// `part` over `whole`; 0 when there is no whole.
fn ratio(part: f64, whole: f64) -> f64 {
    if whole > 0.0 { part / whole } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> FairShare {
        FairShare::new(
            vec![
                AccountSpec {
                    name: "physics".into(),
                    parent: None,
                    shares: 2,
                },
                AccountSpec {
                    name: "bio".into(),
                    parent: None,
                    shares: 1,
                },
                AccountSpec {
                    name: "physics-hep".into(),
                    parent: Some(AccountIdx(0)),
                    shares: 1,
                },
                AccountSpec {
                    name: "physics-astro".into(),
                    parent: Some(AccountIdx(0)),
                    shares: 3,
                },
            ],
            3600,
        )
    }

    #[test]
    fn usage_survives_a_snapshot_and_restore() {
        let mut f = tree();
        f.charge(AccountIdx(3), 100.0);
        f.decay_to(3600);
        let (at, usage) = f.snapshot();
        let mut g = tree();
        g.restore(at, &usage);
        assert_eq!(g.usage(AccountIdx(3)), 50.0);
        assert_eq!(g.usage(AccountIdx(0)), 50.0);
        assert_eq!(g.factor(AccountIdx(1)), f.factor(AccountIdx(1)));
        g.restore(0, &[("gone".into(), 5.0), ("bio".into(), f64::NAN)]);
        assert_eq!(g.usage(AccountIdx(1)), 0.0);
    }

    #[test]
    fn shares_normalise_down_the_tree() {
        let f = tree();
        assert!((f.norm_share(AccountIdx(0)) - 2.0 / 3.0).abs() < 1e-9);
        assert!((f.norm_share(AccountIdx(1)) - 1.0 / 3.0).abs() < 1e-9);
        assert!((f.norm_share(AccountIdx(3)) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn usage_over_share_sinks_and_decays_by_half_per_half_life() {
        let mut f = tree();
        assert_eq!(f.factor(AccountIdx(1)), 1.0);
        f.charge(AccountIdx(3), 100.0);
        assert_eq!(
            f.usage(AccountIdx(0)),
            100.0,
            "the parent carries its child's usage"
        );
        assert!(f.factor(AccountIdx(3)) < f.factor(AccountIdx(1)));
        // Exactly its share of usage: factor 1/2.
        let mut g = tree();
        g.charge(AccountIdx(0), 200.0);
        g.charge(AccountIdx(1), 100.0);
        assert!((g.factor(AccountIdx(0)) - 0.5).abs() < 1e-9);
        assert!((g.factor(AccountIdx(1)) - 0.5).abs() < 1e-9);
        f.decay_to(3600);
        assert!((f.usage(AccountIdx(3)) - 50.0).abs() < 1e-9);
    }
}
