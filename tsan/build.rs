//! Compiles ikp.cuh's stream lanes, emulated on the CPU (`host/tests/kernels/
//! emulate_stream.cpp`), with `-fsanitize=thread` into a static library linked into the
//! tests, so that ThreadSanitizer sees the lanes' stores and the Rust drain's loads in one
//! process with one runtime (the one rustc links for `-Zsanitizer=thread`).

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let include = out.join("include");
    ikp_device::cuh::write_to_dir(&include).expect("writing ikp.cuh");
    let lanes = "../host/tests/kernels/emulate_stream.cpp";
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .include(&include)
        .flag("-fsanitize=thread")
        .file(lanes)
        .compile("ikp_emulated_lanes");
    println!("cargo:rerun-if-changed={lanes}");
    println!("cargo:rerun-if-changed=../device/src");
}
