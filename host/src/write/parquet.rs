//! Parquet tables of spans, instants and wait-counter samples, for DuckDB, Polars, Spark,
//! pandas / pyarrow: one launch or many (the launches of several buffers, several ranks'
//! runs), queried with SQL instead of a script per CSV. Cargo feature `parquet` (default
//! on), through the `parquet` crate's own column writers (no Arrow).
//!
//! # Format
//!
//! An output is a **directory** holding three Parquet files, always all three (a table
//! with no rows has its schema and no row group): [`SPANS`] (`spans.parquet`),
//! [`INSTANTS`] (`instants.parquet`) and [`COUNTERS`] (`counters.parquet`). The files
//! follow the Apache Parquet format specification (`apache/parquet-format`,
//! `Format.thrift` and `LogicalTypes.md`): format version 1 data pages, dictionary
//! encoding where it pays, column statistics, Snappy compression (the codec every Parquet
//! reader has, and the default of DuckDB's and Spark's writers), a row group per
//! [`ROW_GROUP_ROWS`] rows. Every other file in the directory is left alone, so a run's
//! directory can hold its buffer too (`runs/rank3/run.ikp` beside
//! `runs/rank3/spans.parquet`).
//!
//! Types: every integer column is `INT64` (signed 64 bits; DuckDB `BIGINT`, Arrow
//! `int64`), whatever the width in the model, so that arithmetic between any two columns
//! (`a.begin_ns - b.end_ns`) needs no cast and cannot wrap; every text column is
//! `BYTE_ARRAY` with the `STRING` logical type (UTF-8; DuckDB `VARCHAR`). Every column
//! is `REQUIRED` (never null) except `warp` and `sm`, `OPTIONAL`: null where the buffer's
//! format does not record them (no warp in the TVM family; no SM in the TVM and Mirage
//! formats), where the CSV leaves them empty. Times are integer **nanoseconds from the
//! launch's earliest stamp** ([`Source::time_base`](crate::model::Source::time_base),
//! the CSV's and the Chrome trace's origin), each launch on its own axis.
//!
//! Columns every table starts with, which say where a row comes from:
//!
//! | column | type | meaning |
//! |---|---|---|
//! | `buffer` | STRING | the launch's label ([`Launch::label`]): on the command line, the buffer's file name (its path as given when two file names coincide) |
//! | `launch` | INT64 | the launch's index in its buffer ([`Source::epoch`](crate::model::Source::epoch): a launch loop or a replayed CUDA Graph recorded into one buffer), from 0; 0 for a buffer of one launch. `ikp` prints the launch as `buffer · launch k` |
//! | `lane` | INT64 | lane index, `block * groups_per_block + group` |
//! | `block` | INT64 | linear block id |
//! | `group` | INT64 | the lane's group (warp group) within the block |
//! | `warp` | INT64, nullable | the lane leader's warp within the block |
//! | `sm` | INT64, nullable | the SM the lane's leader ran on |
//!
//! **`spans.parquet`**: a row per span (a begin paired with its end in one lane; the same
//! rows, in the same order, as the CSV of [`super::csv`]: lanes ascending, spans in begin
//! order within a lane), then
//!
//! | column | type | meaning |
//! |---|---|---|
//! | `region` | INT64 | region id |
//! | `name` | STRING | region name (`region_<id>` for a region without one) |
//! | `begin_ns`, `end_ns` | INT64 | begin and end, ns from the launch's earliest stamp |
//! | `dur_ns` | INT64 | `end_ns - begin_ns` |
//! | `self_ns` | INT64 | the span's **self time**: the time it is the innermost open span of its lane ([`crate::definitions`]). Summed over a region it is the summary's `self_dur`; summed over every span of a launch plus the time outside any region, the lane time |
//! | `payload` | INT64 | the begin record's payload (20 bits in ikp buffers; 0 in the TVM and FlashInfer formats, the event number in Mirage's) |
//! | `depth` | INT64 | nesting depth within the lane: 0 for a span begun with no region open, else one more than the innermost region open at its begin |
//!
//! **`instants.parquet`**: a row per instant record (lanes ascending, time order within
//! a lane), then `region` (INT64), `name` (STRING), `ts_ns` (INT64, ns from the launch's
//! earliest stamp) and `payload` (INT64).
//!
//! **`counters.parquet`**: a row per wait-counter sample (`IKP_WAIT_SAMPLED`, `sample`;
//! lanes ascending, time order within a lane), then `counter` (INT64, counter id), `name`
//! (STRING, `counter_<id>` for a counter without one), `ts_ns` (INT64: the time of the
//! record before the sample, the end of the wait it follows) and `value` (INT64: spin
//! iterations of that wait). The per-lane counter totals are in the summary JSON.
//!
//! Async ranges ([`Trace::async_ranges`](crate::model::Trace::async_ranges)) are in none of
//! the tables, as in the CSV: they belong to no one lane.
//!
//! The schemas, as `parquet-schema` (or [`::parquet::schema::printer`]) prints them, are
//! [`SPANS_SCHEMA`], [`INSTANTS_SCHEMA`] and [`COUNTERS_SCHEMA`]. In DuckDB, many runs at
//! once (a directory per rank, named `rank=N` so that DuckDB adds a `rank` column, as for
//! any Hive-partitioned data set):
//!
//! ```sql
//! SELECT rank, name, sum(self_ns) / 1e6 AS self_ms
//! FROM 'runs/rank=*/spans.parquet' GROUP BY ALL ORDER BY self_ms DESC;
//! ```
use super::atomic::Outputs;
use super::{Launch, WriteError, WriteErrorKind};
use crate::model::Lane;
use crate::time::Timestamp;
use ::parquet::basic::Compression;
use ::parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use ::parquet::errors::ParquetError;
use ::parquet::file::properties::{WriterProperties, WriterVersion};
use ::parquet::file::writer::SerializedFileWriter;
use ::parquet::schema::parser::parse_message_type;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The span table's file name in an output directory.
pub const SPANS: &str = "spans.parquet";
/// The instant table's file name in an output directory.
pub const INSTANTS: &str = "instants.parquet";
/// The counter-sample table's file name in an output directory.
pub const COUNTERS: &str = "counters.parquet";

