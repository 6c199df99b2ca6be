//! The committed `device/include/ikp.cuh` must be exactly what the generator produces, so
//! users who copy the file from the repository get the header of this wire format.
//! `IKP_BLESS=1 cargo test -p ikp-device --test cuh_golden` rewrites it.
use ikp_device::cuh;
use std::path::Path;

#[test]
fn committed_header_matches_the_generator() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let path = dir.join(cuh::FILE_NAME);
    if std::env::var_os("IKP_BLESS").is_some_and(|v| v == "1") {
        cuh::write_to_dir(&dir).expect("writing the golden header");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let generated = cuh::source();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or("past the end of the shorter file".into(), |i| {
                format!("line {}", i + 1)
            });
        panic!(
            "{} differs from ikp_device::cuh::source() (first difference: {line}).\n\
             Regenerate it with: IKP_BLESS=1 cargo test -p ikp-device --test cuh_golden",
            path.display()
        );
    }
}
