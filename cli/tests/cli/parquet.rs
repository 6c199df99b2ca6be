//! `ikp decode --parquet DIR` end to end: the three tables of the shipped sample, written
//! with the other outputs or not at all, byte for byte what the library writes (whose
//! tables host/tests/parquet.rs reads back with DuckDB); several buffers and a buffer of
//! several launches in one set of tables; the errors of a bad path.
use crate::util::{ikp, repo, s, text, write_epochs};
use ikp_host::write::parquet::write_spans;
use ikp_host::{load, load_launches, DecodeOptions, Launch};

const TABLES: [&str; 3] = ["spans.parquet", "instants.parquet", "counters.parquet"];

/// The span table the library writes for `launches`.
fn library_spans(launches: &[Launch]) -> Vec<u8> {
    let mut out = Vec::new();
    write_spans(&mut out, launches).unwrap();
    out
}

#[test]
fn the_sample_decodes_to_three_tables_beside_the_other_outputs() {
    let d = tempfile::tempdir().unwrap();
    let sample = repo().join("samples/attention.ikp");
    let dir = d.path().join("runs/rank=0");
    let csv = d.path().join("attention.csv");
    // A file of the user's in the directory stays.
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let o = ikp(&["decode", s(&sample), "--parquet", s(&dir), "--csv", s(&csv)]);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    for t in TABLES {
        let bytes = std::fs::read(dir.join(t)).unwrap();
        assert!(
            bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"),
            "{t}"
        );
        assert!(err.contains(&format!("wrote {}", s(&dir.join(t)))), "{err}");
    }
    assert!(csv.is_file());
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "mine"
    );
    let trace = load(&sample, &DecodeOptions::default()).unwrap();
    let want = library_spans(&[Launch::new("attention.ikp", &trace)]);
    assert!(std::fs::read(dir.join("spans.parquet")).unwrap() == want);
    // Written again over the old tables.
    let o = ikp(&["decode", s(&sample), "--parquet", s(&dir), "-q"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "counters.parquet",
            "instants.parquet",
            "notes.txt",
            "spans.parquet"
        ]
    );
}

#[test]
fn a_failing_output_leaves_no_table_and_a_bad_table_path_no_other_output() {
    let d = tempfile::tempdir().unwrap();
    let sample = repo().join("samples/attention.ikp");
    let dir = d.path().join("tables");
    let file = d.path().join("a_file");
    std::fs::write(&file, "x").unwrap();
    // The Perfetto trace, written after the tables, cannot be written (its parent is a
    // file): no table is left (the directory made for them stays, empty).
    let bad = file.join("all.trace");
    let o = ikp(&[
        "decode",
        s(&sample),
        "--parquet",
        s(&dir),
        "--perfetto",
        s(&bad),
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("all.trace"), "{err}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir(&dir).unwrap();
    // --parquet names a file: an error naming it, and no CSV.
    let csv = d.path().join("out.csv");
    let o = ikp(&[
        "decode",
        s(&sample),
        "--csv",
        s(&csv),
        "--parquet",
        s(&file),
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("cannot write {}", s(&file))) && err.contains("not a directory"),
        "{err}"
    );
    assert!(!csv.exists());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    // A directory under a file cannot be created.
    let o = ikp(&["decode", s(&sample), "--parquet", s(&file.join("t"))]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(s(&file.join("t"))), "{err}");
    // Standard output cannot hold a directory.
    let o = ikp(&["decode", s(&sample), "--parquet", "-"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--parquet writes a directory; it cannot be - (standard output)"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "only a_file: {left:?}");
}

#[test]
fn several_buffers_and_launches_go_into_one_set_of_tables() {
    let d = tempfile::tempdir().unwrap();
    let sample = repo().join("samples/attention.ikp");
    let epochs = d.path().join("loop.ikp");
    write_epochs(&epochs);
    let (dir, perfetto) = (d.path().join("tables"), d.path().join("all.trace"));
    let o = ikp(&[
        "decode",
        s(&sample),
        s(&epochs),
        "--parquet",
        s(&dir),
        "--perfetto",
        s(&perfetto),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(perfetto.is_file());
    let opts = DecodeOptions::default();
    let a = load(&sample, &opts).unwrap();
    let loops = load_launches(&epochs, &opts).unwrap();
    assert_eq!(loops.len(), 3);
    // Rows labelled by buffer; the `launch` column (each trace's epoch) tells the
    // buffer's launches apart.
    let mut launches = vec![Launch::new("attention.ikp", &a)];
    launches.extend(loops.iter().map(|t| Launch::new("loop.ikp", t)));
    assert!(std::fs::read(dir.join("spans.parquet")).unwrap() == library_spans(&launches));

    // A buffer of several launches alone.
    let one = d.path().join("one");
    let o = ikp(&["decode", s(&epochs), "--parquet", s(&one)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(std::fs::read(one.join("spans.parquet")).unwrap() == library_spans(&launches[1..]));

    // The one-launch outputs are still refused, naming where several launches go.
    let o = ikp(&[
        "decode",
        s(&sample),
        s(&sample),
        "--csv",
        s(&d.path().join("x.csv")),
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("(several buffers go to --perfetto and --parquet)"),
        "{err}"
    );
}
