//! The committed `device/include/ikp.cuh` and `device/include/ikp_host.hpp` must be exactly
//! what the generator produces, so users who copy the files from the repository get the
//! headers of this wire format.
//! `IKP_BLESS=1 cargo test -p ikp-device --test device cuh_golden` rewrites them.
use ikp_device::cuh;
use std::path::Path;
use std::sync::Once;

fn check(name: &str, generated: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let path = dir.join(name);
    // Once per process: the two tests run on parallel threads.
    static BLESS: Once = Once::new();
    if std::env::var_os("IKP_BLESS").is_some_and(|v| v == "1") {
        BLESS.call_once(|| {
            cuh::write_to_dir(&dir).expect("writing the golden headers");
        });
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or("past the end of the shorter file".into(), |i| {
                format!("line {}", i + 1)
            });
        panic!(
            "{} differs from the generator (first difference: {line}).\n\
             Regenerate it with: IKP_BLESS=1 cargo test -p ikp-device --test device cuh_golden",
            path.display()
        );
    }
}

#[test]
fn committed_header_matches_the_generator() {
    check(cuh::FILE_NAME, &cuh::source());
}

#[test]
fn committed_host_header_matches_the_generator() {
    check(cuh::HOST_FILE_NAME, &cuh::host_source());
}
