//! The Parquet tables read back by DuckDB (PyPI `duckdb`, which `scripts/provision.sh`
//! installs into `.venv`): every span row of the shipped sample against the CSV, the
//! instants and counter samples against the decoded trace, the column types DuckDB sees,
//! and docs/parquet.md's query over several runs' files (a `rank=N` directory each) against
//! the summary's self times.
//!
//! Skipped, with a `SKIPPED` line on stderr, when the venv's Python (or `IKP_PYTHON`)
//! cannot import duckdb.
use ikp_host::{atomic, load, write_csv, write_parquet, DecodeOptions, Launch, Trace};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The Python with duckdb, or `None` after printing why the test is skipped.
fn duckdb_python(test: &str) -> Option<PathBuf> {
    let py = std::env::var_os("IKP_PYTHON").map_or(repo().join(".venv/bin/python"), PathBuf::from);
    let ok = Command::new(&py)
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let line = format!(
            "SKIPPED {test}: {} cannot import duckdb (run scripts/provision.sh, or set IKP_PYTHON)\n",
            py.display()
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
        return None;
    }
    Some(py)
}

/// Runs `script` (which prints one JSON value) with `args`.
fn run(py: &Path, script: &str, args: &[&Path]) -> Value {
    let o = Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        o.status.success(),
        "duckdb: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Each table of the directory argv[1]: its columns, their DuckDB types, its rows in file
/// order.
const READ_TABLES: &str = r#"
import duckdb, json, sys
con = duckdb.connect()
out = {}
for t in ["spans", "instants", "counters"]:
    p = f"{sys.argv[1]}/{t}.parquet".replace("'", "''")
    rel = con.sql(f"SELECT * FROM read_parquet('{p}', file_row_number = true) ORDER BY file_row_number")
    out[t] = {
        "columns": rel.columns[:-1],
        "types": [str(ty) for ty in rel.types[:-1]],
        "rows": [list(r[:-1]) for r in rel.fetchall()],
    }
print(json.dumps(out))
"#;

fn write_tables(dir: &Path, launches: &[Launch]) {
    let mut outs = atomic::Outputs::new();
    write_parquet(&mut outs, dir, launches).unwrap();
    outs.commit().unwrap();
}

/// A value as the CSV writes it (null: empty).
fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

fn sample() -> Trace {
    load(
        &repo().join("samples/attention.ikp"),
        &DecodeOptions::default(),
    )
    .unwrap()
}

#[test]
fn duckdb_reads_the_sample_tables_as_the_csv_and_the_trace_have_them() {
    let Some(py) =
        duckdb_python("duckdb_reads_the_sample_tables_as_the_csv_and_the_trace_have_them")
    else {
        return;
    };
    let t = sample();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("attention");
    write_tables(&dir, &[Launch::new("attention.ikp", &t)]);
    let v = run(&py, READ_TABLES, &[&dir]);

    // Types: every integer a BIGINT, every text a VARCHAR.
    for table in ["spans", "instants", "counters"] {
        let cols = v[table]["columns"].as_array().unwrap();
        let types = v[table]["types"].as_array().unwrap();
        for (c, ty) in cols.iter().zip(types) {
            let want = if matches!(c.as_str(), Some("buffer" | "name")) {
                "VARCHAR"
            } else {
                "BIGINT"
            };
            assert_eq!(ty, want, "{table}.{c}");
        }
    }

    // Spans: every CSV row, in order, with the labels and the self time.
    let mut csv = Vec::new();
    write_csv(&mut csv, &t).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    assert!(!csv.contains('"'), "the sample's names need no quoting");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let csv_rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let cols: Vec<&str> = (v["spans"]["columns"].as_array().unwrap().iter())
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        cols,
        [
            "buffer", "launch", "lane", "block", "group", "warp", "sm", "region", "name",
            "begin_ns", "end_ns", "dur_ns", "self_ns", "payload", "depth"
        ]
    );
    let col = |n: &str| cols.iter().position(|c| *c == n).unwrap();
    let rows = v["spans"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), csv_rows.len());
    assert!(rows.len() > 5_000, "{} spans", rows.len());
    let self_ns = ikp_host::stats::self_times(&t);
    for (i, (row, want)) in rows.iter().zip(&csv_rows).enumerate() {
        let row = row.as_array().unwrap();
        let got: Vec<String> = header.iter().map(|h| text(&row[col(h)])).collect();
        assert_eq!(got, *want, "span row {i}");
        assert_eq!(row[col("buffer")], "attention.ikp");
        assert_eq!(row[col("launch")], 0);
        assert_eq!(row[col("self_ns")], self_ns[i], "span row {i}");
    }

    // Instants and counter samples: the trace's, lane by lane.
    let mut instants = Vec::new();
    let mut samples = Vec::new();
    let base = t.source.time_base;
    for l in &t.lanes {
        let lane = |rest: Vec<Value>| {
            let mut r: Vec<Value> = vec![
                "attention.ikp".into(),
                0.into(),
                l.id.into(),
                l.block.into(),
                l.group.into(),
                l.warp.into(),
                l.sm.into(),
            ];
            r.extend(rest);
            Value::from(r)
        };
        let s = &t.instants;
        for i in l.instants.clone() {
            instants.push(lane(vec![
                s.region[i].into(),
                t.names.region(s.region[i]).into(),
                (s.ts[i] - base).into(),
                s.payload[i].into(),
            ]));
        }
        let c = &t.samples;
        for i in l.samples.clone() {
            samples.push(lane(vec![
                c.counter[i].into(),
                t.names.counter(c.counter[i]).into(),
                (c.ts[i] - base).into(),
                c.value[i].into(),
            ]));
        }
    }
    assert!(!instants.is_empty());
    assert_eq!(v["instants"]["rows"], Value::from(instants));
    assert_eq!(v["counters"]["rows"], Value::from(samples));
}

/// docs/parquet.md's query over many runs: a `rank=N` directory each; DuckDB adds the `rank`
/// column from the directory names.
const RANKS_QUERY: &str = r#"
import duckdb, json, os, sys
os.chdir(sys.argv[1])
rows = duckdb.sql("""
    SELECT rank, name, sum(self_ns) AS self_ns, count(*) AS spans
    FROM 'runs/rank=*/spans.parquet' GROUP BY ALL ORDER BY rank, name
""").fetchall()
print(json.dumps([list(r) for r in rows]))
"#;

#[test]
fn duckdb_sums_self_time_over_ranks_as_the_summaries_do() {
    let Some(py) = duckdb_python("duckdb_sums_self_time_over_ranks_as_the_summaries_do") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let mut want = Vec::new();
    for rank in 0..3u64 {
        let words = ikp_device::sample::attention_seeded(rank)
            .unwrap()
            .into_words();
        let t = ikp_host::decode(&words, &DecodeOptions::default()).unwrap();
        let dir = d.path().join(format!("runs/rank={rank}"));
        write_tables(&dir, &[Launch::new("attention.ikp", &t)]);
        let summary = ikp_host::summarize(
            &ikp_host::TraceStats::of(&t),
            &Default::default(),
            "attention",
        );
        let mut regions: Vec<Value> = (summary.regions.iter())
            .map(|r| {
                Value::from(vec![
                    Value::from(rank),
                    r.name.clone().into(),
                    (r.self_dur as u64).into(),
                    r.stats.count.into(),
                ])
            })
            .collect();
        regions.sort_by_key(|r| r[1].as_str().unwrap().to_owned());
        want.extend(regions);
    }
    let got = run(&py, RANKS_QUERY, &[d.path()]);
    assert_eq!(got, Value::from(want));
}
