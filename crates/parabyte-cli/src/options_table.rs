//! The one table of options. Each option is declared once, in `args.rs` (clap's derive:
//! its name, type, default, help text, and the commands whose argument structs hold it);
//! this module reads that declaration back as rows, and everything else that names an
//! option is made from the rows or held to them by a test: the Python keywords and where
//! each goes (`python_keyword`, `Reach`), the flags core messages name in Python's words
//! (parabyte-py's `keyword_names`), the `.pyi` stubs and the functions' signatures
//! (python/tests/test_options_table.py), and the docs' tables (`markdown`, checked against
//! README.md and docs/python.md).

use std::collections::BTreeMap;

use crate::args::command;

/// One option as the CLI declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionRow {
    /// The long flag without its dashes: `part-size`.
    pub flag: String,
    /// What it takes (`SIZE`, `N`), or empty for a switch.
    pub value_name: String,
    /// Its default as `--help` shows it, or empty.
    pub default: String,
    /// Its help text (the first command's, where commands word it differently).
    pub help: String,
    /// The commands that take it with this meaning (`cp`, `sync`, `uploads ls`), in
    /// `--help`'s order.
    pub commands: Vec<String>,
    /// Where the option is in Python.
    pub reach: Reach,
    /// Its Python keyword (`part_size`), when it has one.
    pub keyword: Option<String>,
}

/// Where an option is given in Python.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// A keyword of `parabyte.Client` (and of every function, which makes a client): it
    /// holds for every transfer the client runs.
    Client,
    /// A keyword of the functions of the commands that take it.
    Call,
    /// The command line's own: what it prints and how (Python returns a `Summary` and takes
    /// a `progress` callback), or what Python says another way (a function per command).
    CliOnly,
}

/// Options Python gives by other means, and why (shown by `option_table`'s users).
const CLI_ONLY: &[&str] = &[
    "json",
    "json-lines",
    "quiet",
    "no-progress",
    "object-lines",
    "verbose",
    "human-readable",
    "summarize",
    "group",
    "discard",
    "manifest",
    "dask-scheduler",
    "dask-split-bytes",
    "upload-id",
    "no-follow-symlinks",
];

/// Options of the client as a whole: where requests go and how, how fast, how checked.
const CLIENT_WIDE: &[&str] = &[
    "endpoint-url",
    "region",
    "profile",
    "path-style",
    "no-sign-request",
    "ca-bundle",
    "timeout",
    "bind",
    "request-payer",
    "source-endpoint-url",
    "source-region",
    "source-profile",
    "source-no-sign-request",
    "workers",
    "ranges-per-object",
    "part-size",
    "max-requests",
    "copy-cutoff",
    "retries",
    "list-parallelism",
    "list-page-size",
    "no-verify",
    "force",
    "ignore-glacier-warnings",
];

/// Flags whose Python keyword is not their name in snake case: switches that turn
/// something off are keywords that say what stays on (`verify=False`).
const RENAMED: &[(&str, &str)] = &[
    ("no-verify", "verify"),
    ("no-guess-mime-type", "guess_content_type"),
    ("dryrun", "dry_run"),
];

/// Switches that are one value of a Python keyword: sync's ways to compare.
const CHOICES: &[(&str, &str, &str)] = &[
    ("size-only", "compare", "size_only"),
    ("exact-timestamps", "compare", "exact_timestamps"),
    ("checksum", "compare", "checksum"),
];

/// A flag that means something else to one command than to the others: there it is that
/// command's own keyword, not the client's (`rb --force` deletes the bucket's objects).
const OWN_MEANING: &[(&str, &str)] = &[("rb", "force")];

