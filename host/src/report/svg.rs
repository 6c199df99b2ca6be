//! Tiny SVG chart builders for the HTML report: no JavaScript, no external assets, so the
//! page is one self-contained file that renders identically everywhere.

use crate::time::format_duration;
use std::fmt::Write;

/// Escapes text for XML / HTML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A horizontal stacked bar of named parts with a legend.
pub fn stacked_bar(parts: &[(&str, u64, &str)], width: u32) -> String {
    let total: u64 = parts.iter().map(|p| p.1).sum::<u64>().max(1);
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="64" role="img">"#
    );
    let (mut x, mut lx, mut legend) = (0.0, 0, String::new());
    for (name, v, color) in parts {
        let w = *v as f64 / total as f64 * width as f64;
        let pct = 100.0 * *v as f64 / total as f64;
        let _ = write!(
            s,
            r#"<rect x="{x:.2}" y="0" width="{w:.2}" height="28" fill="{color}"><title>{}: {} ({pct:.1}%)</title></rect>"#,
            esc(name),
            format_duration(*v as f64)
        );
        let _ = write!(
            legend,
            r#"<rect x="{lx}" y="40" width="10" height="10" fill="{color}"/><text x="{}" y="49" font-size="11">{} {pct:.1}%</text>"#,
            lx + 14,
            esc(name)
        );
        x += w;
        // About 7 px per character of 11 px text: the seven breakdown parts, named as
        // `ikp analyze` names them ("exposed wait 12.9%"), fit in 1000 px.
        lx += 14 + 7 * (name.chars().count() as u32 + 7);
    }
    s.push_str(&legend);
    s.push_str("</svg>");
    s
}

/// Left margin of charts with a y axis: room for its tick labels.
pub(crate) const AXIS_W: u32 = 48;
/// Axis, tick and caption colour.
const INK: &str = "#444";
/// Room above a chart for the label of its top tick.
const TOP: f64 = 8.0;

/// A y axis at `x0` over `0..=height` (y grows down; `top` is its value at y = 0) with a
/// tick and label at each of `ticks` (value, label).
pub(crate) fn y_axis(s: &mut String, x0: f64, height: f64, top: f64, ticks: &[(f64, String)]) {
    let _ = write!(
        s,
        r#"<line x1="{x0}" x2="{x0}" y1="0" y2="{height}" stroke="{INK}"/>"#
    );
    let mut drawn: Vec<f64> = Vec::new();
    for (v, label) in ticks {
        let y = height - v / top.max(f64::MIN_POSITIVE) * height;
        // Labels closer than a line of text would overlap: the first one given stays.
        if drawn.iter().any(|d| (d - y).abs() < 11.0) {
            continue;
        }
        drawn.push(y);
        let _ = write!(
            s,
            r#"<line x1="{:.1}" x2="{x0}" y1="{y:.1}" y2="{y:.1}" stroke="{INK}"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="{INK}">{}</text>"#,
            x0 - 4.0,
            x0 - 6.0,
            y + 3.5,
            esc(label)
        );
    }
}

/// An x axis at `y0` from `x0` to `x1` with ticks at fractions `0.0..=1.0` of its length.
pub(crate) fn x_axis(s: &mut String, x0: f64, x1: f64, y0: f64, ticks: &[(f64, String)]) {
    let _ = write!(
        s,
        r#"<line x1="{x0}" x2="{x1}" y1="{y0}" y2="{y0}" stroke="{INK}"/>"#
    );
    for (f, label) in ticks {
        let x = x0 + f * (x1 - x0);
        let anchor = if *f <= 0.0 {
            "start"
        } else if *f >= 1.0 {
            "end"
        } else {
            "middle"
        };
        let _ = write!(
            s,
            r#"<line x1="{x:.1}" x2="{x:.1}" y1="{y0}" y2="{:.1}" stroke="{INK}"/><text x="{x:.1}" y="{:.1}" font-size="10" text-anchor="{anchor}" fill="{INK}">{}</text>"#,
            y0 + 4.0,
            y0 + 14.0,
            esc(label)
        );
    }
}

/// The axes of a chart of shares over durations, `w` by `h` right of [`AXIS_W`]: a y axis
/// of shares (ticks at 0 and `peak`), an x axis of durations over `range` (ticks at its
/// ends and its middle).
pub(crate) fn share_axes(s: &mut String, w: f64, h: f64, peak: f64, range: (u64, u64)) {
    let share = format!("{:.0}%", 100.0 * peak);
    y_axis(
        s,
        AXIS_W as f64,
        h,
        peak,
        &[(0.0, "0%".into()), (peak, share)],
    );
    let (lo, hi) = range;
    let mid = (lo + hi) as f64 / 2.0;
    let ticks = [(0.0, lo as f64), (0.5, mid), (1.0, hi as f64)];
    x_axis(
        s,
        AXIS_W as f64,
        w,
        h,
        &ticks.map(|(f, t)| (f, format_duration(t))),
    );
}

