//! The generated part of `ikp.cuh`: every wire constant and the `ikp::Arg` struct.
//!
//! Values are read from [`crate::wire`] at generation time, so a wire change reaches the
//! header without anyone editing C++. The hand-written device code
//! ([`super::text`]) refers to these constants only by name.

use crate::stream;
use crate::wire::{
    self, header_flags, lane, lane_flags, KernelArg, Kind, MetaKind, Overflow, TimerMode,
};
use std::fmt::Write;

/// One C++ constant: name, value, type and a one-line comment.
pub(super) struct Const {
    pub(super) name: &'static str,
    pub(super) value: u64,
    pub(super) wide: bool,
    pub(super) doc: &'static str,
}

pub(super) const fn u32c(name: &'static str, value: u32, doc: &'static str) -> Const {
    Const {
        name,
        value: value as u64,
        wide: false,
        doc,
    }
}

pub(super) const fn u64c(name: &'static str, value: u64, doc: &'static str) -> Const {
    Const {
        name,
        value,
        wide: true,
        doc,
    }
}

/// The constants, grouped; each group gets a heading comment in the header.
#[rustfmt::skip]
fn groups() -> Vec<(&'static str, Vec<Const>)> {
    vec![
        (
            "Format identity.",
            vec![
                u32c("FORMAT_VERSION", wire::FORMAT_VERSION, "wire format this header writes"),
                u64c("MAGIC", wire::MAGIC, "word 0 of every buffer (\"IKPTRACE\" little-endian), written by the host"),
                u32c("HEADER_FIXED_WORDS", wire::HEADER_FIXED_WORDS, "fixed buffer-header words before the name table (host side)"),
            ],
        ),
        (
            "Event record: time (or meta value) << TIME_SHIFT | payload << PAYLOAD_SHIFT | region << REGION_SHIFT | kind.",
            vec![
                u32c("KIND_BEGIN", Kind::Begin as u32, "opens a region"),
                u32c("KIND_END", Kind::End as u32, "closes the innermost open region with the same id"),
                u32c("KIND_INSTANT", Kind::Instant as u32, "a point in time"),
                u32c("KIND_META", Kind::Meta as u32, "untimed; region field = meta kind"),
                u32c(
                    "META_COUNTER_SAMPLE",
                    MetaKind::CounterSample as u32,
                    "meta kind: payload = counter id, value = spins of one wait",
                ),
                u32c("KIND_BITS", wire::KIND_BITS, "bits of the kind"),
                u32c("REGION_BITS", wire::REGION_BITS, "bits of the region id"),
                u32c("PAYLOAD_BITS", wire::PAYLOAD_BITS, "bits of the payload"),
                u32c("REGION_SHIFT", wire::REGION_SHIFT, "shift of the region id in the tag"),
                u32c("PAYLOAD_SHIFT", wire::PAYLOAD_SHIFT, "shift of the payload in the tag"),
                u32c("TIME_SHIFT", wire::TIME_SHIFT, "shift of the timestamp in the record"),
                u32c("KIND_MASK", wire::KIND_MASK, "kind mask (unshifted)"),
                u32c("REGION_MASK", wire::REGION_MASK, "region mask (unshifted)"),
                u32c("PAYLOAD_MASK", wire::PAYLOAD_MASK, "payload mask (unshifted)"),
                u32c("MAX_REGIONS", wire::MAX_REGIONS, "distinct region ids"),
                u32c("MAX_PAYLOAD", wire::MAX_PAYLOAD, "largest payload; larger values keep their low bits"),
                u32c("MAX_COUNTERS", wire::MAX_COUNTERS, "largest number of wait counters"),
            ],
        ),
        (
            "Lane segment word offsets (prologue, then records_per_lane records, then trailer).",
            vec![
                u32c("LANE_START_GT", lane::START_GT, "64-bit %globaltimer at init"),
                u32c("LANE_START_CLK", lane::START_CLK, "64-bit %clock64 at init"),
                u32c("LANE_IDS", lane::IDS, "LANE_MARK << IDS_MARK_SHIFT | flags << IDS_FLAGS_SHIFT | warp << IDS_WARP_SHIFT | smid"),
                u32c("LANE_CALIB", lane::CALIB, "cycles of one record, measured at init (low 32 bits)"),
                u32c("LANE_EVENTS", lane::EVENTS, "first event record"),
                u32c("LANE_PROLOGUE_WORDS", lane::PROLOGUE_WORDS, "words before the records"),
                u32c("TRAILER_END_GT", lane::T_END_GT, "after the records: 64-bit %globaltimer at finalize"),
                u32c("TRAILER_END_CLK", lane::T_END_CLK, "after the records: 64-bit %clock64 at finalize"),
                u32c("TRAILER_COUNT", lane::T_COUNT, "after the records: dropped << COUNT_DROPPED_SHIFT | written"),
                u32c("COUNT_DROPPED_SHIFT", wire::COUNT_DROPPED_SHIFT, "shift of the dropped count in the count word"),
                u32c("TRAILER_COUNTERS", lane::T_COUNTERS, "after the records: first wait-counter total"),
                u32c("TRAILER_WORDS", lane::TRAILER_WORDS, "trailer words before the counters"),
                u32c("LANE_FIXED_WORDS", wire::LANE_FIXED_WORDS, "prologue + trailer words"),
            ],
        ),
        (
            "The lane IDS word.",
            vec![
                u32c("LANE_MARK", wire::LANE_MARK, "ASCII \"IKP\": a lane that ran init"),
                u32c("IDS_MARK_SHIFT", wire::IDS_MARK_SHIFT, "shift of LANE_MARK"),
                u32c("IDS_FLAGS_SHIFT", wire::IDS_FLAGS_SHIFT, "shift of the lane flags"),
                u32c("IDS_FLAGS_MASK", wire::IDS_FLAGS_MASK, "mask of the lane flags (unshifted)"),
                u32c("IDS_WARP_SHIFT", wire::IDS_WARP_SHIFT, "shift of the leader's warp index"),
                u32c("IDS_FIELD_MASK", wire::IDS_FIELD_MASK, "mask of the smid and warp fields"),
                u32c("LANE_FLAG_CLOCK", lane_flags::CLOCK, "timestamps are %clock cycles"),
                u32c("LANE_FLAG_BLOCK_FENCE", lane_flags::BLOCK_FENCE, "records are fenced with __threadfence_block()"),
                u32c("LANE_FLAG_RING", lane_flags::RING, "the lane records as a ring (Overflow::Ring)"),
            ],
        ),
        (
            "Rings, epochs and the record-cost calibration.",
            vec![
                u32c("HEADER_FLAG_RING", header_flags::RING, "buffer-header flag: the launch's lanes record as rings (host side)"),
                u32c("MAX_EPOCHS", wire::MAX_EPOCHS, "largest number of epochs (launches) a buffer records"),
                u32c("CALIB_RECORDS", wire::CALIB_RECORDS, "records per round of the record-cost calibration at init"),
            ],
        ),
        (
            "Stream launches (Overflow::Stream / StreamWait): control words after the prologue, then the ring.",
            vec![
                u64c("STREAM_MAGIC", stream::MAGIC, "word 0 of a stream buffer (\"IKPSTRM\\0\" little-endian), written by the host"),
                u32c("STREAM_VERSION", stream::VERSION, "stream format this header writes"),
                u32c("STREAM_CTRL_WORDS", stream::CTRL_WORDS, "control words between a lane's prologue and its ring"),
                u32c("STREAM_HEAD", stream::ctrl::HEAD, "dropped << 32 | stored, published by the lane (release, system scope)"),
                u32c("STREAM_TAIL", stream::ctrl::TAIL, "records the host consumed (low 32 bits), read with acquire"),
                u32c("STREAM_STALL_NS", stream::ctrl::STALL_NS, "ns the lane waited for room"),
                u32c("STREAM_STALLS", stream::ctrl::STALLS, "waits for room"),
                u32c("STREAM_HEAD_DROPPED_SHIFT", stream::HEAD_DROPPED_SHIFT, "shift of the dropped count in HEAD"),
                u32c("STREAM_PUBLISH_SHIFT", stream::PUBLISH_SHIFT, "HEAD is published at the end of every chunk of capacity >> this records"),
                u32c("STREAM_RECHECK", stream::RECHECK, "a full lane in drop mode reads TAIL again every this many drops"),
                u32c("STREAM_WAIT_SLEEP_NS", stream::WAIT_SLEEP_NS, "nanosleep between reads of TAIL while waiting for room"),
                u32c("META_STREAM_DROPPED", stream::META_DROPPED, "meta kind of a drop mark: value = records dropped before it"),
                u32c("META_STREAM_STALLED", stream::META_STALLED, "meta kind of a stall mark: value = ns waited before it"),
                u32c("LANE_FLAG_STREAM", stream::lane_flags::STREAM, "the lane records into a stream ring"),
                u32c("LANE_FLAG_STREAM_WAIT", stream::lane_flags::STREAM_WAIT, "the stream lane waits for room when full"),
                u32c("HEADER_FLAG_STREAM_WAIT", stream::header_flags::WAIT, "stream-buffer header flag: lanes wait for room (host side)"),
                u32c("ARG_FLAG_STREAM", stream::arg_flags::STREAM, "Arg::flags: the buffer is a stream buffer"),
            ],
        ),
    ]
}