/// Every long option of every command: one row per flag and meaning (a flag whose help
/// says something else for some commands has a row for those).
pub fn option_table() -> Vec<OptionRow> {
    let mut rows: BTreeMap<(String, String), OptionRow> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    let root = command();
    let mut commands: Vec<(String, &clap::Command)> = Vec::new();
    for sub in root.get_subcommands() {
        let leaves: Vec<&clap::Command> = sub.get_subcommands().collect();
        if leaves.is_empty() {
            commands.push((sub.get_name().to_owned(), sub));
        }
        for leaf in leaves {
            commands.push((format!("{} {}", sub.get_name(), leaf.get_name()), leaf));
        }
    }
    for (name, sub) in commands {
        for arg in sub.get_arguments() {
            let Some(flag) = arg.get_long() else { continue };
            if matches!(flag, "help" | "version") || arg.is_hide_set() {
                continue;
            }
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            let key = (flag.to_owned(), help.clone());
            let row = rows.entry(key.clone()).or_insert_with(|| {
                order.push(key);
                let own = OWN_MEANING.contains(&(name.as_str(), flag));
                OptionRow {
                    flag: flag.to_owned(),
                    value_name: value_name(arg),
                    default: defaults(arg),
                    help,
                    commands: Vec::new(),
                    reach: if own { Reach::Call } else { reach(flag) },
                    keyword: python_keyword(flag),
                }
            });
            row.commands.push(name.clone());
        }
    }
    order
        .into_iter()
        .filter_map(|key| rows.remove(&key))
        .collect()
}

/// Where `flag` is in Python.
pub fn reach(flag: &str) -> Reach {
    match flag {
        _ if CLI_ONLY.contains(&flag) => Reach::CliOnly,
        _ if CLIENT_WIDE.contains(&flag) => Reach::Client,
        _ => Reach::Call,
    }
}

/// The Python keyword of `flag` (`part-size`: `part_size`; `no-verify`: `verify`), or none
/// for the command line's own options.
pub fn python_keyword(flag: &str) -> Option<String> {
    if reach(flag) == Reach::CliOnly {
        return None;
    }
    let renamed = RENAMED
        .iter()
        .map(|(from, keyword)| (from, keyword))
        .chain(CHOICES.iter().map(|(from, keyword, _)| (from, keyword)))
        .find(|(from, _)| **from == flag);
    Some(match renamed {
        Some((_, keyword)) => (*keyword).to_owned(),
        None => flag.replace('-', "_"),
    })
}

/// `flag` as a Python keyword argument, as a message that names the flag reads in Python:
/// `--workers` is `workers=`, a switch `name=True`, a switch that turns something off
/// `name=False` (`--no-verify`: `verify=False`).
pub fn python_argument(flag: &str) -> Option<String> {
    option_table()
        .into_iter()
        .find(|row| row.flag == flag)?
        .python_argument()
}

impl OptionRow {
    /// [`python_argument`] of this row's flag.
    pub fn python_argument(&self) -> Option<String> {
        let (flag, keyword) = (self.flag.as_str(), self.keyword.as_deref()?);
        if let Some((_, _, value)) = CHOICES.iter().find(|(from, _, _)| *from == flag) {
            return Some(format!("{keyword}=\"{value}\""));
        }
        Some(
            match (self.value_name.is_empty(), flag.starts_with("no-")) {
                (false, _) => format!("{keyword}="),
                (true, true) if !keyword.starts_with("no_") => format!("{keyword}=False"),
                (true, _) => format!("{keyword}=True"),
            },
        )
    }
}

fn value_name(arg: &clap::Arg) -> String {
    match arg.get_action().takes_values() {
        true => arg
            .get_value_names()
            .and_then(|names| names.first())
            .map_or_else(|| arg.get_id().as_str().to_uppercase(), ToString::to_string),
        false => String::new(),
    }
}

fn defaults(arg: &clap::Arg) -> String {
    if !arg.get_action().takes_values() {
        return String::new();
    }
    let values: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|value| value.to_string_lossy().into_owned())
        .collect();
    values.join(",")
}

/// The rows of `commands` as a Markdown table (flag, default, commands, Python keyword,
/// meaning), as the docs show it between `<!-- options:begin -->` and `<!-- options:end -->`.
pub fn markdown(rows: &[OptionRow]) -> String {
    let mut table =
        String::from("| option | default | commands | Python | meaning |\n|---|---|---|---|---|\n");
    for row in rows {
        let flag = match row.value_name.as_str() {
            "" => format!("`--{}`", row.flag),
            value => format!("`--{} {value}`", row.flag),
        };
        let argument = row.python_argument().unwrap_or_default();
        let python = match row.reach {
            Reach::Client => format!("`Client({argument})`"),
            Reach::Call => format!("`{argument}`"),
            Reach::CliOnly => String::new(),
        };
        let help = row.help.replace('\n', " ").replace('|', "\\|");
        table.push_str(&format!(
            "| {flag} | {} | {} | {python} | {help} |\n",
            row.default,
            row.commands.join(", ")
        ));
    }
    table
}

