//! Wildcards in sources (`s3://b/imgs/*.jpg`, `./logs/2026-??-*.gz`) and the `--exclude` /
//! `--include` filters.
//!
//! One syntax for both, as s5cmd reads sources and the AWS CLI reads filters:
//! - `*` matches any run of characters, `/` included (so `**` means the same);
//! - `?` matches any one character, `/` included;
//! - `[abc]`, `[a-z]` one character of the set, `[!a-z]` or `[^a-z]` one not in it; a `]`
//!   right after the opening `[` (or `[!`) is a member, so `[]]` matches `]`, `[[]` a `[`
//!   and `[*]` a `*`.
//!
//! Every other character matches itself; there is no backslash escape (backslashes are
//! legal in keys). A `[` that is never closed is refused rather than guessed at.

use std::fmt;

use crate::error::{Error, Result};

/// True when `text` would be read as a pattern: it has a `*`, `?` or `[`.
pub fn has_wildcard(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// A compiled wildcard pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    text: String,
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Char(char),
    /// `*`: any run of characters.
    Any,
    /// `?`: one character.
    One,
    /// `[...]`: one character in (or, negated, not in) the inclusive ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Token {
    fn matches(&self, c: char) -> bool {
        match self {
            Token::Char(own) => *own == c,
            Token::Any | Token::One => true,
            Token::Class { negated, ranges } => {
                ranges.iter().any(|(low, high)| (*low..=*high).contains(&c)) != *negated
            }
        }
    }
}

