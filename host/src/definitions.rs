//! What the numbers mean: the definitions behind every region time and percentage ikp
//! prints or writes. Documentation only.
//!
//! The terminal table of `ikp summary` ([`crate::write::table`]), the summary JSON
//! ([`crate::write::summary`]), the HTML report's region table ([`crate::report`]) and
//! the xlsx workbook ([`crate::report::xlsx`]) all link here and compute their figures
//! with [`crate::stats::Shares`], so a region shows the same percentage in each of them.
//!
//! # Terms
//!
//! - **Lane**: the records of one leader thread (one block, or one warp group of a block).
//! - **Span**: one paired begin and end of a region in a lane (an end closes the innermost
//!   open region with its id). A span that begins while another one is open began inside
//!   it, *directly* inside the innermost open one (the one begun last). Spans of a lane
//!   usually nest, but need not: a region may end while a region begun inside it is still
//!   open (begin `load`, begin `wait`, end `load`, end `wait`), and then the two
//!   **overlap**. A begin that is never closed, or an end without a begin, makes no span
//!   (they are counted as unmatched).
//! - **Inclusive time** of a region (`total_dur` in the summary JSON, `incl.` in the
//!   terminal table and the HTML report, `inclusive_time_ms` in the xlsx): the durations
//!   of its spans, summed. It includes the time of every region nested inside, so the
//!   inclusive times of a parent and its children overlap and their sum means nothing; a
//!   region nested in itself counts the inner time twice. The mean, minimum, maximum,
//!   percentiles and histograms of a region are statistics of these whole-span
//!   durations.
//! - **Self time** of a span: the time it is the innermost open span of its lane, the open
//!   one that began last ([`crate::stats::self_times`]). Of a region (`self_dur`, `self`,
//!   `self_time_ms`): that summed over its spans. Each nanosecond a lane spends inside
//!   some region is the self time of exactly one span, so self times never count a
//!   nanosecond twice. Where spans nest, a span's self time is its duration minus the
//!   durations of the spans directly inside it. Where two overlap, the time both are open
//!   is the self time of the one that began later (or of what began inside it): with
//!   `load` over [0, 40) and a `wait` begun inside it over [20, 60), `load` has 20 ns of
//!   self time ([0, 20)) and `wait` 40 ns ([20, 60)); a region enclosing both gets its
//!   time back only once the `wait` has ended too.
//! - **Lane time** (`lane_dur`): the sum, over the lanes reported, of each lane's time
//!   from its first stamp to its last: from its init record to its finalize record (a
//!   TVM-family lane starts at its first record; a lane that never finalized ends at its
//!   last record). It is thread time, not wall time: two lanes running side by side for
//!   10 us make 20 us of lane time.
//! - **Outside any region** (`outside_dur`, the `(outside any region)` row): the lane time
//!   that is no span's self time, i.e. when the lane had no region open: before its first
//!   begin, between its outermost regions, after its last end, and the whole of a lane that
//!   recorded no span.
//! - **Share** (`self_share` and `outside_share` as fractions; `self %` and
//!   `Percentage (%)` as percentages): self time divided by lane time. It is the only
//!   share ikp gives for a region. The shares of all regions and the share outside any
//!   region add up to 100 % (to 1 in the JSON). **Cumulative %** is the running sum of
//!   shares in the order shown: regions by self time, largest first (ties by region id),
//!   then the row outside any region, which therefore ends at 100 %.
//!
//! "The lanes reported" are all lanes of the buffer, or, in `ikp summary`, `ikp decode
//! --summary` and the per-block distributions, those of the blocks selected
//! (`--block-filter`; a per-block file uses its own block's lanes). Durations in the
//! summary JSON are multiplied by its `scale`; shares do not depend on it.
//!
//! # Example
//!
//! Lane 0 runs from 0 to 100 ns with `mainloop` over [10, 90) and `mma` over [20, 60)
//! inside it; lane 1 runs from 0 to 50 ns inside `wait` the whole time.
//!
//! | row | inclusive | self | share |
//! |---|---|---|---|
//! | `wait` | 50 | 50 | 33.3 % |
//! | `mainloop` | 80 | 80 − 40 = 40 | 26.7 % |
//! | `mma` | 40 | 40 | 26.7 % |
//! | outside any region | | 10 + 10 = 20 | 13.3 % |
//! | lane time | | 100 + 50 = 150 | 100 % |
//!
//! # Why lane time, with a remainder row
//!
//! A kernel engineer reading "`mma` 26.7 %" wants to know how much of the time the lanes
//! ran went to the MMA itself. Dividing by lane time answers that, and the remainder row
//! shows the time no region covers, which a share of instrumented time alone would hide
//! (a lane with a single small region would otherwise report it as 100 %). Summing over
//! lanes weights each lane by how long it ran, as a sampling profiler weights each thread
//! by its samples.
//!
//! # Block-time figures (`ikp analyze`, the report's "Where the time goes")
//!
//! Not region shares: these percentages, the xlsx `gpu_timeline` sheet's too, are of
//! block-time, not of lane time (see [`crate::analysis::breakdown`]).
//!
//! - **Block length**: a block's first stamp to its last, over its groups (lanes).
//! - **Block-time**: the block lengths, summed over blocks: the total of every kernel-level
//!   share of `ikp analyze`. **GPU wall time** (first stamp of any block to the last) is
//!   the launch's duration; no share is of it.
//! - **Timeline breakdown** of a block: each instant of its window goes to the first of
//!   compute, wait, load, store, comm, other that some group of the block is in (its self
//!   time, by category), else to idle; the parts add up to the block length. The kernel's
//!   breakdown is the blocks' summed.
//! - **Compute isolation** of a block (the tt-metal compute-isolation proposal,
//!   docs/references.md, applied per block, the unit whose groups wait concurrently): block
//!   length minus **blocked**, the union of its groups' wait self time. Summed over blocks.
//!   **Overlap**: blocked time during which another group of the block computes; it is why
//!   a warp-specialized kernel can be mostly "compute" in the breakdown (some group
//!   computes) and mostly "blocked" in isolation (some group waits).
//!
//! The JSON fields are in the `# Format` of [`crate::analysis::kernel`].
