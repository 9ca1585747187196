//! Keyword arguments into the core's `StoreConfig` and `TransferConfig`: the same structs,
//! defaults and validation as the CLI's flags, so an option means one thing everywhere.

use std::net::IpAddr;
use std::path::PathBuf;

use parabyte::{parse_size, Keys, RetryPolicy, StoreConfig, TransferConfig};
use pyo3::prelude::*;

use crate::errors::{to_py, InvalidInputError};

/// `part_size=8 << 20` or `part_size="8MiB"`, as `--part-size` takes.
#[derive(Debug, FromPyObject)]
pub enum Size {
    Bytes(u64),
    Text(String),
}

/// `timeout=30`, `timeout=0.5` or `timeout="5s"` (also "500ms", "2m", "1h 30m").
#[derive(Debug, FromPyObject)]
pub enum Seconds {
    Number(f64),
    Text(String),
}

impl Seconds {
    /// Read by the CLI's own parser (`parabyte::parse_timeout`), so `timeout="1h 30m"`
    /// and `--timeout "1h 30m"` mean the same and are refused in the same words.
    fn duration(&self) -> parabyte::Result<std::time::Duration> {
        match self {
            Seconds::Number(seconds) => parabyte::parse_timeout_seconds(*seconds),
            Seconds::Text(text) => parabyte::parse_timeout(text),
        }
    }
}

/// How to reach the store (the CLI's "Store" flags, plus explicit keys).
#[derive(Debug, Default)]
pub struct StoreOptions {
    pub endpoint_url: Option<String>,
    pub region: Option<String>,
    pub profile: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    pub no_sign_request: bool,
    pub path_style: bool,
    pub ca_bundle: Option<PathBuf>,
    /// `None` keeps the core's default.
    pub timeout: Option<Seconds>,
    /// Local addresses to send from, in turn (`--bind`), as Python gives them.
    pub bind: Vec<String>,
    /// `"requester"`: every request says the requester pays (`--request-payer`).
    pub request_payer: Option<String>,
}

impl StoreOptions {
    /// Unset options fall back to the AWS chain, exactly as the CLI's do.
    pub fn into_config(self) -> PyResult<StoreConfig> {
        let credentials = match (self.access_key_id, self.secret_access_key) {
            (Some(access_key_id), Some(secret_access_key)) => Some(Keys {
                access_key_id,
                secret_access_key,
                session_token: self.session_token,
            }),
            (None, None) if self.session_token.is_none() => None,
            _ => return Err(InvalidInputError::new_err(
                "pass access_key_id and secret_access_key together (session_token only with them)",
            )),
        };
        let timeout = self
            .timeout
            .map(|timeout| timeout.duration())
            .transpose()
            .map_err(to_py)?;
        let local_addresses = self
            .bind
            .iter()
            .map(|address| {
                address.parse::<IpAddr>().map_err(|_| {
                    InvalidInputError::new_err(format!(
                        "bind= takes IP addresses of this machine, e.g. [\"10.0.0.5\"]; \
                         {address:?} is not one"
                    ))
                })
            })
            .collect::<PyResult<_>>()?;
        let request_payer = match self.request_payer.as_deref() {
            None => false,
            Some("requester") => true,
            Some(other) => {
                return Err(InvalidInputError::new_err(format!(
                    "request_payer={other:?}: the one payer S3 takes is \"requester\""
                )))
            }
        };
        let defaults = StoreConfig::from_env();
        let config = StoreConfig {
            region: self.region,
            endpoint_url: self.endpoint_url,
            profile: self.profile,
            path_style: self.path_style,
            no_sign_request: self.no_sign_request,
            credentials,
            ca_bundle: self.ca_bundle.or(defaults.ca_bundle.clone()),
            local_addresses,
            request_payer,
            ..defaults
        };
        Ok(match timeout {
            Some(timeout) => config.with_timeout(timeout),
            None => config,
        })
    }
}

/// How hard to push (the CLI's "Parallelism" and "Listing" flags); `None` keeps the default.
#[derive(Debug)]
pub struct TransferOptions {
    pub workers: Option<usize>,
    pub ranges_per_object: Option<usize>,
    pub part_size: Option<Size>,
    pub max_requests: Option<usize>,
    pub copy_cutoff: Option<Size>,
    pub retries: Option<u32>,
    pub list_parallelism: Option<usize>,
    pub list_page_size: Option<usize>,
    pub verify: bool,
    pub force: bool,
    pub ignore_glacier_warnings: bool,
}

impl TransferOptions {
    /// Validated later by `Client::connect`, with the same messages as the CLI.
    pub fn into_config(self) -> PyResult<TransferConfig> {
        let defaults = TransferConfig::default();
        let bytes = |size: Option<Size>, default: u64| match size {
            None => Ok(default),
            Some(Size::Bytes(bytes)) => Ok(bytes),
            Some(Size::Text(text)) => parse_size(&text).map_err(to_py),
        };
        let part_size = bytes(self.part_size, defaults.part_size)?;
        let copy_cutoff = bytes(self.copy_cutoff, defaults.copy_cutoff)?;
        Ok(TransferConfig {
            workers: self.workers.unwrap_or(defaults.workers),
            ranges_per_object: self.ranges_per_object.unwrap_or(defaults.ranges_per_object),
            part_size,
            max_requests: self.max_requests.unwrap_or(defaults.max_requests),
            list_parallelism: self.list_parallelism.unwrap_or(defaults.list_parallelism),
            list_page_size: self.list_page_size.unwrap_or(defaults.list_page_size),
            retry: RetryPolicy {
                max_retries: self.retries.unwrap_or(defaults.retry.max_retries),
                ..defaults.retry
            },
            verify_content: self.verify,
            skip_unchanged: !self.force,
            copy_cutoff,
            ignore_archived: self.ignore_glacier_warnings,
        })
    }
}
