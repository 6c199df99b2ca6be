// ikp.cuh: the ikp in-kernel profiler, device side. Wire format v2.
//
// GENERATED from the ikp wire format (ikp_device::cuh::source()); do not edit. Write a copy
// with `ikp header -o DIR`. In the ikp repository, `IKP_BLESS=1 cargo test -p ikp-device
// --test device cuh_golden` refreshes device/include/ikp.cuh.
//
// What it does: each (block, group) pair is a *lane* with one writing thread, its leader.
// The leader appends 64-bit records (timestamp low 32 bits | payload | region | kind) to
// its own fixed-size segment of a buffer the host zeroed and described; no shared cursor,
// no write ever crosses into another lane, and no atomic on the record path. When a segment
// is full, records are counted as dropped instead of written, or, in a ring lane
// (ikp::Overflow::Ring), overwrite the oldest. At init the leader stamps its start times and
// times a few back-to-back records (the record cost, for the decoder's overhead
// correction); a buffer sized for several launches (epochs) gives each launch its own
// segments, the epoch taken by one atomic add per lane. Wait loops count their spins in a
// register and add the total to a per-lane counter once. The host reads the buffer back and
// decodes it (`ikp` CLI / ikp-host crate). A C++ launcher sizes the buffer, writes its
// header and builds ikp::Arg with ikp_host.hpp, written next to this file.
//
// Usage (nvcc or NVRTC, C++17, no other include needed):
//
//   #include "ikp.cuh"
//   enum : unsigned { LOAD, MMA, STORE };          // region ids = indices of the host's names
//   extern "C" __global__ void gemm(float* c, const float* a, unsigned n_tiles, ikp::Arg prof) {
//     ikp::Lane<> lane(prof, /*group=*/0, /*leader=*/threadIdx.x == 0);
//     for (unsigned t = blockIdx.x; t < n_tiles; t += gridDim.x) {  // persistent: many tiles
//       { IKP_SCOPE(lane, LOAD, t); /* ... */ }              // payload = tile index
//       { IKP_SCOPE(lane, MMA, t);  /* ... */ }
//     }
//     lane.finalize();
//   }
//
// Warp-specialized kernels give each warp group its own group id and leader, e.g.
// `ikp::Lane<> lane(prof, threadIdx.x / 128, threadIdx.x % 128 == 0)`, and count waits with
// `IKP_WAIT(lane, COUNTER_ID, !ready(stage))`. A range that begins in one lane and ends in
// another (a TMA load and its consumer) is `lane.range_begin(REGION, token)` /
// `other_lane.range_end(REGION, token)` for a region the host lists as async. A long or
// persistent kernel that should keep its newest records uses
// `ikp::Lane<ikp::Fence::None, ikp::Timer::Global, ikp::Overflow::Ring>` with a ring layout.
//
// Cost model (measured from SASS by the ikp test suite, figures in BENCHMARKS.md): a record
// is one branch on a warp vote taken at init. Every warp without the lane's writing leader
// (all of them when ikp::Arg is null or the lane is past the buffer: the runtime off switch)
// takes it and runs nothing else: no timer read, no store, no fence. The leader's warp reads
// the timer on every thread (one fixed-latency CS2R, a select keeps it on the leader),
// compares the cursor with the capacity, builds the tag and stores one 64-bit word from
// the leader; the address is the lane pointer plus cursor * 8, which folds into the store's
// offset in straight-line code. Fence::Block adds one block fence, on the leader's warp only.
// A ring record (Overflow::Ring) stores at the cursor masked by the capacity, so its address
// never folds. A stream record is the fixed one with the lane's limit in place of the
// capacity and a branch to its out-of-line slow path, which the leader's whole warp takes
// together (make a stream lane's records from every thread of the warp). With
// -DIKP_OFF_BRANCH=0 no warp branches: every warp issues each record predicated on the
// leader, the timer read under the store's predicate (a shorter record for the leader's warp,
// a longer one for the others). A wait-loop tick is a 64-bit register increment, and a wait
// that does not spin costs nothing. Init is paid once per lane: its record-cost calibration
// (-DIKP_CALIBRATE=0 drops it) and its epoch code (run only when the buffer holds several
// launches; -DIKP_EPOCHS=0 drops it) are the larger parts; `ikp cost` prints every figure.
// Build with -DIKP_ENABLED=0 and the SASS is exactly that of the kernel without markers.

#ifndef IKP_CUH_V2
#define IKP_CUH_V2

// ---------------------------------------------------------------------------------------
// Switches.
//
// IKP_ENABLED (default 1): 0 turns every ikp::Lane method into an empty inline function, so
//   an instrumented kernel compiles to exactly the SASS of the uninstrumented one (the ikp
//   test suite checks this instruction for instruction). It only sets the default of the
//   Lane template's last parameter, so one translation unit can still mix both.
// IKP_CALIBRATE (default 1): 0 leaves out the record-cost calibration at init (the lane's
//   CALIB word stays 0, "not measured", and the decoder cannot correct for the cost of
//   looking); it saves its instructions (`ikp cost` lists them) once per lane.
// IKP_EPOCHS (default 1): 0 leaves out the epoch code at init (the launch-counter atomic):
//   for kernels never launched into a buffer sized for several launches. A lane compiled
//   so records nothing when the host's buffer has more than one epoch, rather than write
//   every launch over epoch 0.
// IKP_TIMER (default Global): the timer of an ikp::Lane whose Timer parameter is left out,
//   Global (%globaltimer_lo, ns) or Clock (%clock, SM cycles, converted to ns by the decoder
//   from each lane's start and end (clock, globaltimer) pairs). Each lane stamps its timer
//   in its IDS word, so lanes of both kinds decode from one buffer.
// IKP_OFF_BRANCH (default 1): how a warp without the lane's writing leader (every warp of a
//   null Arg, every warp of a lane but its leader's) skips a record. 1: it branches around
//   the record on a warp vote taken at init, so it reads no timer and stores nothing (one
//   instruction per record, one for records back to back); the leader's warp then reads
//   the timer into a vector register on every thread (CS2R, plus a select that keeps it
//   where the record lands) and stores under a predicate written in the PTX, which keeps
//   the branch a branch: its record is about 6 SASS instructions (9 in a loop). 0: no
//   branch; every warp issues the record predicated on the leader,
//   the timer read under the store's predicate (one predicated CS2R): about 4 instructions
//   (7 in a loop) on every warp, off warps included. Which costs less in time depends on
//   the kernel (one-warp lanes pay the leader's path alone, multi-warp lanes the off path
//   on all but one warp): the overhead bench measures both on every kernel. Stream lanes
//   take the vote either way (it gates their slow path, which the leader's whole warp
//   runs); their records follow this switch as the others' do.
// IKP_COUNTER_REGS (0 to 4, default 4): wait counters with ids below this are summed in a
//   64-bit register pair of the lane and added to the lane's trailer once, at finalize:
//   with an id the compiler knows (a constant, as IKP_WAIT's ids usually are) a spin of
//   IKP_WAIT is one SASS add to a count of the wait's own, which goes into the pair once
//   the wait is over (two more), a wait that does not spin costs nothing, and the kernel
//   holds two registers per counter id it uses. Higher ids, and
//   every count when this is 0, add to the trailer at once (a branch and a 64-bit RED per
//   wait). Either way the totals are in the buffer after finalize; a lane that never
//   finalizes keeps only the counts added at once.
// IKP_HOST_EMULATION: compile the device API as plain host C++. Special registers, block /
//   thread indices, the block fence and the 64-bit atomic add then come from the
//   ikp::emu functions declared below, which the includer defines. The ikp tests use this to
//   run the real encoding logic on a CPU and compare the words with the Rust encoder.
// Without nvcc / NVRTC and without IKP_HOST_EMULATION only the constants and ikp::Arg are
// declared (for host code that builds the kernel argument).
// ---------------------------------------------------------------------------------------
#ifndef IKP_ENABLED
#define IKP_ENABLED 1
#endif
#ifndef IKP_CALIBRATE
#define IKP_CALIBRATE 1
#endif
#ifndef IKP_EPOCHS
#define IKP_EPOCHS 1
#endif
#ifndef IKP_TIMER
#define IKP_TIMER Global
#endif
#ifndef IKP_OFF_BRANCH
#define IKP_OFF_BRANCH 1
#endif
#ifndef IKP_COUNTER_REGS
#define IKP_COUNTER_REGS 4
#endif

#if defined(IKP_HOST_EMULATION)
#define IKP_DEVICE_API 1
#define IKP_INLINE inline
#define IKP_NOINLINE inline
#elif defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define IKP_DEVICE_API 1
#define IKP_INLINE __device__ __forceinline__
#define IKP_NOINLINE __device__ __noinline__
#else
#define IKP_DEVICE_API 0
#endif