/// Rows per row group (the last one of a file holds the rest): a row group's columns are
/// built in memory before they are written, so this bounds the writer's memory (about
/// 200 bytes a row) whatever the trace's size.
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// The schema of [`SPANS`], in the Parquet message syntax.
pub const SPANS_SCHEMA: &str = "message spans {
  REQUIRED BYTE_ARRAY buffer (STRING);
  REQUIRED INT64 launch;
  REQUIRED INT64 lane;
  REQUIRED INT64 block;
  REQUIRED INT64 group;
  OPTIONAL INT64 warp;
  OPTIONAL INT64 sm;
  REQUIRED INT64 region;
  REQUIRED BYTE_ARRAY name (STRING);
  REQUIRED INT64 begin_ns;
  REQUIRED INT64 end_ns;
  REQUIRED INT64 dur_ns;
  REQUIRED INT64 self_ns;
  REQUIRED INT64 payload;
  REQUIRED INT64 depth;
}
";

/// The schema of [`INSTANTS`], in the Parquet message syntax.
pub const INSTANTS_SCHEMA: &str = "message instants {
  REQUIRED BYTE_ARRAY buffer (STRING);
  REQUIRED INT64 launch;
  REQUIRED INT64 lane;
  REQUIRED INT64 block;
  REQUIRED INT64 group;
  OPTIONAL INT64 warp;
  OPTIONAL INT64 sm;
  REQUIRED INT64 region;
  REQUIRED BYTE_ARRAY name (STRING);
  REQUIRED INT64 ts_ns;
  REQUIRED INT64 payload;
}
";

/// The schema of [`COUNTERS`], in the Parquet message syntax.
pub const COUNTERS_SCHEMA: &str = "message counters {
  REQUIRED BYTE_ARRAY buffer (STRING);
  REQUIRED INT64 launch;
  REQUIRED INT64 lane;
  REQUIRED INT64 block;
  REQUIRED INT64 group;
  OPTIONAL INT64 warp;
  OPTIONAL INT64 sm;
  REQUIRED INT64 counter;
  REQUIRED BYTE_ARRAY name (STRING);
  REQUIRED INT64 ts_ns;
  REQUIRED INT64 value;
}
";

