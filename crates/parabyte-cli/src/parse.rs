//! The command line as clap reads it: filters kept in the order given, and usage errors
//! that do not send the user the wrong way.

use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches};

use crate::args::{order_filters, Cli};

/// clap answers an unknown flag (`--bwlimit` from rclone, `--sse` from the AWS CLI) with
/// "to pass '--bwlimit' as a value, use '-- --bwlimit'", which would make a source or
/// destination of it. Say instead that parabyte has no such option; a tip naming a similar
/// option that exists stays.
pub(crate) fn without_misleading_tip(mut error: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::UnknownArgument {
        return error;
    }
    let flag = match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(flag)) => flag.clone(),
        _ => "this option".to_owned(),
    };
    let mut tips: Vec<clap::builder::StyledStr> = match error.get(ContextKind::Suggested) {
        Some(ContextValue::StyledStrs(tips)) => tips
            .iter()
            .filter(|tip| !tip.to_string().contains("as a value"))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    tips.push(format!("parabyte has no option '{flag}'; '--help' lists the options it has").into());
    error.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    error
}

/// The command line as clap reads it, with `--exclude`/`--include` in the order given.
pub(crate) fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = Cli::command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    order_filters(&mut cli, &matches);
    Ok(cli)
}
