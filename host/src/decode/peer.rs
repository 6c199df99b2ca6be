//! What the decoders of other profilers' outputs share: model tables built lane by lane
//! from events that carry whole 64-bit times, and the pairing of begin / end records
//! under the rules of the wire formats' lane walk.
//!
//! The `u64` wire formats go through the walk of [`super::lane`], built around their
//! packed records (32-bit stamps to unwrap, 10-bit region ids); the peers' events carry
//! 64-bit times and 16-bit region ids, so [`Pairing`] applies the same rules to them
//! directly (the decode module's `# Pairing`): an end closes the innermost open begin of
//! its region, and begins opened after that one stay open (regions may overlap); a begin
//! still open when the lane ends and an end with no open begin of its region are
//! unmatched; a span's depth is 0 when nothing was open at its begin, else one more than
//! the innermost open region's; a time behind the lane's latest one takes that latest
//! time and is counted as a backward step.

use crate::model::{Diagnostics, Instants, Lane, Spans, Unpaired};
use crate::time::Timestamp;

/// Lanes (ascending by id), their spans and instants (ranges absolute) and the
/// diagnostics, built lane by lane.
#[derive(Debug, Default)]
pub(crate) struct Built {
    pub lanes: Vec<Lane>,
    pub spans: Spans,
    pub instants: Instants,
    pub diag: Diagnostics,
}

impl Built {
    /// Appends `o`, whose lanes all have higher ids, after this one's lanes.
    pub fn append(&mut self, o: Built) {
        let (s0, i0) = (self.spans.len(), self.instants.len());
        let Built {
            lanes,
            spans,
            instants,
            diag,
        } = o;
        self.lanes.extend(lanes.into_iter().map(|l| Lane {
            spans: l.spans.start + s0..l.spans.end + s0,
            instants: l.instants.start + i0..l.instants.end + i0,
            ..l
        }));
        self.spans.extend_rows(&spans, 0..spans.len());
        self.instants.extend_rows(&instants, 0..instants.len());
        let d = &mut self.diag;
        d.unmatched_begin.extend(diag.unmatched_begin);
        d.unmatched_end.extend(diag.unmatched_end);
        d.after_finalize += diag.after_finalize;
        d.unfinalized_lanes += diag.unfinalized_lanes;
        d.unknown_records += diag.unknown_records;
        d.backward_steps += diag.backward_steps;
    }

    /// The earliest lane start (0 without lanes): a trace's time base.
    pub fn time_base(&self) -> Timestamp {
        self.lanes.iter().map(|l| l.start).min().unwrap_or(0)
    }
}

/// A begin of the lane being paired.
#[derive(Clone, Copy, Debug)]
struct Open {
    region: u16,
    depth: u16,
    begin: Timestamp,
    /// Its end, once closed; `None` while open, and for ever if it turns out unmatched.
    end: Option<Timestamp>,
}

/// One lane's records, in the order they were written, paired into `built` (module docs).
#[derive(Debug)]
pub(crate) struct Pairing<'b> {
    built: &'b mut Built,
    lane: u32,
    /// The lane's begins in order; their spans are written at [`Pairing::finish`], so
    /// those never closed leave no hole.
    rows: Vec<Open>,
    /// Indices into `rows` of the open begins, innermost last.
    open: Vec<usize>,
    first: Option<Timestamp>,
    last: Timestamp,
    instants: usize,
}

impl<'b> Pairing<'b> {
    /// Starts lane `lane`, whose output follows what `built` holds.
    pub fn new(built: &'b mut Built, lane: u32) -> Self {
        let instants = built.instants.len();
        Pairing {
            built,
            lane,
            rows: Vec::new(),
            open: Vec::new(),
            first: None,
            last: 0,
            instants,
        }
    }

    /// The time a record stamped `t` gets: `t`, or the lane's latest time if `t` is behind
    /// it (counted).
    fn at(&mut self, t: Timestamp) -> Timestamp {
        match self.first {
            None => {
                (self.first, self.last) = (Some(t), t);
            }
            Some(_) if t < self.last => self.built.diag.backward_steps += 1,
            Some(_) => self.last = t,
        }
        self.last
    }