/// Writes the three tables of `launches` into the directory `dir` (created if missing),
/// staged in `outs`: they are put in place, with the batch's other outputs, when `outs`
/// is committed. Each launch's rows carry its label in `buffer` and its index in its
/// buffer in `launch` (see the module's `# Format`): give every launch of one buffer the
/// same label. Returns the three paths.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let out = dir.path().join("run");
/// use ikp_host::{atomic, decode, write_parquet, DecodeOptions, Launch};
/// let words = ikp_device::sample::attention()?.into_words();
/// let trace = decode(&words, &DecodeOptions::default())?;
/// let mut outs = atomic::Outputs::new();
/// write_parquet(&mut outs, &out, &[Launch::new("attention.ikp", &trace)])?;
/// outs.commit()?;
/// assert!(out.join("spans.parquet").is_file());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_parquet(
    outs: &mut Outputs,
    dir: &Path,
    launches: &[Launch],
) -> Result<[PathBuf; 3], WriteError> {
    if std::fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
        let e = std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "it is not a directory (the Parquet output is a directory of three files)",
        );
        return Err(WriteError::from(e).at(dir));
    }
    let paths = [SPANS, INSTANTS, COUNTERS].map(|f| dir.join(f));
    outs.file(&paths[0], |w| write_spans(w, launches))?;
    outs.file(&paths[1], |w| write_instants(w, launches))?;
    outs.file(&paths[2], |w| write_counters(w, launches))?;
    Ok(paths)
}

/// Writes the span table ([`SPANS_SCHEMA`]) of `launches` to `out`.
pub fn write_spans<W: Write + Send>(out: W, launches: &[Launch]) -> Result<(), WriteError> {
    spans(out, launches, ROW_GROUP_ROWS)
}

/// [`write_spans`] with `group_rows` rows per row group.
fn spans<W: Write + Send>(
    out: W,
    launches: &[Launch],
    group_rows: usize,
) -> Result<(), WriteError> {
    let mut t = Table::new(out, SPANS_SCHEMA, 7, group_rows)?;
    for (k, l) in launches.iter().enumerate() {
        let tr = l.trace;
        let (names, _) = super::name_tables(tr, |n| ByteArray::from(n));
        let self_ns = crate::stats::self_times(tr);
        let s = &tr.spans;
        for lane in &tr.lanes {
            for i in lane.spans.clone() {
                let r = s.region[i];
                let (b, e) = (rel(k, l, s.begin[i])?, rel(k, l, s.end[i])?);
                let rest = [
                    b,
                    e,
                    e - b,
                    self_ns[i] as i64,
                    s.payload[i] as i64,
                    s.depth[i] as i64,
                ];
                t.push(k, l, lane, r as i64, &names[r as usize], &rest)?;
            }
        }
    }
    t.finish()
}

/// Writes the instant table ([`INSTANTS_SCHEMA`]) of `launches` to `out`.
pub fn write_instants<W: Write + Send>(out: W, launches: &[Launch]) -> Result<(), WriteError> {
    let mut t = Table::new(out, INSTANTS_SCHEMA, 3, ROW_GROUP_ROWS)?;
    for (k, l) in launches.iter().enumerate() {
        let tr = l.trace;
        let (names, _) = super::name_tables(tr, |n| ByteArray::from(n));
        let s = &tr.instants;
        for lane in &tr.lanes {
            for i in lane.instants.clone() {
                let r = s.region[i];
                let rest = [rel(k, l, s.ts[i])?, s.payload[i] as i64];
                t.push(k, l, lane, r as i64, &names[r as usize], &rest)?;
            }
        }
    }
    t.finish()
}

