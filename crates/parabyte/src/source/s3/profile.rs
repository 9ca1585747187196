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
    Err(Error::InvalidInput(format!(
        "the profile '{name}' (--profile or AWS_PROFILE) does not exist: looked in {}",
        shared_files(&profiles)
    )))
}

/// Where the credential chain looked, for the message that it found nothing: said before
/// what its last link (the instance metadata service) answered, which rarely is the reason.
pub(crate) async fn where_credentials_were_looked_for(profile: Option<&str>) -> String {
    let files = match aws_config::profile::load(
        &Fs::real(),
        &Env::real(),
        &EnvConfigFiles::default(),
        None,
    )
    .await
    {
        Ok(profiles) => shared_files(&profiles),
        Err(e) => format!("the shared AWS files, which cannot be read ({e})"),
    };
    format!(
        "looked in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), then for the profile '{}' in {files}, then web identity, container and instance roles",
        profile.unwrap_or("default")
    )
}

/// The two shared files and the profiles they define.
fn shared_files(profiles: &aws_config::profile::ProfileSet) -> String {
    let mut known: Vec<&str> = profiles.profiles().collect();
    known.sort_unstable();
    let defined = if known.is_empty() {
        "which define no profile".to_owned()
    } else {
        format!("which define: {}", known.join(", "))
    };
    format!(
        "{} and {}, {defined}",
        shared_file("AWS_CONFIG_FILE", "config").display(),
        shared_file("AWS_SHARED_CREDENTIALS_FILE", "credentials").display(),
    )
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
