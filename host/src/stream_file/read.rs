//! Reads a stream file whole, checking every rule of the module's `# Format`.

use super::{block, lane_state_words, DrainStats, END_WORDS, FILE_MAGIC, FILE_VERSION};
use ikp_device::wire::{self, lane};
use ikp_device::{stream, Header, LayoutError};

/// Why a stream file cannot be read. Each names the place (word index) that is wrong.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StreamFileError {
    /// Not a whole number of 64-bit words: the file was cut inside a word.
    #[error("stream file is {0} bytes, not a whole number of 64-bit words: it was cut short")]
    Torn(u64),
    /// Word 0 is not the stream file magic.
    #[error("not an ikp stream file (word 0 is {0:#018x}, not \"IKPSFILE\")")]
    BadMagic(u64),
    /// Written by a newer ikp.
    #[error("stream file version {found}, this ikp reads up to {supported}: upgrade ikp")]
    NewerVersion {
        /// Version in the file.
        found: u32,
        /// [`FILE_VERSION`].
        supported: u32,
    },
    /// The stream buffer header inside the file is not valid.
    #[error("stream file header: {0}")]
    Header(#[source] LayoutError),
    /// The file ends before its end block.
    #[error(
        "stream file ends at word {at} without its end block: the drain did not finish \
         (stopped, or out of disk); the records before it are not trusted"
    )]
    Truncated {
        /// Words present.
        at: u64,
    },
    /// A lane streamed more records than a lane's count word holds (2^32 - 1).
    #[error(
        "stream file lane {lane} holds {records} records, more than the 2^32 - 1 a lane's \
         count can say"
    )]
    LaneTooLong {
        /// The lane.
        lane: u64,
        /// Its records.
        records: u64,
    },
    /// A block breaks a rule of the format.
    #[error("stream file block at word {at}: {why}")]
    Block {
        /// Word index of the block's first word.
        at: u64,
        /// What is wrong.
        why: String,
    },
}

/// One lane of a stream file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaneCapture {
    /// Every record the drain copied out, in order (marks included).
    pub records: Vec<u64>,
    /// The lane's final state (see the `# Format`), if the drain wrote it.
    pub state: Option<Vec<u64>>,
}

/// A whole stream file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamCapture {
    /// The stream buffer's header words.
    pub header_words: Vec<u64>,
    /// The same, parsed.
    pub header: Header,
    /// Lanes, by lane index.
    pub lanes: Vec<LaneCapture>,
    /// The drain's figures (the end block).
    pub drain: DrainStats,
}

impl StreamCapture {
    /// Records lane `lane` dropped (its final state's count; 0 without one).
    pub fn dropped(&self, lane: usize) -> u64 {
        let count = (lane::PROLOGUE_WORDS + stream::CTRL_WORDS + lane::T_COUNT) as usize;
        let state = self.lanes.get(lane).and_then(|l| l.state.as_ref());
        state.map_or(0, |s| s[count] >> wire::COUNT_DROPPED_SHIFT)
    }
}

/// Reads a stream file from its bytes.
pub fn read(bytes: &[u8]) -> Result<StreamCapture, StreamFileError> {
    if !bytes.len().is_multiple_of(8) {
        return Err(StreamFileError::Torn(bytes.len() as u64));
    }
    read_words(&crate::buffer::le_words(bytes))
}

/// [`read`] of a file already held as little-endian words (a mapped buffer): no copy.
pub fn read_words(words: &[u64]) -> Result<StreamCapture, StreamFileError> {
    read_words_releasing(words, &|_| {})
}

/// Words read between two calls of [`read_words_releasing`]'s `read` (64 MiB).
const RELEASE_CHUNK_WORDS: usize = 1 << 23;