/// Writes the counter-sample table ([`COUNTERS_SCHEMA`]) of `launches` to `out`.
pub fn write_counters<W: Write + Send>(out: W, launches: &[Launch]) -> Result<(), WriteError> {
    let mut t = Table::new(out, COUNTERS_SCHEMA, 3, ROW_GROUP_ROWS)?;
    for (k, l) in launches.iter().enumerate() {
        let tr = l.trace;
        let s = &tr.samples;
        let (_, names) = super::name_tables(tr, |n| ByteArray::from(n));
        for lane in &tr.lanes {
            for i in lane.samples.clone() {
                let c = s.counter[i];
                let rest = [rel(k, l, s.ts[i])?, s.value[i] as i64];
                t.push(k, l, lane, c as i64, &names[c as usize], &rest)?;
            }
        }
    }
    t.finish()
}

/// `ts` in ns from launch `k`'s earliest stamp, as an INT64.
fn rel(k: usize, l: &Launch, ts: Timestamp) -> Result<i64, WriteError> {
    i64::try_from(ts - l.trace.source.time_base).map_err(|_| {
        WriteErrorKind::TimeOverflow {
            launch: k,
            label: l.label.to_owned(),
        }
        .into()
    })
}

/// A column of the row group being built.
#[derive(Clone)]
enum Column {
    Str(Vec<ByteArray>),
    Int(Vec<i64>),
    /// Nullable (`warp`, `sm`): the values of the rows that have one, and every row's
    /// definition level.
    Opt(Vec<i64>, Vec<i16>),
}

/// One table being written: the columns of the row group being built, flushed as a row
/// group every `group_rows` rows.
struct Table<W: Write + Send> {
    w: SerializedFileWriter<W>,
    /// In schema order: the seven columns every table starts with, then the table's own,
    /// which are INT64 except the second, `name`.
    cols: Vec<Column>,
    /// The label of the launch whose rows are being added, and its index.
    label: Option<(usize, ByteArray)>,
    /// Rows built so far.
    rows: usize,
    /// Rows per row group.
    group_rows: usize,
}

impl<W: Write + Send> Table<W> {
    /// A table of `schema`, whose own columns are `own_ints` INT64 columns and `name`,
    /// in row groups of `group_rows` rows.
    fn new(out: W, schema: &str, own_ints: usize, group_rows: usize) -> Result<Self, WriteError> {
        let schema = Arc::new(parse_message_type(schema).map_err(parquet_error)?);
        let props = WriterProperties::builder()
            .set_writer_version(WriterVersion::PARQUET_1_0)
            .set_compression(Compression::SNAPPY)
            .build();
        let w = SerializedFileWriter::new(out, schema, Arc::new(props)).map_err(parquet_error)?;
        let (str, int, opt) = (
            Column::Str(Vec::new()),
            Column::Int(Vec::new()),
            Column::Opt(Vec::new(), Vec::new()),
        );
        let mut cols = vec![
            str.clone(),
            int.clone(),
            int.clone(),
            int.clone(),
            int.clone(),
        ];
        cols.extend([opt.clone(), opt, int.clone(), str]);
        cols.resize(8 + own_ints, int);
        Ok(Table {
            w,
            cols,
            label: None,
            rows: 0,
            group_rows,
        })
    }

    /// Adds a row of launch `k` in `lane`: the leading columns, then the table's own in
    /// schema order: `id` (the region or counter), its `name`, then `rest` (one value for
    /// each of the table's other INT64 columns). Flushes a full row group first.
    fn push(
        &mut self,
        k: usize,
        l: &Launch,
        lane: &Lane,
        id: i64,
        name: &ByteArray,
        rest: &[i64],
    ) -> Result<(), WriteError> {
        debug_assert_eq!(rest.len() + 9, self.cols.len(), "one value per column");
        if self.rows == self.group_rows {
            self.flush()?;
        }
        if self.label.as_ref().is_none_or(|(j, _)| *j != k) {
            self.label = Some((k, ByteArray::from(l.label)));
        }
        let label = self.label.as_ref().expect("set above").1.clone();
        // Each kind of column takes its values in schema order.
        let launch = l.trace.source.epoch.map_or(0, |e| e.index);
        let lead = [launch, lane.id, lane.block, lane.group].map(i64::from);
        let mut ints = lead.into_iter().chain([id]).chain(rest.iter().copied());
        let mut opts = [lane.warp, lane.sm].into_iter();
        let mut strs = [label, name.clone()].into_iter();
        for c in &mut self.cols {
            match c {
                Column::Str(v) => v.extend(strs.next()),
                Column::Int(v) => v.extend(ints.next()),
                Column::Opt(v, defs) => {
                    let x = opts.next().flatten();
                    defs.push(x.is_some() as i16);
                    v.extend(x.map(i64::from));
                }
            }
        }
        self.rows += 1;
        Ok(())
    }

