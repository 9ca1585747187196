//! A store that refuses checksum headers, as many S3-compatible stores did once boto3 and
//! the AWS CLI began sending them by default: a real server behind a proxy that answers
//! every write carrying an `x-amz-checksum-*` header with the error such a store gives,
//! and forwards the rest (reads that ask for a checksum with `x-amz-checksum-mode` too,
//! which such stores ignore).

use crate::proxy::{CountingProxy, Fault, FaultHandle, RequestKind, Rule};

/// How a store words its refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Cloudflare R2 before it took checksums: 501 NotImplemented naming the header.
    NotImplemented,
    /// Backblaze B2 and older appliances: 400 InvalidArgument naming the header.
    InvalidArgument,
}

impl Refusal {
    fn fault(self) -> Fault {
        match self {
            Refusal::NotImplemented => Fault::error_saying(
                501,
                "NotImplemented",
                "Header 'x-amz-checksum-algorithm' with value 'CRC64NVME' not implemented",
            ),
            Refusal::InvalidArgument => Fault::error_saying(
                400,
                "InvalidArgument",
                "Unsupported header 'x-amz-checksum-crc64nvme' received for this API call.",
            ),
        }
    }
}

/// The refusing store: point clients at [`RefusingStore::endpoint`].
#[derive(Debug)]
pub struct RefusingStore {
    proxy: CountingProxy,
    refusals: Vec<FaultHandle>,
}

impl RefusingStore {
    /// In front of the server at `upstream_endpoint` (a loopback `http://` URL).
    pub fn start(upstream_endpoint: &str, refusal: Refusal) -> RefusingStore {
        let proxy = CountingProxy::start(upstream_endpoint);
        // Writes: PUTs of objects and parts, and the POSTs and DELETEs of multipart
        // uploads and DeleteObjects. GETs and HEADs go through.
        let refusals = [RequestKind::Put, RequestKind::Other]
            .into_iter()
            .map(|kind| {
                proxy.inject(
                    Rule::kind(kind).with_header("x-amz-checksum-"),
                    refusal.fault(),
                )
            })
            .collect();
        RefusingStore { proxy, refusals }
    }

    pub fn endpoint(&self) -> String {
        self.proxy.endpoint()
    }

    /// Writes refused so far for carrying checksum headers.
    pub fn refused(&self) -> u64 {
        self.refusals.iter().map(FaultHandle::fired).sum()
    }
}
