//! Every region percentage ikp shows is one figure, defined in `ikp_host::definitions`:
//! self time as a share of the lane time, with a row for the time outside any region.
//! These tests read each output as a user gets it — the `ikp summary` table, the summary
//! JSON of `ikp decode --summary`, the HTML report as headless Chromium renders it
//! (`--dump-dom`) and the `regions_summary` sheet of `ikp report --xlsx` — and check that
//! they agree row by row on the shipped sample and on a TVM-format buffer, and that they
//! show the figures worked out by hand for a hand-built buffer.
use crate::chromium;
#[path = "../../../host/tests/fixtures/nested_lanes.rs"]
mod nested_lanes;
use crate::util::{ikp_ok, s};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

const OUTSIDE: &str = "(outside any region)";

/// One row as an output shows it: name, share and cumulative share, in percent.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    name: String,
    pct: f64,
    cum: f64,
}

/// Rows of the `ikp summary` table: from the header to the note under the rows.
fn table_rows(text: &str) -> Vec<Row> {
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("region") && header.contains("self %"),
        "{header}"
    );
    lines
        .take_while(|l| !l.starts_with("self: "))
        .map(|l| {
            let (name, rest) = match l.strip_prefix(OUTSIDE) {
                Some(rest) => (OUTSIDE, rest),
                None => l.split_once(' ').unwrap(),
            };
            // count (regions only), self (value and unit), self %, cum %, then the rest.
            let f: Vec<&str> = rest.split_whitespace().collect();
            let k = if name == OUTSIDE { 2 } else { 3 };
            Row {
                name: name.trim().to_owned(),
                pct: f[k].parse().unwrap(),
                cum: f[k + 1].parse().unwrap(),
            }
        })
        .collect()
}

/// Shares of the summary JSON (fractions) in percent: regions, then the outside row.
fn json_shares(v: &Value) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = v["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_owned(),
                100.0 * r["self_share"].as_f64().unwrap(),
            )
        })
        .collect();
    out.push((OUTSIDE.into(), 100.0 * v["outside_share"].as_f64().unwrap()));
    out
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Text of the cells of every `<tr>` in `html` (tags stripped).
fn html_cells(html: &str) -> Vec<Vec<String>> {
    html.split("<tr")
        .skip(1)
        .map(|tr| {
            let tr = &tr[..tr.find("</tr>").unwrap_or(tr.len())];
            tr.split("<t")
                .skip(1)
                .filter(|c| c.starts_with('d') || c.starts_with('h'))
                .map(|c| {
                    let body = &c[c.find('>').unwrap() + 1..];
                    let body = &body[..body.find("</t").unwrap_or(body.len())];
                    let mut text = String::new();
                    let mut in_tag = false;
                    for ch in body.chars() {
                        match ch {
                            '<' => in_tag = true,
                            '>' => in_tag = false,
                            c if !in_tag => text.push(c),
                            _ => {}
                        }
                    }
                    unescape(text.trim())
                })
                .collect()
        })
        .collect()
}

/// Rows of the region table `regions-0` of a rendered page.
fn html_rows(dom: &str) -> Vec<Row> {
    let t = &dom[dom.find("id=\"regions-0\"").expect("region table")..];
    let t = &t[..t.find("</table>").unwrap()];
    let cells = html_cells(t);
    let col = |name: &str| cells[0].iter().position(|h| h == name).unwrap();
    let (pct, cum) = (col("self %"), col("cum %"));
    let num = |c: &str| c.strip_suffix('%').unwrap().parse::<f64>().unwrap();
    cells[1..]
        .iter()
        .map(|r| Row {
            name: r[0].clone(),
            pct: num(&r[pct]),
            cum: num(&r[cum]),
        })
        .collect()
}

/// The page as headless Chromium renders it.
fn dump_dom(page: &Path, dir: &Path) -> String {
    let o = chromium::headless(dir, &["--dump-dom"], &format!("file://{}", page.display()));
    String::from_utf8(o.stdout).unwrap()
}

