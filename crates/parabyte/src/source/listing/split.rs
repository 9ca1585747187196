//! Where to split a key space nobody has listed yet: guesses aimed by the widest character
//! seen at each position, probed with one key each; and `split_key_space`, which cuts a
//! prefix into ranges for tasks on several machines without listing the keys between.

use std::sync::Arc;

use super::fetch::first_keys;
use super::page::Cursor;
use super::spec::{ListSpec, Listing};
use crate::counters::Counters;
use crate::error::Result;
use crate::retry::RetryPolicy;

/// Split guesses look at this many leading characters below the prefix.
const MAX_PROFILED_CHARS: usize = 64;

/// Split guesses probed at once, each a request for one key. One guess at a time cost a
/// round trip per empty guess (9 of them before the first split of `w4/dNNN/kNNNNNN`); a
/// guess per free slot loaded the store with requests that mostly find nothing.
const GUESSES_AT_ONCE: usize = 4;
use crate::source::store::Store;

/// Raise `widest` to the highest character each key has at each position below the prefix.
pub(super) fn note_widest<'a>(
    widest: &mut Vec<char>,
    prefix: &str,
    keys: impl Iterator<Item = &'a str>,
) {
    for key in keys {
        let rest = key.get(prefix.len()..).unwrap_or_default();
        for (position, character) in rest.chars().take(MAX_PROFILED_CHARS).enumerate() {
            match widest.get_mut(position) {
                Some(seen) => *seen = (*seen).max(character),
                None => widest.push(character),
            }
        }
    }
}

/// A stretch of the key space while it is being split: `low` is a key inside it, `high` the
/// first key of the stretch above (or a guess above which it was found empty).
struct Stretch {
    low: String,
    high: Option<String>,
    /// Guesses that found nothing new in this stretch.
    misses: u32,
}

/// Guesses that may find nothing new before a stretch is left whole.
const MAX_MISSES: u32 = 12;

/// Up to `parts - 1` boundaries, in order, that cut the prefix's key space into ranges
/// (see [`KeyBounds`]) holding at least one key each when they were found. A first page
/// teaches the shape of the keys; then each stretch is cut in the middle, character-wise
/// (`split_point`), breadth first, and each guess costs one request of one key, so the
/// keys between are never listed: a billion-key prefix costs about `parts` small requests.
/// The ranges are even in key space, not in key count or bytes; a prefix that fits in one
/// page gets no boundary.
pub(crate) async fn split_key_space<S: Store>(
    store: Arc<S>,
    counters: Arc<Counters>,
    retry: RetryPolicy,
    spec: ListSpec,
    parts: usize,
) -> Result<Vec<String>> {
    let page_size = spec.page_size;
    let listing = Listing::new(store, counters, retry, spec, 1);
    let prefix = listing.spec.prefix.clone();
    let (first_page, more) = first_keys(&listing, Cursor::Start, page_size).await?;
    let mut widest = Vec::new();
    note_widest(&mut widest, &prefix, first_page.iter().map(String::as_str));
    let Some(last) = first_page.last().filter(|_| more && parts > 1) else {
        return Ok(Vec::new());
    };
    let mut boundaries = Vec::new();
    let mut stretches = std::collections::VecDeque::from([Stretch {
        low: last.clone(),
        high: None,
        misses: 0,
    }]);
    while boundaries.len() + 1 < parts {
        let Some(mut stretch) = stretches.pop_front() else {
            break;
        };
        let Some(guess) = split_point(&prefix, &stretch.low, stretch.high.as_deref(), &widest)
        else {
            continue; // nothing fits between: this stretch stays whole
        };
        let (keys, _) = first_keys(&listing, Cursor::After(guess.clone()), 1).await?;
        note_widest(&mut widest, &prefix, keys.iter().map(String::as_str));
        match keys.into_iter().next() {
            // A key strictly inside the stretch: a boundary, and two stretches to cut next.
            Some(first) if stretch.high.as_ref().is_none_or(|high| &first < high) => {
                stretches.push_back(Stretch {
                    low: std::mem::replace(&mut stretch.low, first.clone()),
                    high: Some(first.clone()),
                    misses: 0,
                });
                stretches.push_back(stretch);
                boundaries.push(guess);
            }
            // Nothing between the guess and the stretch's top: aim lower next time.
            _ => {
                stretch.high = Some(guess);
                stretch.misses += 1;
                if stretch.misses < MAX_MISSES {
                    stretches.push_front(stretch);
                }
            }
        }
    }
    boundaries.sort();
    Ok(boundaries)
}

