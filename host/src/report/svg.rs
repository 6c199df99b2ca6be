//! Tiny SVG chart builders for the HTML report: no JavaScript, no external assets, so the
//! page is one self-contained file that renders identically everywhere.

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

/// Human-readable nanoseconds (`950 ns`, `12.3 µs`, `4.56 ms`, `1.20 s`).
pub fn fmt_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// A horizontal stacked bar of named parts with a legend.
pub fn stacked_bar(parts: &[(&str, u64, &str)], width: u32) -> String {
    let total: u64 = parts.iter().map(|p| p.1).sum::<u64>().max(1);
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="64" role="img">"#
    );
    let mut x = 0.0;
    for (name, v, color) in parts {
        let w = *v as f64 / total as f64 * width as f64;
        let pct = 100.0 * *v as f64 / total as f64;
        let _ = write!(
            s,
            r#"<rect x="{x:.2}" y="0" width="{w:.2}" height="28" fill="{color}"><title>{}: {} ({pct:.1}%)</title></rect>"#,
            esc(name),
            fmt_ns(*v as f64)
        );
        x += w;
    }
    let mut lx = 0;
    for (name, v, color) in parts {
        let pct = 100.0 * *v as f64 / total as f64;
        let _ = write!(
            s,
            r#"<rect x="{lx}" y="40" width="10" height="10" fill="{color}"/><text x="{}" y="49" font-size="11">{} {pct:.1}%</text>"#,
            lx + 14,
            esc(name)
        );
        // About 7 px per character of 11 px text: the seven breakdown parts, named as
        // `ikp analyze` names them ("exposed wait 12.9%"), fit in 1000 px.
        lx += 14 + 7 * (name.chars().count() as u32 + 7);
    }
    s.push_str("</svg>");
    s
}

/// Draws a histogram computed by [`crate::stats::histogram`] (bar height = probability).
pub fn histogram(h: &crate::stats::Histogram, width: u32, height: u32, color: &str) -> String {
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{}" role="img">"#,
        height + 16
    );
    let peak = h
        .prob
        .iter()
        .cloned()
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let bw = width as f64 / h.prob.len().max(1) as f64;
    let step = (h.max - h.min) as f64 / h.prob.len().max(1) as f64;
    for (i, &p) in h.prob.iter().enumerate() {
        let bh = p / peak * height as f64;
        let _ = write!(
            s,
            r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{bh:.2}" fill="{color}"><title>{}–{}: {:.1}%</title></rect>"#,
            i as f64 * bw,
            height as f64 - bh,
            (bw - 0.5).max(0.5),
            fmt_ns(h.min as f64 + step * i as f64),
            fmt_ns(h.min as f64 + step * (i + 1) as f64),
            100.0 * p
        );
    }
    let _ = write!(
        s,
        r#"<text x="0" y="{}" font-size="10">{}</text><text x="{width}" y="{}" font-size="10" text-anchor="end">{}</text></svg>"#,
        height + 12,
        fmt_ns(h.min as f64),
        height + 12,
        fmt_ns(h.max as f64)
    );
    s
}

/// A heat map: one row per label, `cells[row][col]` in `0.0..=1.0`.
pub fn heat_map(rows: &[(String, Vec<f64>)], width: u32, row_h: u32, x_label: &str) -> String {
    let label_w = 70;
    let cols = rows.first().map_or(1, |r| r.1.len()).max(1);
    let cw = (width - label_w) as f64 / cols as f64;
    let h = rows.len() as u32 * row_h + 18;
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
            // White (idle) to deep blue (all lanes busy).
            let t = v.clamp(0.0, 1.0);
            let (rr, gg, bb) = (255.0 - 225.0 * t, 255.0 - 175.0 * t, 255.0 - 55.0 * t);
            let _ = write!(
                s,
                r##"<rect x="{:.2}" y="{y}" width="{:.2}" height="{row_h}" fill="#{:02x}{:02x}{:02x}"/>"##,
                label_w as f64 + c as f64 * cw,
                cw + 0.05,
                rr as u8,
                gg as u8,
                bb as u8
            );
        }
    }
    let _ = write!(
        s,
        r#"<text x="{label_w}" y="{}" font-size="10">{}</text></svg>"#,
        h - 4,
        esc(x_label)
    );
    s
}

/// Vertical bars sorted as given, with a dashed line at `reference` (e.g. the median).
pub fn bars(
    values: &[(String, u64)],
    reference: u64,
    width: u32,
    height: u32,
    color: &str,
) -> String {
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{}" role="img">"#,
        height + 4
    );
    let peak = values.iter().map(|v| v.1).max().unwrap_or(1).max(1) as f64;
    let bw = width as f64 / values.len().max(1) as f64;
    for (i, (label, v)) in values.iter().enumerate() {
        let h = *v as f64 / peak * height as f64;
        let _ = write!(
            s,
            r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{h:.2}" fill="{color}"><title>{}: {}</title></rect>"#,
            i as f64 * bw,
            height as f64 - h,
            (bw - 0.3).max(0.3),
            esc(label),
            fmt_ns(*v as f64)
        );
    }
    let y = height as f64 - reference as f64 / peak * height as f64;
    let _ = write!(
        s,
        r##"<line x1="0" x2="{width}" y1="{y:.2}" y2="{y:.2}" stroke="#333" stroke-dasharray="4 3"><title>median {}</title></line></svg>"##,
        fmt_ns(reference as f64)
    );
    s
}