fn zip_text(z: &mut zip::ZipArchive<std::fs::File>, name: &str) -> String {
    let mut s = String::new();
    z.by_name(name).unwrap().read_to_string(&mut s).unwrap();
    s
}

/// Cells of the sheet `sheet` of an xlsx file, by row: `(column letter, text)`, shared
/// strings resolved.
fn xlsx_sheet(path: &Path, sheet: &str) -> Vec<Vec<(char, String)>> {
    let mut z = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    let wb = zip_text(&mut z, "xl/workbook.xml");
    // Sheets are stored in workbook order as sheet1.xml, sheet2.xml, ...
    let k = wb
        .split("<sheet ")
        .skip(1)
        .position(|e| e.contains(&format!("name=\"{sheet}\"")))
        .expect("sheet in the workbook")
        + 1;
    let strings: Vec<String> = zip_text(&mut z, "xl/sharedStrings.xml")
        .split("<si>")
        .skip(1)
        .map(|si| {
            let t = &si[si.find("<t").unwrap()..];
            let t = &t[t.find('>').unwrap() + 1..];
            unescape(&t[..t.find("</t>").unwrap()])
        })
        .collect();
    zip_text(&mut z, &format!("xl/worksheets/sheet{k}.xml"))
        .split("<row ")
        .skip(1)
        .map(|row| {
            row.split("<c r=\"")
                .skip(1)
                .map(|c| {
                    let col = c.chars().next().unwrap();
                    let v = c
                        .find("<v>")
                        .map_or("", |i| &c[i + 3..c.find("</v>").unwrap()]);
                    let text = if c[..c.find('>').unwrap()].contains("t=\"s\"") {
                        strings[v.parse::<usize>().unwrap()].clone()
                    } else {
                        v.to_owned()
                    };
                    (col, text)
                })
                .collect()
        })
        .collect()
}

/// Rows of the `regions_summary` sheet.
fn xlsx_rows(path: &Path) -> Vec<Row> {
    let rows = xlsx_sheet(path, "regions_summary");
    let col = |name: &str| {
        rows[0]
            .iter()
            .find(|c| c.1 == name)
            .unwrap_or_else(|| panic!("no column {name}"))
            .0
    };
    let (pct, cum) = (col("Percentage (%)"), col("Cumulative Percentage (%)"));
    let get = |r: &[(char, String)], c: char| r.iter().find(|x| x.0 == c).unwrap().1.clone();
    rows[1..]
        .iter()
        .map(|r| Row {
            name: get(r, 'A'),
            pct: get(r, pct).parse().unwrap(),
            cum: get(r, cum).parse().unwrap(),
        })
        .collect()
}

/// Every output of `buf`, read back.
struct Outputs {
    table: Vec<Row>,
    json: Vec<(String, f64)>,
    html: Vec<Row>,
    xlsx: Vec<Row>,
}

fn outputs(buf: &Path, dir: &Path) -> Outputs {
    let table = table_rows(&ikp_ok(&["summary", s(buf)]));
    let sum = dir.join("summary.json");
    ikp_ok(&["decode", s(buf), "--summary", s(&sum)]);
    let v: Value = serde_json::from_slice(&std::fs::read(&sum).unwrap()).unwrap();
    let rep = dir.join("report");
    ikp_ok(&["report", s(buf), "-o", s(&rep), "--xlsx"]);
    Outputs {
        table,
        json: json_shares(&v),
        html: html_rows(&dump_dom(&rep.join("report.html"), dir)),
        xlsx: xlsx_rows(&rep.join("report.xlsx")),
    }
}