    /// Writes the rows built so far as a row group (nothing if there are none).
    fn flush(&mut self) -> Result<(), WriteError> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut group = self.w.next_row_group().map_err(parquet_error)?;
        for c in &mut self.cols {
            let mut w = (group.next_column().map_err(parquet_error)?)
                .expect("the schema has a column for each one written");
            match c {
                Column::Str(v) => w.typed::<ByteArrayType>().write_batch(v, None, None),
                Column::Int(v) => w.typed::<Int64Type>().write_batch(v, None, None),
                Column::Opt(v, defs) => w.typed::<Int64Type>().write_batch(v, Some(defs), None),
            }
            .map_err(parquet_error)?;
            w.close().map_err(parquet_error)?;
            match c {
                Column::Str(v) => v.clear(),
                Column::Int(v) => v.clear(),
                Column::Opt(v, defs) => {
                    v.clear();
                    defs.clear();
                }
            }
        }
        group.close().map_err(parquet_error)?;
        self.rows = 0;
        Ok(())
    }

    /// Writes the last row group and the footer, and flushes the sink.
    fn finish(mut self) -> Result<(), WriteError> {
        self.flush()?;
        let mut out = self.w.into_inner().map_err(parquet_error)?;
        out.flush()?;
        Ok(())
    }
}

