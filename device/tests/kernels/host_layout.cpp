// The C++ half of device/tests/host_helper.rs: reads layouts from stdin, one per line,
// builds each as an ikp::HostLayout (ikp_host.hpp) and prints what the helper makes of it
// (validate(), the sizes, header_words(), write_header() into a caller's array, the bytes of
// kernel_arg()), for the Rust test to compare with ikp_device::Layout. Compiled by the host
// C++ compiler and, when there is one, by nvcc (`-x cu`: its host pass, with the device
// API of ikp.cuh declared and a kernel taking the ikp::Arg the helper builds).
//
// Input line (tokens separated by spaces; a name is `x` then its bytes in hex):
//   ptr P grid X Y Z groups G records R timer T overflow O epochs E
//   regions N name... counters M name... async K id... sync 0 | sync 1 RT MONO GT TRIP SAMPLES
#include "ikp_host.hpp"

#include <cstring>
#include <iostream>
#include <sstream>
#include <type_traits>

static_assert(std::is_same<decltype(ikp::HostLayout{}.kernel_arg(std::uint64_t{0})), ikp::Arg>::value,
              "kernel_arg builds the Arg the device code takes");
static_assert(std::is_same<decltype(ikp::HostLayout{}.kernel_arg(static_cast<void*>(nullptr))), ikp::Arg>::value,
              "kernel_arg takes a device pointer too");

#if defined(__CUDACC__)
// The device API is declared under nvcc: a kernel takes the helper's Arg by value.
__global__ void profiled(float* x, ikp::Arg prof) {
  ikp::Lane<> lane(prof, 0u, threadIdx.x == 0u);
  {
    IKP_SCOPE(lane, 0u);
    x[threadIdx.x] += 1.0f;
  }
  lane.finalize();
}
#endif

