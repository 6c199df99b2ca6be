//! Issue #17, item 8a, through the command line: the shipped sample with one lane's start
//! `%globaltimer` overwritten (about 544 years later) once made `ikp analyze` print a
//! kernel of 1.7e19 ns and `ikp decode --perfetto` fail. The lane is now set aside: every
//! figure and output is the one of the sample without that lane, and the warnings and the
//! summary name it.
use crate::util::{ikp, s};
use ikp_device::wire::lane;
use ikp_device::Header;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// How far the corrupted stamp threw its lane: about 544 years, in ns.
const YEARS_544: u64 = 17_175_002_975_966_379_653;
/// The corrupted lane: block 33, group 1.
const LANE: u64 = 100;

fn sample_words() -> Vec<u64> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples/attention.ikp");
    let bytes = std::fs::read(p).unwrap();
    (bytes.chunks_exact(8))
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn write_words(p: &Path, words: &[u64]) {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(p, bytes).unwrap();
}

/// `(corrupted, removed)`: the sample with lane [`LANE`]'s start stamp moved 544 years,
/// and the sample with that lane never run. Both are named `attention.ikp`, in two
/// directories of `d`, so that the outputs that name their buffer agree.
fn buffers(d: &Path) -> (PathBuf, PathBuf) {
    let clean = sample_words();
    let r = Header::parse(&clean).unwrap().lane_range(LANE);
    let mut corrupted = clean.clone();
    let start = r.start + lane::START_GT as usize;
    corrupted[start] = clean[start].wrapping_add(YEARS_544);
    let mut removed = clean;
    removed[r].fill(0);
    let (a, b) = (d.join("corrupted"), d.join("removed"));
    for (dir, words) in [(&a, &corrupted), (&b, &removed)] {
        std::fs::create_dir(dir).unwrap();
        write_words(&dir.join("attention.ikp"), words);
    }
    (a.join("attention.ikp"), b.join("attention.ikp"))
}

/// The lane's name in user terms, from the clean sample's decode.
fn lane_name() -> String {
    let t = ikp_host::decode(&sample_words(), &Default::default()).unwrap();
    let l = t.lanes.iter().find(|l| l.id == LANE as u32).unwrap();
    assert_eq!((l.block, l.group), (33, 1));
    l.track().name()
}

#[test]
fn analyze_gives_the_launch_s_figures_and_names_the_lane_set_aside() {
    let d = tempfile::tempdir().unwrap();
    let (corrupted, removed) = buffers(d.path());
    let (a, b) = (
        ikp(&["analyze", s(&corrupted)]),
        ikp(&["analyze", s(&removed)]),
    );
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let text = String::from_utf8(a.stdout).unwrap();
    assert!(text.starts_with("GPU wall time "), "{text}");
    assert_eq!(text, String::from_utf8(b.stdout).unwrap());
    let err = String::from_utf8(a.stderr).unwrap();
    let want = format!(
        ", 1 lane set aside, its stamps not of this launch: {} (see the summary",
        lane_name()
    );
    assert!(err.contains(&want), "{err}");
    assert!(
        b.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&b.stderr)
    );
}

#[test]
fn decode_writes_every_output_and_names_the_lane_set_aside() {
    let d = tempfile::tempdir().unwrap();
    let (corrupted, removed) = buffers(d.path());
    let outs = ["t.trace", "t.json", "s.json", "t.csv"];
    for buf in [&corrupted, &removed] {
        let dir = buf.parent().unwrap();
        let p = |n: &str| dir.join(n).to_str().unwrap().to_owned();
        let o = ikp(&[
            "decode",
            s(buf),
            "--perfetto",
            &p(outs[0]),
            "--chrome",
            &p(outs[1]),
            "--summary",
            &p(outs[2]),
            "--csv",
            &p(outs[3]),
            "-q",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let err = String::from_utf8(o.stderr).unwrap();
        if buf == &corrupted {
            let want = format!(
                ", 1 lane set aside, its stamps not of this launch: {} (see the summary",
                lane_name()
            );
            assert!(err.contains(&want), "{err}");
        } else {
            assert!(err.is_empty(), "{err}");
        }
    }
    let read = |buf: &Path, n: &str| std::fs::read(buf.parent().unwrap().join(n)).unwrap();
    // The trace outputs are the sample's without the lane, byte for byte.
    for n in ["t.trace", "t.json", "t.csv"] {
        let (x, y) = (read(&corrupted, n), read(&removed, n));
        assert!(!x.is_empty());
        assert!(x == y, "{n} differs from the one without the lane");
    }
    // So is the summary, but for the list naming the lane.
    let json = |buf: &Path| -> Value { serde_json::from_slice(&read(buf, "s.json")).unwrap() };
    let (mut x, y) = (json(&corrupted), json(&removed));
    let listed = x
        .as_object_mut()
        .unwrap()
        .remove("set_aside_lanes")
        .unwrap();
    assert_eq!(x, y);
    assert!(y.get("set_aside_lanes").is_none());
    let clean = sample_words();
    let r = Header::parse(&clean).unwrap().lane_range(LANE);
    let l = &listed.as_array().unwrap()[..];
    assert_eq!(l.len(), 1, "{listed}");
    assert_eq!((&l[0]["block"], &l[0]["group"]), (&33.into(), &1.into()));
    assert_eq!(l[0]["reason"], "span");
    assert_eq!(l[0]["lane"], LANE);
    assert_eq!(l[0]["start"], clean[r.start].wrapping_add(YEARS_544));
    let trailer =
        r.start + (lane::EVENTS + Header::parse(&clean).unwrap().layout.records_per_lane) as usize;
    assert_eq!(l[0]["end"], clean[trailer + lane::T_END_GT as usize]);
    assert!(l[0]["warp"].is_u64() && l[0]["sm"].is_u64());
}

#[test]
fn the_summary_table_lists_the_lane_set_aside() {
    let d = tempfile::tempdir().unwrap();
    let (corrupted, _) = buffers(d.path());
    let o = ikp(&["decode", s(&corrupted)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let want = format!(
        "1 lane set aside, not decoded: its stamps cannot belong to this launch\n  {}: its end stamp is implausibly far from its start\n",
        lane_name()
    );
    assert!(text.ends_with(&want), "{text}");
}

/// The report says which lane was set aside, above the figures it is not part of; the
/// figures are those of the buffer without that lane.
#[test]
fn report_names_the_lane_set_aside() {
    let d = tempfile::tempdir().unwrap();
    let (corrupted, removed) = buffers(d.path());
    let html = |buf: &Path| {
        let out = buf.parent().unwrap().join("report");
        let o = ikp(&["report", s(buf), "-o", s(&out)]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read_to_string(out.join("report.html")).unwrap()
    };
    let (a, b) = (html(&corrupted), html(&removed));
    let note = format!(
        "<p class=\"meta\" id=\"set-aside-0\"><strong>1 lane set aside, its stamps not of this launch: {}</strong>",
        lane_name()
    );
    assert!(a.contains(&note), "no set-aside note");
    assert!(!b.contains("set-aside-0"));
    // Apart from the note and the paths in the headings, the same page.
    let body = |h: &str| h[h.find("id=\"breakdown-0\"").unwrap()..].to_owned();
    assert_eq!(body(&a), body(&b));
}