namespace ikp {

// Format identity.
constexpr unsigned FORMAT_VERSION = 2u;  // wire format this header writes
constexpr unsigned long long MAGIC = 0x4543415254504b49ull;  // word 0 of every buffer ("IKPTRACE" little-endian), written by the host
constexpr unsigned HEADER_FIXED_WORDS = 12u;  // fixed buffer-header words before the name table (host side)

// Event record: time (or meta value) << TIME_SHIFT | payload << PAYLOAD_SHIFT | region << REGION_SHIFT | kind.
constexpr unsigned KIND_BEGIN = 0u;  // opens a region
constexpr unsigned KIND_END = 1u;  // closes the innermost open region with the same id
constexpr unsigned KIND_INSTANT = 2u;  // a point in time
constexpr unsigned KIND_META = 3u;  // untimed; region field = meta kind
constexpr unsigned META_COUNTER_SAMPLE = 0u;  // meta kind: payload = counter id, value = spins of one wait
constexpr unsigned KIND_BITS = 2u;  // bits of the kind
constexpr unsigned REGION_BITS = 10u;  // bits of the region id
constexpr unsigned PAYLOAD_BITS = 20u;  // bits of the payload
constexpr unsigned REGION_SHIFT = 2u;  // shift of the region id in the tag
constexpr unsigned PAYLOAD_SHIFT = 12u;  // shift of the payload in the tag
constexpr unsigned TIME_SHIFT = 32u;  // shift of the timestamp in the record
constexpr unsigned KIND_MASK = 3u;  // kind mask (unshifted)
constexpr unsigned REGION_MASK = 0x3ffu;  // region mask (unshifted)
constexpr unsigned PAYLOAD_MASK = 0xfffffu;  // payload mask (unshifted)
constexpr unsigned MAX_REGIONS = 0x400u;  // distinct region ids
constexpr unsigned MAX_PAYLOAD = 0xfffffu;  // largest payload; larger values keep their low bits
constexpr unsigned MAX_COUNTERS = 0x100u;  // largest number of wait counters

// Lane segment word offsets (prologue, then records_per_lane records, then trailer).
constexpr unsigned LANE_START_GT = 0u;  // 64-bit %globaltimer at init
constexpr unsigned LANE_START_CLK = 1u;  // 64-bit %clock64 at init
constexpr unsigned LANE_IDS = 2u;  // LANE_MARK << IDS_MARK_SHIFT | flags << IDS_FLAGS_SHIFT | warp << IDS_WARP_SHIFT | smid
constexpr unsigned LANE_CALIB = 3u;  // cycles of one record, measured at init (low 32 bits)
constexpr unsigned LANE_EVENTS = 4u;  // first event record
constexpr unsigned LANE_PROLOGUE_WORDS = 4u;  // words before the records
constexpr unsigned TRAILER_END_GT = 0u;  // after the records: 64-bit %globaltimer at finalize
constexpr unsigned TRAILER_END_CLK = 1u;  // after the records: 64-bit %clock64 at finalize
constexpr unsigned TRAILER_COUNT = 2u;  // after the records: dropped << COUNT_DROPPED_SHIFT | written
constexpr unsigned COUNT_DROPPED_SHIFT = 32u;  // shift of the dropped count in the count word
constexpr unsigned TRAILER_COUNTERS = 3u;  // after the records: first wait-counter total
constexpr unsigned TRAILER_WORDS = 3u;  // trailer words before the counters
constexpr unsigned LANE_FIXED_WORDS = 7u;  // prologue + trailer words

// The lane IDS word.
constexpr unsigned LANE_MARK = 0x494b50u;  // ASCII "IKP": a lane that ran init
constexpr unsigned IDS_MARK_SHIFT = 40u;  // shift of LANE_MARK
constexpr unsigned IDS_FLAGS_SHIFT = 32u;  // shift of the lane flags
constexpr unsigned IDS_FLAGS_MASK = 255u;  // mask of the lane flags (unshifted)
constexpr unsigned IDS_WARP_SHIFT = 16u;  // shift of the leader's warp index
constexpr unsigned IDS_FIELD_MASK = 0xffffu;  // mask of the smid and warp fields
constexpr unsigned LANE_FLAG_CLOCK = 1u;  // timestamps are %clock cycles
constexpr unsigned LANE_FLAG_BLOCK_FENCE = 2u;  // records are fenced with __threadfence_block()
constexpr unsigned LANE_FLAG_RING = 4u;  // the lane records as a ring (Overflow::Ring)

// Rings, epochs and the record-cost calibration.
constexpr unsigned HEADER_FLAG_RING = 1u;  // buffer-header flag: the launch's lanes record as rings (host side)
constexpr unsigned MAX_EPOCHS = 0x10000u;  // largest number of epochs (launches) a buffer records
constexpr unsigned CALIB_RECORDS = 4u;  // records per round of the record-cost calibration at init

// Stream launches (Overflow::Stream / StreamWait): control words after the prologue, then the ring.
constexpr unsigned long long STREAM_MAGIC = 0x004d525453504b49ull;  // word 0 of a stream buffer ("IKPSTRM\0" little-endian), written by the host
constexpr unsigned STREAM_VERSION = 1u;  // stream format this header writes
constexpr unsigned STREAM_CTRL_WORDS = 4u;  // control words between a lane's prologue and its ring
constexpr unsigned STREAM_HEAD = 0u;  // dropped << 32 | stored, published by the lane (release, system scope)
constexpr unsigned STREAM_TAIL = 1u;  // records the host consumed (low 32 bits), read with acquire
constexpr unsigned STREAM_STALL_NS = 2u;  // ns the lane waited for room
constexpr unsigned STREAM_STALLS = 3u;  // waits for room
constexpr unsigned STREAM_HEAD_DROPPED_SHIFT = 32u;  // shift of the dropped count in HEAD
constexpr unsigned STREAM_PUBLISH_SHIFT = 2u;  // HEAD is published at the end of every chunk of capacity >> this records
constexpr unsigned STREAM_RECHECK = 32u;  // a full lane in drop mode reads TAIL again every this many drops
constexpr unsigned STREAM_WAIT_SLEEP_NS = 0x100u;  // nanosleep between reads of TAIL while waiting for room
constexpr unsigned META_STREAM_DROPPED = 1u;  // meta kind of a drop mark: value = records dropped before it
constexpr unsigned META_STREAM_STALLED = 2u;  // meta kind of a stall mark: value = ns waited before it
constexpr unsigned LANE_FLAG_STREAM = 8u;  // the lane records into a stream ring
constexpr unsigned LANE_FLAG_STREAM_WAIT = 16u;  // the stream lane waits for room when full
constexpr unsigned HEADER_FLAG_STREAM_WAIT = 2u;  // stream-buffer header flag: lanes wait for room (host side)
constexpr unsigned ARG_FLAG_STREAM = 1u;  // Arg::flags: the buffer is a stream buffer

/// How a lane takes timestamps (the values are the wire TimerMode ids).
/// Global: %globaltimer_lo, ns, one time axis for the whole GPU; its resolution is
///   coarse (tens of ns on many parts) but lanes on different SMs compare directly.
/// Clock: low 32 bits of the SM cycle counter, cycle-exact; the decoder converts to ns
///   from the (clock64, globaltimer) pairs stamped at init and finalize: a lane of at
///   least 1 ms with its own pair, others with the ratio pooled over all lanes (a short
///   lane's globaltimer interval is too coarse to measure its own).
enum class Timer : unsigned { Global = 0u, Clock = 1u };

/// What a lane does once its records_per_lane records are written (the values are the wire Overflow's).
/// DropNewest: keep the oldest records and count the rest as dropped (the default: the
///   start of a kernel and the order of its regions stay whole).
/// Ring: keep the newest, overwriting the oldest (the end of a long or persistent
///   kernel); the host must declare the launch a ring (Layout::overflow), which makes
///   records_per_lane a power of two.
/// Stream: keep every record the host drains in time; a full ring drops and counts
///   (the kernel never waits for the host). StreamWait: a full ring waits for room
///   (no loss; the waits are counted and timed). Both need a stream launch
///   (Layout::overflow, drained by the host while the kernel runs).
enum class Overflow : unsigned { DropNewest = 0u, Ring = 1u, Stream = 2u, StreamWait = 3u };

/// Whether records are ordered against the group's memory traffic.
/// None: a record is a timer read and a predicated store; the compiler may move
///   independent loads and stores across it.
/// Block: every thread of the group runs __threadfence_block() after a begin and before
///   an end / instant / finalize, so the region brackets its memory operations (the
///   TVM CudaProfiler convention), at the price of a fence per record on every thread.
enum class Fence : unsigned { None = 0u, Block = 1u };

/// The kernel argument: how a lane finds its segment. Pass it by value as the last
/// kernel parameter; the host fills it (ikp_device::wire::KernelArg, same layout).
struct Arg {
  unsigned long long buf;  // device address of word 0 of the buffer
  unsigned lane_base;  // word index of epoch 0's lane 0 segment (header words + lane_count launch counters)
  unsigned lane_stride;  // words per lane segment
  unsigned records_per_lane;  // event records per lane; more are counted as dropped
  unsigned groups_per_block;  // lanes (groups) per block
  unsigned lane_count;  // number of lanes; lanes at or past it never write
  unsigned n_counters;  // number of wait counters in each lane's trailer
  unsigned epochs;  // segments per lane (launches recorded); 1: every launch writes epoch 0
  unsigned flags;  // STREAM (1) for a stream buffer, else 0
};
static_assert(sizeof(Arg) == 40, "ikp::Arg must match the host's KernelArg");
static_assert(alignof(Arg) == 8, "ikp::Arg must match the host's KernelArg");
#if !defined(__CUDACC_RTC__)
static_assert(__builtin_offsetof(Arg, buf) == 0, "ikp::Arg field offset");
static_assert(__builtin_offsetof(Arg, lane_base) == 8, "ikp::Arg field offset");
static_assert(__builtin_offsetof(Arg, lane_stride) == 12, "ikp::Arg field offset");
static_assert(__builtin_offsetof(Arg, records_per_lane) == 16, "ikp::Arg field offset");
static_assert(__builtin_offsetof(Arg, groups_per_block) == 20, "ikp::Arg field offset");
static_assert(__builtin_offsetof(Arg, lane_count) == 24, "ikp::Arg field offset");
static_assert(__builtin_offsetof(Arg, n_counters) == 28, "ikp::Arg field offset");
static_assert(__builtin_offsetof(Arg, epochs) == 32, "ikp::Arg field offset");
static_assert(__builtin_offsetof(Arg, flags) == 36, "ikp::Arg field offset");
#endif

}  // namespace ikp

