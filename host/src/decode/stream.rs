//! A native buffer file decoded lane by lane, so that an output can be written from a
//! buffer larger than memory (`ikp decode BIG.ikp --perfetto out.trace`). A stream file
//! (`.ikps`) is read whole into its native form (about its size, lanes of their own
//! lengths: [`super::stream_capture`]), then decoded lane by lane as a native buffer, so
//! that its trace, several times larger, is never held whole either.
//!
//! [`StreamedBuffer::open`] maps the file and checks its header and every lane segment
//! (the counting pass of [`super::native`]), handing each checked range's pages back to
//! the kernel as it goes. It then decodes every lane that ran, one at a time, to learn
//! what a writer needs before the first event: the launch without its events (source,
//! names, lanes: [`StreamedBuffer::outline`]), the time extent of the lanes and their
//! events, where each lane's spans start in the whole trace, and the diagnostic counts.
//! [`StreamedBuffer::decode_lanes`] then decodes a run of the outline's lanes (one lane,
//! or a block's) when asked, and releases their pages after use. Peak memory is bounded
//! by the largest run decoded at once, not by the buffer. The TVM format interleaves its
//! lanes record by record, so only native buffers (and stream files) stream.
//!
//! Lanes whose stamps cannot belong to the launch (see [`super::set_aside`], `# Lanes set
//! aside`) are set aside by the counting pass as in a decode of the whole buffer: never in
//! the outline, counted and named in the diagnostic counts.
//!
//! Ring lanes stream as they decode in memory (each lane's records are ordered on their
//! own). A buffer that records several launches (epochs), and a decode with
//! [`DecodeOptions::correct_overhead`], are refused ([`DecodeError::NotStreamable`]): decode
//! them in memory ([`super::load_launches`]); [`Input::decode_or_stream`] does so itself.
//!
//! A block filter ([`DecodeOptions::blocks`]) keeps the lanes of its blocks with the
//! results of [`Trace::filter_blocks`] on the whole decode: the whole launch's time base,
//! and its counts that are not per lane (for which the first pass walks the other blocks'
//! lanes too).
//!
//! Async ranges begin and end in any lanes, so they are paired once, by the first pass,
//! over the async records of every lane that ran (held meanwhile: a few words per async
//! record, not per record), and then filtered as [`Trace::filter_blocks`] filters them:
//! [`StreamedBuffer::async_ranges`]. A run of lanes decoded later holds none.

use crate::time::Timestamp;
use std::cell::Cell;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::async_ranges::{self, AsyncRecord};
use super::native::{self, Prepared};
use super::stream_capture::NativeForm;
use super::{names, DecodeError, DecodeOptions, FormatChoice, Input, LoadError};
use crate::buffer::MappedBuffer;
use crate::model::{BlockFilter, DiagnosticCounts, Lane, Names, Trace};

/// The words a streamed buffer decodes.
#[derive(Debug)]
enum Source {
    /// A native buffer file, mapped.
    Mapped(MappedBuffer),
    /// A stream file's native form ([`super::stream_capture`]): its lanes as long as their
    /// own records, in memory (about the file's size; the file is unmapped once read).
    Capture { name: PathBuf, form: NativeForm },
}

impl Source {
    fn words(&self) -> &[u64] {
        match self {
            Source::Mapped(m) => m.words(),
            Source::Capture { form, .. } => &form.words,
        }
    }

    /// Hands words that were read back to the kernel (a mapped file's pages).
    fn release(&self, words: Range<usize>) {
        if let Source::Mapped(m) = self {
            m.release(words);
        }
    }
}

/// A native buffer file (or a stream file, in its native form), checked and outlined,
/// whose lanes are decoded a run at a time.
#[derive(Debug)]
pub struct StreamedBuffer {
    source: Source,
    prepared: Prepared,
    names: Option<Names>,
    /// The launch without events (see [`StreamedBuffer::outline`]).
    outline: Trace,
    /// Slot of each outline lane.
    slot_of: Vec<usize>,
    /// Index of each outline lane's first span in the spans of the whole trace.
    first_span: Vec<u64>,
    extent: Option<(Timestamp, Timestamp)>,
    diagnostics: DiagnosticCounts,
    decodes: Cell<u64>,
    /// The launch's async ranges and unmatched async records, filtered.
    async_ranges: Trace,
}

