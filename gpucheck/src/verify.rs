//! What every trace recorded on a GPU must satisfy, whatever the kernel: every lane
//! finalized, nothing dropped, unpaired, unknown or written after finalize, no timer stamp
//! that stepped back (the decoder clamps and counts them), no lane set aside as not of
//! the launch (a real launch must never trip those rules), and each
//! lane's spans in order (begins never go back, ends never precede their begins, nested
//! spans lie inside their parents).

use ikp_host::Trace;

/// Why a trace is not clean, naming the first offending lane or span.
pub fn clean_and_ordered(trace: &Trace) -> Result<(), String> {
    if trace.lanes.is_empty() {
        return Err("no lane recorded anything".into());
    }
    let d = &trace.diagnostics;
    if let Some(l) = trace.lanes.iter().find(|l| !l.finalized) {
        return Err(format!(
            "{} lanes never finalized (first: lane {}, block {} group {})",
            trace.lanes.iter().filter(|l| !l.finalized).count(),
            l.id,
            l.block,
            l.group
        ));
    }
    if trace.dropped() > 0 {
        return Err(format!("{} records dropped", trace.dropped()));
    }
    if !d.unmatched_begin.is_empty() || !d.unmatched_end.is_empty() {
        return Err(format!(
            "{} unmatched begins and {} unmatched ends",
            d.unmatched_begin.len(),
            d.unmatched_end.len()
        ));
    }
    if d.backward_steps > 0 {
        return Err(format!(
            "{} timer stamps stepped back (clamped by the decoder)",
            d.backward_steps
        ));
    }
    if let Some(s) = d.set_aside.first() {
        return Err(format!(
            "{} lanes set aside as not of the launch (first: lane {}, {}: {})",
            d.set_aside.len(),
            s.lane,
            s.track.name(),
            s.reason.describe()
        ));
    }
    if d.after_finalize > 0 || d.unknown_records > 0 {
        return Err(format!(
            "{} records after finalize, {} of unknown kind",
            d.after_finalize, d.unknown_records
        ));
    }
    for lane in &trace.lanes {
        ordered(trace, lane.spans.clone()).map_err(|e| format!("lane {}: {e}", lane.id))?;
        if lane.end < lane.start {
            return Err(format!(
                "lane {} ends ({}) before it starts ({})",
                lane.id, lane.end, lane.start
            ));
        }
    }
    Ok(())
}