#if IKP_DEVICE_API
namespace ikp {

#if defined(IKP_HOST_EMULATION)
/// Host emulation hooks: declared here, defined by the includer. They stand for the special
/// registers, the CUDA built-in indices, __threadfence_block() and atomicAdd().
namespace emu {
struct Dim3 {
  unsigned x, y, z;
};
unsigned long long globaltimer();  // %globaltimer (ns); the _lo read takes its low 32 bits
unsigned long long clock64();      // %clock64 (cycles); the %clock read takes its low 32 bits
unsigned smid();                   // %smid
Dim3 block_idx();                  // blockIdx
Dim3 grid_dim();                   // gridDim
Dim3 thread_idx();                 // threadIdx
Dim3 block_dim();                  // blockDim
void fence_block();                // __threadfence_block()
void atomic_add(unsigned long long* addr, unsigned long long value);  // atomicAdd (RED)
// atomicAdd whose old value is used (an ATOM): takes a lane's epoch from its launch counter.
unsigned long long atomic_fetch_add(unsigned long long* addr, unsigned long long value);
void nanosleep(unsigned ns);  // __nanosleep: a stream lane waiting for the host
#if defined(IKP_EMU_SYSTEM_SCOPE_HOOK)
// Called before each system-scope access of a stream lane (a release store of HEAD, or an
// acquire load of TAIL), for an includer that counts them; declared only when it asks.
void system_scope(bool acquire);
#endif
// __any_sync(__activemask(), p): whether p holds on any thread of the calling warp.
bool warp_any(bool p);
}  // namespace emu
#endif

namespace detail {

/// Warp width, for the IDS word's warp index (hardware, not wire format).
constexpr unsigned WARP_SIZE = 32u;

// Timer reads are `asm volatile` so that two reads are never merged or deleted; they carry
// no "memory" clobber, so they do not pin unrelated loads and stores (Fence::Block does).

/// Full 64-bit %globaltimer (ns), stamped at init and finalize.
IKP_INLINE unsigned long long globaltimer() {
#if defined(IKP_HOST_EMULATION)
  return emu::globaltimer();
#else
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

/// Low 32 bits of %globaltimer: one special-register read, no 64-bit pair on the record path.
IKP_INLINE unsigned globaltimer_lo() {
#if defined(IKP_HOST_EMULATION)
  return static_cast<unsigned>(emu::globaltimer());
#else
  unsigned t;
  asm volatile("mov.u32 %0, %%globaltimer_lo;" : "=r"(t));
  return t;
#endif
}

/// globaltimer_lo() where `p` holds, 0 elsewhere, read by every thread into its own register: a
/// per-thread value, which ptxas reads with CS2R (see Lane::record).
IKP_INLINE unsigned globaltimer_lo_if(bool p) {
#if defined(IKP_HOST_EMULATION)
  const unsigned t = globaltimer_lo();
  return p ? t : 0u;
#else
  unsigned t;
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %1, 0;\n\tmov.u32 %0, 0;\n\t"
               "@p mov.u32 %0, %%globaltimer_lo;\n\t}"
               : "=r"(t)
               : "r"(static_cast<unsigned>(p)));
  return t;
#endif
}

/// Full 64-bit %clock64 (SM cycles), stamped at init and finalize.
IKP_INLINE unsigned long long clock64() {
#if defined(IKP_HOST_EMULATION)
  return emu::clock64();
#else
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
  return t;
#endif
}

/// %clock: by the PTX ISA the low 32 bits of %clock64.
IKP_INLINE unsigned clock_lo() {
#if defined(IKP_HOST_EMULATION)
  return static_cast<unsigned>(emu::clock64());
#else
  unsigned t;
  asm volatile("mov.u32 %0, %%clock;" : "=r"(t));
  return t;
#endif
}

/// clock_lo() where `p` holds, 0 elsewhere, read by every thread into its own register: a
/// per-thread value, which ptxas reads with CS2R (see Lane::record).
IKP_INLINE unsigned clock_lo_if(bool p) {
#if defined(IKP_HOST_EMULATION)
  const unsigned t = clock_lo();
  return p ? t : 0u;
#else
  unsigned t;
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %1, 0;\n\tmov.u32 %0, 0;\n\t"
               "@p mov.u32 %0, %%clock;\n\t}"
               : "=r"(t)
               : "r"(static_cast<unsigned>(p)));
  return t;
#endif
}

/// %smid of the calling thread (stamped once, at init).
IKP_INLINE unsigned smid() {
#if defined(IKP_HOST_EMULATION)
  return emu::smid();
#else
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
#endif
}

/// x + grid_x * (y + grid_y * z): the block order of the wire format, for 1D, 2D, 3D grids.
IKP_INLINE unsigned linear_block() {
#if defined(IKP_HOST_EMULATION)
  const emu::Dim3 b = emu::block_idx(), g = emu::grid_dim();
  return b.x + g.x * (b.y + g.y * b.z);
#else
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
#endif
}

/// Linear thread index in the block (the same order warps are formed in).
IKP_INLINE unsigned linear_thread() {
#if defined(IKP_HOST_EMULATION)
  const emu::Dim3 t = emu::thread_idx(), d = emu::block_dim();
  return t.x + d.x * (t.y + d.y * t.z);
#else
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
#endif
}

/// Whether `p` holds on any active thread of the warp (one VOTE, warp-uniform result). A
/// lane keeps it from init so that every warp but its leader's branches around the record
/// path: ptxas knows a vote's result is the same on every thread of the warp, so the branch
/// is one uniform BRA, with no reconvergence barrier (BSSY / BSYNC).
IKP_INLINE bool warp_any(bool p) {
#if defined(IKP_HOST_EMULATION)
  return emu::warp_any(p);
#else
  unsigned mask, any;
  asm volatile("activemask.b32 %0;" : "=r"(mask));
  asm volatile(
      "{\n\t.reg .pred p, q;\n\tsetp.ne.u32 p, %1, 0;\n\tvote.sync.any.pred q, p, %2;\n\t"
      "selp.u32 %0, 1, 0, q;\n\t}"
      : "=r"(any)
      : "r"(static_cast<unsigned>(p)), "r"(mask));
  return any != 0u;
#endif
}

/// The largest `v` over the active threads of the warp, as a warp-uniform value: one REDUX
/// on sm_80 and later, which writes a uniform register. A lane hands on its epoch this way
/// (see Lane's constructor); before sm_80, and under emulation, it is `v` itself, which is
/// what the one thread that uses it (the leader) needs.
IKP_INLINE unsigned warp_max(unsigned v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(IKP_HOST_EMULATION)
  unsigned mask, max;
  asm volatile("activemask.b32 %0;" : "=r"(mask));
  asm volatile("redux.sync.max.u32 %0, %1, %2;" : "=r"(max) : "r"(v), "r"(mask));
  return max;
#else
  return v;
#endif
}

/// One spin of a counted wait: `++n` (one IADD), written in PTX so that the optimizer
/// cannot compute it ahead of the wait's condition. Left to itself, it rotates `while (cond)
/// ++n;` into a loop that increments on every try and keeps the count before the last
/// increment in a second register: two moves a spin more, and no first try peeled off the
/// loop (where a counted wait that passes at once costs nothing).
IKP_INLINE void tick(unsigned& n) {
#if defined(IKP_HOST_EMULATION)
  ++n;
#else
  asm volatile("add.u32 %0, %0, 1;" : "+r"(n));
#endif
}

IKP_INLINE void fence_block() {
#if defined(IKP_HOST_EMULATION)
  emu::fence_block();
#else
  __threadfence_block();
#endif
}

/// The result is unused, so the compiler does not wait for a reply (a RED, or an ATOM into
/// RZ): no load round trip and no dependency for the thread that just finished waiting.
IKP_INLINE void atomic_add(unsigned long long* addr, unsigned long long value) {
#if defined(IKP_HOST_EMULATION)
  emu::atomic_add(addr, value);
#else
  atomicAdd(addr, value);
#endif
}

/// `old = *addr; *addr += value; return old` as one atomic: a lane takes its epoch from its
/// launch counter this way, once, at init (the only ikp atomic whose reply is waited for).
/// (ptxas aggregates it over the warp, a vote, a popcount and two shuffles around the
/// atom, as the address is warp-uniform; a few instructions once per launch, and only when
/// the buffer holds several epochs.)
/// `*addr += value` where `p` holds, returning the value before (0 where `p` does not):
/// one predicated atomic, no branch (a lane's epoch claim, see Lane's constructor).
IKP_INLINE unsigned long long atomic_fetch_add_if(bool p, unsigned long long* addr, unsigned long long value) {
#if defined(IKP_HOST_EMULATION)
  return p ? emu::atomic_fetch_add(addr, value) : 0ull;
#else
  unsigned long long old = 0ull;
  asm volatile(
      "{\n\t.reg .pred p;\n\t.reg .u64 a;\n\tsetp.ne.u32 p, %2, 0;\n\tcvta.to.global.u64 a, %1;\n\t"
      "@p atom.global.add.u64 %0, [a], %3;\n\t}"
      : "+l"(old)
      : "l"(addr), "r"(static_cast<unsigned>(p)), "l"(value)
      : "memory");
  return old;
#endif
}

/// `*addr = value` with release semantics at system scope: a stream lane publishes its
/// HEAD this way, so a host that reads HEAD with acquire semantics sees every record stored
/// before it (the ring lives where the host can read it while the kernel runs). The
/// "memory" clobber keeps the compiler from sinking the record stores below it; it is paid
/// once per publish interval, never on the record path.
IKP_INLINE void store_release_sys(unsigned long long* addr, unsigned long long value) {
#if defined(IKP_HOST_EMULATION)
#if defined(IKP_EMU_SYSTEM_SCOPE_HOOK)
  emu::system_scope(false);
#endif
  __atomic_store_n(addr, value, __ATOMIC_RELEASE);
#else
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
#endif
}

/// `*addr` with acquire semantics at system scope: a stream lane reads the host's TAIL this
/// way before it reuses the slots the host consumed.
IKP_INLINE unsigned long long load_acquire_sys(const unsigned long long* addr) {
#if defined(IKP_HOST_EMULATION)
#if defined(IKP_EMU_SYSTEM_SCOPE_HOOK)
  emu::system_scope(true);
#endif
  return __atomic_load_n(addr, __ATOMIC_ACQUIRE);
#else
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(addr) : "memory");
  return v;
#endif
}