impl Pattern {
    /// Compile `text`; a `[` without its `]` (or an empty or reversed range) is an error
    /// naming the pattern.
    pub fn new(text: &str) -> Result<Pattern> {
        let invalid = |why: &str| {
            Error::InvalidInput(format!(
                "pattern '{text}': {why}; write [[] for a literal '[' (or --raw for a source taken as it is)"
            ))
        };
        let mut tokens = Vec::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            tokens.push(match c {
                '*' => Token::Any,
                '?' => Token::One,
                '[' => {
                    let negated = chars.next_if(|c| matches!(c, '!' | '^')).is_some();
                    let mut ranges = Vec::new();
                    let mut first = true;
                    loop {
                        let low = match chars.next() {
                            None => return Err(invalid("'[' opens a set that is never closed")),
                            Some(']') if !first => break,
                            Some(low) => low,
                        };
                        first = false;
                        let high = if chars.next_if_eq(&'-').is_some() {
                            match chars.next_if(|c| *c != ']') {
                                Some(high) => high,
                                // `[a-]`: the '-' is a member of its own.
                                None => {
                                    ranges.push(('-', '-'));
                                    low
                                }
                            }
                        } else {
                            low
                        };
                        if high < low {
                            return Err(invalid(&format!("the range {low}-{high} is reversed")));
                        }
                        ranges.push((low, high));
                    }
                    Token::Class { negated, ranges }
                }
                c => Token::Char(c),
            });
        }
        Ok(Pattern {
            text: text.to_owned(),
            tokens,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Everything before the first wildcard: what every match starts with, and so the
    /// prefix to list.
    pub fn literal_prefix(&self) -> &str {
        let end = self.text.find(['*', '?', '[']).unwrap_or(self.text.len());
        &self.text[..end]
    }

    /// The literal prefix up to and including its last '/': the "directory" every match is
    /// in, below which matches keep their path (as s5cmd places them).
    pub fn literal_directory(&self) -> &str {
        let literal = self.literal_prefix();
        &literal[..literal.rfind('/').map_or(0, |slash| slash + 1)]
    }

    /// True when the whole of `candidate` matches.
    pub fn matches(&self, candidate: &str) -> bool {
        let text: Vec<char> = candidate.chars().collect();
        let (mut at_token, mut at_char) = (0, 0);
        // Where the last `*` was and where its match currently ends: on a mismatch it takes
        // one more character. One star's backtracking is enough, since every `*` matches
        // any run, so the earliest match of what follows a star is always a good one.
        let mut last_star: Option<(usize, usize)> = None;
        while at_char < text.len() {
            match self.tokens.get(at_token) {
                Some(Token::Any) => {
                    last_star = Some((at_token, at_char));
                    at_token += 1;
                    continue;
                }
                Some(token) if token.matches(text[at_char]) => {
                    at_token += 1;
                    at_char += 1;
                    continue;
                }
                _ => {}
            }
            match last_star {
                Some((star, star_end)) => {
                    at_token = star + 1;
                    at_char = star_end + 1;
                    last_star = Some((star, star_end + 1));
                }
                None => return false,
            }
        }
        self.tokens[at_token..].iter().all(|t| *t == Token::Any)
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// One `--exclude` or `--include`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// Leave out what matches.
    Exclude(Pattern),
    /// Take back in what matches (after an earlier `Exclude`).
    Include(Pattern),
}

impl Filter {
    /// `--exclude PATTERN`.
    pub fn exclude(pattern: &str) -> Result<Filter> {
        Pattern::new(pattern).map(Filter::Exclude)
    }

    /// `--include PATTERN`.
    pub fn include(pattern: &str) -> Result<Filter> {
        Pattern::new(pattern).map(Filter::Include)
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Filter::Exclude(pattern) => write!(f, "--exclude '{pattern}'"),
            Filter::Include(pattern) => write!(f, "--include '{pattern}'"),
        }
    }
}

/// The AWS CLI's rule: everything is included, then every filter is applied in order and
/// the last one that matches `relative` decides. Returns the filter that excluded it.
pub(crate) fn excluded_by<'a>(filters: &'a [Filter], relative: &str) -> Option<&'a Filter> {
    filters
        .iter()
        .rev()
        .find(|filter| match filter {
            Filter::Exclude(pattern) | Filter::Include(pattern) => pattern.matches(relative),
        })
        .filter(|filter| matches!(filter, Filter::Exclude(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        Pattern::new(pattern).unwrap().matches(text)
    }

    #[test]
    fn star_and_question_mark_cross_slashes() {
        assert!(matches("imgs/*.jpg", "imgs/a.jpg"));
        assert!(matches("imgs/*.jpg", "imgs/sub/deep.jpg"));
        assert!(matches("imgs/*.jpg", "imgs/.jpg"));
        assert!(!matches("imgs/*.jpg", "imgs/a.jpeg"));
        assert!(!matches("imgs/*.jpg", "other/a.jpg"));
        assert!(matches("a?c", "a/c"));
        assert!(!matches("a?c", "ac"));
        assert!(matches("**/x", "a/b/x"));
        assert!(matches("*", ""));
        assert!(matches("a*b*c", "a-b-b-c-c"));
        assert!(!matches("a*b*c", "a-b-b-c-d"));
        assert!(matches("*a*a*a*a*b", &format!("{}b", "a".repeat(40))));
        assert!(!matches("*a*a*a*a*b", &"a".repeat(40)));
    }

    #[test]
    fn sets_ranges_and_negation() {
        assert!(matches("f[0-9].txt", "f7.txt"));
        assert!(!matches("f[0-9].txt", "fx.txt"));
        assert!(matches("f[!0-9].txt", "fx.txt"));
        assert!(matches("f[^0-9].txt", "fx.txt"));
        assert!(!matches("f[!0-9].txt", "f7.txt"));
        assert!(matches("[]]", "]"));
        assert!(matches("[!]]", "a"));
        assert!(matches("a[[]1]", "a[1]"));
        assert!(matches("[*]", "*"));
        assert!(!matches("[*]", "x"));
        assert!(matches("[a-]", "-"));
        assert!(matches("ü[ä-ö]", "üö"));
    }

    #[test]
    fn bad_patterns_are_refused_by_name() {
        for bad in ["a[bc", "[", "[!", "x[z-a]"] {
            let error = Pattern::new(bad).unwrap_err().to_string();
            assert!(error.contains(&format!("pattern '{bad}'")), "{error}");
            assert!(error.contains("--raw"), "{error}");
        }
    }

    #[test]
    fn the_literal_prefix_ends_at_the_first_wildcard() {
        let prefix = |p: &str| Pattern::new(p).unwrap().literal_prefix().to_owned();
        assert_eq!(prefix("imgs/2026-*/a?.jpg"), "imgs/2026-");
        assert_eq!(prefix("a/b[0-9]"), "a/b");
        assert_eq!(prefix("*"), "");
        assert_eq!(prefix("plain/key"), "plain/key");
        let directory = |p: &str| Pattern::new(p).unwrap().literal_directory().to_owned();
        assert_eq!(directory("imgs/2026-*/a?.jpg"), "imgs/");
        assert_eq!(directory("a*"), "");
        assert!(has_wildcard("a[1]") && has_wildcard("a?") && !has_wildcard("a/b.c"));
    }

    #[test]
    fn the_last_matching_filter_decides() {
        let filters = vec![
            Filter::exclude("*").unwrap(),
            Filter::include("*.jpg").unwrap(),
            Filter::exclude("raw/*").unwrap(),
        ];
        assert_eq!(excluded_by(&filters, "a.jpg"), None);
        assert_eq!(excluded_by(&filters, "a.png"), Some(&filters[0]));
        assert_eq!(excluded_by(&filters, "raw/a.jpg"), Some(&filters[2]));
        assert_eq!(excluded_by(&[], "anything"), None);
        let include_first = vec![
            Filter::include("*.jpg").unwrap(),
            Filter::exclude("*").unwrap(),
        ];
        assert!(excluded_by(&include_first, "a.jpg").is_some());
    }

    /// Patterns and names made up of the characters that mean something: never a panic, and
    /// matching stays fast however many stars (`make fuzz` runs many more cases).
    mod fuzz {
        use proptest::prelude::*;

        use super::*;

        proptest! {
            #[test]
            fn any_pattern_against_any_name_answers(
                pattern in "[a*?\\[\\]!^/-]{0,24}",
                name in "[ab/*?\\[\\]-]{0,48}",
            ) {
                if let Ok(pattern) = Pattern::new(&pattern) {
                    let _ = pattern.matches(&name);
                    let _ = pattern.literal_directory();
                }
                if let Ok(filter) = Filter::exclude(&name) {
                    let _ = excluded_by(&[filter], &name);
                }
            }
        }
    }
}
