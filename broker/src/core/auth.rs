//! Who may do what: a caller's role, the one check of whether a caller may act on
//! a job (cancel, hold and release, read its script, see it), the one check of a
//! request that needs a role, and what of a job a caller may see.

use super::*;

/// What a caller asks to do to a job, for [`Core::may_act_on`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JobAction {
    Cancel,
    /// Hold or release.
    Hold,
    /// Read its script and submitted environment (`bh show --script`, `--env`).
    ReadScript,
    /// See it at all (`bh show` when the privacy setting hides others' jobs).
    Show,
    /// Change a pending job's time limit or partition (`scontrol update`).
    Update,
    /// Stop it and queue it again (`scontrol requeue`).
    Requeue,
}

impl JobAction {
    /// What a user may do to their own jobs only, as the refusal says it.
    fn only_own(self) -> &'static str {
        match self {
            JobAction::Cancel => "cancel only their own jobs",
            JobAction::Hold => "hold and release only their own jobs",
            JobAction::ReadScript => "read the script and environment only of their own jobs",
            JobAction::Show => "see only their own jobs",
            JobAction::Update => "update only their own jobs",
            JobAction::Requeue => "requeue only their own jobs",
        }
    }
}

impl Core {
    /// Whether a job is the caller's to act on: its owner's, and operators' (and
    /// administrators').
    pub(super) fn owns_or_operates(&self, caller: &Caller, j: &Job) -> bool {
        caller.uid == j.uid || self.role(caller) >= Role::Operator
    }

    /// Job `id`, if it exists and the caller may do `action` to it; else the refusal.
    pub(super) fn job_for(
        &self,
        caller: &Caller,
        id: JobId,
        action: JobAction,
    ) -> Result<&Job, ErrorReply> {
        let j = self
            .jobs
            .get(&id)
            .ok_or_else(|| err(ErrorCode::NotFound, format!("job {id} does not exist")))?;
        self.may_act_on(caller, j, action)?;
        Ok(j)
    }

    /// May this caller do `action` to job `j`? The one check of every request that
    /// acts on a job, with one shape of refusal. The owner is named unless the
    /// privacy setting hides other users' jobs.
    pub(super) fn may_act_on(
        &self,
        caller: &Caller,
        j: &Job,
        action: JobAction,
    ) -> Result<(), ErrorReply> {
        if self.owns_or_operates(caller, j) {
            return Ok(());
        }
        Err(self.refusal(caller, j, action))
    }

    /// The refusal of `action` on another user's job, logged.
    pub(super) fn refusal(&self, caller: &Caller, j: &Job, action: JobAction) -> ErrorReply {
        tracing::warn!(user = %caller.user, uid = caller.uid, job = %j.id, ?action, "refused an action on another user's job");
        let owner = match self.cfg.privacy {
            Privacy::Hidden => "another user".to_string(),
            Privacy::Visible | Privacy::Redacted => format!("{} (uid {})", j.user, j.uid),
        };
        err(
            ErrorCode::PermissionDenied,
            format!(
                "job {} belongs to {owner}; {} may {} (operators may act on anyone's)",
                j.id,
                caller.user,
                action.only_own()
            ),
        )
    }

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

    /// The one check of a request that needs a role (`bh admin`, `bh report`, other
    /// users' accounting records): `what` says what the caller asked, as "may not
    /// {what}" reads.
    pub(super) fn require(
        &self,
        caller: &Caller,
        needed: Role,
        what: &str,
    ) -> Result<(), ErrorReply> {
        if self.role(caller) >= needed {
            return Ok(());
        }
        tracing::warn!(user = %caller.user, uid = caller.uid, ?needed, what, "refused a request for a role the caller lacks");
        Err(err(
            ErrorCode::PermissionDenied,
            format!(
                "{} may not {what}: it is for {} (root, or users the configuration names)",
                caller.user,
                match needed {
                    Role::Admin => "administrators",
                    Role::Operator | Role::User => "operators and administrators",
                }
            ),
        ))
    }

    /// A job as the caller may see it: whole if it is theirs or they operate the
    /// cluster; else as the privacy setting says (redacted, or not at all).
    /// `omit`: the parts the caller leaves out ([`Parts`]).
    pub(super) fn seen_by(&self, caller: &Caller, j: &Job, omit: Parts) -> Option<JobInfo> {
        self.seen_view(caller, j, omit, &self.listing(), views::Waiting::Ask)
            .map(|v| v.to_info())
    }

    /// [`Core::seen_by`], borrowed from the job ([`Core::view_without`]);
    /// `ctx`: what a whole listing looks up once ([`Core::listing`]).
    pub(super) fn seen_view<'a>(
        &'a self,
        caller: &Caller,
        j: &'a Job,
        omit: Parts,
        ctx: &views::Listing,
        entry: views::Waiting<'a>,
    ) -> Option<bulkhead_proto::view::JobView<'a>> {
        if self.owns_or_operates(caller, j) {
            return Some(self.view_without(j, omit, ctx, entry));
        }
        match self.cfg.privacy {
            Privacy::Visible => Some(self.view_without(j, omit, ctx, entry)),
            Privacy::Hidden => None,
            Privacy::Redacted => {
                // Another's paths, denials, usage and what the submission says of
                // itself (comment, input path, node list...) are never made at all.
                let hidden = Parts::PATHS
                    .with(Parts::DENIALS)
                    .with(Parts::USAGE)
                    .with(Parts::EXTRA);
                let mut view = self.view_without(j, omit.with(hidden), ctx, entry);
                view.name = "(hidden)";
                view.reason = view.reason.filter(|_| j.state == JobState::Pending);
                Some(view)
            }
        }
    }
}