/// Sleeps about `ns` (a stream lane in wait mode, between reads of TAIL).
IKP_INLINE void nanosleep(unsigned ns) {
#if defined(IKP_HOST_EMULATION)
  emu::nanosleep(ns);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  __nanosleep(ns);
#else
  (void)ns;  // before sm_70 (no nanosleep, and no stream launches: they need sm_70's
             // release / acquire at system scope), and in the host pass of nvcc
#endif
}

/// `base[i] = word` for the record path, as one wide multiply-add and one global store.
/// Written in PTX so the optimizer takes it as is: left to itself, it strength-reduces a
/// record in a loop into a second 64-bit pointer bumped every iteration, or re-associates
/// the segment arithmetic into the address, and it loses the global state space (a generic
/// store); all of these cost instructions. ptxas still predicates, schedules and folds it.
/// There is no "memory" clobber: the buffer is ikp's own, so user loads and stores may move
/// across a record; Fence::Block is the way to pin them.
IKP_INLINE void store_record(unsigned long long* base, unsigned i, unsigned long long word) {
#if defined(IKP_HOST_EMULATION)
  base[i] = word;
#else
  asm volatile(
      "{\n\t.reg .u64 a;\n\tcvta.to.global.u64 a, %1;\n\tmad.wide.u32 a, %0, 8, a;\n\t"
      "st.global.u64 [a], %2;\n\t}" ::"r"(i),
      "l"(base), "l"(word));
#endif
}

/// store_record() on a thread where `p` holds, the predicate inside the PTX: the record path
/// of a branching lane (IKP_OFF_BRANCH=1) stores this way, so there is no branch on `p` for
/// ptxas to lay out or if-convert (the address is computed on every thread of the leader's
/// warp, the store predicated), and records back to back share one branch on the warp's
/// vote (see Lane::record).
IKP_INLINE void store_record_if(bool p, unsigned long long* base, unsigned i, unsigned long long word) {
#if defined(IKP_HOST_EMULATION)
  if (p) base[i] = word;
#else
  asm volatile(
      "{\n\t.reg .pred p;\n\t.reg .u64 a;\n\tsetp.ne.u32 p, %3, 0;\n\tcvta.to.global.u64 a, %1;\n\t"
      "mad.wide.u32 a, %0, 8, a;\n\t@p st.global.u64 [a], %2;\n\t}" ::"r"(i),
      "l"(base), "l"(word), "r"(static_cast<unsigned>(p)));
#endif
}

/// A stream lane's registers, passed by value to and from its out-of-line slow path (by
/// value, so they stay in registers: a pointer to the Lane would move it to local memory).
/// The record path sees only `slot` and `limit`: a slot index that never wraps there (the
/// limit stops at the ring's end), so a record is the fixed buffer's record with the
/// limit in place of the capacity.
struct StreamState {
  unsigned slot;      // ring index of the next record, 0..capacity
  unsigned limit;     // the slot may reach this before the slow path runs again
  unsigned base;      // records stored before slot 0 of this lap (a multiple of the capacity)
  unsigned room_end;  // records stored at which the ring is full, from the last TAIL read
  unsigned pending;   // records dropped since the last drop mark
  unsigned dropped;   // records dropped before the last drop mark
};

/// Publishes HEAD (dropped << 32 | stored) with release semantics at system scope, on the
/// leader: every record stored so far becomes visible to a host that reads HEAD with
/// acquire semantics.
IKP_INLINE void stream_publish(unsigned long long* ev, const StreamState& s, bool leader) {
  if (leader) {
    store_release_sys(ev - STREAM_CTRL_WORDS + STREAM_HEAD,
                      (static_cast<unsigned long long>(s.dropped + s.pending) << STREAM_HEAD_DROPPED_SHIFT) |
                          (s.base + s.slot));
  }
}

/// Reads the host's TAIL (acquire: the host's copies are done) into the cached room. Every
/// thread of the leader's warp reads it: one load of one address for the warp, and the same
/// room, so the same limit, on every thread (see stream_slow).
IKP_INLINE void stream_refresh(const unsigned long long* ev, unsigned cap, StreamState& s) {
  s.room_end = static_cast<unsigned>(load_acquire_sys(ev - STREAM_CTRL_WORDS + STREAM_TAIL)) + cap;
}

/// Free slots of the ring as of the last TAIL read.
IKP_INLINE unsigned stream_free(const StreamState& s) { return s.room_end - (s.base + s.slot); }

/// Stores one record at the slot (on the leader), starting the next lap at the ring's end.
IKP_INLINE void stream_store(unsigned long long* ev, unsigned cap, StreamState& s, unsigned long long word,
                             bool leader) {
  if (s.slot == cap) {
    s.base += cap;
    s.slot = 0u;
  }
  store_record_if(leader, ev, s.slot, word);
  ++s.slot;
}

/// Room, in slots, that a lane writes into: a chunk's worth (capacity >>
/// STREAM_PUBLISH_SHIFT), and never under two (a mark and a record). A ring with less room
/// than this counts as full: a lane whose host lags then drops (or, waiting, sleeps and
/// counts the stall) instead of going back to the host every few records, each time paying
/// a system-scope fence and a read across the link that neither a drop nor a stall would
/// show. It also keeps what the host hands back in whole chunks: a lane that published
/// every few records would get its room back a few records at a time, and go on
/// publishing every few records.
IKP_INLINE unsigned stream_least_room(unsigned cap) {
  const unsigned chunk = cap >> STREAM_PUBLISH_SHIFT;
  return chunk < 2u ? 2u : chunk;
}

