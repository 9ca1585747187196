//! Byte ranges: one range as HTTP writes it, and the stretches of an object written so far.

use std::collections::BTreeMap;
use std::fmt;

/// Inclusive byte range, as HTTP writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ByteRange {
    pub start: u64,
    pub end: u64,
}

impl fmt::Display for ByteRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bytes={}-{}", self.start, self.end)
    }
}

/// Stretches of bytes, merged as they are added: start -> end (exclusive).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Coverage(BTreeMap<u64, u64>);

impl Coverage {
    pub(crate) fn add(&mut self, start: u64, end: u64) {
        let (mut start, mut end) = (start, end);
        if let Some((&before, &before_end)) = self.0.range(..=start).next_back() {
            if before_end >= start {
                start = before;
                end = end.max(before_end);
            }
        }
        while let Some((&next, &next_end)) = self.0.range(start..).next() {
            if next > end {
                break;
            }
            end = end.max(next_end);
            self.0.remove(&next);
        }
        self.0.insert(start, end);
    }

    /// The end of the stretch that starts at `start`, or `start` when there is none.
    pub(crate) fn end_of_run_from(&self, start: u64) -> u64 {
        self.0.get(&start).copied().unwrap_or(start)
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.0.iter().map(|(start, end)| end - start).sum()
    }

    /// The stretches of `whole` not covered, in order.
    pub(crate) fn gaps(&self, whole: ByteRange) -> Vec<ByteRange> {
        let mut gaps = Vec::new();
        let mut next = whole.start;
        for (start, end) in self.stretches() {
            if end <= next || start > whole.end {
                continue;
            }
            if start > next {
                gaps.push(ByteRange {
                    start: next,
                    end: start - 1,
                });
            }
            next = end;
        }
        if next <= whole.end {
            gaps.push(ByteRange {
                start: next,
                end: whole.end,
            });
        }
        gaps
    }

    pub(crate) fn stretches(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.0.iter().map(|(&start, &end)| (start, end))
    }

    pub(crate) fn render(&self) -> String {
        let stretches: Vec<String> = self
            .0
            .iter()
            .map(|(start, end)| format!("{start}-{end}"))
            .collect();
        stretches.join(",")
    }

    pub(crate) fn parse(text: &str) -> Option<Coverage> {
        let mut coverage = Coverage::default();
        for stretch in text.split(',').filter(|s| !s.is_empty()) {
            let (start, end) = stretch.split_once('-')?;
            let (start, end): (u64, u64) = (start.parse().ok()?, end.parse().ok()?);
            if start >= end {
                return None;
            }
            coverage.add(start, end);
        }
        Some(coverage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: u64, end: u64) -> ByteRange {
        ByteRange { start, end }
    }

    #[test]
    fn coverage_merges_touching_and_overlapping_stretches() {
        let mut coverage = Coverage::default();
        coverage.add(10, 20);
        coverage.add(30, 40);
        coverage.add(20, 30);
        coverage.add(0, 5);
        assert_eq!(
            coverage.stretches().collect::<Vec<_>>(),
            vec![(0, 5), (10, 40)]
        );
        assert_eq!(
            coverage.gaps(range(0, 49)),
            vec![range(5, 9), range(40, 49)]
        );
        assert_eq!(coverage.gaps(range(12, 38)), vec![]);
        assert_eq!(coverage.gaps(range(3, 12)), vec![range(5, 9)]);
        assert_eq!(Coverage::default().gaps(range(0, 9)), vec![range(0, 9)]);
        assert_eq!(coverage.end_of_run_from(0), 5);
        assert_eq!(Coverage::parse(&coverage.render()), Some(coverage));
        assert_eq!(Coverage::parse("5-3"), None);
    }
}