/// A Parquet writer error: an I/O error of the sink stays one.
fn parquet_error(e: ParquetError) -> WriteError {
    match e {
        ParquetError::External(b) => match b.downcast::<std::io::Error>() {
            Ok(io) => WriteError::from(*io),
            Err(b) => WriteErrorKind::Parquet(ParquetError::External(b)).into(),
        },
        e => WriteErrorKind::Parquet(e).into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{decode, DecodeOptions};
    use crate::model::{Epoch, Trace};
    use ::parquet::file::reader::{FileReader, SerializedFileReader};
    use ::parquet::record::Field;
    use ikp_device::encoder::BufferWriter;
    use ikp_device::{Layout, TimerMode};

    /// Two blocks x two lanes: nesting, an overlap, instants, counter samples, a region
    /// without a name, a non-ASCII name.
    fn small() -> Trace {
        let layout = Layout {
            grid: [2, 1, 1],
            groups_per_block: 2,
            records_per_lane: 16,
            timer: TimerMode::Globaltimer,
            regions: vec!["mainloop".into(), "wait·kv".into(), String::new()],
            counters: vec!["kv_wait".into()],
            ..Layout::default()
        };
        let mut b = BufferWriter::new(layout).unwrap();
        let t0 = 5_000_000u64;
        b.lane(0)
            .init(3, 0, 0, t0, 0)
            .begin(0, 0, t0 + 10)
            .begin(1, 7, t0 + 20)
            .end(1, 0, t0 + 520)
            .counter_sample(0, 12)
            .instant(2, 9, t0 + 600)
            .end(0, 0, t0 + 1100)
            .finalize(t0 + 1200, 0);
        b.lane(1)
            .init(3, 4, 0, t0 + 5, 0)
            .begin(1, 1, t0 + 15)
            .begin(2, 2, t0 + 600)
            .end(1, 0, t0 + 800)
            .end(2, 0, t0 + 900)
            .finalize(t0 + 1000, 0);
        b.lane(3)
            .init(1, 4, 0, t0 + 60, 0)
            .begin(2, 5, t0 + 70)
            .end(2, 0, t0 + 400)
            .counter_sample(0, 3)
            .finalize(t0 + 500, 0);
        decode(&b.into_words(), &DecodeOptions::default()).unwrap()
    }

    fn written(write: impl FnOnce(&mut Vec<u8>) -> Result<(), WriteError>) -> Vec<u8> {
        let mut out = Vec::new();
        write(&mut out).unwrap();
        out
    }

    fn reader(bytes: Vec<u8>) -> SerializedFileReader<std::fs::File> {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&bytes).unwrap();
        SerializedFileReader::new(f).unwrap()
    }

    /// The schema the file declares, as `parquet-schema` prints it.
    fn schema(r: &SerializedFileReader<std::fs::File>) -> String {
        let mut out = Vec::new();
        let root = r
            .metadata()
            .file_metadata()
            .schema_descr()
            .root_schema_ptr();
        ::parquet::schema::printer::print_schema(&mut out, &root);
        String::from_utf8(out).unwrap()
    }

    /// Every row, each value as text (`""` for null), with the column names.
    fn rows(r: &SerializedFileReader<std::fs::File>) -> (Vec<String>, Vec<Vec<String>>) {
        let mut names = Vec::new();
        let mut out = Vec::new();
        for row in r.get_row_iter(None).unwrap() {
            let row = row.unwrap();
            names = row.get_column_iter().map(|(n, _)| n.clone()).collect();
            out.push(
                row.get_column_iter()
                    .map(|(_, v)| match v {
                        Field::Null => String::new(),
                        Field::Long(v) => v.to_string(),
                        Field::Str(s) => s.clone(),
                        v => panic!("unexpected value {v:?}"),
                    })
                    .collect(),
            );
        }
        (names, out)
    }

    #[test]
    fn the_files_declare_the_documented_schemas() {
        let t = small();
        let l = [Launch::new("small.ikp", &t)];
        for (bytes, want) in [
            (written(|w| write_spans(w, &l)), SPANS_SCHEMA),
            (written(|w| write_instants(w, &l)), INSTANTS_SCHEMA),
            (written(|w| write_counters(w, &l)), COUNTERS_SCHEMA),
        ] {
            assert_eq!(&bytes[..4], b"PAR1");
            assert_eq!(&bytes[bytes.len() - 4..], b"PAR1");
            let r = reader(bytes);
            assert_eq!(schema(&r), want);
            let m = r.metadata();
            assert_eq!(m.num_row_groups(), 1);
            let cols = m.row_group(0).columns();
            assert!(cols.iter().all(|c| c.compression() == Compression::SNAPPY));
        }
    }

    #[test]
    fn span_rows_are_the_csv_rows_with_labels_and_self_time() {
        let t = small();
        let r = reader(written(|w| write_spans(w, &[Launch::new("small.ikp", &t)])));
        let (names, rows) = rows(&r);
        let mut csv = Vec::new();
        crate::write_csv(&mut csv, &t).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let csv_rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), t.spans.len());
        assert_eq!(rows.len(), csv_rows.len());
        let self_ns = crate::stats::self_times(&t);
        let col = |n: &str| names.iter().position(|m| m == n).unwrap();
        for ((row, want), self_ns) in rows.iter().zip(&csv_rows).zip(&self_ns) {
            let got: Vec<&str> = header.iter().map(|h| row[col(h)].as_str()).collect();
            assert_eq!(&got, want);
            assert_eq!(row[col("buffer")], "small.ikp");
            assert_eq!(row[col("launch")], "0");
            assert_eq!(row[col("self_ns")], self_ns.to_string());
        }
        // The overlap: lane 1's wait over [15, 800) and the unnamed region begun inside it
        // over [600, 900): the wait keeps [15, 600).
        let r2: Vec<&Vec<String>> = rows.iter().filter(|r| r[col("lane")] == "1").collect();
        assert_eq!(r2[0][col("name")], "wait·kv");
        assert_eq!(r2[0][col("self_ns")], "585");
        assert_eq!(r2[1][col("name")], "region_2");
        assert_eq!(r2[1][col("self_ns")], "300");
    }

    #[test]
    fn instants_and_counter_samples_are_rows_too() {
        let t = small();
        let l = [Launch::new("small.ikp", &t)];
        let (names, rows) = self::rows(&reader(written(|w| write_instants(w, &l))));
        assert_eq!(
            names,
            ["buffer", "launch", "lane", "block", "group", "warp", "sm", "region", "name"]
                .into_iter()
                .chain(["ts_ns", "payload"])
                .collect::<Vec<_>>()
        );
        assert_eq!(
            rows,
            [[
                "small.ikp",
                "0",
                "0",
                "0",
                "0",
                "0",
                "3",
                "2",
                "region_2",
                "600",
                "9"
            ]]
        );
        let (names, rows) = self::rows(&reader(written(|w| write_counters(w, &l))));
        assert_eq!(names[7..], ["counter", "name", "ts_ns", "value"]);
        let lanes: Vec<&str> = rows.iter().map(|r| r[2].as_str()).collect();
        assert_eq!(lanes, ["0", "3"]);
        assert_eq!(rows[0][7..], ["0", "kv_wait", "520", "12"]);
        assert_eq!(
            rows[1][3..],
            ["1", "1", "4", "1", "0", "kv_wait", "400", "3"]
        );
    }

    #[test]
    fn several_launches_carry_their_labels_and_their_own_time_origin() {
        let a = small();
        let mut b = small();
        b.source.epoch = Some(Epoch {
            index: 1,
            epochs: 2,
            launches: 2,
        });
        // Launch 1 is the same records a second later: the same relative times.
        for v in b.spans.begin.iter_mut().chain(&mut b.spans.end) {
            *v += 1_000_000_000;
        }
        for l in &mut b.lanes {
            l.warp = None;
            l.sm = None;
        }
        b.source.time_base += 1_000_000_000;
        let l = [Launch::new("a.ikp", &a), Launch::new("run.ikp", &b)];
        let (names, rows) = rows(&reader(written(|w| write_spans(w, &l))));
        let col = |n: &str| names.iter().position(|m| m == n).unwrap();
        let n = a.spans.len();
        assert_eq!(rows.len(), 2 * n);
        for (x, y) in rows[..n].iter().zip(&rows[n..]) {
            assert_eq!((x[0].as_str(), x[1].as_str()), ("a.ikp", "0"));
            assert_eq!((y[0].as_str(), y[1].as_str()), ("run.ikp", "1"));
            assert_eq!((y[col("warp")].as_str(), y[col("sm")].as_str()), ("", ""));
            assert!(!x[col("sm")].is_empty());
            assert_eq!(x[col("begin_ns")..], y[col("begin_ns")..]);
        }
    }

    #[test]
    fn row_groups_split_at_the_limit_and_empty_tables_have_a_schema() {
        let t = small();
        let l = [Launch::new("small.ikp", &t)];
        let mut whole = Vec::new();
        spans(&mut whole, &l, 3).unwrap();
        let r = reader(whole);
        let per_group: Vec<i64> = (r.metadata().row_groups().iter())
            .map(|g| g.num_rows())
            .collect();
        assert_eq!(per_group, [3, 2]);
        assert_eq!(rows(&r).1, rows(&reader(written(|w| write_spans(w, &l)))).1);
        let r = reader(written(|w| write_counters(w, &[])));
        assert_eq!(r.metadata().num_row_groups(), 0);
        assert_eq!(schema(&r), COUNTERS_SCHEMA);
    }

    #[test]
    fn a_failing_sink_is_an_io_error_and_a_file_in_the_way_is_named() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk full"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let t = small();
        let e = write_spans(Full, &[Launch::new("small.ikp", &t)]).unwrap_err();
        assert!(matches!(e.kind, WriteErrorKind::Io(_)), "{e:?}");
        assert!(e.to_string().contains("disk full"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("out");
        std::fs::write(&file, "x").unwrap();
        let mut outs = Outputs::new();
        let e = write_parquet(&mut outs, &file, &[Launch::new("small.ikp", &t)]).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
        assert!(e.path.as_deref() == Some(file.as_path()));
    }
}