/// The spans `range` of one lane, in the decoder's begin order: begins non-decreasing,
/// each end at or after its begin, each span of depth `d > 0` inside the last span of
/// depth `d - 1` before it.
fn ordered(trace: &Trace, range: std::ops::Range<usize>) -> Result<(), String> {
    let s = &trace.spans;
    // Open ancestors: (depth, begin, end) of the last span seen at each depth.
    let mut parents: Vec<(u64, u64)> = Vec::new();
    let mut prev_begin = 0u64;
    for i in range {
        let (b, e, depth) = (s.begin[i], s.end[i], s.depth[i] as usize);
        if b < prev_begin {
            return Err(format!(
                "span {i} begins at {b}, before the previous begin {prev_begin}"
            ));
        }
        if e < b {
            return Err(format!("span {i} ends at {e}, before its begin {b}"));
        }
        prev_begin = b;
        if depth > parents.len() {
            return Err(format!(
                "span {i} has depth {depth} with no parent at depth {}",
                depth - 1
            ));
        }
        parents.truncate(depth);
        if let Some(&(pb, pe)) = parents.last() {
            if b < pb || e > pe {
                return Err(format!(
                    "span {i} [{b}, {e}] is not inside its parent [{pb}, {pe}]"
                ));
            }
        }
        parents.push((b, e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ikp_device::encoder::BufferWriter;
    use ikp_device::{Layout, TimerMode};
    use ikp_host::decode::{decode, DecodeOptions};

    fn layout() -> Layout {
        Layout {
            grid: [2, 1, 1],
            groups_per_block: 1,
            records_per_lane: 8,
            timer: TimerMode::Globaltimer,
            regions: vec!["outer".into(), "inner".into()],
            counters: vec![],
            ..Layout::default()
        }
    }

    /// Two lanes of `outer { inner } outer`; `lane1` may change what lane 1 records.
    fn trace(lane1: impl Fn(&mut ikp_device::encoder::LaneWriter<'_>)) -> Trace {
        let mut w = BufferWriter::new(layout()).unwrap();
        for b in 0..2u64 {
            let mut l = w.lane(b);
            l.init(b as u32, 0, 0, 1_000, 0);
            if b == 1 {
                lane1(&mut l);
                continue;
            }
            l.begin(0, 0, 1_100)
                .begin(1, 0, 1_200)
                .end(1, 0, 1_300)
                .end(0, 0, 1_400);
            l.finalize(1_500, 0);
        }
        decode(&w.into_words(), &DecodeOptions::default()).unwrap()
    }

    #[test]
    fn a_clean_nested_trace_passes() {
        let t = trace(|l| {
            l.begin(0, 1, 1_100)
                .end(0, 1, 1_200)
                .begin(0, 2, 1_200)
                .end(0, 2, 1_250);
            l.finalize(1_300, 0);
        });
        clean_and_ordered(&t).unwrap();
    }

    #[test]
    fn every_kind_of_loss_is_named() {
        let e = clean_and_ordered(&trace(|l| {
            l.begin(0, 1, 1_100).end(0, 1, 1_200);
        }))
        .unwrap_err();
        assert!(e.contains("never finalized"), "{e}");
        let e = clean_and_ordered(&trace(|l| {
            l.begin(0, 1, 1_100).finalize(1_300, 0);
        }))
        .unwrap_err();
        assert!(e.contains("unmatched begins"), "{e}");
        let e = clean_and_ordered(&trace(|l| {
            for i in 0..5 {
                l.begin(0, i, 1_100 + i as u64).end(0, i, 1_101 + i as u64);
            }
            l.finalize(1_300, 0);
        }))
        .unwrap_err();
        assert!(e.contains("dropped"), "{e}");
    }

    #[test]
    fn a_timer_that_steps_back_is_named() {
        let e = clean_and_ordered(&trace(|l| {
            l.begin(0, 1, 1_200).end(0, 1, 1_150).finalize(1_300, 0);
        }))
        .unwrap_err();
        assert!(e.contains("1 timer stamps stepped back"), "{e}");
    }

    #[test]
    fn out_of_order_and_escaping_spans_are_found() {
        // The decoder never produces these from monotone stamps: the checks guard against
        // a decoder that would, so the trace is broken after decoding.
        let clean = trace(|l| {
            l.begin(0, 1, 1_100)
                .end(0, 1, 1_200)
                .begin(0, 2, 1_200)
                .end(0, 2, 1_250);
            l.finalize(1_300, 0);
        });
        let lane1 = clean.lanes[1].spans.clone();
        let mut t = clean.clone();
        t.spans.begin[lane1.start + 1] = 1_050;
        let e = clean_and_ordered(&t).unwrap_err();
        assert!(
            e.contains("lane 1") && e.contains("before the previous begin"),
            "{e}"
        );
        let mut t = clean.clone();
        t.spans.end[lane1.start] = 1_000;
        let e = clean_and_ordered(&t).unwrap_err();
        assert!(e.contains("before its begin"), "{e}");
        // Lane 0's inner span made to end after its parent.
        let mut t = clean;
        let inner = t.lanes[0].spans.start + 1;
        assert_eq!(t.spans.depth[inner], 1);
        t.spans.end[inner] = 1_450;
        let e = clean_and_ordered(&t).unwrap_err();
        assert!(
            e.contains("lane 0") && e.contains("not inside its parent"),
            "{e}"
        );
    }
}
