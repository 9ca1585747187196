//! The sorted key names of a [`crate::KeySpace`]: a list held in memory, or W4's names made
//! from their place in the order, so that ten million keys cost the server no memory.

use std::borrow::Cow;

/// Sorted, distinct key names, by their UTF-8 bytes as S3 sorts them.
#[derive(Debug, Clone)]
pub(crate) enum Names {
    Listed(Vec<String>),
    Generated(Generated),
}

/// `PREFIXdFFF/kNNNNNN` (key `i` in folder `i % folders`), or `PREFIXkNNNNNN` with no
/// folders: the numbers zero-padded, so that the byte order is the numeric order.
#[derive(Debug, Clone)]
pub(crate) struct Generated {
    prefix: String,
    count: u64,
    folders: u64,
    key_width: usize,
    folder_width: usize,
}

impl Generated {
    pub(crate) fn new(prefix: &str, count: u64, folders: u64) -> Generated {
        let digits = |n: u64| n.saturating_sub(1).to_string().len();
        Generated {
            prefix: prefix.to_owned(),
            count,
            folders,
            // W4's names have six digits and three for the folder; more take more.
            key_width: digits(count).max(6),
            folder_width: digits(folders).max(3),
        }
    }

    /// The name at place `at` in the sorted order.
    fn name(&self, at: u64) -> String {
        let (prefix, width) = (&self.prefix, self.key_width);
        if self.folders == 0 {
            return format!("{prefix}k{at:0width$}");
        }
        // The first `rest` folders hold one key more than the others.
        let (each, rest) = (self.count / self.folders, self.count % self.folders);
        let (folder, place) = match at < rest * (each + 1) {
            true => (at / (each + 1), at % (each + 1)),
            false => {
                let past = at - rest * (each + 1);
                (rest + past / each, past % each)
            }
        };
        let number = place * self.folders + folder;
        let folder_width = self.folder_width;
        format!("{prefix}d{folder:0folder_width$}/k{number:0width$}")
    }
}

impl Names {
    pub(crate) fn listed(mut keys: Vec<String>) -> Names {
        keys.sort_unstable();
        keys.dedup();
        Names::Listed(keys)
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Names::Listed(keys) => keys.len(),
            Names::Generated(generated) => generated.count as usize,
        }
    }

    pub(crate) fn get(&self, at: usize) -> Option<Cow<'_, str>> {
        match self {
            Names::Listed(keys) => keys.get(at).map(|key| Cow::Borrowed(key.as_str())),
            Names::Generated(generated) => {
                (at < self.len()).then(|| Cow::Owned(generated.name(at as u64)))
            }
        }
    }

    /// The first place where `before` is false, `before` being true for a leading run.
    pub(crate) fn partition_point(&self, before: impl Fn(&str) -> bool) -> usize {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let middle = low + (high - low) / 2;
            match self.get(middle).is_some_and(|name| before(&name)) {
                true => low = middle + 1,
                false => high = middle,
            }
        }
        low
    }

    /// The place of `key`, if it is held.
    pub(crate) fn position(&self, key: &str) -> Option<usize> {
        let at = self.partition_point(|name| name < key);
        self.get(at).filter(|name| name == key).map(|_| at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated names are those of the formula, sorted, at every count and folder count.
    #[test]
    fn generated_names_are_the_formula_sorted() {
        for (count, folders) in [
            (0, 0),
            (1, 0),
            (17, 0),
            (17, 1),
            (17, 5),
            (250, 7),
            (9, 100),
        ] {
            let names = Names::Generated(Generated::new("p/", count, folders));
            let mut expected: Vec<String> = (0..count)
                .map(|i| match folders {
                    0 => format!("p/k{i:06}"),
                    _ => format!("p/d{:03}/k{i:06}", i % folders),
                })
                .collect();
            expected.sort();
            let got: Vec<String> = (0..names.len())
                .map(|at| names.get(at).unwrap().into_owned())
                .collect();
            assert_eq!(got, expected, "{count} keys in {folders} folders");
            for (at, key) in expected.iter().enumerate() {
                assert_eq!(names.position(key), Some(at));
            }
            assert_eq!(names.position("p/d000/k"), None);
            assert_eq!(names.get(count as usize), None);
        }
    }

    #[test]
    fn wide_counts_widen_the_numbers() {
        let generated = Generated::new("", 10_000_000, 1000);
        assert_eq!(generated.name(0), "d000/k0000000");
        assert_eq!(generated.name(9_999_999), "d999/k9999999");
        let generated = Generated::new("", 20, 1001);
        assert_eq!(generated.name(19), "d0019/k000019");
    }
}