impl StreamedBuffer {
    /// Maps `path`, checks it as a native buffer (whatever `opts.format` says: only the
    /// native format streams; a file of another format fails its header check) and outlines it,
    /// decoding each lane once. The names of `opts` replace the buffer's own; its block
    /// filter keeps the lanes of those blocks (see the module documentation).
    pub fn open(path: &Path, opts: &DecodeOptions) -> Result<StreamedBuffer, LoadError> {
        Input::open(path, FormatChoice::Ikp)?.stream(opts)
    }

    /// [`StreamedBuffer::open`] of a file mapped by [`Input`].
    pub(super) fn from_map(
        map: MappedBuffer,
        opts: &DecodeOptions,
    ) -> Result<StreamedBuffer, DecodeError> {
        let opts = DecodeOptions {
            format: FormatChoice::Ikp,
            ..opts.clone()
        };
        if opts.correct_overhead {
            let why = "the overhead correction needs the whole launch".to_string();
            return Err(DecodeError::NotStreamable(why));
        }
        let (source, prepared) = if crate::stream_file::is_stream_words(map.words()) {
            let capture =
                crate::stream_file::read_words_releasing(map.words(), &|r| map.release(r))?;
            let form = capture.into_native_form()?;
            let prepared = native::prepare_ragged(&form.words, form.offsets.clone(), &opts)?;
            let name = map.name.clone();
            drop(map); // read whole: the native form holds its records
            (Source::Capture { name, form }, prepared)
        } else {
            let prepared = native::prepare(map.words(), &opts, &|r| map.release(r))?;
            (Source::Mapped(map), prepared)
        };
        if prepared.several_launches() {
            let why = "the buffer records several launches (epochs)".to_string();
            return Err(DecodeError::NotStreamable(why));
        }
        let mut buf = StreamedBuffer {
            source,
            prepared,
            names: opts.names,
            outline: Trace::default(),
            slot_of: Vec::new(),
            first_span: Vec::new(),
            extent: None,
            diagnostics: DiagnosticCounts::default(),
            decodes: Cell::new(0),
            async_ranges: Trace::default(),
        };
        buf.outline_lanes(&opts.blocks)?;
        Ok(buf)
    }

