//! The command line as clap reads it: filters kept in the order given, and usage errors
//! that do not send the user the wrong way.

use std::ffi::OsString;

use clap::FromArgMatches;

use crate::args::{command, order_filters, verbose_given, Cli};

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
    let name = flag.split_once('=').map_or(flag.as_str(), |(name, _)| name);
    let owners: Vec<String> = command()
        .get_subcommands()
        .filter(|command| option_named(command, name).is_some())
        .map(|command| format!("parabyte {}", command.get_name()))
        .collect();
    if let Some(ours) = other_tools_flag(name) {
        tips.push(ours.into());
    } else if !owners.is_empty() {
        // Written where this subcommand does not take it (`parabyte --manifest m ls`).
        tips.retain(|tip| !tip.to_string().contains("exists"));
        tips.push(format!("'{name}' is an option of {}", owners.join(" and ")).into());
    } else {
        tips.push(
            format!("parabyte has no option '{flag}'; '--help' lists the options it has").into(),
        );
    }
    error.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    error
}

/// What parabyte has for a flag people type from s5cmd, rclone or the AWS CLI.
fn other_tools_flag(flag: &str) -> Option<&'static str> {
    Some(match flag {
        "--numworkers" | "--transfers" => {
            "objects at once are --workers N; requests in flight across them, --max-requests N"
        }
        "--concurrency" | "--multi-thread-streams" => {
            "ranged requests for one large object at once are --ranges-per-object N"
        }
        "-P" | "--progress" => {
            "the progress bar shows by default on a terminal (--no-progress turns it off)"
        }
        _ => return None,
    })
}

/// `parabyte --profile p ls s3://b/`, as aws and s5cmd users type it: options written
/// before the subcommand that the subcommand has are moved after its name. Anything else
/// stays where it is, for clap to name.
fn options_after_the_subcommand(args: Vec<OsString>) -> Vec<OsString> {
    let cli = command();
    let Some((program, rest)) = args.split_first() else {
        return args;
    };
    let mut index = 0;
    while let Some(text) = rest.get(index).and_then(|arg| arg.to_str()) {
        if let Some(command) = cli.find_subcommand(text) {
            if index == 0 {
                return args;
            }
            let options = &rest[..index];
            if !moves_whole(command, options) {
                return args;
            }
            let mut moved = vec![program.clone(), rest[index].clone()];
            moved.extend_from_slice(options);
            moved.extend_from_slice(&rest[index + 1..]);
            return moved;
        }
        if !text.starts_with('-') || text == "--" {
            return args;
        }
        let (name, inline_value) = match text.split_once('=') {
            Some((name, _)) => (name, true),
            None => (text, false),
        };
        let takes_value = cli
            .get_subcommands()
            .find_map(|command| option_named(command, name))
            .is_some_and(|option| option.get_action().takes_values());
        index += if takes_value && !inline_value { 2 } else { 1 };
    }
    args
}

/// Whether every option in `options` (values included) is one `command` has.
fn moves_whole(command: &clap::Command, options: &[OsString]) -> bool {
    let mut index = 0;
    while let Some(text) = options.get(index).and_then(|arg| arg.to_str()) {
        let (name, inline_value) = match text.split_once('=') {
            Some((name, _)) => (name, true),
            None => (text, false),
        };
        let Some(option) = option_named(command, name) else {
            return false;
        };
        index += if option.get_action().takes_values() && !inline_value {
            2
        } else {
            1
        };
    }
    index == options.len()
}

/// The option of `command` written `name` (`--long`, an alias, or `-s`).
fn option_named<'a>(command: &'a clap::Command, name: &str) -> Option<&'a clap::Arg> {
    command.get_arguments().find(|arg| {
        if let Some(long) = name.strip_prefix("--") {
            arg.get_long() == Some(long)
                || arg
                    .get_all_aliases()
                    .is_some_and(|aliases| aliases.contains(&long))
        } else {
            let mut chars = name.strip_prefix('-').unwrap_or_default().chars();
            matches!((chars.next(), chars.next()), (Some(short), None) if arg.get_short() == Some(short))
        }
    })
}

/// The command line as clap reads it, with `--exclude`/`--include` in the order given and
/// options written before the subcommand read as its own.
pub(crate) fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = options_after_the_subcommand(args.into_iter().map(Into::into).collect());
    let matches = command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    cli.verbose = verbose_given(&matches);
    order_filters(&mut cli, &matches);
    Ok(cli)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moved(args: &[&str]) -> Vec<String> {
        let args = args.iter().map(OsString::from).collect();
        options_after_the_subcommand(args)
            .into_iter()
            .map(|arg| arg.into_string().unwrap())
            .collect()
    }

    #[test]
    fn options_before_the_subcommand_move_after_it() {
        assert_eq!(
            moved(&["parabyte", "--profile", "p", "-r", "ls", "s3://b/"]),
            ["parabyte", "ls", "--profile", "p", "-r", "s3://b/"]
        );
        assert_eq!(
            moved(&["parabyte", "--endpoint-url=http://h", "cp", "s3://b/k", "."]),
            ["parabyte", "cp", "--endpoint-url=http://h", "s3://b/k", "."]
        );
        // A value that looks like a subcommand is still the option's value.
        assert_eq!(
            moved(&["parabyte", "--profile", "ls", "ls"]),
            ["parabyte", "ls", "--profile", "ls"]
        );
        // What the subcommand lacks, or what no subcommand follows, is left for clap.
        for args in [
            &["parabyte", "--manifest", "m", "ls"][..],
            &["parabyte", "--nope", "ls"],
            &["parabyte", "--profile", "p"],
            &["parabyte", "ls", "--profile", "p"],
        ] {
            assert_eq!(moved(args), args);
        }
        let cli = parse(["parabyte", "--profile", "p", "ls", "s3://b/"]).unwrap();
        assert!(matches!(cli.command, crate::args::Command::Ls(_)));
    }

    #[test]
    fn other_tools_flags_get_ours_and_nothing_contradicts_a_tip() {
        let tips = |args: &[&str]| {
            let error = parse(args.iter().copied()).unwrap_err();
            without_misleading_tip(error).to_string()
        };
        let numworkers = tips(&["parabyte", "cp", "--numworkers", "8", "s3://b/k", "."]);
        assert!(numworkers.contains("--workers N"), "{numworkers}");
        assert!(!numworkers.contains("has no option"), "{numworkers}");
        let progress = tips(&["parabyte", "cp", "-P", "s3://b/k", "."]);
        assert!(progress.contains("by default on a terminal"), "{progress}");
        let elsewhere = tips(&["parabyte", "--manifest", "m", "ls"]);
        assert!(
            elsewhere.contains("'--manifest' is an option of parabyte cp"),
            "{elsewhere}"
        );
        assert!(!elsewhere.contains("has no option"), "{elsewhere}");
        let unknown = tips(&["parabyte", "cp", "--bwlimit", "1M", "s3://b/k", "."]);
        assert!(unknown.contains("has no option '--bwlimit'"), "{unknown}");
    }
}
