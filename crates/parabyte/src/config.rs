//! The one place options live. The CLI's flags and the Python keyword arguments both fill
//! these structs, so the two front ends cannot drift apart.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::retry::RetryPolicy;

/// Waiting for a connection to open, unless `--timeout` asks for less.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Silence on an open connection before the request is retried (`--timeout`, `timeout=`).
const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How to reach and authenticate against the store.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Region to sign for; `None` asks the AWS chain (`AWS_REGION`, profile), then us-east-1.
    pub region: Option<String>,
    /// A custom S3-compatible endpoint; `None` asks the AWS chain (`AWS_ENDPOINT_URL`), then AWS.
    pub endpoint_url: Option<String>,
    /// Named profile from `~/.aws/config`; `None` asks `AWS_PROFILE`, then "default".
    pub profile: Option<String>,
    /// Force `https://host/bucket/key` addressing (always used for custom endpoints).
    pub path_style: bool,
    /// Send anonymous requests (public buckets): no credentials are looked up.
    pub no_sign_request: bool,
    /// Explicit keys, instead of the AWS credential chain.
    pub credentials: Option<Keys>,
    /// Extra PEM roots to trust, on top of the system's (`AWS_CA_BUNDLE`).
    pub ca_bundle: Option<PathBuf>,
    /// Limit for establishing a connection.
    pub connect_timeout: Duration,
    /// Limit for silence on an open connection (no byte received).
    pub read_timeout: Duration,
    /// Local addresses to send from, taken in turn, so that connections spread over several
    /// network interfaces (`--bind`); empty lets the system choose.
    pub local_addresses: Vec<IpAddr>,
    /// Requester-pays buckets: every request says the requester pays for it
    /// (`x-amz-request-payer: requester`, aws's `--request-payer requester`).
    pub request_payer: bool,
}

/// An access key pair given explicitly (and an optional session token).
#[derive(Clone, Default)]
pub struct Keys {
    /// `AWS_ACCESS_KEY_ID`'s counterpart.
    pub access_key_id: String,
    /// `AWS_SECRET_ACCESS_KEY`'s counterpart; never printed.
    pub secret_access_key: String,
    /// `AWS_SESSION_TOKEN`'s counterpart, for temporary credentials; never printed.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Keys {
    // Never print a secret, even in debug output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"** redacted **")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "** redacted **"),
            )
            .finish()
    }
}

impl Default for StoreConfig {
    /// Everything from the AWS chain, and the default timeouts.
    fn default() -> Self {
        StoreConfig {
            region: None,
            endpoint_url: None,
            profile: None,
            path_style: false,
            no_sign_request: false,
            credentials: None,
            ca_bundle: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            read_timeout: DEFAULT_READ_TIMEOUT,
            local_addresses: Vec::new(),
            request_payer: false,
        }
    }
}

impl StoreConfig {
    /// Defaults plus what the AWS environment variables say that aws-config does not read itself.
    pub fn from_env() -> Self {
        StoreConfig {
            ca_bundle: std::env::var_os("AWS_CA_BUNDLE").map(PathBuf::from),
            ..StoreConfig::default()
        }
    }

    /// Apply `--timeout SECONDS` (the `timeout=` keyword in Python): the limit for silence on
    /// a connection, and for connecting too unless that default is already shorter.
    pub fn with_timeout(self, timeout: Duration) -> Self {
        StoreConfig {
            connect_timeout: timeout.min(self.connect_timeout),
            read_timeout: timeout,
            ..self
        }
    }
}

/// Where an S3 source lives when it is not where the destination is: another endpoint,
/// region or account (`--source-endpoint-url`, `--source-region`, `--source-profile`,
/// `--source-no-sign-request`). What it leaves unset is the destination's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceStore {
    /// The source's S3-compatible endpoint.
    pub endpoint_url: Option<String>,
    /// The region the source is signed for.
    pub region: Option<String>,
    /// Its credentials (and its region, unless `region` names one): another account.
    pub profile: Option<String>,
    /// Read anonymously: a public bucket.
    pub no_sign_request: bool,
}

impl SourceStore {
    /// The source's store beside `destination`'s; `None` when nothing sets it apart.
    pub fn config(&self, destination: &StoreConfig) -> Option<StoreConfig> {
        if *self == SourceStore::default() {
            return None;
        }
        let own_account = self.profile.is_some() || self.no_sign_request;
        Some(StoreConfig {
            endpoint_url: self
                .endpoint_url
                .clone()
                .or(destination.endpoint_url.clone()),
            region: match (&self.region, &self.profile) {
                (Some(region), _) => Some(region.clone()),
                (None, Some(_)) => None,
                (None, None) => destination.region.clone(),
            },
            profile: self.profile.clone().or(destination.profile.clone()),
            no_sign_request: self.no_sign_request,
            // The destination's keys are not the source account's.
            credentials: match own_account {
                true => None,
                false => destination.credentials.clone(),
            },
            ..destination.clone()
        })
    }
}

