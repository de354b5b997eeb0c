//! The small YAML subset of handoff frontmatter: `key: scalar` and `key: [flow, list]` or
//! block lists, written safely and read leniently (plain, single- and double-quoted
//! scalars, folded continuation lines, `|`/`>` blocks, comments, unknown keys).

/// One frontmatter value as read: a scalar, or a list (flow or block).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    /// `None` for an empty or null (`~`, `null`) plain scalar.
    Scalar(Option<String>),
    List(Vec<String>),
}

/// Plain words a YAML reader would not take as a string.
const RESERVED: &[&str] = &[
    "~", "null", "true", "false", "yes", "no", "on", "off", "y", "n", ".inf", "-.inf", "+.inf",
    ".nan",
];

/// `s` as a YAML scalar: plain when that reads back as the same string, else double-quoted.
pub(super) fn scalar(s: &str) -> String {
    if needs_quotes(s, false) {
        quote(s)
    } else {
        s.to_owned()
    }
}

/// `items` as a flow list, `[a, b]`; items holding flow indicators are quoted too.
pub(super) fn flow_list(items: &[String]) -> String {
    let items: Vec<String> = items
        .iter()
        .map(|i| {
            if needs_quotes(i, true) {
                quote(i)
            } else {
                i.clone()
            }
        })
        .collect();
    format!("[{}]", items.join(", "))
}

fn needs_quotes(s: &str, in_flow: bool) -> bool {
    let Some(first) = s.chars().next() else {
        return true;
    };
    let lower = s.to_ascii_lowercase();
    first.is_whitespace()
        || s.ends_with(char::is_whitespace)
        || "[]{}-*&!|>%@?,`'\"#".contains(first)
        || s.chars().any(|c| {
            c.is_control()
                || matches!(
                    c,
                    ':' | '#' | '"' | '\'' | '\u{2028}' | '\u{2029}' | '\u{feff}'
                )
        })
        || (in_flow && s.contains([',', '[', ']', '{', '}']))
        || RESERVED.contains(&lower.as_str())
        || looks_numeric(&lower)
}

/// Numbers and dates a YAML reader would type: `12345678`, `8735e508`, `0x1f`, `2026-02-16`.
fn looks_numeric(lower: &str) -> bool {
    let radix = ["0x", "0o", "0b"]
        .iter()
        .any(|p| lower.strip_prefix(p).is_some_and(|r| !r.is_empty()));
    radix
        || lower.parse::<f64>().is_ok()
        || lower.replace('_', "").parse::<f64>().is_ok()
        || chrono::NaiveDate::parse_from_str(lower, "%Y-%m-%d").is_ok()
}

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x100 && c.is_control() => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}') => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The top-level `key: value` pairs of a frontmatter block, in order. Lines that are
/// neither a key, its list items nor its continuation are skipped.
pub(super) fn read_mapping(lines: &[&str]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some((key, first)) = key_line(lines[i]) else {
            i += 1;
            continue;
        };
        let start = i + 1;
        i = start;
        while i < lines.len() && key_line(lines[i]).is_none() {
            i += 1;
        }
        out.push((key.to_owned(), value(first, &lines[start..i])));
    }
    out
}

/// `key: rest` at column 0, for a key of letters, digits, `_` and `-`.
fn key_line(line: &str) -> Option<(&str, &str)> {
    let (key, rest) = line.split_once(':')?;
    let is_key = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        && !key.starts_with('-');
    (is_key && (rest.is_empty() || rest.starts_with([' ', '\t']))).then_some((key, rest.trim()))
}

fn value(first: &str, rest: &[&str]) -> Value {
    let is_comment = |l: &&&str| l.trim_start().starts_with('#');
    let rest: Vec<&str> = rest.iter().filter(|l| !is_comment(l)).copied().collect();
    if first.is_empty() || first.starts_with('#') {
        let items: Vec<String> = rest
            .iter()
            .filter_map(|l| {
                let t = l.trim();
                let item = t.strip_prefix("- ").or((t == "-").then_some(""))?;
                Some(unscalar(item.trim()).unwrap_or_default())
            })
            .collect();
        if !items.is_empty() {
            return Value::List(items);
        }
        return Value::Scalar(None);
    }
    if let Some(style) = first.strip_prefix(['|', '>'])
        && style.chars().all(|c| "+-0123456789 ".contains(c))
    {
        let body: Vec<&str> = trim_blank_ends(&rest).iter().map(|l| l.trim()).collect();
        let joined = if first.starts_with('|') {
            body.join("\n")
        } else {
            fold(&body)
        };
        return Value::Scalar(Some(joined));
    }
    let mut lines: Vec<&str> = vec![first];
    lines.extend(trim_blank_ends(&rest));
    if first.starts_with('[') {
        let joined: Vec<&str> = lines.iter().map(|l| l.trim()).collect();
        return Value::List(flow_items(&joined.join(" ")));
    }
    if first.starts_with('"') {
        return Value::Scalar(Some(double_quoted(&fold_double(&lines))));
    }
    if first.starts_with('\'') {
        let trimmed: Vec<&str> = lines.iter().map(|l| l.trim()).collect();
        return Value::Scalar(Some(single_quoted(&fold(&trimmed))));
    }
    let plain: Vec<&str> = lines.iter().map(|l| strip_comment(l).trim()).collect();
    unscalar_plain(&fold(&plain))
}