/// The slow path of a stream record, out of line. It runs when the slot reaches its limit:
/// at the end of a chunk (capacity >> STREAM_PUBLISH_SHIFT records, chunks aligned to the
/// ring), when the room cached from the last TAIL read runs out, and for every record while
/// a drop-mode lane is full (then doing its work only on every STREAM_RECHECK-th drop).
/// It publishes HEAD (one system-scope release per chunk) and reads TAIL (one system-scope
/// acquire) only when less than stream_least_room() is known free, so a lane whose host
/// keeps up reads TAIL once per lap of the ring, not per chunk. A lane without that much
/// room waits for it (Wait: then writes a stall mark) or drops the record; a drop-mode lane
/// writes its drop mark once it has that room again. Then the limit moves to the next
/// chunk's end or the end of the room, whichever comes first, and the record (`value`, or
/// with `Timed` the timer T read first thing here, and `tag`) is stored or counted as
/// dropped. The timer is read here, a call after the record site, rather than passed in
/// with the record: the word the fast path built then stays live into the call block,
/// which took one more instruction per record in a loop on sm_90, and more in
/// straight-line code.
///
/// Every thread of the leader's warp runs it, together: each keeps the lane's registers
/// (the leader's slot, limit and room, read from the same TAIL), so each reaches the limit
/// at the same record, and only the `leader` stores. Called from the leader alone (up to
/// issue #35, the other threads waiting at the reconvergence point), the H200's figures
/// fit a warp that ran split from the first call on, the kernel's code once for the
/// leader and once for the rest (the GPU checks' stream kernel took 1.70x its time with
/// rings whose first slow path came at a third of the kernel, 2.02x with rings whose first
/// came at once; BENCHMARKS.md, "Stream record path"). A thread without a segment (`ev`
/// null: a lane that does not exist) moves its limit out of reach.
template <bool Wait, bool Timed, Timer T>
IKP_NOINLINE StreamState stream_slow(unsigned long long* ev, unsigned cap, StreamState s, unsigned value,
                                     unsigned tag, bool leader) {
  if (ev == nullptr) {
    s.limit = s.slot - 1u;
    return s;
  }
  if constexpr (Timed) value = T == Timer::Clock ? clock_lo() : globaltimer_lo();
  const unsigned long long record = (static_cast<unsigned long long>(value) << TIME_SHIFT) | tag;
  if ((s.pending & (STREAM_RECHECK - 1u)) == 0u) {
    stream_publish(ev, s, leader);
    const unsigned least = stream_least_room(cap);
    if (stream_free(s) < least) stream_refresh(ev, cap, s);
    // Full: less than `least` free. Decided before any mark, which takes a slot of the room
    // it found (`least` is at least two, so the record has one after the mark).
    bool full = stream_free(s) < least;
    const auto mark = [&](unsigned kind, unsigned v) {
      stream_store(ev, cap, s,
                   (static_cast<unsigned long long>(v) << TIME_SHIFT) | KIND_META |
                       ((kind & REGION_MASK) << REGION_SHIFT),
                   leader);
    };
    if (Wait && full) {
      unsigned long long* const ctrl = ev - STREAM_CTRL_WORDS;
      const unsigned long long t0 = globaltimer();
      do {
        nanosleep(STREAM_WAIT_SLEEP_NS);
        stream_refresh(ev, cap, s);
      } while (stream_free(s) < least);
      const unsigned long long waited = globaltimer() - t0;
      if (leader) {
        ctrl[STREAM_STALL_NS] += waited;
        ctrl[STREAM_STALLS] += 1ull;
      }
      mark(META_STREAM_STALLED, waited < 0xFFFFFFFFull ? static_cast<unsigned>(waited) : 0xFFFFFFFFu);
      full = false;
    }
    if (!Wait && s.pending != 0u && !full) {
      mark(META_STREAM_DROPPED, s.pending);
      s.dropped += s.pending;
      s.pending = 0u;
    }
    if (s.slot == cap) {
      s.base += cap;
      s.slot = 0u;
    }
    const unsigned chunk = cap >> STREAM_PUBLISH_SHIFT;
    const unsigned to_chunk_end = (s.slot & ~(chunk - 1u)) + chunk - s.slot;
    const unsigned free = stream_free(s);
    // A lane with drops not yet marked stays full until it has room for the mark too.
    const unsigned room = full || s.pending != 0u ? 0u : free;
    s.limit = s.slot + (room < to_chunk_end ? room : to_chunk_end);
  }
  if (s.slot != s.limit) {
    stream_store(ev, cap, s, record, leader);
  } else {
    ++s.pending;
  }
  return s;
}

template <class T>
struct remove_ref {
  using type = T;
};
template <class T>
struct remove_ref<T&> {
  using type = T;
};

}  // namespace detail

// The payload is placed by a plain shift: the bits above PAYLOAD_BITS fall off the top of
// the 32-bit tag, which is the masking the wire format requires, for free.
static_assert(PAYLOAD_SHIFT + PAYLOAD_BITS == 32u, "payload must end at bit 31 of the tag");

/// One lane's recording handle: one (block, group) track with exactly one writing thread.
///
/// Every thread of the group constructs it with the same group id and calls the same
/// methods. Only the leader of a lane that exists (lane < lane_count, group <
/// groups_per_block) ever writes; at init each warp votes whether it holds such a leader,
/// and a warp that does not (every warp of a null Arg: the runtime off switch) branches
/// around every record, so it reads no timer, stores and fences nothing. Built with
/// -DIKP_OFF_BRANCH=0 no warp branches: every warp issues each record predicated on the
/// leader (a shorter record on the leader's warp, a longer one on every other warp; see
/// the switch at the top of this file).
///
/// The record path is what this type is about. A record is: the branch on the warp's vote;
/// in the leader's warp, one compare `cursor < capacity` folded with the leader predicate,
/// one timer read and the select that keeps it where that holds (see record()), one tag
/// (region and kind are usually constants, so tag = payload << PAYLOAD_SHIFT | constant),
/// the address `events + cursor * 8` (a wide multiply-add, or nothing when it folds into
/// the store's offset) and, predicated, one 64-bit store; and `++cursor`. The cursor is a single register that counts every attempt, written or not:
/// nothing else is tracked while recording, and finalize derives `written = min(cursor,
/// capacity)` and `dropped = cursor - written`. A full lane therefore costs exactly what a
/// recording lane costs and never overruns its segment.
///
/// A ring lane (Overflow::Ring) keeps the newest records instead: the record path stores at
/// `i = cursor & (capacity - 1)` (the host makes the capacity a power of two for a ring
/// launch) if `i < capacity` (only a zero capacity fails it; ptxas folds the compare into
/// one test of the capacity) and counts; finalize's `written` and `dropped` then read as the
/// records present and the records overwritten. It stamps LANE_FLAG_RING so the decoder
/// restores the order. Without a ring layout the index still stays below the capacity, so
/// a Ring lane in a drop-newest buffer never writes outside its segment (the decoder
/// refuses the mismatch instead).
///
/// A stream lane (Overflow::Stream, Overflow::StreamWait; the host declares a stream launch
/// and drains the rings while the kernel runs) stores each record at its slot in the ring
/// while the slot is below its limit, a register holding how far it may write before it
/// must look at the host again: the record path is the fixed buffer's with the limit in
/// place of the capacity, plain stores, nothing at system scope. At the limit (the end of a
/// chunk of capacity >> STREAM_PUBLISH_SHIFT records, the ring's end, or the end of the room
/// it knows of) the out-of-line slow path publishes HEAD (one system-scope release per
/// chunk) and reads the host's TAIL only when the room it cached from the last read has run
/// out (one system-scope acquire per lap of the ring while the host keeps up). A full Stream lane counts the record as dropped and
/// writes a drop mark once it has room again; a full StreamWait lane sleeps until the host
/// makes room and writes a stall mark. A stream lane in a buffer that is not a stream
/// buffer (Arg::flags) records nothing.
///
/// Template parameters: F (Fence::None / Fence::Block), T (Timer::Global / Timer::Clock),
/// O (Overflow::DropNewest / Ring / Stream / StreamWait) and On (defaults to IKP_ENABLED;
/// false makes every method an empty inline function).
template <Fence F = Fence::None, Timer T = Timer::IKP_TIMER, Overflow O = Overflow::DropNewest,
          bool On = (IKP_ENABLED != 0)>
class Lane {
 public:
  static constexpr bool enabled = On;
  /// True for a ring lane (Overflow::Ring).
  static constexpr bool ring = O == Overflow::Ring;
  /// True for a stream lane (Overflow::Stream or Overflow::StreamWait).
  static constexpr bool stream = O == Overflow::Stream || O == Overflow::StreamWait;
  /// True for a stream lane that waits for room (Overflow::StreamWait).
  static constexpr bool wait = O == Overflow::StreamWait;
  /// True when a warp without the lane's writing leader branches around each record
  /// (IKP_OFF_BRANCH, default 1); false when every warp issues the record predicated.
  static constexpr bool off_branch = IKP_OFF_BRANCH != 0;
  /// Lane flags stamped into the IDS word so the decoder knows how the lane recorded.
  static constexpr unsigned flags = (T == Timer::Clock ? LANE_FLAG_CLOCK : 0u) |
                                    (F == Fence::Block ? LANE_FLAG_BLOCK_FENCE : 0u) |
                                    (ring ? LANE_FLAG_RING : 0u) | (stream ? LANE_FLAG_STREAM : 0u) |
                                    (wait ? LANE_FLAG_STREAM_WAIT : 0u);