/// Up to [`GUESSES_AT_ONCE`] keys strictly between `low`, the last key of a page that
/// started at `page_first`, and `ceiling` (a guess that found nothing above it; none: the
/// end of the key space), to probe for a split. First the middle of the stretch
/// ([`split_point`]); then, from the coarsest level down, the next group after `low` at each
/// level where the page's keys did not differ: after a page `w4/d000/k000000`..
/// `w4/d000/k000999` these are `w4/e`, `w4/d1`, `w4/d01`, steps of growing size that find
/// where sequential names end in one round trip where halving from an unknown top took one
/// per step. Below a ceiling, only the levels down to one below where `low` and the ceiling
/// part: finer steps would split off little more than the next page.
pub(super) fn split_guesses(
    prefix: &str,
    page_first: &str,
    low: &str,
    ceiling: Option<&str>,
    widest: &[char],
) -> Vec<String> {
    let mut guesses: Vec<String> = split_point(prefix, low, ceiling, widest)
        .into_iter()
        .collect();
    let low_rest: Vec<char> = low
        .get(prefix.len()..)
        .unwrap_or_default()
        .chars()
        .collect();
    let unvaried = page_first
        .get(prefix.len()..)
        .unwrap_or_default()
        .chars()
        .zip(&low_rest)
        .take_while(|(a, b)| a == *b)
        .count();
    let coarse = ceiling.map_or(unvaried, |ceiling| {
        let ceiling_rest = ceiling.get(prefix.len()..).unwrap_or_default().chars();
        let parted = ceiling_rest
            .zip(&low_rest)
            .take_while(|(a, b)| a == *b)
            .count();
        unvaried.min(parted + 2)
    });
    for level in 0..coarse {
        if guesses.len() >= GUESSES_AT_ONCE {
            break;
        }
        let Some(next) = low_rest.get(level).and_then(|&c| char_after(c)) else {
            continue;
        };
        let mut guess = prefix.to_owned();
        guess.extend(&low_rest[..level]);
        guess.push(next);
        let fits = guess.as_str() > low && ceiling.is_none_or(|ceiling| guess.as_str() < ceiling);
        if fits && !guesses.contains(&guess) {
            guesses.push(guess);
        }
    }
    guesses
}

/// The next character after `c` (past the surrogates), if there is one.
fn char_after(c: char) -> Option<char> {
    match u32::from(c) + 1 {
        0xD800 => Some('\u{E000}'),
        next => char::from_u32(next),
    }
}

/// A key strictly between `low` and `high` (both starting with `prefix`; `None` is the end
/// of the prefix's key space, guessed as just past the widest character seen), near the
/// middle character-wise, or `None` when there is no useful one. Correctness never depends
/// on the guess: the two ranges meet exactly at the returned key.
pub(super) fn split_point(
    prefix: &str,
    low: &str,
    high: Option<&str>,
    widest: &[char],
) -> Option<String> {
    // Just past the widest character seen at a position (printable ASCII when unknown),
    // or past the end of the character's class: having seen only "000" and "001" says
    // little about how far the digits go.
    let above_widest = |position: usize, floor: char| {
        let seen = widest.get(position).copied().unwrap_or('~');
        let class_end = match floor {
            '0'..='9' => '9',
            'a'..='z' => 'z',
            'A'..='Z' => 'Z',
            _ => seen,
        };
        u32::from(seen.max(class_end)) + 1
    };
    let low_rest: Vec<char> = low.get(prefix.len()..)?.chars().collect();
    let high_rest: Vec<char> = match high {
        Some(high) => high.get(prefix.len()..)?.chars().collect(),
        None => vec![char::from_u32(above_widest(0, *low_rest.first()?)).unwrap_or(char::MAX)],
    };
    let shared = low_rest
        .iter()
        .zip(&high_rest)
        .take_while(|(a, b)| a == b)
        .count();
    let high_char = u32::from(*high_rest.get(shared)?);
    let mut split: String = prefix.to_owned();
    split.extend(&low_rest[..shared]);
    match low_rest.get(shared) {
        // `low` is a prefix of `high`: extend it with something below high's next character.
        None => split.push(middle(' ' as u32, high_char)?),
        Some(&low_char)
            if high_char
                .checked_sub(u32::from(low_char))
                .is_some_and(|gap| gap >= 2) =>
        {
            split.push(middle(u32::from(low_char), high_char)?)
        }
        // Adjacent characters: keep low's, then go one deeper above low's next character.
        Some(&low_char) => {
            split.push(low_char);
            let floor = low_rest.get(shared + 1).copied().unwrap_or(' ');
            let ceiling = above_widest(shared + 1, floor).max(u32::from(floor) + 2);
            split.push(middle(u32::from(floor), ceiling)?);
        }
    }
    (split.as_str() > low && high.is_none_or(|high| split.as_str() < high)).then_some(split)
}

