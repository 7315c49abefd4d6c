//! Core tests of `scancel --signal`: who may signal what, and what reaches the agents.

use super::*;
use bulkhead_proto::msg::SignalScope;

/// A running job's signal goes to its agent with its scope and the job goes on; a
/// pending job refuses any signal but SIGKILL (which cancels it); another user may not
/// signal it; one over is an error.
#[test]
fn a_signal_reaches_a_running_jobs_agent_and_nothing_else_changes() {
    let mut t = Env::new().nodes(1, 1).build();
    let (id, _) = t.submit(&user(5), sub(1));
    let signal = |jobs, signal, scope| ClientOp::Signal {
        jobs,
        signal,
        scope,
    };
    let fx = t.client(&user(5), signal(vec![id], 10, SignalScope::Batch));
    assert_sent!(fx, BrokerMessage::Signal { job, signal: 10, scope: SignalScope::Batch } if *job == id => 1);
    assert_replied!(fx, ClientReply::Cancelled(o) if o[0].result == Ok(JobState::Running) => 1);
    assert!(fx.store.is_empty(), "a signal changes nothing stored");
    assert_eq!(t.job(id).state, JobState::Running);

    let fx = t.client(&user(6), signal(vec![id], 10, SignalScope::Steps));
    assert_sent!(fx, BrokerMessage::Signal { .. } => 0);
    assert_replied!(fx, ClientReply::Cancelled(o) if o[0].result.as_ref().is_err_and(|e| e.code == ErrorCode::PermissionDenied) => 1);

    // The node is full: the next job waits.
    let (waiting, _) = t.submit(&user(5), sub(1));
    assert_eq!(t.job(waiting).state, JobState::Pending);
    let fx = t.client(&user(5), signal(vec![waiting], 12, SignalScope::Steps));
    assert_replied!(fx, ClientReply::Cancelled(o) if o[0].result.as_ref().is_err_and(|e| e.message.contains("pending execution")) => 1);
    let fx = t.client(&user(5), signal(vec![waiting], 9, SignalScope::Full));
    assert_replied!(fx, ClientReply::Cancelled(o) if o[0].result == Ok(JobState::Cancelled) => 1);
    assert_eq!(t.job(waiting).state, JobState::Cancelled);
    let fx = t.client(&user(5), signal(vec![waiting], 10, SignalScope::Steps));
    assert_replied!(fx, ClientReply::Cancelled(o) if o[0].result.as_ref().is_err_and(|e| e.code == ErrorCode::AlreadyFinished) => 1);
}
