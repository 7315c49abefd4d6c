//! `scontrol update NodeName=...` read as scontrol 22.05 reads it
//! (`src/scontrol/update_node.c`): the nodes (a host list), `State=DRAIN` with its
//! `Reason=`, or `State=RESUME`/`UNDRAIN`, the operator's drain and resume here. What
//! Bulkhead does not change of a node is refused with scontrol's words. Pure.

/// What an update of nodes asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NodeAction {
    Drain(String),
    Resume,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeUpdate {
    pub nodes: Vec<String>,
    pub action: NodeAction,
}

/// scontrol's `xstrncasecmp(tag, name, MAX(len, min))`: `tag` is `name` or a prefix of
/// it at least `min` long, case apart.
pub(crate) fn names(tag: &str, name: &str, min: usize) -> bool {
    tag.len() >= min && tag.len() <= name.len() && name[..tag.len()].eq_ignore_ascii_case(tag)
}

/// Whether `scontrol update`'s words name nodes rather than a job: scontrol looks at
/// every word's key, and a job's key wins.
pub(crate) fn is_node_update(words: &[String]) -> bool {
    let keys: Vec<&str> = words
        .iter()
        .map(|w| w.split_once('=').map_or(w.as_str(), |(k, _)| k))
        .collect();
    let job = keys
        .iter()
        .any(|k| names(k, "JobId", 3) || names(k, "JobNAME", 3));
    !job && keys.iter().any(|k| names(k, "NodeName", 3))
}

/// The update, or what scontrol prints (standard error) and exits 1 with.
pub(crate) fn parse(words: &[String]) -> Result<NodeUpdate, String> {
    let mut nodes = None;
    let mut state: Option<&str> = None;
    let mut reason: Option<String> = None;
    for w in words {
        let Some((tag, val)) = w.split_once('=') else {
            return Err(format!(
                "scontrol: error: Invalid input: {w}  Request aborted"
            ));
        };
        if names(tag, "NodeName", 1) {
            nodes = Some(val);
        } else if names(tag, "Reason", 1) {
            // A reason quoted inside the word loses its quotes, as scontrol strips them.
            let v = val.strip_prefix('"').unwrap_or(val);
            let v = v.strip_suffix('"').unwrap_or(v);
            reason = Some(v.to_string());
        } else if names(tag, "State", 1) {
            let is = |name: &str| names(val, name, 3);
            state = Some(if is("DRAIN") {
                "DRAIN"
            } else if is("RESUME") {
                "RESUME"
            } else if is("UNDRAIN") {
                "UNDRAIN"
            } else if is("DOWN") || is("FAIL") || is("NoResp") {
                return Err(format!(
                    "scontrol: error: State={val} is not available here: a node is drained \
                     (State=DRAIN: its jobs run on, no new one starts) or resumed; \
                     cancel its jobs with scancel -w"
                ));
            } else if is("FUTURE")
                || is("CANCEL_REBOOT")
                || names(val, "POWER_DOWN", 7)
                || names(val, "POWER_DOWN_ASAP", 12)
                || names(val, "POWER_DOWN_FORCE", 12)
                || names(val, "POWER_UP", 7)
            {
                return Err(format!(
                    "Update of this parameter is not supported: {w}\nRequest aborted"
                ));
            } else {
                return Err(format!(
                    "Invalid input: {w}\nRequest aborted\n\
                     Valid states are: NoResp DRAIN FAIL FUTURE RESUME POWER_DOWN POWER_UP UNDRAIN"
                ));
            });
        } else {
            return Err(format!(
                "Update of this parameter is not supported: {w}\nRequest aborted"
            ));
        }
    }
    let Some(list) = nodes else {
        return Err("No valid entity in update command".into());
    };
    let nodes = bulkhead_proto::hostlist::expand(list, bulkhead_proto::job::MAX_NODE_NAMES)
        .map_err(|_| "slurm_update error: Invalid node name specified".to_string())?;
    let reason = reason.filter(|r| !r.is_empty());
    let action = match (state, reason) {
        (Some("DRAIN"), Some(r)) => NodeAction::Drain(r),
        (Some("DRAIN"), None) => {
            return Err(
                "You must specify a reason when DOWNING or DRAINING a node. Request denied".into(),
            );
        }
        (Some(_), _) => NodeAction::Resume,
        // A reason alone sets it on a node in any state in Slurm; here a reason is a
        // drain's.
        (None, Some(_)) => {
            return Err(
                "scontrol: error: a Reason= alone is not kept here: give State=DRAIN with it"
                    .into(),
            );
        }
        (None, None) => return Err("No changes specified".into()),
    };
    Ok(NodeUpdate { nodes, action })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn node_updates_read_as_scontrol_reads_them() {
        assert!(is_node_update(&w(&["NodeName=n[1-2]", "State=DRAIN"])));
        assert!(is_node_update(&w(&["nodename=n1", "state=resume"])));
        assert!(!is_node_update(&w(&["JobId=5", "TimeLimit=5"])));
        assert_eq!(
            parse(&w(&["NodeName=n[1-2]", "State=drain", "Reason=\"fan\""])),
            Ok(NodeUpdate {
                nodes: vec!["n1".into(), "n2".into()],
                action: NodeAction::Drain("fan".into())
            })
        );
        assert_eq!(
            parse(&w(&["node=n1", "st=RES"])).map(|u| u.action),
            Ok(NodeAction::Resume)
        );
        assert_eq!(
            parse(&w(&["NodeName=n1", "State=UNDRAIN"])).map(|u| u.action),
            Ok(NodeAction::Resume)
        );
        assert_eq!(
            parse(&w(&["NodeName=n1", "State=DRAIN"])),
            Err("You must specify a reason when DOWNING or DRAINING a node. Request denied".into())
        );
        assert!(
            parse(&w(&["NodeName=n1", "State=bogus"]))
                .is_err_and(|e| e.contains("Valid states are:"))
        );
        assert!(
            parse(&w(&["NodeName=n1", "Weight=5"]))
                .is_err_and(|e| e.starts_with("Update of this parameter is not supported"))
        );
        assert!(parse(&w(&["NodeName=n1", "State=DOWN", "Reason=x"])).is_err());
        assert_eq!(
            parse(&w(&["NodeName=n1"])),
            Err("No changes specified".into())
        );
    }
}