  /// Finds this thread's lane (`linear_block * groups_per_block + group`) and, on the
  /// leader, takes the epoch, stamps the start globaltimer, start clock64 and the IDS word
  /// (smid, warp of the leader, flags), and measures the record cost (the CALIB word, see
  /// calibrate()). `leader` must be true for exactly one thread of the group.
  ///
  /// Epochs: when the host sized the buffer for several launches (`arg.epochs > 1`), the
  /// leader takes this launch's epoch from its lane's launch counter with one 64-bit atomic
  /// add (the value before the add) and writes segment `epoch * lane_count + lane`; a lane
  /// whose epoch is `epochs` or more records nothing (the counter still counts the launch).
  /// So a loop of launches, or a CUDA Graph replayed N times, fills one epoch per launch
  /// with no host action in between. With `epochs == 1` no atomic runs: every launch
  /// writes epoch 0 and the counters stay zero.
  IKP_INLINE Lane(const Arg& arg, unsigned group, bool leader) {
    if constexpr (On) {
      const unsigned lane = detail::linear_block() * arg.groups_per_block + group;
      const bool exists = group < arg.groups_per_block && lane < arg.lane_count;
      bool on = leader && exists;
      cap_ = arg.records_per_lane;
      counters_ = arg.n_counters;
      cursor_ = 0u;
      // Written out, not as a loop: a loop here, unrolled late, changed ptxas's register
      // allocation of kernels that never count (the bench's GEMM: 56 -> 65 registers).
      spins_[0] = spins_[1] = spins_[2] = spins_[3] = 0ull;
      unsigned long long* const buf = reinterpret_cast<unsigned long long*>(arg.buf);
      unsigned long long segment = lane;
#if IKP_EPOCHS
      {
        // The launch counters are the lane_count words just before epoch 0's lane 0. The
        // leader claims (with several epochs) in straight-line code, a predicated atomic:
        // `on` stays a predicate, where a branch around the claim made it a byte that every
        // record re-tested.
        const unsigned long long e = detail::atomic_fetch_add_if(
            on && arg.epochs > 1u, buf + (arg.lane_base - arg.lane_count) + lane, 1ull);
        on = on && e < (arg.epochs > 1u ? arg.epochs : 1u);  // 0 epochs reads as 1, as before
        // The epoch reaches the segment's address as the warp's largest (every thread but
        // a leader brings 0): a warp-uniform value, so the address stays in uniform
        // registers as it does without epochs, and not in the vector registers the kernel's
        // own code needs (the bench's GEMM: 56 registers without ikp, 65 with the epoch as a
        // per-thread value, one block of 256 threads less per SM; 56 this way). The lanes of
        // one warp are launched together (one block), so their launch counters agree and
        // the largest is every leader's own epoch. With one epoch it is 0.
        const unsigned epoch = detail::warp_max(on ? static_cast<unsigned>(e) : 0u);
        segment += static_cast<unsigned long long>(epoch) * arg.lane_count;
      }
#else
      on = on && arg.epochs <= 1u;
#endif
      if constexpr (stream) on = on && (arg.flags & ARG_FLAG_STREAM) != 0u;
      on_ = on;
      // The off switch: a warp without a writing leader (every warp of a null Arg, of a lane
      // past the buffer or past its epochs, and every warp of a lane but its leader's)
      // branches around the record path. Built without the branch (IKP_OFF_BRANCH=0) no
      // warp takes the vote (live() is then always true and live_ unread), but a stream
      // lane's: its slow path runs on the whole leader's warp (see put_stream).
      if constexpr (!off_branch && !stream) {
        live_ = on;
      } else {
        live_ = detail::warp_any(on);
      }
      unsigned long long* seg = buf + arg.lane_base + segment * arg.lane_stride;
      // Only the leader ever stores through ev_. Giving the other threads a null pointer makes
      // it a per-thread value, which keeps it in ordinary registers: a warp-uniform pointer
      // lives in uniform registers, and ptxas then copies it back into vector registers
      // around the stores (fewer instructions this way in most of the ikp test kernels, on
      // sm_80 and sm_90). A stream lane's whole leader's warp reads the host's TAIL in the
      // slow path, so there every thread of that warp with a lane has it.
      ev_ = (stream ? live_ && exists : on_) ? seg + LANE_EVENTS + (stream ? STREAM_CTRL_WORDS : 0u) : nullptr;
      if constexpr (stream) {
        // The host zeroed TAIL: the whole ring is free, the first chunk may be written.
        limit_ = cap_ >> STREAM_PUBLISH_SHIFT;
        base_ = 0u;
        room_end_ = cap_;
        pending_ = 0u;
        dropped_ = 0u;
      }
      if (on_) {
        // Read back to back so the decoder can pair them to convert clock to ns.
        const unsigned long long gt = detail::globaltimer();
        const unsigned long long clk = detail::clock64();
        const unsigned warp = detail::linear_thread() / detail::WARP_SIZE;
        const unsigned sm = detail::smid();
        seg[LANE_START_GT] = gt;
        seg[LANE_START_CLK] = clk;
        seg[LANE_IDS] = (static_cast<unsigned long long>(LANE_MARK) << IDS_MARK_SHIFT) |
                        (static_cast<unsigned long long>(flags & IDS_FLAGS_MASK) << IDS_FLAGS_SHIFT) |
                        (static_cast<unsigned long long>(warp & IDS_FIELD_MASK) << IDS_WARP_SHIFT) |
                        static_cast<unsigned long long>(sm & IDS_FIELD_MASK);
#if IKP_CALIBRATE
        calibrate(seg + LANE_CALIB);
#endif
      }
    }
  }

  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  /// Opens `region` (an index into the host's region names). `payload` is a free 20-bit
  /// value (tile index, stage, iteration); higher bits are dropped. With Fence::Block the
  /// fence comes after the store, so the region's memory traffic is ordered after the stamp.
  IKP_INLINE void begin(unsigned region, unsigned payload = 0u) {
    if constexpr (On) {
      put_fenced<false>(tag(KIND_BEGIN, region, payload));
    }
  }

  /// Closes the innermost open `region`. With Fence::Block the fence comes first, so the
  /// region's memory traffic is ordered before the stamp.
  IKP_INLINE void end(unsigned region, unsigned payload = 0u) {
    if constexpr (On) {
      put_fenced<true>(tag(KIND_END, region, payload));
    }
  }

  /// A point event. With Fence::Block it is fenced like an end (what came before is done).
  IKP_INLINE void instant(unsigned region, unsigned payload = 0u) {
    if constexpr (On) {
      put_fenced<true>(tag(KIND_INSTANT, region, payload));
    }
  }

  /// Opens async range `region` with `token` (a 20-bit value; higher bits are dropped): a
  /// begin record, the cost of begin(). The region must be listed in the host's
  /// `Layout::async_regions`: its begins and ends are then not paired within the lane, and
  /// an end closes the earliest open begin of the same region and token in the whole
  /// launch, whichever lane wrote it. So the range may end in another lane (a TMA load
  /// issued by a producer warp, its completion observed by a consumer warp). Fenced like
  /// begin().
  IKP_INLINE void range_begin(unsigned region, unsigned token) { begin(region, token); }

  /// Closes async range `region` / `token` (possibly opened by another lane): an end
  /// record, the cost of end(). Fenced like end().
  IKP_INLINE void range_end(unsigned region, unsigned token) { end(region, token); }

  /// IKP_WAIT's parts (the macro expands the loop in place, so `cond` stays an expression
  /// of the kernel's own: no lambda, whose captures C++17 restricts and whose call ptxas
  /// schedules differently). Whether this warp counts a wait's spins: the warp holding the
  /// lane's writing leader (live()). Any other warp (of a null Arg, of a lane past the
  /// buffer, of a multi-warp lane but the leader's: their counts never reach the buffer)
  /// spins the bare loop.
  IKP_INLINE bool counts_spins_() const {
    if constexpr (On) return live();
    return false;
  }

  /// Adds `n` to wait counter `id`'s total. An id below IKP_COUNTER_REGS is summed in a
  /// register pair and added to the lane trailer at finalize: with a constant id that is
  /// one 64-bit add (two SASS instructions; IKP_WAIT runs it once a wait that spun), where
  /// an add to the trailer is a branch around a 64-bit RED from the leader (8 SASS
  /// instructions a wait in the ikp cost kernels, on the waiting warp's path). The pair is
  /// picked by comparing `id` with each index, never by indexing, which would move the sums
  /// to local memory for an id the compiler does not know (the compares then run, a few
  /// instructions; with a constant id they fold away). A higher id adds to the trailer at
  /// once. Ids at or past n_counters are ignored (they would land
  /// in the next lane's segment).
  IKP_INLINE void count(unsigned id, unsigned n) {
    if constexpr (On) {
      if (COUNTER_REGS > 0u && id == 0u) {
        spins_[0] += n;
      } else if (COUNTER_REGS > 1u && id == 1u) {
        spins_[1] += n;
      } else if (COUNTER_REGS > 2u && id == 2u) {
        spins_[2] += n;
      } else if (COUNTER_REGS > 3u && id == 3u) {
        spins_[3] += n;
      } else {
        add_count(id, n);
      }
    }
  }

  /// Records one wait's spin count `n` for counter `id` as a meta record (no timer read:
  /// the decoder takes its time from the previous record of the lane).
  IKP_INLINE void sample(unsigned id, unsigned n) {
    if constexpr (On) put(n, tag(KIND_META, META_COUNTER_SAMPLE, id));
  }

