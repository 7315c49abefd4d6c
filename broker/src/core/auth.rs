//! Who may do what: a caller's role, and what of a job a caller may see.

use super::*;

impl Core {
    /// What a caller may do.
    pub fn role(&self, caller: &Caller) -> Role {
        if caller.uid == 0 || self.cfg.admins.contains(&caller.user) {
            Role::Admin
        } else if self.cfg.operators.contains(&caller.user) {
            Role::Operator
        } else {
            Role::User
        }
    }

    /// A job as the caller may see it: whole if it is theirs or they operate the
    /// cluster; else as the privacy setting says (redacted, or not at all).
    pub(super) fn seen_by(&self, caller: &Caller, j: &Job) -> Option<JobInfo> {
        if caller.uid == j.uid || self.role(caller) >= Role::Operator {
            return Some(self.info(j));
        }
        match self.cfg.privacy {
            Privacy::Visible => Some(self.info(j)),
            Privacy::Hidden => None,
            Privacy::Redacted => {
                let mut info = self.info(j);
                info.name = "(hidden)".into();
                info.workdir = String::new();
                info.stdout = String::new();
                info.stderr = String::new();
                info.reason = info.reason.filter(|_| j.state == JobState::Pending);
                info.denials.clear();
                info.usage = None;
                Some(info)
            }
        }
    }
}
