//! Docs that cannot rot: every fenced block of README.md, CONTRIBUTING.md and docs/ is run
//! or compiled here (CONTRIBUTING.md, "Docs that run").
//!
//! - `sh`: run with bash in a directory that looks like the checkout (`ikp` is the binary
//!   under test; the set-up command's `cargo run --release -p ikp-cli --` becomes `ikp`);
//!   it must exit 0 and leave every output its `ikp` commands name. `sh gpu` and
//!   `sh setup` are checked for syntax, and every `--flag` of their `ikp` commands must be
//!   one `ikp SUBCOMMAND --help` lists; `setup`'s scripts must exist.
//! - `cuda NAME` / `cpp NAME`: written to the file NAME and compiled with nvcc / the host compiler.
//! - `python`: compiled here; run (without `gpu`) by `python/tests/test_docs.py`, which
//!   needs the wheel.
//! - `rust`: doctests of the root crate (`src/lib.rs` includes each page that has one).
//!
//! Besides, every relative link and its `#anchor` resolve, and every file the formats page
//! names holds a `# Format` section.

mod extract;
mod links;
mod run;

use crate::util::repo;

macro_rules! pages {
    ($($name:ident => $path:literal),* $(,)?) => {
        /// The pages whose blocks run, each its own test (they run in parallel).
        const PAGES: &[&str] = &[$($path),*];
        $(
            #[test]
            fn $name() {
                if let Err(e) = run::page($path) {
                    panic!("{e}");
                }
            }
        )*
    };
}

pages! {
    readme => "README.md",
    contributing => "CONTRIBUTING.md",
    commands => "docs/commands.md",
    cpp => "docs/cpp.md",
    damaged_buffers => "docs/damaged-buffers.md",
    device_api => "docs/device-api.md",
    formats => "docs/formats.md",
    gpu_bundle => "docs/gpu-bundle.md",
    host_timelines => "docs/host-timelines.md",
    install => "docs/install.md",
    instrument => "docs/instrument.md",
    modes => "docs/modes.md",
    numbers => "docs/numbers.md",
    parquet => "docs/parquet.md",
    python => "docs/python.md",
    references => "docs/references.md",
    regions => "docs/regions.md",
    rust => "docs/rust.md",
}

/// The Markdown pages of the checkout's docs (the GPU runs' results as they came back
/// excepted).
fn markdown_pages() -> Vec<String> {
    let mut out = vec!["README.md".to_owned(), "CONTRIBUTING.md".to_owned()];
    let mut dirs = vec![repo().join("docs")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(repo()).unwrap().to_str().unwrap().to_owned();
            if p.is_dir() && rel != "docs/gpu-runs" {
                dirs.push(p);
            } else if rel.ends_with(".md") {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_page_is_run() {
    let missing: Vec<String> = markdown_pages()
        .into_iter()
        .filter(|p| !PAGES.contains(&p.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "add these pages to `pages!` in cli/tests/cli/docs/mod.rs: {missing:?}"
    );
}

#[test]
fn rust_blocks_are_doctests() {
    let lib = std::fs::read_to_string(repo().join("src/lib.rs")).unwrap();
    for page in PAGES {
        let md = std::fs::read_to_string(repo().join(page)).unwrap();
        let blocks = extract::blocks(&md).unwrap();
        if blocks.iter().any(|b| b.lang == "rust") {
            let include = format!("include_str!(\"../{page}\")");
            assert!(
                lib.contains(&include),
                "{page} has Rust blocks: src/lib.rs must hold `#[doc = {include}]`"
            );
        }
    }
}

#[test]
fn links_and_anchors_resolve() {
    let mut errors = Vec::new();
    for page in PAGES {
        errors.extend(links::broken(page));
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn the_formats_page_names_format_sections() {
    let md = std::fs::read_to_string(repo().join("docs/formats.md")).unwrap();
    let sources: Vec<&str> = md
        .split("](../")
        .skip(1)
        .filter_map(|s| s.split(')').next())
        .filter(|s| s.ends_with(".rs"))
        .collect();
    assert!(sources.len() > 10, "{sources:?}");
    for s in sources {
        let text = std::fs::read_to_string(repo().join(s)).unwrap_or_default();
        assert!(
            text.lines().any(|l| l.starts_with("//! # Format")),
            "docs/formats.md names {s}, which has no `//! # Format` section"
        );
    }
}

// The checks can fail: renamed flags, commands and device calls, and missing outputs, in
// copies of the front page's blocks.

/// The front page's first `lang` block holding `text`.
fn readme_block(lang: &str, text: &str) -> extract::Block {
    let md = std::fs::read_to_string(repo().join("README.md")).unwrap();
    extract::blocks(&md)
        .unwrap()
        .into_iter()
        .find(|b| b.lang == lang && b.code.contains(text))
        .unwrap_or_else(|| panic!("README.md has no ```{lang} block holding {text:?}"))
}

#[test]
fn a_renamed_flag_or_command_fails() {
    let setup = readme_block("sh", "decode samples/attention.ikp --perfetto ");
    let mut page = run::Page::new();
    page.run(&setup).unwrap();
    for (from, to, why) in [
        (
            "--perfetto ",
            "--perfetto-out ",
            "has no flag --perfetto-out",
        ),
        (" decode ", " decod ", "is `decod` a command?"),
    ] {
        let mut b = setup.clone();
        b.code = b.code.replace(from, to);
        let e = page.run(&b).unwrap_err();
        assert!(e.contains(why), "{e}");
        // The same in a block that needs a GPU, which is not run.
        b.tags = vec!["gpu".into()];
        let e = page.run(&b).unwrap_err();
        assert!(e.contains(why), "{e}");
    }
}

#[test]
fn a_command_that_fails_or_leaves_no_output_fails() {
    let mut page = run::Page::new();
    let mut b = readme_block("sh", "decode samples/attention.ikp");
    b.code = "ikp header -o inc && rm -r inc\n".into();
    let e = page.run(&b).unwrap_err();
    assert!(e.contains("inc is missing"), "{e}");
    b.code = "ikp summary samples/none.ikp\n".into();
    let e = page.run(&b).unwrap_err();
    assert!(e.contains("samples/none.ikp"), "{e}");
}

#[test]
fn a_renamed_device_call_fails_to_compile() {
    let mut page = run::Page::new();
    page.run(&readme_block("sh", "ikp header -o include"))
        .unwrap();
    let kernel = readme_block("cuda", "IKP_SCOPE(");
    page.run(&kernel).unwrap();
    let mut b = kernel.clone();
    b.code = b.code.replace("IKP_SCOPE(", "IKP_SCOPED(");
    let e = page.run(&b).unwrap_err();
    assert!(e.contains("IKP_SCOPED"), "{e}");
}

#[test]
fn python_that_does_not_parse_fails() {
    let mut page = run::Page::new();
    let mut b = readme_block("python", "ikp.triton.profile(");
    page.run(&b).unwrap();
    b.code = b.code.replace("profile(", "profile((");
    let e = page.run(&b).unwrap_err();
    assert!(e.contains("SyntaxError"), "{e}");
}