  /// Stamps the end globaltimer, end clock64 and `dropped << COUNT_DROPPED_SHIFT | written`
  /// (for a ring: overwritten << COUNT_DROPPED_SHIFT | present, the same arithmetic).
  /// Call once, after the last record; a lane that never finalizes decodes as unfinished.
  IKP_INLINE void finalize() {
    if constexpr (On) {
      if constexpr (F == Fence::Block) fence();
      if (on_) {
        unsigned long long* trailer = ev_ + cap_;
        // A stream lane's cursor is its slot (records stored: base + slot); its drops are
        // counted apart.
        const unsigned written = stream ? base_ + cursor_ : (cursor_ < cap_ ? cursor_ : cap_);
        const unsigned dropped = stream ? dropped_ + pending_ : cursor_ - written;
        const unsigned long long gt = detail::globaltimer();
        const unsigned long long clk = detail::clock64();
        trailer[TRAILER_END_GT] = gt;
        trailer[TRAILER_END_CLK] = clk;
        trailer[TRAILER_COUNT] = (static_cast<unsigned long long>(dropped) << COUNT_DROPPED_SHIFT) | written;
        // Each folds away for a counter the kernel never counts (its sum is the constant 0).
        if (spins_[0] != 0ull) add_count(0u, spins_[0]);
        if (spins_[1] != 0ull) add_count(1u, spins_[1]);
        if (spins_[2] != 0ull) add_count(2u, spins_[2]);
        if (spins_[3] != 0ull) add_count(3u, spins_[3]);
        if constexpr (stream) publish();
      }
    }
  }

  /// True on the one thread that writes this lane.
  IKP_INLINE bool active() const {
    if constexpr (On) return on_;
    return false;
  }

  /// Runs `body(lane)` once: `lane` is this lane in a warp that records (the warp of the
  /// lane's writing leader), and a compiled-out lane of the same kind (every method empty)
  /// in any other warp. The compiler builds the body twice, so a warp that records nothing
  /// (every warp of a null Arg, a block's lane's other warps) runs a copy with no record
  /// and no counter in it, where each record would otherwise cost it the branch on the
  /// warp's vote and the cursor's add: the off switch of a hot loop, a record every few
  /// dozen instructions, at one branch a call.
  ///
  ///     lane.dispatch([&](auto& lane) {
  ///       for (unsigned k = 0; k < n; ++k) { lane.begin(STEP, k); work(); lane.end(STEP, k); }
  ///     });
  ///
  /// The body must use its parameter, not the lane around it. The price is code size (the
  /// body twice). Built with IKP_OFF_BRANCH=0 every warp runs the recording copy, as every
  /// warp issues every record then.
  template <class Body>
  IKP_INLINE void dispatch(Body&& body) {
    if constexpr (On) {
      if (live()) {
        body(*this);
        return;
      }
    }
    Lane<F, T, O, false> off(Arg{}, 0u, false);
    body(off);
  }

 private:
  IKP_INLINE static unsigned now() {
    if constexpr (T == Timer::Clock) return detail::clock_lo();
    return detail::globaltimer_lo();
  }

  /// now() where `p` holds, 0 elsewhere (see record()).
  IKP_INLINE static unsigned now_if(bool p) {
    if constexpr (T == Timer::Clock) return detail::clock_lo_if(p);
    return detail::globaltimer_lo_if(p);
  }

  /// Adds `n` to counter `id` in the lane trailer (the leader of a lane with that counter).
  template <class N>
  IKP_INLINE void add_count(unsigned id, N n) {
    if (on_ && id < counters_) {
      detail::atomic_add(ev_ + cap_ + TRAILER_COUNTERS + id, static_cast<unsigned long long>(n));
    }
  }

  IKP_INLINE static unsigned tag(unsigned kind, unsigned region, unsigned payload) {
    return kind | ((region & REGION_MASK) << REGION_SHIFT) | (payload << PAYLOAD_SHIFT);
  }

  /// Fence::Block's fence, run by the warps of a lane that writes only: it orders the
  /// leader warp's memory traffic around the stamp, and no other warp's traffic is in it.
  IKP_INLINE void fence() const {
    if (live()) detail::fence_block();
  }

  /// A timed record with Fence::Block's fence before it (`FenceFirst`: end, instant) or
  /// after it (begin). The fence and the record sit behind one branch on live(), so an off
  /// warp skips both with one BRA.
  template <bool FenceFirst>
  IKP_INLINE void put_fenced(unsigned tag) {
    if constexpr (F == Fence::None) {
      put_timed(tag);
    } else if constexpr (stream) {
      if (live()) {
        if constexpr (FenceFirst) detail::fence_block();
        put_stream<true>(0u, tag);
        if constexpr (!FenceFirst) detail::fence_block();
      }
    } else {
      if (live()) {
        if constexpr (FenceFirst) detail::fence_block();
        put_live<true>(0u, tag);
        if constexpr (!FenceFirst) detail::fence_block();
      }
      ++cursor_;
    }
  }

  /// Whether this warp runs the record path: the warp vote taken at init (live_) with
  /// IKP_OFF_BRANCH=1, so a warp without a writing leader branches around every record;
  /// always with IKP_OFF_BRANCH=0, so every warp issues the record predicated on the leader.
  IKP_INLINE bool live() const {
    if constexpr (off_branch) return live_;
    return true;
  }

  /// The whole record path: a warp that is not live() branches around the timer read and
  /// the store, so an off lane reads no timer and stores nothing: one uniform branch per
  /// record, and the cursor's add (which folds away in straight-line code). In the leader's
  /// warp: read the timer, and if this thread writes and the lane has room, store; count
  /// always. A ring lane always has room: it stores at the cursor modulo the (power-of-two)
  /// capacity, the compare only guards a zero capacity.
  IKP_INLINE void put_timed(unsigned tag) {
    if constexpr (stream) {
      if (live()) put_stream<true>(0u, tag);
      return;
    }
    if (live()) put_live<true>(0u, tag);
    ++cursor_;
  }

  /// The same for an untimed (meta) record whose high half is `value`.
  IKP_INLINE void put(unsigned value, unsigned tag) {
    if constexpr (stream) {
      if (live()) put_stream<false>(value, tag);
      return;
    }
    if (live()) put_live<false>(value, tag);
    ++cursor_;
  }

  /// A record in a live() warp, without the cursor's add: store at the cursor (a ring:
  /// modulo the capacity) if this thread writes and the lane has room.
  template <bool Timed>
  IKP_INLINE void put_live(unsigned value, unsigned tag) {
    const unsigned i = ring ? cursor_ & (cap_ - 1u) : cursor_;
    record<Timed>(on_ && i < cap_, ev_, i, value, tag);
  }

  /// One record's code, shared by the record path and calibrate(): if `room`, store at
  /// `at[i]` the word of `tag` and the timer (`Timed`) or `value`. How the timer is read
  /// and the store guarded is the whole difference between the two designs of the off
  /// switch (IKP_OFF_BRANCH).
  ///
  /// With the branch (1), ptxas must keep the branch on live_ a branch. It does while the
  /// timer is read outside the store's condition: read under it (`if (room) { read; store;
  /// }`), the record is short enough that ptxas if-converts both branches, and every warp
  /// issues the record predicated again. But a read that every thread of the converged
  /// warp makes alike is a warp-uniform value, which ptxas reads through the uniform
  /// datapath (S2UR, a variable-latency read, then a NOP or a wait and a move into the
  /// store's register: the record path until issue #36, 2 instructions longer). So the
  /// timer is read by now_if(room): every thread of the warp issues the read and a select
  /// keeps it where `room` holds (0 elsewhere), a per-thread value, which ptxas reads with
  /// one fixed-latency CS2R into a vector register. (Written as `@p mov` without the 0,
  /// ptxas still selects, against the register's previous value, which it then carries
  /// through loops.) The store is predicated inside its PTX (store_record_if) rather than
  /// behind `if (room)`: ptxas then lays out no branch of its own per record (with one, it
  /// recomputed the predicate, and a ring lane's mask, at every record: 7 instructions
  /// instead of 6, 10 instead of 8 for a ring record), and records back to back share one
  /// branch on live_.
  ///
  /// Without the branch (0), the read is under the store's predicate: one predicated CS2R
  /// straight into the store's register, and the record is short enough for ptxas to
  /// predicate it whole: every warp issues it, no branch. tests/device_sass.rs checks both:
  /// the off path holds no timer read and no store and the on path reads the timer with
  /// CS2R, never S2UR (1), the record costs what it did before the branch (0).
  template <bool Timed>
  IKP_INLINE static void record(bool room, unsigned long long* at, unsigned i, unsigned value, unsigned tag) {
    if constexpr (off_branch) {
      if constexpr (Timed) value = now_if(room);
      detail::store_record_if(room, at, i, (static_cast<unsigned long long>(value) << TIME_SHIFT) | tag);
    } else if (room) {
      if constexpr (Timed) value = now();
      detail::store_record(at, i, (static_cast<unsigned long long>(value) << TIME_SHIFT) | tag);
    }
  }

