//! A native buffer file decoded lane by lane, so that an output can be written from a
//! buffer larger than memory (`ikp decode BIG.ikp --perfetto out.trace`).
//!
//! [`StreamedBuffer::open`] maps the file and checks its header and every lane segment
//! (the counting pass of [`super::native`]), handing each checked range's pages back to
//! the kernel as it goes; [`StreamedBuffer::decode_slot`] then decodes one lane slot at a
//! time and releases its pages after use. Peak memory is bounded by the largest lane, not
//! by the buffer. The TVM format interleaves its lanes record by record, so only native
//! buffers stream.

use std::path::Path;

use super::native::{self, Prepared};
use super::{names, DecodeError, DecodeOptions, FormatChoice, LoadError, LoadErrorKind};
use crate::buffer::MappedBuffer;
use crate::model::{Names, Ns, Trace};

/// A native buffer file, checked, whose lane slots are decoded one at a time.
#[derive(Debug)]
pub struct StreamedBuffer {
    map: MappedBuffer,
    prepared: Prepared,
    names: Option<Names>,
    decodes: std::cell::Cell<u64>,
}

impl StreamedBuffer {
    /// Maps `path` and checks it as a native buffer (whatever `opts.format` says: only the
    /// native format streams; a TVM-format file fails its header check). The names of
    /// `opts` replace the buffer's own in every slot. A block filter cannot be applied
    /// lane by lane and is refused.
    pub fn open(path: &Path, opts: &DecodeOptions) -> Result<StreamedBuffer, LoadError> {
        let err = |kind: LoadErrorKind| LoadError {
            path: path.to_path_buf(),
            kind,
        };
        if !opts.blocks.keeps_all() {
            return Err(err(LoadErrorKind::Decode(DecodeError::NotStreamable(
                "a block filter applies to the decoded trace as a whole",
            ))));
        }
        let map = MappedBuffer::open(path).map_err(|e| err(e.into()))?;
        let opts = DecodeOptions {
            format: FormatChoice::Ikp,
            ..opts.clone()
        };
        let prepared =
            native::prepare(map.words(), &opts, &|r| map.release(r)).map_err(|e| err(e.into()))?;
        Ok(StreamedBuffer {
            map,
            prepared,
            names: opts.names,
            decodes: Default::default(),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.map.name
    }

    /// Lane slots of the layout (`blocks * groups`; a slot whose lane never ran decodes
    /// to a trace without lanes). Slot `s` is group `s % groups` of block `s / groups`, so
    /// the lanes of a block are in consecutive slots.
    pub fn slots(&self) -> usize {
        self.prepared.lane_count()
    }

    /// The earliest start of any lane decoded (lanes set aside excepted): the time base of
    /// the whole launch, as a decode of the whole buffer has it.
    pub fn time_base(&self) -> Ns {
        self.prepared.time_base()
    }

    /// Decodes lane slot `s` into a trace holding that lane alone (or no lane), its
    /// `time_base` the lane's start, then hands the slot's pages back to the kernel. A
    /// lane set aside by the counting pass (see [`super::native`], `# Lanes set aside`)
    /// is no lane of its slot's trace but its entry in
    /// [`Diagnostics::set_aside`](crate::model::Diagnostics::set_aside), as in a decode of
    /// the whole buffer.
    pub fn decode_slot(&self, s: usize) -> Result<Trace, DecodeError> {
        self.decodes.set(self.decodes.get() + 1);
        let mut t = self.prepared.decode_lanes(self.map.words(), s..s + 1)?;
        self.map.release(self.prepared.lane_words(s));
        if let Some(n) = &self.names {
            names::overlay(&mut t.names, n);
        }
        Ok(t)
    }

    /// How many slots were decoded so far (the work a lane-by-lane writer did: the
    /// Perfetto writer decodes each slot once to lay out the tracks, then each used slot
    /// once more, a block at a time, to write its events).
    pub fn slot_decodes(&self) -> u64 {
        self.decodes.get()
    }
}
