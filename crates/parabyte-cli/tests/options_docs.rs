//! The docs' tables of options are the one table (`parabyte_cli::option_table`), written
//! out: a flag added, renamed or given another default or help text in `args.rs` fails
//! here until the docs say the same. `PARABYTE_WRITE_DOCS=1 cargo test -p parabyte-cli
//! --test options_docs` writes them.

use parabyte_cli::{markdown, option_table, python_markdown, OptionRow, Reach};

const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// `file`'s text between `<!-- NAME:begin -->` and `<!-- NAME:end -->` must be `table`.
fn holds(file: &str, name: &str, table: &str) {
    let path = format!("{REPO}/{file}");
    let text = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = (
        format!("<!-- {name}:begin -->\n"),
        format!("<!-- {name}:end -->"),
    );
    let start = text
        .find(&begin)
        .unwrap_or_else(|| panic!("{file} has no {begin}"))
        + begin.len();
    let stop = start
        + text[start..]
            .find(&end)
            .unwrap_or_else(|| panic!("{file} has no {end}"));
    if std::env::var_os("PARABYTE_WRITE_DOCS").is_some() {
        let written = format!("{}{table}{}", &text[..start], &text[stop..]);
        std::fs::write(&path, written).unwrap();
        return;
    }
    assert!(
        text[start..stop] == *table,
        "{file}'s {name} table differs from the options the commands take; run \
         PARABYTE_WRITE_DOCS=1 cargo test -p parabyte-cli --test options_docs\n{table}"
    );
}

/// What README's table shows: the options every transfer takes, and what it prints.
fn transfer_rows() -> Vec<OptionRow> {
    const OUTPUT: &[&str] = &[
        "json",
        "json-lines",
        "quiet",
        "no-progress",
        "object-lines",
        "verbose",
    ];
    option_table()
        .into_iter()
        .filter(|row| row.reach == Reach::Client || OUTPUT.contains(&row.flag.as_str()))
        .collect()
}

#[test]
fn readme_shows_the_transfer_options_as_the_commands_take_them() {
    holds("README.md", "options", &markdown(&transfer_rows()));
}

#[test]
fn docs_options_shows_every_option_of_every_command() {
    holds("docs/options.md", "options", &markdown(&option_table()));
}

#[test]
fn python_docs_show_the_clients_keywords() {
    let client: Vec<OptionRow> = option_table()
        .into_iter()
        .filter(|row| row.reach == Reach::Client)
        .collect();
    holds(
        "docs/python.md",
        "client-keywords",
        &python_markdown(&client),
    );
}
