//! A profile named by `--profile` or `AWS_PROFILE` must exist: otherwise the credential
//! chain quietly goes on to other sources and ends in a message about the instance metadata
//! service, or signs with keys the user did not mean.

use std::path::PathBuf;

use aws_runtime::env_config::file::EnvConfigFiles;
use aws_types::os_shim_internal::{Env, Fs};

use crate::error::{Error, Result};

/// Fails unless `name` is a profile of the shared config or credentials file. `default` may
/// be absent: it is what every tool falls back to anyway.
pub(crate) async fn check_profile_exists(name: &str) -> Result<()> {
    if name == "default" {
        return Ok(());
    }
    let profiles =
        aws_config::profile::load(&Fs::real(), &Env::real(), &EnvConfigFiles::default(), None)
            .await
            .map_err(|e| Error::InvalidInput(format!("cannot read the AWS profile files: {e}")))?;
    if profiles.get_profile(name).is_some() {
        return Ok(());
    }
    let mut known: Vec<&str> = profiles.profiles().collect();
    known.sort_unstable();
    let defined = if known.is_empty() {
        "which define no profile".to_owned()
    } else {
        format!("which define: {}", known.join(", "))
    };
    Err(Error::InvalidInput(format!(
        "the profile '{name}' (--profile or AWS_PROFILE) does not exist: looked in {} and {}, {defined}",
        shared_file("AWS_CONFIG_FILE", "config").display(),
        shared_file("AWS_SHARED_CREDENTIALS_FILE", "credentials").display(),
    )))
}

/// Where aws-config reads a shared file from: its variable, else `~/.aws/NAME`.
fn shared_file(variable: &str, name: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(variable) {
        return PathBuf::from(path);
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".aws").join(name),
        None => PathBuf::from("~/.aws").join(name),
    }
}