namespace {

[[noreturn]] void die(const std::string& what) {
  std::cerr << "host_layout: " << what << "\n";
  std::exit(2);
}

void expect(std::istringstream& in, const char* key) {
  std::string k;
  if (!(in >> k) || k != key) die(std::string("expected ") + key + ", got `" + k + "`");
}

std::uint64_t number(std::istringstream& in) {
  std::uint64_t v = 0;
  if (!(in >> v)) die("expected a number");
  return v;
}

std::uint32_t number32(std::istringstream& in) { return static_cast<std::uint32_t>(number(in)); }

std::string name(std::istringstream& in) {
  std::string tok;
  if (!(in >> tok) || tok.empty() || tok[0] != 'x' || tok.size() % 2 != 1) die("expected a name");
  std::string s;
  for (std::size_t i = 1; i < tok.size(); i += 2) {
    s.push_back(static_cast<char>(std::stoul(tok.substr(i, 2), nullptr, 16)));
  }
  return s;
}

std::vector<std::string> names(std::istringstream& in, const char* key) {
  expect(in, key);
  const std::uint64_t n = number(in);
  std::vector<std::string> v;
  for (std::uint64_t i = 0; i < n; ++i) v.push_back(name(in));
  return v;
}

ikp::HostLayout parse(const std::string& line, std::uint64_t& ptr) {
  std::istringstream in(line);
  ikp::HostLayout l;
  expect(in, "ptr");
  ptr = number(in);
  expect(in, "grid");
  l.grid = {number32(in), number32(in), number32(in)};
  expect(in, "groups");
  l.groups_per_block = number32(in);
  expect(in, "records");
  l.records_per_lane = number32(in);
  expect(in, "timer");
  l.timer = number(in) == 0u ? ikp::Timer::Global : ikp::Timer::Clock;
  expect(in, "overflow");
  l.overflow = static_cast<ikp::Overflow>(number32(in));
  expect(in, "epochs");
  l.epochs = number32(in);
  l.regions = names(in, "regions");
  l.counters = names(in, "counters");
  expect(in, "async");
  const std::uint64_t k = number(in);
  for (std::uint64_t i = 0; i < k; ++i) l.async_regions.push_back(number32(in));
  expect(in, "sync");
  if (number(in) != 0u) {
    ikp::ClockSync s;
    s.host_realtime_ns = number(in);
    s.host_monotonic_ns = number(in);
    s.device_globaltimer_ns = number(in);
    s.round_trip_ns = number32(in);
    s.samples = number32(in);
    l.clock_sync = s;
  }
  std::string rest;
  if (in >> rest) die("trailing `" + rest + "`");
  return l;
}

void words(const char* key, const std::uint64_t* w, std::size_t n) {
  std::cout << key;
  for (std::size_t i = 0; i < n; ++i) std::cout << ' ' << std::hex << w[i] << std::dec;
  std::cout << '\n';
}

constexpr std::uint64_t kSentinel = 0x5e5e5e5e5e5e5e5eull;

void report(const ikp::HostLayout& l, std::uint64_t ptr) {
  const std::string err = l.validate();
  // write_header() into a caller's array one word longer than the header, pre-filled with
  // a sentinel: it must write the header and leave the last word alone.
  const std::uint64_t len = err.empty() ? l.header_len() : 0u;
  std::vector<std::uint64_t> array(static_cast<std::size_t>(len) + 1u, kSentinel);
  const std::string written = l.write_header(array.data(), array.size());
  std::string thrown = "(none)";
  std::vector<std::uint64_t> vec;
  try {
    vec = l.header_words();
  } catch (const std::invalid_argument& e) {
    thrown = e.what();
  }
  if (!err.empty()) {
    std::cout << "error " << err << '\n';
    std::cout << "write_header " << written << '\n';
    std::cout << "header_words " << thrown << '\n';
    std::cout << "array_untouched " << (array[0] == kSentinel) << '\n';
    return;
  }
  std::cout << "valid\n";
  std::cout << "write_header " << (written.empty() ? "(ok)" : written) << '\n';
  std::cout << "header_words " << thrown << '\n';
  std::cout << "sizes " << l.blocks() << ' ' << l.lane_count() << ' ' << l.lane_stride() << ' ' << l.header_len()
            << ' ' << l.lane_base() << ' ' << l.buffer_words() << ' ' << l.buffer_bytes() << '\n';
  words("header", vec.data(), vec.size());
  words("array", array.data(), static_cast<std::size_t>(len));
  std::cout << "array_tail " << (array[static_cast<std::size_t>(len)] == kSentinel) << '\n';
  // Too short an array: refused, nothing written.
  std::vector<std::uint64_t> short_array(static_cast<std::size_t>(len) - 1u, kSentinel);
  const std::string short_err = l.write_header(short_array.data(), short_array.size());
  bool untouched = true;
  for (const std::uint64_t w : short_array) untouched = untouched && w == kSentinel;
  std::cout << "short " << short_err << '\n';
  std::cout << "short_untouched " << untouched << '\n';
  const ikp::Arg arg = l.kernel_arg(ptr);
  unsigned char bytes[sizeof(ikp::Arg)];
  std::memcpy(bytes, &arg, sizeof bytes);
  std::cout << "arg";
  for (const unsigned char b : bytes) std::cout << ' ' << static_cast<unsigned>(b);
  std::cout << '\n';
  const ikp::Arg from_ptr = l.kernel_arg(reinterpret_cast<void*>(static_cast<std::uintptr_t>(ptr)));
  std::cout << "arg_from_pointer_same " << (std::memcmp(&from_ptr, &arg, sizeof arg) == 0) << '\n';
  const auto symbol = l.probe_symbol(ptr);
  words("probe_symbol", symbol.data(), symbol.size());
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::uint64_t ptr = 0;
    const ikp::HostLayout l = parse(line, ptr);
    report(l, ptr);
    std::cout << "end" << std::endl;
  }
  return 0;
}