    /// A begin of `region` stamped `t`.
    pub fn begin(&mut self, region: u16, t: Timestamp) {
        let begin = self.at(t);
        let depth = (self.open.last())
            .map_or(0, |&r| self.rows[r].depth.saturating_add(1))
            .min(u16::MAX - 1);
        self.open.push(self.rows.len());
        self.rows.push(Open {
            region,
            depth,
            begin,
            end: None,
        });
    }

    /// An end of `region` stamped `t`.
    pub fn end(&mut self, region: u16, t: Timestamp) {
        let ts = self.at(t);
        let rows = &self.rows;
        let Some(k) = self.open.iter().rposition(|&r| rows[r].region == region) else {
            let u = unpaired(self.lane, region, ts);
            self.built.diag.unmatched_end.push(u);
            return;
        };
        let r = self.open.remove(k);
        self.rows[r].end = Some(ts);
    }

    /// An instant of `region` stamped `t`.
    pub fn instant(&mut self, region: u16, t: Timestamp) {
        let ts = self.at(t);
        let i = &mut self.built.instants;
        i.push(self.lane, region, 0, ts);
    }

    /// A record of a kind the format does not define, stamped `t`: counted, and its time
    /// still bounds the lane.
    pub fn unknown(&mut self, t: Timestamp) {
        self.at(t);
        self.built.diag.unknown_records += 1;
    }

    /// Ends the lane: begins still open are unmatched (outermost first); the lane's spans
    /// are written in the order of their begins. Returns the lane's span and instant ranges
    /// and its first and latest times (`None` if it had no timed record).
    pub fn finish(self) -> Finished {
        let Pairing {
            built,
            lane,
            rows,
            open,
            first,
            last,
            instants,
        } = self;
        (built.diag.unmatched_begin).extend(
            open.iter()
                .map(|&r| unpaired(lane, rows[r].region, rows[r].begin)),
        );
        let s0 = built.spans.len();
        for o in &rows {
            if let Some(end) = o.end {
                (built.spans).push(lane, o.region, o.depth, 0, o.begin, end);
            }
        }
        Finished {
            spans: s0..built.spans.len(),
            instants: instants..built.instants.len(),
            times: first.map(|f| (f, last)),
        }
    }
}

/// An unpaired record of `lane` (the peers' records carry no payload).
fn unpaired(lane: u32, region: u16, ts: Timestamp) -> Unpaired {
    Unpaired {
        lane,
        region,
        payload: 0,
        ts,
    }
}

/// What [`Pairing::finish`] returns.
#[derive(Clone, Debug)]
pub(crate) struct Finished {
    pub spans: std::ops::Range<usize>,
    pub instants: std::ops::Range<usize>,
    /// The lane's first and latest times, if it had a timed record.
    pub times: Option<(Timestamp, Timestamp)>,
}

#[cfg(test)]
mod tests {
    use super::{Built, Pairing};

    #[test]
    fn pairs_like_the_lane_walk_and_clamps_steps_back() {
        let mut b = Built::default();
        let mut p = Pairing::new(&mut b, 7);
        p.begin(1, 100);
        p.begin(2, 110);
        p.begin(3, 120);
        p.end(2, 130); // closes 2; 3, begun inside it, stays open
        p.end(9, 140); // nothing of 9 open
        p.instant(4, 135); // behind 140: clamped
        p.begin(5, 150); // depth 3: region 3 (depth 2) is the innermost open one
        p.end(5, 160);
        let f = p.finish(); // 1 and 3 never closed
        assert_eq!(f.times, Some((100, 160)));
        let s = &b.spans;
        let rows: Vec<_> = (f.spans.clone())
            .map(|k| (s.region[k], s.depth[k], s.begin[k], s.end[k]))
            .collect();
        assert_eq!(rows, [(2, 1, 110, 130), (5, 3, 150, 160)]);
        assert_eq!(b.instants.ts, [140]);
        let d = &b.diag;
        let ub: Vec<_> = d.unmatched_begin.iter().map(|u| (u.region, u.ts)).collect();
        assert_eq!(ub, [(1, 100), (3, 120)]);
        assert_eq!(d.unmatched_end[0].region, 9);
        assert_eq!(d.backward_steps, 1);
        assert!(d.unmatched_begin.iter().all(|u| u.lane == 7));
    }
}