/// Writes the `namespace ikp` constants, the timer / fence enums and `struct Arg`.
pub(super) fn write(out: &mut String) {
    for (heading, consts) in groups() {
        write_group(out, "", heading, &consts);
    }
    let _ = writeln!(
        out,
        "/// How a lane takes timestamps (the values are the wire TimerMode ids).\n\
         /// Global: %globaltimer_lo, ns, one time axis for the whole GPU; its resolution is\n\
         ///   coarse (tens of ns on many parts) but lanes on different SMs compare directly.\n\
         /// Clock: low 32 bits of the SM cycle counter, cycle-exact; the decoder converts to ns\n\
         ///   from the (clock64, globaltimer) pairs stamped at init and finalize: a lane of at\n\
         ///   least 1 ms with its own pair, others with the ratio pooled over all lanes (a short\n\
         ///   lane's globaltimer interval is too coarse to measure its own).\n\
         enum class Timer : unsigned {{ Global = {}u, Clock = {}u }};\n",
        TimerMode::Globaltimer as u32,
        TimerMode::Clock as u32
    );
    let _ = writeln!(
        out,
        "/// What a lane does once its records_per_lane records are written (the values are the wire Overflow's).\n\
         /// DropNewest: keep the oldest records and count the rest as dropped (the default: the\n\
         ///   start of a kernel and the order of its regions stay whole).\n\
         /// Ring: keep the newest, overwriting the oldest (the end of a long or persistent\n\
         ///   kernel); the host must declare the launch a ring (Layout::overflow), which makes\n\
         ///   records_per_lane a power of two.\n\
         /// Stream: keep every record the host drains in time; a full ring drops and counts\n\
         ///   (the kernel never waits for the host). StreamWait: a full ring waits for room\n\
         ///   (no loss; the waits are counted and timed). Both need a stream launch\n\
         ///   (Layout::overflow, drained by the host while the kernel runs).\n\
         enum class Overflow : unsigned {{ DropNewest = {}u, Ring = {}u, Stream = {}u, StreamWait = {}u }};\n",
        Overflow::DropNewest as u32,
        Overflow::Ring as u32,
        Overflow::Stream as u32,
        Overflow::StreamWait as u32
    );
    out.push_str(
        "/// Whether records are ordered against the group's memory traffic.\n\
         /// None: a record is a timer read and a predicated store; the compiler may move\n\
         ///   independent loads and stores across it.\n\
         /// Block: every thread of the group runs __threadfence_block() after a begin and before\n\
         ///   an end / instant / finalize, so the region brackets its memory operations (the\n\
         ///   TVM CudaProfiler convention), at the price of a fence per record on every thread.\n\
         enum class Fence : unsigned { None = 0u, Block = 1u };\n\n",
    );
    write_arg(out);
}

