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
    /// MinIO on a single drive, the server most self-hosting users run.
    Minio,
    /// moto's server, which many test suites stand in for S3 with; it labels COMPOSITE
    /// checksums with neither type nor part count, and gives each upload part its own ETag.
    Moto,
}

impl ServerKind {
    pub const ALL: [ServerKind; 4] = [
        ServerKind::Versitygw,
        ServerKind::SeaweedFs,
        ServerKind::Minio,
        ServerKind::Moto,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Versitygw => "versitygw",
            ServerKind::SeaweedFs => "seaweedfs",
            ServerKind::Minio => "minio",
            ServerKind::Moto => "moto",
        }
    }

    /// The executable that runs it.
    pub(crate) fn binary(self) -> &'static str {
        match self {
            ServerKind::Versitygw => "versitygw",
            ServerKind::SeaweedFs => "weed",
            ServerKind::Minio => "minio",
            ServerKind::Moto => "moto_server",
        }
    }

    /// The kind's place in [`ServerKind::ALL`], for tables of one thing per kind.
    pub(crate) fn index(self) -> usize {
        match self {
            ServerKind::Versitygw => 0,
            ServerKind::SeaweedFs => 1,
            ServerKind::Minio => 2,
            ServerKind::Moto => 3,
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
            .ok_or_else(|| {
                let names: Vec<_> = ServerKind::ALL.iter().map(|kind| kind.name()).collect();
                format!("unknown server {s:?}: expected one of {}", names.join(", "))
            })
    }
}
