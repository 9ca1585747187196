//! Which S3-compatible server a test runs against.

use std::fmt;
use std::str::FromStr;

/// The servers the kit can start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerKind {
    /// Versity S3 Gateway over a POSIX directory.
    Versitygw,
    /// SeaweedFS in `weed mini` all-in-one mode.
    SeaweedFs,
}

impl ServerKind {
    pub const ALL: [ServerKind; 2] = [ServerKind::Versitygw, ServerKind::SeaweedFs];

    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Versitygw => "versitygw",
            ServerKind::SeaweedFs => "seaweedfs",
        }
    }

    /// The executable that runs it.
    pub(crate) fn binary(self) -> &'static str {
        match self {
            ServerKind::Versitygw => "versitygw",
            ServerKind::SeaweedFs => "weed",
        }
    }
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ServerKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ServerKind::ALL
            .into_iter()
            .find(|kind| kind.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown server {s:?}: expected versitygw or seaweedfs"))
    }
}
