//! A brute-force reference for region self time and lane time, written from the definition
//! in `ikp_host::definitions` and sharing no code with `ikp_host::stats`: each lane's
//! time is cut at every stamp, and each piece goes to the innermost span open over it
//! (the one that began last), or to the time outside any region.
use ikp_host::{Lane, Trace};
use std::collections::BTreeMap;

/// Lane time, time outside any region, and self and inclusive time per region id.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Expected {
    pub lane_time: u64,
    pub outside: u64,
    pub self_ns: BTreeMap<u16, u64>,
    pub inclusive: BTreeMap<u16, u64>,
}

/// The expected figures of `lanes` of `t`.
pub fn expected<'a>(t: &Trace, lanes: impl IntoIterator<Item = &'a Lane>) -> Expected {
    let s = &t.spans;
    let mut e = Expected::default();
    for lane in lanes {
        let spans: Vec<usize> = lane.spans.clone().collect();
        let mut cuts = vec![lane.start, lane.end];
        for &i in &spans {
            cuts.extend([s.begin[i], s.end[i]]);
            *e.inclusive.entry(s.region[i]).or_default() += s.end[i] - s.begin[i];
        }
        cuts.sort_unstable();
        cuts.dedup();
        e.lane_time += cuts[cuts.len() - 1] - cuts[0];
        for w in cuts.windows(2) {
            let (a, b) = (w[0], w[1]);
            // Spans of a lane are listed parent first, so among those open over [a, b) the
            // innermost began last (the later one on a tie).
            let inner = spans
                .iter()
                .filter(|&&i| s.begin[i] <= a && b <= s.end[i])
                .max_by_key(|&&i| (s.begin[i], i));
            match inner {
                Some(&i) => *e.self_ns.entry(s.region[i]).or_default() += b - a,
                None => e.outside += b - a,
            }
        }
    }
    e
}