/// Writes one group of constants under a `// heading` comment, each line indented by
/// `indent`, then a blank line.
pub(super) fn write_group(out: &mut String, indent: &str, heading: &str, consts: &[Const]) {
    let _ = writeln!(out, "{indent}// {heading}");
    for c in consts {
        let (ty, value) = match (c.wide, c.value) {
            (true, v) => ("unsigned long long", format!("{v:#018x}ull")),
            // Masks, marks and limits read better in hex.
            (false, v) if v >= 256 => ("unsigned", format!("{v:#x}u")),
            (false, v) => ("unsigned", format!("{v}u")),
        };
        let _ = writeln!(
            out,
            "{indent}constexpr {ty} {} = {value};  // {}",
            c.name, c.doc
        );
    }
    out.push('\n');
}

/// One field of [`KernelArg`], as the C++ struct declares it.
struct Field {
    name: &'static str,
    offset: usize,
    size: usize,
    doc: &'static str,
}

/// The size of the field `f` selects, without naming its type.
fn field_size<T>(_f: fn(&KernelArg) -> &T) -> usize {
    std::mem::size_of::<T>()
}

/// Lists the fields of [`KernelArg`] with their real offsets and sizes. The destructuring
/// pattern makes this fail to compile when a field is added to or removed from the Rust
/// struct, so the C++ struct cannot silently fall behind.
macro_rules! arg_fields {
    ($($name:ident: $doc:literal),* $(,)?) => {{
        #[allow(dead_code)]
        fn exhaustive(a: KernelArg) {
            let KernelArg { $($name: _),* } = a;
        }
        vec![$(Field {
            name: stringify!($name),
            offset: std::mem::offset_of!(KernelArg, $name),
            size: field_size(|a: &KernelArg| &a.$name),
            doc: $doc,
        }),*]
    }};
}