  /// A stream record, in a live() warp (an off warp branches around it, as around every
  /// record): the fixed buffer's record with the lane's limit in place of the capacity
  /// (the cursor is the slot in the ring, which never wraps on this path), plus the branch
  /// to the out-of-line slow path (detail::stream_slow) when the slot is at the limit: no
  /// mask, no system-scope access, no call on this path.
  ///
  /// Every thread of the leader's warp keeps the lane's slot and limit, not the leader
  /// alone: the compare then comes out the same on all of them, the branch to the slow path
  /// does not split the warp, and the whole warp calls the slow path together (see
  /// detail::stream_slow for what a call from the leader alone cost). The store is
  /// predicated on the leader inside its PTX, as a fixed record's is.
  template <bool Timed>
  IKP_INLINE void put_stream(unsigned value, unsigned tag) {
    // In the leader's warp every thread reads the timer, and a select keeps it on the
    // leader: a per-thread value, read with a fixed-latency CS2R (read as now(), ptxas
    // takes some records' reads through the uniform datapath, S2UR and a wait; see
    // record()). The slow path reads its own, so its call block holds no read.
    const unsigned long long word = (static_cast<unsigned long long>(Timed ? now_if(on_) : value) << TIME_SHIFT) | tag;
    if (__builtin_expect(cursor_ == limit_, 0)) {
      if (live_) slow<Timed>(value, tag);
    } else {
      detail::store_record_if(on_, ev_, cursor_, word);
      ++cursor_;
    }
  }

  /// The lane's registers as the slow path takes them.
  IKP_INLINE detail::StreamState state() const {
    return detail::StreamState{cursor_, limit_, base_, room_end_, pending_, dropped_};
  }

  /// Runs the slow path for a record and takes its registers back.
  template <bool Timed>
  IKP_INLINE void slow(unsigned value, unsigned tag) {
    const detail::StreamState st = detail::stream_slow<wait, Timed, T>(ev_, cap_, state(), value, tag, on_);
    cursor_ = st.slot;
    limit_ = st.limit;
    base_ = st.base;
    room_end_ = st.room_end;
    pending_ = st.pending;
    dropped_ = st.dropped;
  }

  /// Publishes HEAD at finalize (see detail::stream_publish).
  IKP_INLINE void publish() const { detail::stream_publish(ev_, state(), true); }

  /// Measures what one record costs, in SM cycles, into the CALIB word `calib` (leader
  /// only, once, at init). Two rounds, each of CALIB_RECORDS records back to back into
  /// the CALIB word (standing in for an event slot) between two %clock reads; it stores
  /// the shorter round's cycles over its records, rounded. Each record goes through the
  /// record path's own code (live(), record(): a compare against a bound, the timer read
  /// and its select, the word, a plain predicated 64-bit store), so ptxas emits a record's
  /// instructions, with a record's register reuse (tests/device_sass.rs checks the SASS).
  /// The bound is `cap_ + CALIB_RECORDS`, which the compiler cannot prove true (the sum
  /// may wrap), so the predicate stays as in a record; the two %clock reads sit under it,
  /// which keeps them vector-register reads (CS2R) that add no move of their own. That is the
  /// issue cost of a record as records inside a span add it: stores are fire-and-forget,
  /// so their memory latency is not in it. The shorter of two rounds is kept so that a
  /// stall (a warp switch, an instruction-cache miss) is not. (Timing each record from its
  /// own clock read, as earlier versions did, needs the reads kept in registers, which
  /// adds a move per record that records do not have, or, outside the predicate, got
  /// uniform-datapath reads from ptxas: on an H100 those versions measured 24 and 11
  /// cycles for records that cost 17 in place.)
  IKP_INLINE void calibrate(unsigned long long* calib) const {
    constexpr unsigned records = CALIB_RECORDS;
    const unsigned bound = cap_ + records;
    unsigned least = ~0u;
    for (unsigned round = 0; round < 2u; ++round) {
      unsigned c0 = 0u, c1 = 0u;
      if (bound != 0u) c0 = detail::clock_lo();
      for (unsigned i = 0; i < records; ++i) {
        if (live()) record<true>(i < bound, calib, 0u, 0u, i);
      }
      if (bound != 0u) c1 = detail::clock_lo();
      if (c1 - c0 < least) least = c1 - c0;
    }
    detail::store_record(calib, 0u, (least + records / 2u) / records);
  }

  unsigned long long* ev_;  // this lane's first event record
  unsigned cursor_;         // records attempted so far (written + dropped); stream: the slot
  unsigned cap_;            // records_per_lane
  unsigned counters_;       // n_counters
  // Wait counters 0..COUNTER_REGS-1 summed here until finalize (see count()); the others
  // stay 0.
  static constexpr unsigned COUNTER_REGS = IKP_COUNTER_REGS;
  static_assert(COUNTER_REGS <= 4u, "IKP_COUNTER_REGS is 0 to 4");
  unsigned long long spins_[4];
  unsigned limit_;          // stream: the slot may reach this before the slow path runs
  unsigned base_;           // stream: records stored before slot 0 of this lap
  unsigned room_end_;       // stream: records stored at which the ring is full (TAIL + cap)
  unsigned pending_;        // stream: records dropped since the last drop mark
  unsigned dropped_;        // stream: records dropped before the last drop mark
  bool on_;                 // leader of an existing lane
  bool live_;               // on_ on some thread of this warp (IKP_OFF_BRANCH=0: on_, but a stream lane's vote)
};

/// Closes a region when it goes out of scope (early returns, breaks and continues
/// included). Prefer the IKP_SCOPE macro, which names the object for you.
template <class L>
class Scope {
 public:
  IKP_INLINE Scope(L& lane, unsigned region, unsigned payload = 0u)
      : lane_(lane), region_(region), payload_(payload) {
    lane_.begin(region, payload);
  }
  IKP_INLINE ~Scope() { lane_.end(region_, payload_); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  L& lane_;
  unsigned region_;
  unsigned payload_;
};

}  // namespace ikp

#define IKP_CAT_(a, b) a##b
#define IKP_CAT(a, b) IKP_CAT_(a, b)

/// IKP_SCOPE(lane, region[, payload]): begin now, end at the closing brace.
#define IKP_SCOPE(lane, ...)                                                          \
  ::ikp::Scope<typename ::ikp::detail::remove_ref<decltype(lane)>::type> IKP_CAT( \
      ikp_scope_, __COUNTER__)((lane), __VA_ARGS__)

/// IKP_WAIT(lane, counter_id, cond): spins while `cond` holds and adds the number of spins
/// (tries after the first) to counter `counter_id`. The first try comes before the loop, so
/// a wait that passes at once runs it and nothing else. A wait that spins asks once whether
/// its warp counts (Lane::counts_spins_: the warp of the lane's writing leader); that warp
/// counts each spin in a register of the wait's own (one integer add, no memory operation,
/// so the wait's own timing barely moves) and adds the count to the counter's total once
/// the wait is over (Lane::count: for a constant id below IKP_COUNTER_REGS a 64-bit add to a
/// register pair); any other warp (a null Arg's) spins the bare loop. The totals reach the
/// buffer once, at finalize (the ikp tests check these in SASS). A wait's count is 32 bits:
/// a single wait of 2^32 spins or more (minutes of spinning) adds its spins modulo 2^32.
/// `cond` must re-read what it waits on (volatile load, atomic, barrier try-wait), as any
/// spin loop must; it is evaluated as often as in `while (cond) {}`; `lane` and
/// `counter_id` are evaluated once. Compiled out (IKP_ENABLED=0) it is that bare loop.
///
/// IKP_WAIT_SAMPLED(lane, counter_id, cond): IKP_WAIT plus one counter-sample record, so
/// the trace also shows how long each individual wait spun (recorded with Lane::sample,
/// for a wait that passes at once too).
#if IKP_ENABLED
#define IKP_WAIT(lane, counter_id, cond)                                                           \
  do {                                                                                             \
    auto& ikp_wait_lane_ = (lane);                                                                 \
    const unsigned ikp_wait_id_ = (counter_id);                                                    \
    unsigned ikp_wait_n_ = 0u;                                                                     \
    IKP_SPIN_(ikp_wait_lane_, ikp_wait_n_, ikp_wait_lane_.count(ikp_wait_id_, ikp_wait_n_), cond); \
  } while (0)
#define IKP_WAIT_SAMPLED(lane, counter_id, cond)           \
  do {                                                     \
    auto& ikp_wait_lane_ = (lane);                         \
    const unsigned ikp_wait_id_ = (counter_id);            \
    unsigned ikp_wait_n_ = 0u;                             \
    IKP_SPIN_(ikp_wait_lane_, ikp_wait_n_, (void)0, cond); \
    ikp_wait_lane_.count(ikp_wait_id_, ikp_wait_n_);       \
    ikp_wait_lane_.sample(ikp_wait_id_, ikp_wait_n_);      \
  } while (0)
/// The loop of IKP_WAIT and IKP_WAIT_SAMPLED: the first try before it; in a warp that
/// counts (Lane::counts_spins_) each spin ticks `n` and `done` runs once the wait spun,
/// elsewhere the bare loop.
#define IKP_SPIN_(l, n, done, cond)    \
  if (cond) {                          \
    if ((l).counts_spins_()) {         \
      do {                             \
        ::ikp::detail::tick(n);        \
      } while (cond);                  \
      done;                            \
    } else {                           \
      while (cond) {                   \
      }                                \
    }                                  \
  }
#else
#define IKP_WAIT(lane, counter_id, cond) \
  do {                                   \
    (void)sizeof(lane);                  \
    while (cond) {                       \
    }                                    \
  } while (0)
#define IKP_WAIT_SAMPLED(lane, counter_id, cond) IKP_WAIT(lane, counter_id, cond)
#endif

#endif  // IKP_DEVICE_API
#endif  // IKP_CUH_V2