    /// The first pass: decodes each slot whose lane ran, keeps the lane (without its
    /// events) if its block is kept, and adds up extents, span counts and diagnostics.
    fn outline_lanes(&mut self, filter: &BlockFilter) -> Result<(), DecodeError> {
        let (mut outline, _) = self.decode_slots(0..0)?;
        outline.source.time_base = self.prepared.time_base();
        outline.source.block_filter = filter.clone();
        let mut spans = 0u64;
        let mut async_records = Vec::new();
        // Every lane that ran, in and out of the filter: what the async pairing sees.
        let mut ran = Trace::default();
        for s in 0..self.prepared.lane_count() {
            if !self.prepared.lane_ran(s) {
                continue;
            }
            let (t, records) = self.decode_slots(s..s + 1)?;
            async_records.extend(records);
            ran.lanes.extend(t.lanes.iter().map(without_events));
            if !t.lanes.iter().all(|l| filter.contains(l.block)) {
                // No lane, but the counts that are not per lane.
                self.diagnostics += t.filter_blocks(filter).diagnostic_counts();
                continue;
            }
            // A lane set aside has no lane in `t`: the filter decides whether it counts.
            self.diagnostics += if filter.keeps_all() {
                t.diagnostic_counts()
            } else {
                t.filter_blocks(filter).diagnostic_counts()
            };
            if let Some((lo, hi)) = t.time_extent() {
                self.extent = Some(
                    self.extent
                        .map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))),
                );
            }
            for l in &t.lanes {
                outline.lanes.push(without_events(l));
                self.slot_of.push(s);
                self.first_span.push(spans);
            }
            spans += t.spans.len() as u64;
        }
        async_ranges::pair_into(&mut ran, async_records);
        let ranges = ran.filter_blocks(filter);
        self.diagnostics += DiagnosticCounts {
            async_unmatched_begin: ranges.diagnostics.async_unmatched_begin.len() as u64,
            async_unmatched_end: ranges.diagnostics.async_unmatched_end.len() as u64,
            ..Default::default()
        };
        self.async_ranges = Trace {
            async_ranges: ranges.async_ranges,
            diagnostics: ranges.diagnostics,
            ..Default::default()
        };
        self.outline = outline;
        Ok(())
    }

    /// The launch's async ranges, paired over all its lanes and filtered as
    /// [`Trace::filter_blocks`] filters them (the module documentation): those of a
    /// decode of the whole buffer.
    pub fn async_ranges(&self) -> &crate::model::AsyncRanges {
        &self.async_ranges.async_ranges
    }

    /// Decodes lane slots `slots` (names replaced), counts those whose lane ran, and hands
    /// their pages back to the kernel.
    fn decode_slots(&self, slots: Range<usize>) -> Result<(Trace, Vec<AsyncRecord>), DecodeError> {
        let (mut t, records) = self.prepared.decode_lanes_unpaired(
            self.source.words(),
            slots.clone(),
            Default::default(),
        )?;
        if let Source::Capture { form, .. } = &self.source {
            form.finish(&mut t);
        }
        let ran = slots.clone().filter(|&s| self.prepared.lane_ran(s)).count();
        self.decodes.set(self.decodes.get() + ran as u64);
        if !slots.is_empty() {
            let words = self.prepared.lane_words(slots.start).start
                ..self.prepared.lane_words(slots.end - 1).end;
            self.source.release(words);
        }
        if let Some(n) = &self.names {
            names::overlay(&mut t.names, n);
        }
        Ok((t, records))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        match &self.source {
            Source::Mapped(m) => &m.name,
            Source::Capture { name, .. } => name,
        }
    }

    /// The launch without its events, as [`super::load`] with the same options would
    /// decode it but for the events: its source (the whole launch's `time_base`), names,
    /// and lanes (ascending by id), each with empty event ranges. Its diagnostics are
    /// empty: they are [`StreamedBuffer::diagnostic_counts`].
    pub fn outline(&self) -> &Trace {
        &self.outline
    }

    /// The earliest start of any lane decoded (lanes set aside excepted): the time base of
    /// the whole launch, as a decode of the whole buffer has it (with or without a block
    /// filter).
    pub fn time_base(&self) -> Timestamp {
        self.outline.source.time_base
    }

    /// The earliest and latest time of the lanes' bounds and of their events, as those of
    /// the whole (filtered) trace (`None` without lanes). The time base, which may be
    /// earlier when a filter left out the first lane, is not included.
    pub fn extent(&self) -> Option<(Timestamp, Timestamp)> {
        self.extent
    }

    /// The diagnostic counts of the whole (filtered) trace.
    pub fn diagnostic_counts(&self) -> DiagnosticCounts {
        self.diagnostics.clone()
    }

    /// The index of outline lane `pos`'s first span among the spans of the whole
    /// (filtered) trace: what ties a span of a run decoded alone to the whole trace.
    pub fn first_span(&self, pos: usize) -> u64 {
        self.first_span[pos]
    }

    /// Decodes the outline's lanes `positions` (a run of them, such as a block's lanes)
    /// into a trace holding those lanes alone, at positions from 0, with their events
    /// but no async range ([`StreamedBuffer::async_ranges`] has the launch's);
    /// its `time_base` is the earliest start among them. Their pages are handed back to
    /// the kernel afterwards. Panics if `positions` are not the outline's.
    pub fn decode_lanes(&self, positions: Range<usize>) -> Result<Trace, DecodeError> {
        let slots = match positions.clone().last() {
            Some(last) => self.slot_of[positions.start]..self.slot_of[last] + 1,
            None => 0..0,
        };
        let (mut t, _) = self.decode_slots(slots)?;
        let filter = &self.outline.source.block_filter;
        if t.lanes.len() != positions.len() {
            // Slots between the run's held lanes of blocks filtered out.
            t = t.filter_blocks(filter);
        }
        t.source.block_filter = filter.clone();
        Ok(t)
    }

    /// How many lane slots were decoded so far: [`StreamedBuffer::open`] decodes each
    /// slot whose lane ran once, [`StreamedBuffer::decode_lanes`] those of its run again
    /// (a slot whose lane never ran holds nothing and is never counted). The Perfetto
    /// writer thus decodes each lane twice in all.
    pub fn slot_decodes(&self) -> u64 {
        self.decodes.get()
    }
}