fn arg_field_list() -> Vec<Field> {
    arg_fields! {
        buf: "device address of word 0 of the buffer",
        lane_base: "word index of epoch 0's lane 0 segment (header words + lane_count launch counters)",
        lane_stride: "words per lane segment",
        records_per_lane: "event records per lane; more are counted as dropped",
        groups_per_block: "lanes (groups) per block",
        lane_count: "number of lanes; lanes at or past it never write",
        n_counters: "number of wait counters in each lane's trailer",
        epochs: "segments per lane (launches recorded); 1: every launch writes epoch 0",
        flags: "STREAM (1) for a stream buffer, else 0",
    }
}

fn write_arg(out: &mut String) {
    let fields = arg_field_list();
    out.push_str(
        "/// The kernel argument: how a lane finds its segment. Pass it by value as the last\n\
         /// kernel parameter; the host fills it (ikp_device::wire::KernelArg, same layout).\n\
         struct Arg {\n",
    );
    for f in &fields {
        let ty = match f.size {
            8 => "unsigned long long",
            4 => "unsigned",
            n => panic!("KernelArg field {} has unsupported size {n}", f.name),
        };
        let _ = writeln!(out, "  {ty} {};  // {}", f.name, f.doc);
    }
    out.push_str("};\n");
    let _ = writeln!(
        out,
        "static_assert(sizeof(Arg) == {}, \"ikp::Arg must match the host's KernelArg\");",
        std::mem::size_of::<KernelArg>()
    );
    let _ = writeln!(
        out,
        "static_assert(alignof(Arg) == {}, \"ikp::Arg must match the host's KernelArg\");",
        std::mem::align_of::<KernelArg>()
    );
    // NVRTC has no __builtin_offsetof (and no <cstddef>); nvcc and host compilers do.
    out.push_str("#if !defined(__CUDACC_RTC__)\n");
    for f in &fields {
        let _ = writeln!(
            out,
            "static_assert(__builtin_offsetof(Arg, {}) == {}, \"ikp::Arg field offset\");",
            f.name, f.offset
        );
    }
    out.push_str("#endif\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arg_fields_tile_the_struct_without_gaps() {
        let fields = arg_field_list();
        let mut end = 0;
        for f in &fields {
            assert_eq!(f.offset, end, "gap or overlap before {}", f.name);
            end += f.size;
        }
        assert_eq!(end, std::mem::size_of::<KernelArg>());
    }

    #[test]
    fn constant_names_are_unique() {
        let mut names: Vec<_> = groups()
            .into_iter()
            .flat_map(|(_, c)| c.into_iter().map(|c| c.name))
            .collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