/// The outputs agree: same rows in the same order (regions by self share, the outside
/// row last, cumulative reaching 100), each share the JSON's, rounded as displayed.
fn check_agree(o: &Outputs) {
    let one = |x: f64| format!("{x:.1}");
    assert_eq!(o.table.len(), o.json.len(), "{:?}", o.table);
    for (what, rows) in [("table", &o.table), ("html", &o.html), ("xlsx", &o.xlsx)] {
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        let want: Vec<&str> = o.table.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, want, "{what}: rows or their order differ");
        assert_eq!(names.last(), Some(&OUTSIDE), "{what}");
        assert_eq!(one(rows.last().unwrap().cum), "100.0", "{what}");
        let mut sum = 0.0;
        for r in rows.iter() {
            let share = o.json.iter().find(|j| j.0 == r.name).unwrap().1;
            sum += share;
            if what == "xlsx" {
                assert!(
                    (r.pct - share).abs() < 1e-9,
                    "{what} {}: {} vs {share}",
                    r.name,
                    r.pct
                );
                assert!(
                    (r.cum - sum).abs() < 1e-9,
                    "{what} {}: cum {} vs {sum}",
                    r.name,
                    r.cum
                );
            } else {
                assert_eq!(one(r.pct), one(share), "{what} {}", r.name);
                assert_eq!(one(r.cum), one(sum), "{what} {}: cumulative", r.name);
            }
        }
        assert!((sum - 100.0).abs() < 1e-9, "{what}: shares sum to {sum}");
    }
    assert!(
        o.table[..o.table.len() - 1]
            .windows(2)
            .all(|w| w[0].pct >= w[1].pct),
        "regions by self share, largest first"
    );
}

fn sample() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples/attention.ikp")
}

#[test]
fn shipped_sample_shows_the_same_shares_everywhere() {
    let d = tempfile::tempdir().unwrap();
    let o = outputs(&sample(), d.path());
    check_agree(&o);
    // mainloop holds every other region of its lane: its self share is what the nested
    // regions leave, far below its inclusive time's share of the lane time.
    let v: Value =
        serde_json::from_slice(&std::fs::read(d.path().join("summary.json")).unwrap()).unwrap();
    let m = v["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "mainloop")
        .unwrap();
    let lane = v["lane_dur"].as_f64().unwrap();
    assert!(m["self_share"].as_f64().unwrap() < 0.1);
    assert!(m["total_dur"].as_f64().unwrap() / lane > 0.9);
}

#[test]
fn tvm_buffer_shows_the_same_shares_everywhere() {
    let d = tempfile::tempdir().unwrap();
    let buf = d.path().join("tvm.bin");
    ikp_ok(&["sample", s(&buf), "--tvm-blocks", "64"]);
    check_agree(&outputs(&buf, d.path()));
}

/// The hand-built buffer the library's share tests pin ([`nested_lanes::writer`], every
/// lane), written to `path`.
fn hand_built(path: &Path) {
    std::fs::write(path, nested_lanes::writer(&[0, 1, 2, 3]).to_bytes()).unwrap();
}

#[test]
fn hand_built_buffer_shows_the_shares_worked_out_by_hand() {
    let d = tempfile::tempdir().unwrap();
    let buf = d.path().join("hand.ikp");
    hand_built(&buf);
    let o = outputs(&buf, d.path());
    check_agree(&o);
    // Lane time 1000 + 500 + 1000 + 500 ns. Self: wait 50 + 500; mainloop 800 - 200 - 100;
    // softmax 300; mma 200 - 50 + 100; outside 100 + 100 (lane 0), 700 (lane 2), 500 (lane 3).
    let lane = 3000.0;
    let want = [
        ("wait", 550.0),
        ("mainloop", 500.0),
        ("softmax", 300.0),
        ("mma", 250.0),
        (OUTSIDE, 1400.0),
    ];
    for rows in [&o.table, &o.html, &o.xlsx] {
        let got: Vec<(&str, String)> = rows
            .iter()
            .map(|r| (r.name.as_str(), format!("{:.1}", r.pct)))
            .collect();
        let want: Vec<(&str, String)> = want
            .iter()
            .map(|&(n, ns)| (n, format!("{:.1}", 100.0 * ns / lane)))
            .collect();
        assert_eq!(got, want);
    }
}