/// A character strictly between two code points, or `None` if they are adjacent.
fn middle(low: u32, high: u32) -> Option<char> {
    let mid = low + (high.checked_sub(low)? / 2);
    if mid <= low {
        return None;
    }
    // Surrogates are not characters; step below them (still above `low` when possible).
    let mid = if (0xD800..=0xDFFF).contains(&mid) {
        0xD7FF
    } else {
        mid
    };
    char::from_u32(mid).filter(|c| u32::from(*c) > low)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `widest` gives the widest character seen at each position below the prefix.
    fn check(prefix: &str, low: &str, high: Option<&str>, widest: &str) -> String {
        let widest: Vec<char> = widest.chars().collect();
        let split = split_point(prefix, low, high, &widest).expect("a split point");
        assert!(split.as_str() > low, "{split:?} > {low:?}");
        if let Some(high) = high {
            assert!(split.as_str() < high, "{split:?} < {high:?}");
        }
        assert!(split.starts_with(prefix));
        split
    }

    #[test]
    fn split_points_fall_strictly_inside_the_range() {
        assert_eq!(check("p/", "p/a", Some("p/z"), "z"), "p/m");
        // Unbounded: aim just past the widest character seen at the first position.
        assert_eq!(check("p/", "p/00999.bin", None, "9999.bin"), "p/5");
        assert_eq!(check("p/", "p/f0010.bin", None, "f999.bin"), "p/p");
        assert_eq!(check("p/", "p/00999.bin", Some("p/1"), "19"), "p/05");
        assert_eq!(check("", "a", Some("ab"), "zz"), "aA");
        check("", "dir/x", Some("dir0"), "zzzz");
        check("", "ü", None, "ü");
        check("", "\u{D7FE}", Some("\u{E000}"), "\u{E000}");
    }

    #[test]
    fn guesses_step_out_by_the_levels_a_page_did_not_vary() {
        let widest: Vec<char> = "d000/k000999".chars().collect();
        let first_page = |ceiling| {
            split_guesses(
                "w4/",
                "w4/d000/k000000",
                "w4/d000/k000999",
                ceiling,
                &widest,
            )
        };
        // No top known: the middle towards the widest class, then steps of growing size.
        assert_eq!(first_page(None), ["w4/o", "w4/e", "w4/d1", "w4/d01"]);
        // Below a ceiling: the middle under it, then the coarse steps that fit.
        assert_eq!(first_page(Some("w4/d1")), ["w4/d05", "w4/d01"]);
        let second = split_guesses(
            "w4/",
            "w4/d010/k010000",
            "w4/d010/k010999",
            Some("w4/d1"),
            &widest,
        );
        assert_eq!(second, ["w4/d05", "w4/d02"]);
        // Keys that differ from the first character on: only the middle.
        let flat: Vec<char> = "f".chars().collect();
        assert_eq!(split_guesses("", "0a", "3f", None, &flat), ["M"]);
        // Nothing fits below the ceiling.
        assert!(first_page(Some("w4/d000/k001")).len() < GUESSES_AT_ONCE);
        assert!(split_guesses("", "a", "a", Some("a "), &['z']).is_empty());
    }

    #[test]
    fn no_split_when_nothing_fits_between() {
        assert_eq!(split_point("", "a", Some("a "), &['z']), None);
        assert_eq!(split_point("", "a", Some("a!"), &['z']), None);
        // A store that lists out of byte order can hand us a bound below `low`.
        assert_eq!(split_point("", "b", Some("a"), &['z']), None);
    }

    #[test]
    fn repeated_splits_converge_on_dense_digits() {
        // Sequential numbers: each guess that finds nothing becomes the next ceiling.
        let mut ceiling: Option<String> = None;
        let mut steps = 0;
        loop {
            let guess = check("n/", "n/00999", ceiling.as_deref(), "09999");
            if guess.as_str() < "n/1" {
                break;
            }
            ceiling = Some(guess);
            steps += 1;
            assert!(steps < 8, "no convergence: {ceiling:?}");
        }
    }
}