/// Draws a histogram computed by [`crate::stats::histogram`]: x is the duration (ticks at
/// the ends and the middle of its range), y the share of the occurrences in each bin (ticks
/// at 0 and at the tallest bar).
pub fn histogram(h: &crate::stats::Histogram, width: u32, height: u32, color: &str) -> String {
    let (w, ht) = (width as f64, height as f64);
    let plot_w = w - AXIS_W as f64;
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{}" role="img"><g transform="translate(0 {TOP})">"#,
        height + 20 + TOP as u32
    );
    let peak = (h.prob.iter()).fold(f64::MIN_POSITIVE, |m, &p| m.max(p));
    let bw = plot_w / h.prob.len().max(1) as f64;
    let step = (h.max - h.min) as f64 / h.prob.len().max(1) as f64;
    for (i, &p) in h.prob.iter().enumerate() {
        let bh = p / peak * ht;
        let _ = write!(
            s,
            r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{bh:.2}" fill="{color}"><title>{}–{}: {:.1}% of occurrences</title></rect>"#,
            AXIS_W as f64 + i as f64 * bw,
            ht - bh,
            (bw - 0.5).max(0.5),
            format_duration(h.min as f64 + step * i as f64),
            format_duration(h.min as f64 + step * (i + 1) as f64),
            100.0 * p
        );
    }
    share_axes(&mut s, w, ht, peak, (h.min, h.max));
    s.push_str("</g></svg>");
    s
}

/// The heat map's colour for a share `t` in `0.0..=1.0`: white (no lane busy) to deep blue
/// (every lane busy).
fn heat_color(t: f64) -> String {
    let t = t.clamp(0.0, 1.0);
    let (r, g, b) = (255.0 - 225.0 * t, 255.0 - 175.0 * t, 255.0 - 55.0 * t);
    format!("#{:02x}{:02x}{:02x}", r as u8, g as u8, b as u8)
}

/// A heat map: one row per label, `cells[row][col]` in `0.0..=1.0`, the columns splitting
/// `span_ns` of time evenly. Below it a time axis (ns from the first column, five ticks)
/// and a legend of the shading: `what` is what a cell's share is of.
pub fn heat_map(
    rows: &[(String, Vec<f64>)],
    width: u32,
    row_h: u32,
    span_ns: u64,
    what: &str,
) -> String {
    let label_w = 70.0;
    let cols = rows.first().map_or(1, |r| r.1.len()).max(1);
    let cw = (width as f64 - label_w) / cols as f64;
    let map_h = (rows.len() as u32 * row_h) as f64;
    let h = map_h + 62.0;
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" role="img">"#
    );
    for (r, (label, cells)) in rows.iter().enumerate() {
        let y = r as u32 * row_h;
        let _ = write!(
            s,
            r#"<text x="0" y="{}" font-size="{}">{}</text>"#,
            y + row_h - 1,
            row_h.min(11),
            esc(label)
        );
        for (c, &v) in cells.iter().enumerate() {
            if v <= 0.0 {
                continue;
            }
            let _ = write!(
                s,
                r#"<rect x="{:.2}" y="{y}" width="{:.2}" height="{row_h}" fill="{}"/>"#,
                label_w + c as f64 * cw,
                cw + 0.05,
                heat_color(v)
            );
        }
    }
    let ticks = [0.0, 0.25, 0.5, 0.75, 1.0].map(|f| (f, format_duration(span_ns as f64 * f)));
    x_axis(&mut s, label_w, width as f64, map_h + 1.0, &ticks);
    let _ = write!(
        s,
        r#"<text x="{label_w}" y="{:.1}" font-size="10" fill="{INK}">time since the first stamp ({} per column)</text>"#,
        map_h + 28.0,
        format_duration(span_ns as f64 / cols as f64)
    );
    // Legend: the shading from 0 % to 100 %.
    let ly = map_h + 38.0;
    for k in 0..=10 {
        let _ = write!(
            s,
            r##"<rect x="{:.1}" y="{ly}" width="16" height="10" fill="{}" stroke="#ccc" stroke-width="0.5"/>"##,
            label_w + k as f64 * 16.0,
            heat_color(k as f64 / 10.0)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="10" fill="{INK}">0% → 100% {}</text></svg>"#,
        label_w + 11.0 * 16.0 + 6.0,
        ly + 9.0,
        esc(what)
    );
    s
}