/// The client's keywords as docs/python.md shows them: keyword, flag, default, meaning.
pub fn python_markdown(rows: &[OptionRow]) -> String {
    let mut table = String::from("| keyword | CLI flag | default | meaning |\n|---|---|---|---|\n");
    let mut seen = std::collections::BTreeSet::new();
    for row in rows {
        // A flag some command words for itself (rm's --workers) keeps its first meaning.
        let Some(keyword) = row.keyword.as_ref().filter(|keyword| seen.insert(*keyword)) else {
            continue;
        };
        let inverted = match (row.flag.starts_with("no-"), keyword.starts_with("no_")) {
            (true, false) => " (inverted: `False`)",
            _ => "",
        };
        let help = row.help.replace('\n', " ").replace('|', "\\|");
        // Python's own default where the flag has none: a switch's, or None.
        let default = match (row.default.as_str(), row.value_name.is_empty()) {
            ("", false) => "`None`".to_owned(),
            ("", true) if inverted.is_empty() => "`False`".to_owned(),
            ("", true) => "`True`".to_owned(),
            (default, _) => default.to_owned(),
        };
        table.push_str(&format!(
            "| `{keyword}` | `--{}`{inverted} | {default} | {help} |\n",
            row.flag
        ));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_has_a_row_with_the_commands_that_take_it() {
        let rows = option_table();
        let part_size = rows.iter().find(|row| row.flag == "part-size").unwrap();
        assert!(part_size.commands.contains(&"cp".to_owned()));
        assert!(part_size.commands.contains(&"sync".to_owned()));
        assert_eq!(part_size.keyword.as_deref(), Some("part_size"));
        assert_eq!(part_size.reach, Reach::Client);
        assert_eq!(part_size.value_name, "SIZE");
        assert!(
            rows.iter().all(|row| !row.help.is_empty()),
            "each says what it does"
        );
        let force: Vec<&OptionRow> = rows.iter().filter(|row| row.flag == "force").collect();
        let rb = force
            .iter()
            .find(|row| row.commands == ["rb"])
            .expect("rb's own --force");
        assert_eq!(rb.reach, Reach::Call);
        let cp = force
            .iter()
            .find(|row| row.commands.contains(&"cp".to_owned()));
        assert_eq!(cp.map(|row| row.reach), Some(Reach::Client));
    }

    #[test]
    fn flags_read_as_python_arguments() {
        assert_eq!(python_argument("workers").as_deref(), Some("workers="));
        assert_eq!(
            python_argument("no-verify").as_deref(),
            Some("verify=False")
        );
        assert_eq!(
            python_argument("no-sign-request").as_deref(),
            Some("no_sign_request=True")
        );
        assert_eq!(
            python_argument("recursive").as_deref(),
            Some("recursive=True")
        );
        assert_eq!(python_argument("json"), None, "the command line's own");
        assert_eq!(
            python_argument("no-guess-mime-type").as_deref(),
            Some("guess_content_type=False")
        );
        assert_eq!(
            python_argument("size-only").as_deref(),
            Some("compare=\"size_only\"")
        );
    }

    /// Every name in the lists above is an option some command takes: a renamed or
    /// removed flag cannot leave a stale entry behind.
    #[test]
    fn the_lists_name_only_options_that_exist() {
        let flags: Vec<String> = option_table().into_iter().map(|row| row.flag).collect();
        for name in CLI_ONLY
            .iter()
            .chain(CLIENT_WIDE)
            .chain(RENAMED.iter().map(|(from, _)| from))
            .chain(CHOICES.iter().map(|(from, _, _)| from))
        {
            assert!(
                flags.iter().any(|flag| flag == name),
                "--{name} is no option"
            );
        }
    }
}
