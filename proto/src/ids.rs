//! Typed identifiers, so that a job id can never be passed where a node id is expected.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A job's id, unique for the life of a cluster's store, assigned by the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct JobId(pub u64);

/// A node's id, assigned by the broker when a node first registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NodeId(pub u32);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Why a string is not a job id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid job id {0:?}: expected a positive integer")]
pub struct ParseJobIdError(pub String);

impl FromStr for JobId {
    type Err = ParseJobIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(JobId(n)),
            _ => Err(ParseJobIdError(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_id_parses_positive_integers_only() {
        assert_eq!("42".parse::<JobId>(), Ok(JobId(42)));
        assert_eq!(" 7 ".parse::<JobId>(), Ok(JobId(7)));
        assert!("0".parse::<JobId>().is_err());
        assert!("-1".parse::<JobId>().is_err());
        assert!("12abc".parse::<JobId>().is_err());
        assert_eq!(JobId(9).to_string(), "9");
    }
}
