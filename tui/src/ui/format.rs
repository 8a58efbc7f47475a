//! Number formatting for the panes.

/// Bytes in binary units with three significant digits: `512 B`, `3.50 MiB`, `23.6 GiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let text = if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    };
    format!("{text} {}", UNITS[unit])
}

/// Seconds in a readable unit (`12.0 µs`, `2.40 ms`, `1.20 s`); `-` for `None`.
pub fn format_seconds(seconds: Option<f64>) -> String {
    let Some(s) = seconds else {
        return "-".to_string();
    };
    let (value, unit) = if s == 0.0 {
        (0.0, "s")
    } else if s.abs() < 1e-6 {
        (s * 1e9, "ns")
    } else if s.abs() < 1e-3 {
        (s * 1e6, "µs")
    } else if s.abs() < 1.0 {
        (s * 1e3, "ms")
    } else {
        (s, "s")
    };
    if value.abs() >= 100.0 {
        format!("{value:.0} {unit}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.2} {unit}")
    }
}

/// A rate per second with a decimal prefix and three significant digits: `158 TF/s`,
/// `1.23 TB/s`, `12.0 GB/s`, `0.512 kB/s`, `0 F/s` (`unit` is `F/s` or `B/s`).
pub fn format_rate(per_sec: f64, unit: &str) -> String {
    if per_sec <= 0.0 || !per_sec.is_finite() {
        return format!("0 {unit}");
    }
    const PREFIXES: [(f64, &str); 5] =
        [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    let (scale, prefix) = PREFIXES
        .iter()
        .copied()
        .find(|(scale, _)| per_sec >= *scale)
        .unwrap_or((1e3, "k"));
    let value = per_sec / scale;
    let text = if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else if value >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    };
    format!("{text} {prefix}{unit}")
}

/// A percentage with one decimal below 100 (`0.4%`, `99.9%`), none from 100 (`100%`,
/// `250%`).
pub fn format_percent(pct: f64) -> String {
    if pct >= 99.95 {
        format!("{pct:.0}%")
    } else {
        format!("{pct:.1}%")
    }
}

/// `text` cut to `width` columns, its last kept character replaced by `…` when cut.
pub fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut s: String = text.chars().take(width.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// Joins `parts` with spaces, in their order, keeping the parts that fit in `width`
/// columns taken by rank (lower first; the first part is always kept): a narrow pane
/// drops the least wanted figures, a wide one still reads p50, p90, p99, max in order.
pub fn fit_ranked(parts: &[(u8, String)], width: usize) -> String {
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&i| (i != 0, parts[i].0, i));
    let mut keep = vec![false; parts.len()];
    let mut used = 0usize;
    for i in order {
        let len = parts[i].1.chars().count();
        let extra = if i == 0 { len } else { len + 1 };
        if i > 0 && used + extra > width {
            continue;
        }
        keep[i] = true;
        used += extra;
    }
    let kept: Vec<&str> = parts
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(p, _)| p.1.as_str())
        .collect();
    kept.join(" ")
}

/// Joins `parts` with spaces, leaving out the parts (after the first) that would not
/// fit in `width` columns.
pub fn fit(parts: &[String], width: usize) -> String {
    let ranked: Vec<(u8, String)> = parts.iter().map(|p| (0, p.clone())).collect();
    fit_ranked(&ranked, width)
}

/// `rank<N>` for a `<pid>/rank<N>` tag, the tag otherwise.
pub fn short_tag(tag: &str) -> &str {
    match tag.find("/rank") {
        Some(i) => &tag[i + 1..],
        None => tag,
    }
}

/// A text bar of `width` cells for a percentage (eighth-cell resolution).
pub fn bar(percent: f64, width: usize) -> String {
    const PARTS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let eighths = ((percent.clamp(0.0, 100.0) / 100.0) * (width * 8) as f64).round() as usize;
    let mut s = String::with_capacity(width * 3);
    for cell in 0..width {
        let filled = eighths.saturating_sub(cell * 8).min(8);
        s.push(if filled == 8 { '█' } else { PARTS[filled] });
    }
    s
}

/// A one-line sparkline of `values` scaled to `max` (the last `width` values).
pub fn sparkline(values: &[f64], max: f64, width: usize) -> String {
    const LEVELS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let start = values.len().saturating_sub(width);
    let mut s: String = values[start..]
        .iter()
        .map(|v| {
            if max <= 0.0 {
                return LEVELS[0];
            }
            let level = ((v / max).clamp(0.0, 1.0) * 8.0).round() as usize;
            LEVELS[level]
        })
        .collect();
    let pad = width.saturating_sub(values.len() - start);
    s.insert_str(0, &" ".repeat(pad));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_and_seconds() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(3 * 1024 * 1024 + 512 * 1024), "3.50 MiB");
        assert_eq!(format_bytes(25_300_303_872), "23.6 GiB");
        assert_eq!(format_seconds(Some(0.0024)), "2.40 ms");
        assert_eq!(format_seconds(Some(0.000012)), "12.0 µs");
        assert_eq!(format_seconds(None), "-");
        assert_eq!(format_rate(158e12, "F/s"), "158 TF/s");
        assert_eq!(format_rate(1.234e12, "B/s"), "1.23 TB/s");
        assert_eq!(format_rate(6.0e9, "B/s"), "6.00 GB/s");
        assert_eq!(format_rate(512.0, "B/s"), "0.512 kB/s");
        assert_eq!(format_rate(0.0, "F/s"), "0 F/s");
        assert_eq!(format_percent(0.44), "0.4%");
        assert_eq!(format_percent(99.96), "100%");
        assert_eq!(truncate("aten::native_layer_norm", 10), "aten::nat…");
        assert_eq!(truncate("aten::mm", 10), "aten::mm");
    }

    #[test]
    fn bars_and_sparklines() {
        assert_eq!(bar(50.0, 4), "██  ");
        assert_eq!(bar(100.0, 2), "██");
        assert_eq!(bar(0.0, 2), "  ");
        assert_eq!(sparkline(&[0.0, 50.0, 100.0], 100.0, 4), "  ▄█");
        let parts = ["a".to_string(), "bbbb".to_string(), "cc".to_string()];
        assert_eq!(fit(&parts, 5), "a cc");
        let ranked = [
            (0, "a".to_string()),
            (3, "p90".to_string()),
            (1, "p99".to_string()),
            (2, "max".to_string()),
        ];
        assert_eq!(fit_ranked(&ranked, 9), "a p99 max");
        assert_eq!(fit_ranked(&ranked, 80), "a p90 p99 max");
        assert_eq!(fit_ranked(&ranked, 1), "a");
        assert_eq!(short_tag("9001/rank3"), "rank3");
    }
}