/// The longest `--timeout` accepted: a day of silence is as good as none, and anything much
/// longer overflows the clock arithmetic of the timers.
const MAX_TIMEOUT_SECONDS: f64 = 86_400.0;

/// Check a `--timeout` in seconds: a number above 0 and at most a day (not NaN, infinite or
/// negative, which cannot be a duration).
/// A timeout as the CLI's `--timeout` and Python's `timeout=` take it: seconds (`30`,
/// `0.5`) or a duration with its unit (`5s`, `500ms`, `2m`, `1h 30m`, read by humantime),
/// above 0 and at most a day. The one parser of durations, so both read alike.
pub fn parse_timeout(text: &str) -> Result<Duration> {
    let text = text.trim();
    let seconds = match text.parse::<f64>() {
        Ok(seconds) => seconds,
        Err(_) => humantime::parse_duration(text)
            .map_err(|e| {
                Error::InvalidInput(format!(
                    "--timeout {text:?} is no duration ({e}): give seconds (30, 0.5) or a \
                     duration such as 5s, 500ms or 2m"
                ))
            })?
            .as_secs_f64(),
    };
    parse_timeout_seconds(seconds)
}

/// A timeout given as a number of seconds, checked as [`parse_timeout`] checks one.
pub fn parse_timeout_seconds(seconds: f64) -> Result<Duration> {
    if !(seconds > 0.0 && seconds <= MAX_TIMEOUT_SECONDS) {
        return Err(Error::InvalidInput(format!(
            "--timeout {seconds:?} is out of range: give seconds above 0 and at most \
             {MAX_TIMEOUT_SECONDS} (a day), e.g. 30 or 0.5"
        )));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// How hard to push: parallelism, part size, and memory bounds.
#[derive(Debug, Clone)]
pub struct TransferConfig {
    /// Objects downloaded at the same time.
    pub workers: usize,
    /// Ranged requests in flight for one object (`--ranges-per-object`, once `--threads`).
    pub ranges_per_object: usize,
    /// Size of an object's first ranged GET, and of those of a resumed object; the parts
    /// after the first grow in multiples of it (up to 64 MiB) to keep `ranges_per_object`
    /// requests busy.
    pub part_size: u64,
    /// Requests in flight across all objects; bounds sockets and buffered bytes together.
    pub max_requests: usize,
    /// Key ranges listed at the same time; 1 lists sequentially (still pipelined).
    pub list_parallelism: usize,
    /// Keys per ListObjectsV2 page (S3 returns at most 1000).
    pub list_page_size: usize,
    /// What to do when a request fails in a way that may pass.
    pub retry: RetryPolicy,
    /// Check content by the store's CRC or the ETag's MD5 where it offers one; sizes are
    /// checked regardless.
    pub verify_content: bool,
    /// Leave files an earlier run completed alone while the object is the same version
    /// (same ETag and size, file untouched since).
    pub skip_unchanged: bool,
    /// Objects larger than this are copied inside the store in parts (UploadPartCopy, in
    /// parallel), smaller ones by one CopyObject: at least 5 MiB, at most 5 GiB, S3's
    /// largest CopyObject and the default (rclone's `--s3-copy-cutoff`).
    pub copy_cutoff: u64,
    /// An object in an archive tier (not restored) is passed over with a skip line rather
    /// than failed (aws's `--ignore-glacier-warnings`).
    pub ignore_archived: bool,
}

impl Default for TransferConfig {
    fn default() -> Self {
        // 64 objects in flight hides a 20 ms round trip for small files; 16 ranges of 8 MiB
        // saturate several per-connection caps for large ones; 128 requests in flight share
        // one budget for body buffers (`body_buffers.rs`: with all 128 open, 32 KiB each
        // to read, and at most as much gathered for a write, 8 MiB in all); 16 listing
        // workers turn a 100-page listing into a handful of round trips.
        TransferConfig {
            workers: 64,
            ranges_per_object: 16,
            part_size: 8 * 1024 * 1024,
            max_requests: 128,
            list_parallelism: 16,
            list_page_size: 1000,
            retry: RetryPolicy::default(),
            verify_content: true,
            skip_unchanged: true,
            copy_cutoff: MAX_COPY,
            ignore_archived: false,
        }
    }
}

/// S3's largest CopyObject, and its largest part.
const MAX_COPY: u64 = 5 * 1024 * 1024 * 1024;
/// S3's smallest part (all but the last).
const MIN_COPY_PART: u64 = 5 * 1024 * 1024;

/// The largest count a parallelism or page-size option accepts.
const MAX_COUNT: usize = 65_536;

impl TransferConfig {
    /// The most connections one object may hold at once: its ranges, under the cap on
    /// requests.
    pub(crate) fn connections_per_object(&self) -> usize {
        self.ranges_per_object.min(self.max_requests)
    }

    /// Reject settings that cannot work, naming the option.
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("workers", self.workers),
            ("ranges-per-object", self.ranges_per_object),
            ("max-requests", self.max_requests),
            ("list-parallelism", self.list_parallelism),
            ("list-page-size", self.list_page_size),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(Error::InvalidInput(format!("--{name} must be at least 1")));
            }
            // Far beyond any useful setting, and below what semaphores and sockets can hold.
            if value > MAX_COUNT {
                return Err(Error::InvalidInput(format!(
                    "--{name} {value} is too large; use at most {MAX_COUNT}"
                )));
            }
        }
        if self.part_size < 1024 {
            return Err(Error::InvalidInput(format!(
                "--part-size {} is too small; use at least 1KiB (8MiB is a good default; a \
                 size without a unit is in bytes)",
                self.part_size
            )));
        }
        if !(MIN_COPY_PART..=MAX_COPY).contains(&self.copy_cutoff) {
            return Err(Error::InvalidInput(format!(
                "--copy-cutoff {} is out of range: S3 copies parts of 5MiB to 5GiB, e.g. \
                 --copy-cutoff 1GiB (5GiB is the default)",
                self.copy_cutoff
            )));
        }
        Ok(())
    }
}

