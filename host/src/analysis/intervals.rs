//! Interval arithmetic on half-open nanosecond ranges: the one tool every breakdown uses.
//!
//! Overlapping activity must be counted once (two lanes waiting at the same time block the
//! kernel for that time once, not twice), so time categories are unions of intervals and
//! "exposed" time is a set difference, never a sum of durations.
use crate::time::{DurationNs, Timestamp};

/// A set of disjoint, sorted, non-empty half-open intervals `[start, end)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IntervalSet {
    runs: Vec<(Timestamp, Timestamp)>,
}

impl IntervalSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The union of arbitrary (possibly overlapping, unsorted, empty) intervals.
    pub fn from_unsorted(mut v: Vec<(Timestamp, Timestamp)>) -> Self {
        v.retain(|&(s, e)| e > s);
        v.sort_unstable();
        let mut runs: Vec<(Timestamp, Timestamp)> = Vec::with_capacity(v.len());
        for (s, e) in v {
            match runs.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => runs.push((s, e)),
            }
        }
        IntervalSet { runs }
    }

    /// The single interval `[start, end)` (empty if `end <= start`).
    pub fn span(start: Timestamp, end: Timestamp) -> Self {
        Self::from_unsorted(vec![(start, end)])
    }

    /// The disjoint runs, ascending.
    pub fn runs(&self) -> &[(Timestamp, Timestamp)] {
        &self.runs
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Total covered length.
    pub fn len(&self) -> DurationNs {
        self.runs.iter().map(|&(s, e)| e - s).sum()
    }

    /// `self ∪ other`.
    pub fn union(&self, other: &IntervalSet) -> IntervalSet {
        let mut v = Vec::with_capacity(self.runs.len() + other.runs.len());
        v.extend_from_slice(&self.runs);
        v.extend_from_slice(&other.runs);
        Self::from_unsorted(v)
    }

    /// `self ∩ other`, by a linear merge.
    pub fn intersect(&self, other: &IntervalSet) -> IntervalSet {
        let (a, b) = (&self.runs, &other.runs);
        let (mut i, mut j) = (0, 0);
        let mut runs = Vec::new();
        while i < a.len() && j < b.len() {
            let s = a[i].0.max(b[j].0);
            let e = a[i].1.min(b[j].1);
            if e > s {
                runs.push((s, e));
            }
            if a[i].1 < b[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        IntervalSet { runs }
    }

    /// `self \ other`, by a linear merge.
    pub fn subtract(&self, other: &IntervalSet) -> IntervalSet {
        let mut runs = Vec::new();
        let b = &other.runs;
        let mut j = 0;
        for &(s0, e) in &self.runs {
            let mut s = s0;
            while j < b.len() && b[j].1 <= s {
                j += 1;
            }
            let mut k = j;
            while k < b.len() && b[k].0 < e {
                if b[k].0 > s {
                    runs.push((s, b[k].0));
                }
                s = s.max(b[k].1);
                if s >= e {
                    break;
                }
                k += 1;
            }
            if s < e {
                runs.push((s, e));
            }
        }
        IntervalSet { runs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive_len(pred: impl Fn(Timestamp) -> bool, hi: Timestamp) -> DurationNs {
        (0..hi).filter(|&t| pred(t)).count() as DurationNs
    }

    fn contains(v: &[(Timestamp, Timestamp)], t: Timestamp) -> bool {
        v.iter().any(|&(s, e)| s <= t && t < e)
    }

    #[test]
    fn merges_overlaps_and_touching_runs() {
        let s = IntervalSet::from_unsorted(vec![(5, 9), (0, 2), (2, 3), (8, 12), (20, 20)]);
        assert_eq!(s.runs(), &[(0, 3), (5, 12)]);
        assert_eq!(s.len(), 10);
    }

    proptest! {
        #[test]
        fn set_operations_agree_with_pointwise_membership(
            a in prop::collection::vec((0u64..60, 0u64..20), 0..8),
            b in prop::collection::vec((0u64..60, 0u64..20), 0..8),
        ) {
            let a: Vec<_> = a.into_iter().map(|(s, l)| (s, s + l)).collect();
            let b: Vec<_> = b.into_iter().map(|(s, l)| (s, s + l)).collect();
            let (sa, sb) = (IntervalSet::from_unsorted(a.clone()), IntervalSet::from_unsorted(b.clone()));
            prop_assert_eq!(sa.len(), naive_len(|t| contains(&a, t), 80));
            prop_assert_eq!(sa.union(&sb).len(), naive_len(|t| contains(&a, t) || contains(&b, t), 80));
            prop_assert_eq!(sa.intersect(&sb).len(), naive_len(|t| contains(&a, t) && contains(&b, t), 80));
            prop_assert_eq!(sa.subtract(&sb).len(), naive_len(|t| contains(&a, t) && !contains(&b, t), 80));
            // Results stay normalized: sorted, disjoint, non-touching, non-empty.
            for r in [sa.subtract(&sb), sa.intersect(&sb)] {
                for w in r.runs().windows(2) {
                    prop_assert!(w[0].1 <= w[1].0);
                }
                prop_assert!(r.runs().iter().all(|&(s, e)| e > s));
            }
        }
    }
}
