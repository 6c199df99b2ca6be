//! Hand-built traces for unit tests of the analyses and the report.
use crate::model::*;
use crate::time::Timestamp;

/// One lane of a test trace: `(block, group, sm, start, end, spans, samples)` where spans are
/// `(region, begin, end)`, nested or overlapping, and samples `(counter, ts, iterations)`.
pub(crate) struct L {
    pub(crate) block: u32,
    pub(crate) sm: u32,
    pub(crate) start: Timestamp,
    pub(crate) end: Timestamp,
    pub(crate) spans: Vec<(u16, Timestamp, Timestamp)>,
    pub(crate) samples: Vec<(u16, Timestamp, u32)>,
}

pub(crate) fn lane(
    block: u32,
    sm: u32,
    start: Timestamp,
    end: Timestamp,
    spans: &[(u16, Timestamp, Timestamp)],
) -> L {
    L {
        block,
        sm,
        start,
        end,
        spans: spans.to_vec(),
        samples: vec![],
    }
}

pub(crate) fn trace(names: &[&str], lanes: Vec<L>) -> Trace {
    let mut t = Trace {
        source: Source {
            format: WireFormat::Ikp,
            version: 1,
            timer: ikp_device::TimerMode::Globaltimer,
            clock: None,
            assumed_clock: None,
            grid: [lanes.iter().map(|l| l.block + 1).max().unwrap_or(1), 1, 1],
            groups_per_block: 4,
            records_per_lane: 1024,
            time_base: 0,
            block_filter: BlockFilter::default(),
            clock_sync: None,
            epoch: None,
            overhead_correction: None,
            stream: None,
        },
        names: Names {
            regions: names.iter().map(|s| s.to_string()).collect(),
            counters: vec!["spin".into()],
        },
        lanes: vec![],
        spans: Spans::default(),
        instants: Instants::default(),
        samples: CounterSamples::default(),
        async_ranges: Default::default(),
        counter_totals: vec![],
        diagnostics: Diagnostics::default(),
    };
    let mut group_of_block = std::collections::HashMap::new();
    for l in lanes {
        let g = group_of_block.entry(l.block).or_insert(0u32);
        let id = l.block * 4 + *g;
        *g += 1;
        let mut spans = l.spans.clone();
        spans.sort_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(&a.2)));
        let s0 = t.spans.len();
        // Depths as the decoder gives them: one more than the innermost (last listed)
        // span still open at the begin.
        let mut listed: Vec<(Timestamp, u16)> = vec![];
        for (r, b, e) in spans {
            let depth = (listed.iter().rev())
                .find(|p| p.0 > b)
                .map_or(0, |p| p.1 + 1);
            t.spans.push(id, r, depth, 0, b, e);
            listed.push((e, depth));
        }
        let k0 = t.samples.len();
        for (c, ts, v) in l.samples {
            t.samples.push(id, c, ts, v);
        }
        t.lanes.push(Lane {
            id,
            block: l.block,
            group: id % 4,
            sm: Some(l.sm),
            warp: Some(0),
            start: l.start,
            end: l.end,
            finalized: true,
            spans: s0..t.spans.len(),
            samples: k0..t.samples.len(),
            ..Default::default()
        });
        t.counter_totals.push(0);
    }
    t
}