/// Lane `l` with empty event ranges.
fn without_events(l: &Lane) -> Lane {
    Lane {
        spans: 0..0,
        instants: 0..0,
        samples: 0..0,
        ..l.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::StreamedBuffer;
    use crate::decode::{decode, load, DecodeOptions};
    use crate::model::{BlockFilter, Lane, Trace};
    use std::path::Path;

    /// The outline, extent, first spans and diagnostics of the file at `path` streamed are
    /// those of its whole decode (`whole`), and a decoded run holds exactly that run's
    /// lanes and events; with or without a block filter, and with lanes that never ran (a
    /// filter on them keeps nothing). `groups`: lanes per block.
    fn streams_as_its_whole_decode(
        path: &Path,
        whole: impl Fn(&DecodeOptions) -> Trace,
        groups: usize,
    ) {
        let no_events = |l: &Lane| Lane {
            spans: 0..0,
            instants: 0..0,
            samples: 0..0,
            ..l.clone()
        };
        for f in ["", "1,5", "3", "100000"] {
            let opts = DecodeOptions {
                blocks: BlockFilter::parse(f).unwrap(),
                ..Default::default()
            };
            let whole = whole(&opts);
            let buf = StreamedBuffer::open(path, &opts).unwrap();
            let o = buf.outline();
            let lanes: Vec<Lane> = whole.lanes.iter().map(no_events).collect();
            assert_eq!(o.lanes, lanes, "blocks {f:?}");
            assert_eq!((&o.source, &o.names), (&whole.source, &whole.names));
            assert_eq!(buf.extent(), whole.time_extent());
            assert_eq!(buf.diagnostic_counts(), whole.diagnostic_counts());
            // Opening decoded each lane that ran once: without a filter, each lane.
            let opened = buf.slot_decodes();
            if f.is_empty() {
                assert_eq!(opened, whole.lanes.len() as u64);
            }
            // Runs of lanes: one lane, then a block's, then the whole outline.
            let runs = [
                0..o.lanes.len().min(1),
                0..o.lanes.len().min(groups),
                0..o.lanes.len(),
            ];
            let mut decoded = 0;
            for run in runs {
                let t = buf.decode_lanes(run.clone()).unwrap();
                decoded += run.len() as u64;
                let mut want = whole.empty_like();
                want.extend_lanes(&whole, run.clone());
                assert_eq!(t.lanes, want.lanes, "blocks {f:?}, run {run:?}");
                assert_eq!((&t.spans, &t.instants), (&want.spans, &want.instants));
                assert_eq!(t.samples, want.samples);
                for p in run {
                    assert_eq!(buf.first_span(p), whole.lanes[p].spans.start as u64);
                }
            }
            // A run is decoded once, with the filtered-out lanes between its own.
            if f.is_empty() {
                assert_eq!(buf.slot_decodes(), opened + decoded);
            } else {
                assert!(buf.slot_decodes() >= opened + decoded);
            }
        }
    }

    #[test]
    fn a_native_buffer_streams_as_its_whole_decode() {
        let sample = ikp_device::sample::attention().unwrap();
        let groups = sample.layout().groups_per_block as usize;
        let words = sample.into_words();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("attention.ikp");
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(&path, bytes).unwrap();
        streams_as_its_whole_decode(&path, |o| decode(&words, o).unwrap(), groups);
    }

    /// A stream file (the shipped sample: four lanes that dropped records, with drop marks
    /// and ends after a drop) streams too, its lanes' dropped totals and the stream's
    /// figures on the outline and on every run.
    #[test]
    fn a_stream_file_streams_as_its_whole_decode() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/stream_emulated.ikps");
        let whole = |o: &DecodeOptions| load(&path, o).unwrap();
        let t = whole(&DecodeOptions::default());
        assert!(t.source.stream.is_some() && t.dropped() > 0);
        streams_as_its_whole_decode(&path, whole, 1);
    }
}