fn trim_blank_ends<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let start = lines.iter().position(|l| !l.trim().is_empty());
    let end = lines.iter().rposition(|l| !l.trim().is_empty());
    match (start, end) {
        (Some(s), Some(e)) => lines[s..=e].to_vec(),
        _ => Vec::new(),
    }
}

/// YAML line folding: a single break is a space, each blank line a `\n`.
fn fold(lines: &[&str]) -> String {
    let mut out = String::new();
    let mut after_blank = true;
    for line in lines {
        if line.is_empty() {
            out.push('\n');
            after_blank = true;
        } else {
            if !after_blank {
                out.push(' ');
            }
            out.push_str(line);
            after_blank = false;
        }
    }
    out
}

/// Folding inside a double-quoted scalar, where a line ending in an unescaped `\` joins the
/// next with nothing in between.
fn fold_double(lines: &[&str]) -> String {
    let mut out = String::new();
    let mut joiner = "";
    for (n, line) in lines.iter().enumerate() {
        let line = if n == 0 { line.trim_end() } else { line.trim() };
        if line.is_empty() {
            out.push('\n');
            joiner = "";
            continue;
        }
        out.push_str(joiner);
        let slashes = line.len() - line.trim_end_matches('\\').len();
        if slashes % 2 == 1 {
            out.push_str(&line[..line.len() - 1]);
            joiner = "";
        } else {
            out.push_str(line);
            joiner = " ";
        }
    }
    out
}

fn strip_comment(line: &str) -> &str {
    if line.trim_start().starts_with('#') {
        return "";
    }
    match line.find(" #").or_else(|| line.find("\t#")) {
        Some(at) => &line[..at],
        None => line,
    }
}

fn unscalar_plain(s: &str) -> Value {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => Value::Scalar(None),
        s => Value::Scalar(Some(s.to_owned())),
    }
}

/// One scalar on one line: quoted, or plain with its comment cut.
fn unscalar(s: &str) -> Option<String> {
    if s.starts_with('"') {
        Some(double_quoted(s))
    } else if s.starts_with('\'') {
        Some(single_quoted(s))
    } else {
        match unscalar_plain(strip_comment(s).trim()) {
            Value::Scalar(v) => v,
            Value::List(_) => None,
        }
    }
}

/// The items of `[a, "b, c", 'd']`; text after the closing `]` is ignored, empty items
/// (a trailing comma) dropped.
fn flow_items(s: &str) -> Vec<String> {
    let inner = s.strip_prefix('[').unwrap_or(s);
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('"'), '\\') => {
                current.push(c);
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            (Some('\''), '\'') if chars.peek() == Some(&'\'') => {
                current.push_str("''");
                chars.next();
            }
            (Some(q), c) if c == q => {
                current.push(c);
                quote = None;
            }
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') if current.trim().is_empty() => {
                current = c.to_string();
                quote = Some(c);
            }
            (None, ',') => items.push(std::mem::take(&mut current)),
            (None, ']') => break,
            (None, c) => current.push(c),
        }
    }
    items.push(current);
    items
        .iter()
        .map(|i| i.trim())
        .filter(|i| !i.is_empty())
        .filter_map(unscalar)
        .collect()
}

/// The text of `"..."` with YAML escapes resolved; anything after the closing quote is
/// ignored, a missing closing quote tolerated.
fn double_quoted(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.strip_prefix('"').unwrap_or(s).chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t' | '\t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('0') => out.push('\0'),
                Some('a') => out.push('\u{7}'),
                Some('b') => out.push('\u{8}'),
                Some('e') => out.push('\u{1b}'),
                Some('f') => out.push('\u{c}'),
                Some('v') => out.push('\u{b}'),
                Some('N') => out.push('\u{85}'),
                Some('_') => out.push('\u{a0}'),
                Some('L') => out.push('\u{2028}'),
                Some('P') => out.push('\u{2029}'),
                Some(h @ ('x' | 'u' | 'U')) => {
                    let width = match h {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let hex: String = chars.by_ref().take(width).collect();
                    let decoded = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                    out.push(decoded.unwrap_or(char::REPLACEMENT_CHARACTER));
                }
                Some(other) => out.push(other),
                None => {}
            },
            c => out.push(c),
        }
    }
    out
}

/// The text of `'...'`, where `''` stands for one quote.
fn single_quoted(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.strip_prefix('\'').unwrap_or(s).chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() == Some(&'\'') {
                chars.next();
                out.push('\'');
            } else {
                break;
            }
        } else {
            out.push(c);
        }
    }
    out
}
