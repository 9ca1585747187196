//! `parabyte completions SHELL` prints a completion script for the shells people use: bash's
//! is run in bash to complete real command lines; zsh's and fish's (neither shell is on CI)
//! are checked for what each shell needs to find them and for the commands and flags.

mod common;

use std::process::Output;

use common::{bare_parabyte, stderr};

fn completions(shell: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let output: Output = bare_parabyte(dir.path())
        .args(["completions", shell])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    String::from_utf8(output.stdout).unwrap()
}

/// What bash offers (sorted) after `words`, the last being the word under the cursor.
fn bash_completes(script: &str, words: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parabyte.bash");
    std::fs::write(&path, script).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source '{}'\nCOMP_WORDS=({})\nCOMP_CWORD={}\nCOMP_LINE=\"${{COMP_WORDS[*]}}\"\n\
         COMP_POINT=${{#COMP_LINE}}\n_parabyte parabyte '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display(),
        quoted.join(" "),
        words.len() - 1,
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let output = std::process::Command::new("bash")
        .args(["--norc", "-c", &program])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let mut offered: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    offered.sort();
    offered
}

#[test]
fn bash_completion_completes_commands_and_flags() {
    let script = completions("bash");
    assert!(
        script.contains("complete -F _parabyte"),
        "registers for the command: {script}"
    );
    assert_eq!(
        bash_completes(&script, &["parabyte", "c"]),
        ["cat", "completions", "cp"]
    );
    assert_eq!(
        bash_completes(&script, &["parabyte", "cp", "--endpoint-u"]),
        ["--endpoint-url"]
    );
    assert_eq!(
        bash_completes(&script, &["parabyte", "completions", "f"]),
        ["fish"]
    );
}

#[test]
fn zsh_completion_is_a_compdef_for_parabyte_with_its_commands_and_flags() {
    let script = completions("zsh");
    assert!(script.starts_with("#compdef parabyte\n"), "{script}");
    for expected in [
        "'cp:",
        "'ls:",
        "'completions:",
        "'--endpoint-url=",
        "'--manifest=",
    ] {
        assert!(script.contains(expected), "{expected} missing: {script}");
    }
}

#[test]
fn fish_completion_completes_parabyte_commands_and_flags() {
    let script = completions("fish");
    for expected in [
        "complete -c parabyte",
        "-a \"cp\"",
        "-a \"ls\"",
        "-a \"completions\"",
        "-l endpoint-url",
        "-l manifest",
    ] {
        assert!(script.contains(expected), "{expected} missing: {script}");
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error_naming_the_choices() {
    let dir = tempfile::tempdir().unwrap();
    let output = bare_parabyte(dir.path())
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("bash"), "{}", stderr(&output));
    assert!(output.stdout.is_empty());
}
