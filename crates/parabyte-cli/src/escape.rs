//! Keys as `ls` prints them: a key is data from the store, so it may not start a new line,
//! move the cursor or send a terminal escape. Control characters and the bidirectional
//! overrides that reorder text on screen are written as `\n`, `\u{1b}` and so on; a
//! backslash is doubled, so every printed name reads back to exactly one key.

use std::borrow::Cow;

pub(crate) fn printable(key: &str) -> Cow<'_, str> {
    escaped(key, needs_escape)
}

/// A line of text for a terminal (a message, an error from the store): control characters
/// and bidirectional overrides written as `\n`, `\u{1b}` and so on, so no text a store
/// sends can start a line of its own, move the cursor or send a terminal escape. Unlike
/// [`printable`] it leaves backslashes alone: a message need not read back to a key.
pub(crate) fn terminal_safe(line: &str) -> Cow<'_, str> {
    escaped(line, |c| c != '\\' && needs_escape(c))
}

/// `text` with every character `escape` picks written as Rust writes it (`\n`, `\u{1b}`).
fn escaped(text: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&escape) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for character in text.chars() {
        if escape(character) {
            shown.extend(character.escape_default());
        } else {
            shown.push(character);
        }
    }
    Cow::Owned(shown)
}

/// A JSON line with the characters serde_json leaves raw (DEL, C1 controls, bidirectional
/// overrides) written as `\uXXXX` too: the same JSON value, safe on a terminal.
pub(crate) fn json_line(line: String) -> String {
    if !line.chars().any(|c| c != '\\' && needs_escape(c)) {
        return line;
    }
    let mut safe = String::with_capacity(line.len() + 8);
    for character in line.chars() {
        if character != '\\' && needs_escape(character) {
            safe.push_str(&format!("\\u{:04x}", u32::from(character)));
        } else {
            safe.push(character);
        }
    }
    safe
}

fn needs_escape(character: char) -> bool {
    character == '\\'
        || character.is_control()
        || matches!(character, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_keys_are_untouched() {
        assert!(matches!(printable("dir/ü ä 'q\" +%.txt"), Cow::Borrowed(_)));
    }

    #[test]
    fn nothing_in_a_key_can_break_the_line_or_drive_the_terminal() {
        assert_eq!(
            printable("a\nb\r\t\u{1b}[31mred\u{7f}\u{9b}\\x\u{202e}"),
            "a\\nb\\r\\t\\u{1b}[31mred\\u{7f}\\u{9b}\\\\x\\u{202e}"
        );
    }

    #[test]
    fn a_message_is_made_terminal_safe_and_keeps_its_backslashes() {
        assert_eq!(
            terminal_safe("denied\n\u{1b}[31mred C:\\x\u{202e}"),
            "denied\\n\\u{1b}[31mred C:\\x\\u{202e}"
        );
        assert!(matches!(terminal_safe("plain: a\\b"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_lines_keep_their_value_and_lose_raw_controls() {
        let key = "a\n\u{1b}\u{7f}\u{9b}\u{202e}\\";
        let line = json_line(serde_json::json!({ "key": key }).to_string());
        assert!(!line.chars().any(char::is_control), "{line}");
        assert!(!line.contains('\u{202e}'), "{line}");
        let back: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back["key"], key);
    }
}