/// Vertical bars in the order given, with a dashed line at `reference` (e.g. the median):
/// a y axis in time (ticks at 0, the reference and the tallest bar) and a legend line
/// naming the dashed line and saying what the bars are (`what`, e.g. "block length, slowest
/// first").
pub fn bars(
    values: &[(String, u64)],
    reference: (&str, u64),
    width: u32,
    height: u32,
    color: &str,
    what: &str,
) -> String {
    let (w, ht) = (width as f64, height as f64);
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{}" role="img"><g transform="translate(0 {TOP})">"#,
        height + 34 + TOP as u32
    );
    let peak = values.iter().map(|v| v.1).max().unwrap_or(1).max(1) as f64;
    let bw = (w - AXIS_W as f64) / values.len().max(1) as f64;
    for (i, (label, v)) in values.iter().enumerate() {
        let h = *v as f64 / peak * ht;
        let _ = write!(
            s,
            r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{h:.2}" fill="{color}"><title>{}: {}</title></rect>"#,
            AXIS_W as f64 + i as f64 * bw,
            ht - h,
            (bw - 0.3).max(0.3),
            esc(label),
            format_duration(*v as f64)
        );
    }
    let (ref_name, ref_v) = reference;
    let r = ref_v as f64;
    let ticks = [
        (0.0, "0".into()),
        (peak, format_duration(peak)),
        (r, format_duration(r)),
    ];
    y_axis(&mut s, AXIS_W as f64, ht, peak, &ticks);
    let _ = write!(
        s,
        r#"<line x1="{AXIS_W}" x2="{w}" y1="{ht}" y2="{ht}" stroke="{INK}"/>"#
    );
    let y = ht - ref_v as f64 / peak * ht;
    let _ = write!(
        s,
        r##"<line x1="{AXIS_W}" x2="{width}" y1="{y:.2}" y2="{y:.2}" stroke="#333" stroke-dasharray="4 3"><title>{} {}</title></line>"##,
        esc(ref_name),
        format_duration(ref_v as f64)
    );
    let ly = ht + 20.0;
    // The second legend entry starts after the first one's text (about 6 px a character).
    let x2 = AXIS_W as usize + 14 + 6 * what.chars().count() + 24;
    let _ = write!(
        s,
        r##"<rect x="{AXIS_W}" y="{:.1}" width="10" height="10" fill="{color}"/><text x="{}" y="{ly:.1}" font-size="10" fill="{INK}">{}</text><line x1="{x2}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#333" stroke-dasharray="4 3"/><text x="{}" y="{ly:.1}" font-size="10" fill="{INK}">{} ({})</text></g></svg>"##,
        ly - 9.0,
        AXIS_W + 14,
        esc(what),
        x2 + 24,
        ly - 4.0,
        ly - 4.0,
        x2 + 30,
        esc(ref_name),
        format_duration(ref_v as f64)
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| t.split_once('>').and_then(|(_, r)| r.split_once("</text>")))
            .map(|(t, _)| t.to_owned())
            .collect()
    }

    #[test]
    fn a_histogram_has_both_axes_with_units() {
        let h = crate::stats::histogram(&[1_000, 1_000, 2_000, 3_000], 4);
        let t = texts(&histogram(&h, 300, 80, "#123456"));
        assert_eq!(t, ["0%", "50%", "1.00 µs", "2.00 µs", "3.00 µs"]);
    }

    #[test]
    fn a_heat_map_has_a_time_axis_and_a_legend_for_its_shading() {
        let rows = vec![("SM 0".to_owned(), vec![0.0, 0.5, 1.0, 0.25])];
        let svg = heat_map(&rows, 400, 10, 4_000, "of the groups busy");
        let t = texts(&svg);
        assert_eq!(
            t[1..6],
            ["0 ns", "1.00 µs", "2.00 µs", "3.00 µs", "4.00 µs"].map(String::from)
        );
        assert!(
            t.contains(&"time since the first stamp (1.00 µs per column)".to_owned()),
            "{t:?}"
        );
        assert!(
            t.contains(&"0% → 100% of the groups busy".to_owned()),
            "{t:?}"
        );
        // The legend shows the same colours as the cells.
        assert!(svg.contains(&heat_color(0.5)) && svg.contains(&heat_color(1.0)));
    }

    #[test]
    fn bars_have_a_time_axis_and_name_the_bars_and_the_line() {
        let v = vec![("block 2".to_owned(), 400), ("block 0".to_owned(), 100)];
        let t = texts(&bars(
            &v,
            ("median", 250),
            400,
            100,
            "#123456",
            "block length",
        ));
        assert_eq!(
            t,
            ["0", "400 ns", "250 ns", "block length", "median (250 ns)"]
        );
        // A reference as tall as the peak: its tick label would overlap, so it is left out.
        let t = texts(&bars(
            &v,
            ("median", 398),
            400,
            100,
            "#123456",
            "block length",
        ));
        assert_eq!(t[..2], ["0", "400 ns"].map(String::from));
        assert!(!t.contains(&"398 ns".to_owned()));
    }
}
