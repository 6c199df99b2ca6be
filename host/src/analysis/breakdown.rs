//! Timeline breakdown: where a block's (or the kernel's) wall time goes.
//!
//! Every instant of a lane's time belongs to its innermost open region ("self time"), so a
//! `wait` nested in a `mainloop` counts as waiting, not twice. Across the lanes of a block,
//! each category's self time is a union of intervals; categories are then made disjoint by
//! priority (compute, wait, load, store, comm, other: each keeps only the time no earlier
//! category covers, its "exposed" time), and what is left of the window is idle. Hence
//! `compute + exposed_wait + exposed_load + exposed_store + exposed_comm + exposed_other +
//! idle == total` exactly, in integer ns.

use super::categories::{Category, CategoryTable};
use super::intervals::IntervalSet;
use crate::model::{Ns, Trace};

/// Wall time of a window split into disjoint parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TimeBreakdown {
    /// Window start.
    pub start: Ns,
    /// Window length: first lane start to last lane end.
    pub total: Ns,
    /// Time any lane computes.
    pub compute: Ns,
    /// Time some lane waits and none computes.
    pub exposed_wait: Ns,
    /// Time some lane loads and none computes or waits.
    pub exposed_load: Ns,
    /// Time some lane stores and none computes, waits or loads.
    pub exposed_store: Ns,
    /// Time some lane communicates and none of the above.
    pub exposed_comm: Ns,
    /// Time only uncategorised regions run.
    pub exposed_other: Ns,
    /// Time no lane is inside any region.
    pub idle: Ns,
}

/// Per-category unions of self time over a set of lanes.
#[derive(Clone, Debug, Default)]
pub struct CategoryTime {
    /// Indexed like [`Category::ALL`].
    pub sets: [IntervalSet; 6],
}

/// The category of every region id of `trace`.
pub fn region_categories(trace: &Trace, table: &CategoryTable) -> Vec<Category> {
    let n = trace
        .spans
        .region
        .iter()
        .copied()
        .max()
        .map_or(0, |m| m as usize + 1)
        .max(trace.names.regions.len());
    (0..n)
        .map(|id| table.classify(&trace.names.region(id as u16)))
        .collect()
}

/// Self-time intervals of one lane, per category (unsorted, may be appended to `out`).
fn lane_self_time(trace: &Trace, lane_pos: usize, cats: &[Category], out: &mut [Vec<(Ns, Ns)>; 6]) {
    let s = &trace.spans;
    let idx = |c: Category| Category::ALL.iter().position(|&x| x == c).unwrap_or(5);
    // Stack of open spans: (end, category index, cursor = first unattributed ns).
    let mut stack: Vec<(Ns, usize, Ns)> = Vec::new();
    let pop = |stack: &mut Vec<(Ns, usize, Ns)>, out: &mut [Vec<(Ns, Ns)>; 6]| {
        let (end, c, cur) = stack.pop().expect("non-empty stack");
        if end > cur {
            out[c].push((cur, end));
        }
        if let Some(parent) = stack.last_mut() {
            parent.2 = parent.2.max(end);
        }
    };
    for i in trace.lanes[lane_pos].spans.clone() {
        let (b, e) = (s.begin[i], s.end[i]);
        while stack.last().is_some_and(|t| t.0 <= b) {
            pop(&mut stack, out);
        }
        if let Some(parent) = stack.last_mut() {
            if b > parent.2 {
                out[parent.1].push((parent.2, b));
            }
            parent.2 = parent.2.max(b);
        }
        stack.push((e, idx(cats[s.region[i] as usize]), b));
    }
    while !stack.is_empty() {
        pop(&mut stack, out);
    }
}

/// Unions of self time per category over the lanes at `lane_positions`.
pub fn category_time(
    trace: &Trace,
    lane_positions: impl IntoIterator<Item = usize>,
    cats: &[Category],
) -> CategoryTime {
    let mut raw: [Vec<(Ns, Ns)>; 6] = Default::default();
    for p in lane_positions {
        lane_self_time(trace, p, cats, &mut raw);
    }
    CategoryTime {
        sets: raw.map(IntervalSet::from_unsorted),
    }
}

fn breakdown_of(window: (Ns, Ns), ct: &CategoryTime) -> TimeBreakdown {
    let win = IntervalSet::span(window.0, window.1);
    let mut covered = IntervalSet::new();
    let mut parts = [0 as Ns; 6];
    for (k, set) in ct.sets.iter().enumerate() {
        let exposed = set.intersect(&win).subtract(&covered);
        parts[k] = exposed.len();
        covered = covered.union(&exposed);
    }
    let total = window.1.saturating_sub(window.0);
    TimeBreakdown {
        start: window.0,
        total,
        compute: parts[0],
        exposed_wait: parts[1],
        exposed_load: parts[2],
        exposed_store: parts[3],
        exposed_comm: parts[4],
        exposed_other: parts[5],
        idle: total - covered.len(),
    }
}

fn window(trace: &Trace, lanes: &[usize]) -> (Ns, Ns) {
    let start = lanes
        .iter()
        .map(|&p| trace.lanes[p].start)
        .min()
        .unwrap_or(0);
    let end = lanes
        .iter()
        .map(|&p| trace.lanes[p].end)
        .max()
        .unwrap_or(start);
    (start, end.max(start))
}

/// The breakdown of the whole kernel (all lanes).
pub fn kernel_breakdown(trace: &Trace, table: &CategoryTable) -> TimeBreakdown {
    let cats = region_categories(trace, table);
    let lanes: Vec<usize> = (0..trace.lanes.len()).collect();
    breakdown_of(
        window(trace, &lanes),
        &category_time(trace, lanes.iter().copied(), &cats),
    )
}

/// The breakdown of every block that recorded anything, by block id ascending.
pub fn block_breakdowns(trace: &Trace, table: &CategoryTable) -> Vec<(u32, TimeBreakdown)> {
    let cats = region_categories(trace, table);
    let mut out = Vec::new();
    let mut i = 0;
    while i < trace.lanes.len() {
        let block = trace.lanes[i].block;
        let mut j = i;
        while j < trace.lanes.len() && trace.lanes[j].block == block {
            j += 1;
        }
        let lanes: Vec<usize> = (i..j).collect();
        out.push((
            block,
            breakdown_of(window(trace, &lanes), &category_time(trace, i..j, &cats)),
        ));
        i = j;
    }
    out
}

/// Self time of every span: its duration minus the durations of the spans directly nested
/// in it (indexed like [`Trace::spans`]). Summed over a lane, self times never count a
/// nanosecond twice, so percentages of their total add up to 100.
pub fn self_times(trace: &Trace) -> Vec<Ns> {
    let s = &trace.spans;
    let mut out: Vec<Ns> = (0..s.len()).map(|i| s.dur(i)).collect();
    for lane in &trace.lanes {
        let mut stack: Vec<usize> = Vec::new();
        for i in lane.spans.clone() {
            // The parent is the nearest span up the stack (depths come from the decoder) that
            // is still open. Depths alone are not enough: after a begin that was never
            // closed, a span one level deeper follows that begin's closed sibling.
            while stack
                .last()
                .is_some_and(|&p| s.depth[p] >= s.depth[i] || s.end[p] <= s.begin[i])
            {
                stack.pop();
            }
            if let Some(&p) = stack.last() {
                // Clip: a child overrunning its parent only takes what overlaps.
                let overlap = s.end[i]
                    .min(s.end[p])
                    .saturating_sub(s.begin[i].max(s.begin[p]));
                out[p] = out[p].saturating_sub(overlap);
            }
            stack.push(i);
        }
    }
    out
}
