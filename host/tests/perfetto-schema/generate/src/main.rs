//! Regenerates the Rust of `ikp-perfetto-schema` (`../src/`) from its `.proto` files
//! (`../protos/`) with protobuf-codegen and the vendored protoc; run by
//! `scripts/perfetto-schema.sh`.

use std::path::{Path, PathBuf};

/// The `.proto` files under `dir`, sorted (the generated `mod.rs` lists them in order).
fn protos(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read protos/") {
        let path = entry.expect("read protos/").path();
        if path.is_dir() {
            protos(&path, out);
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
}

fn main() {
    let krate = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    std::env::set_current_dir(krate).unwrap();
    let mut inputs = Vec::new();
    protos(Path::new("protos"), &mut inputs);
    inputs.sort();
    let out = Path::new("src/protos");
    if out.exists() {
        std::fs::remove_dir_all(out).unwrap();
    }
    std::fs::create_dir_all(out).unwrap();
    protobuf_codegen::Codegen::new()
        .protoc()
        .protoc_path(&protoc_bin_vendored::protoc_bin_path().unwrap())
        .include(".")
        .inputs(&inputs)
        .out_dir(out)
        .run()
        .expect("protoc / protobuf-codegen");
    println!("generated {} files into {}", inputs.len(), out.display());
}