/// Parse a size such as `8MiB`, `16M`, `512k`, `1.5GiB` or plain bytes.
/// Decimal suffixes (k, M, G, T) and binary ones (KiB, MiB, GiB, TiB) are both accepted;
/// a bare `M` means MiB, as users of s3pd and s5cmd expect.
pub fn parse_size(text: &str) -> Result<u64> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let invalid = || {
        Error::InvalidInput(format!(
            "invalid size '{text}': use bytes or a unit such as 8MiB, 16M, 512KiB"
        ))
    };
    let value: f64 = number.parse().map_err(|_| invalid())?;
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        "t" | "tib" | "tb" => 1 << 40,
        _ => return Err(invalid()),
    };
    let bytes = value * multiplier as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(invalid());
    }
    Ok(bytes.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_every_spelling() {
        assert_eq!(parse_size("8MiB").unwrap(), 8 << 20);
        assert_eq!(parse_size("16M").unwrap(), 16 << 20);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("512k").unwrap(), 512 << 10);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size(" 2 g ").unwrap(), 2 << 30);
    }

    #[test]
    fn bad_sizes_are_rejected_with_a_hint() {
        for bad in ["", "MiB", "8XB", "-1", "1..2M"] {
            let err = parse_size(bad).unwrap_err().to_string();
            assert!(err.contains("8MiB"), "{bad}: {err}");
        }
    }

    #[test]
    fn timeouts_are_positive_finite_seconds() {
        assert_eq!(
            parse_timeout_seconds(0.5).unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(
            parse_timeout_seconds(MAX_TIMEOUT_SECONDS).unwrap(),
            Duration::from_secs(86_400)
        );
        for bad in [f64::INFINITY, 1e30, f64::NAN, -1.0, 0.0, -0.0, 86_400.5] {
            let error = parse_timeout_seconds(bad).unwrap_err().to_string();
            assert!(error.contains("--timeout"), "{bad}: {error}");
        }
    }

    #[test]
    fn timeouts_read_as_seconds_or_durations_with_their_units() {
        for (text, millis) in [
            ("30", 30_000),
            (" 0.5 ", 500),
            ("5s", 5_000),
            ("500ms", 500),
            ("2m", 120_000),
            ("1h 30m", 5_400_000),
        ] {
            let read = parse_timeout(text).unwrap();
            assert_eq!(read, Duration::from_millis(millis), "{text}");
        }
        for bad in ["five", "0", "0s", "inf", "2days", "-1", ""] {
            let error = parse_timeout(bad).unwrap_err().to_string();
            assert!(error.starts_with("--timeout"), "{bad}: {error}");
        }
    }

    #[test]
    fn zero_parallelism_is_a_usage_error() {
        let config = TransferConfig {
            workers: 0,
            ..TransferConfig::default()
        };
        assert!(config
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--workers"));
        // A semaphore of usize::MAX permits panicked (exit 101).
        for huge in [MAX_COUNT + 1, usize::MAX] {
            let config = TransferConfig {
                max_requests: huge,
                ..TransferConfig::default()
            };
            let error = config.validate().unwrap_err().to_string();
            assert!(
                error.contains("--max-requests") && error.contains("too large"),
                "{error}"
            );
        }
    }
}