/// [`read_words`], calling `read` with each range of words (ascending, at least
/// [`RELEASE_CHUNK_WORDS`] long but for the last) once it has been copied out, so that a
/// memory-mapped caller can drop those pages: the file and its copy are then not both
/// resident.
pub(crate) fn read_words_releasing(
    words: &[u64],
    read: &dyn Fn(std::ops::Range<usize>),
) -> Result<StreamCapture, StreamFileError> {
    let truncated = |at: usize| StreamFileError::Truncated { at: at as u64 };
    let magic = *words.first().ok_or(truncated(0))?;
    if magic != FILE_MAGIC {
        return Err(StreamFileError::BadMagic(magic));
    }
    let w1 = *words.get(1).ok_or(truncated(1))?;
    let version = w1 as u32;
    if version > FILE_VERSION {
        return Err(StreamFileError::NewerVersion {
            found: version,
            supported: FILE_VERSION,
        });
    }
    if version == 0 {
        return Err(StreamFileError::Block {
            at: 1,
            why: "version 0 never existed".into(),
        });
    }
    let n = (w1 >> 32) as usize;
    let header_words = words.get(2..2 + n).ok_or(truncated(words.len()))?.to_vec();
    let header = Header::parse_stream_header(&header_words).map_err(StreamFileError::Header)?;
    let lane_count = header.layout.lane_count() as usize;
    let cap = header.layout.records_per_lane as u64;
    let state_words = lane_state_words(header.layout.counters.len() as u32) as usize;
    // A finished file holds every lane's final state: a header declaring more lanes than
    // the file has room for is refused before anything is allocated for them.
    let room = (words.len() - (2 + n)) as u64;
    if (lane_count as u64).saturating_mul(2 + state_words as u64) > room {
        return Err(StreamFileError::Block {
            at: 1,
            why: format!(
                "the header declares {lane_count} lanes, more than the file's {room} words \
                 after it can hold the final states of"
            ),
        });
    }
    let mut lanes = vec![LaneCapture::default(); lane_count];
    let mut at = 2 + n;
    let mut released = 0;
    loop {
        if at - released >= RELEASE_CHUNK_WORDS {
            read(released..at);
            released = at;
        }
        let bad = |why: String| StreamFileError::Block { at: at as u64, why };
        let (Some(&a), Some(&b)) = (words.get(at), words.get(at + 1)) else {
            return Err(truncated(words.len()));
        };
        let (kind, lane) = (a as u32, (a >> 32) as usize);
        let (first, count) = (b as u32, (b >> 32) as usize);
        let body = words
            .get(at + 2..at + 2 + count)
            .ok_or(truncated(words.len()))?;
        match kind {
            block::RECORDS | block::LANE if lane >= lane_count => {
                return Err(bad(format!(
                    "lane {lane}, but the launch has {lane_count} lanes"
                )));
            }
            block::RECORDS => {
                let l = &mut lanes[lane];
                if l.state.is_some() {
                    return Err(bad(format!("records of lane {lane} after its final state")));
                }
                let expected = l.records.len() as u32;
                if first != expected {
                    return Err(bad(format!(
                        "lane {lane} continues at record {first}, expected {expected}: \
                         records are missing or repeated"
                    )));
                }
                if count as u64 > cap {
                    return Err(bad(format!(
                        "{count} records of lane {lane} in one block, more than its ring of {cap}"
                    )));
                }
                l.records.extend_from_slice(body);
            }
            block::LANE => {
                if count != state_words || first != 0 {
                    return Err(bad(format!(
                        "lane {lane}'s final state has {count} words (first {first}), \
                         expected {state_words} (first 0)"
                    )));
                }
                if lanes[lane].state.replace(body.to_vec()).is_some() {
                    return Err(bad(format!("lane {lane}'s final state appears twice")));
                }
            }
            block::END => {
                if count != END_WORDS as usize || lane != 0 || first != 0 {
                    return Err(bad("end block of the wrong shape".into()));
                }
                let rest = words.len() - (at + 2 + count);
                if rest > 0 {
                    return Err(bad(format!("{rest} words after the end block")));
                }
                read(released..words.len());
                let drain = DrainStats {
                    records: body[0],
                    polls: body[1],
                    wall_ns: body[2],
                    max_backlog: body[3],
                };
                let total: u64 = lanes.iter().map(|l| l.records.len() as u64).sum();
                if total != drain.records {
                    return Err(bad(format!(
                        "the end block counts {} records, the file holds {total}",
                        drain.records
                    )));
                }
                return Ok(StreamCapture {
                    header_words,
                    header,
                    lanes,
                    drain,
                });
            }
            k => return Err(bad(format!("unknown block kind {k}"))),
        }
        at += 2 + count;
    }
}
