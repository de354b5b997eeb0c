//! Our own lexer over a page's content streams: the text its operators show, in one
//! pass, with no recursion and no list of every operation in memory.

use std::collections::BTreeMap;

use lopdf::Encoding;

/// Operands kept before an operator: text operators take three at most.
const MAX_OPERANDS: usize = 64;
/// Items kept of one array (a `TJ` line of kerned text has hundreds).
const MAX_ARRAY: usize = 100_000;

/// An operand of a content stream, as far as text needs it.
#[derive(Debug)]
enum Operand {
    Number(f64),
    Text(Vec<u8>),
    Name(Vec<u8>),
    Array(Vec<Operand>),
    Other,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'\0')
}

fn is_delimiter(c: u8) -> bool {
    matches!(
        c,
        b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
    )
}

/// The text a content stream shows, by lopdf's rules: `Tf` picks the font, `Tj`, `TJ`,
/// `'` and `"` show strings (a `TJ` gap of more than 100 units is a space, a `TJ` array
/// ends with one), and `T*`, `'`, `"` and `ET` start a line. Arrays nested past
/// `max_depth` end the stream's text there, and so does text past `max_text` bytes (a
/// font may map one byte to many characters). What it keeps between operators is
/// bounded too: the first [`MAX_OPERANDS`] operands, [`MAX_ARRAY`] items an array.
pub(super) fn content_text(
    content: &[u8],
    encodings: &BTreeMap<&[u8], Encoding<'_>>,
    max_depth: usize,
    max_text: usize,
) -> String {
    let b = content;
    let mut text = String::new();
    let mut operands: Vec<Operand> = Vec::new();
    // Arrays being read, innermost last.
    let mut open: Vec<Vec<Operand>> = Vec::new();
    let mut font: Option<&Encoding<'_>> = None;
    let mut i = 0;
    let push = |operands: &mut Vec<Operand>, open: &mut Vec<Vec<Operand>>, o: Operand| match open
        .last_mut()
    {
        Some(array) if array.len() < MAX_ARRAY => array.push(o),
        None if operands.len() < MAX_OPERANDS => operands.push(o),
        _ => {}
    };
    let new_line = |text: &mut String| {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
    };
    while i < b.len() {
        let c = b[i];
        if is_space(c) {
            i += 1;
            continue;
        }
        match c {
            b'%' => {
                while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
                    i += 1;
                }
            }
            b'(' => {
                let s = literal_string(b, &mut i);
                push(&mut operands, &mut open, Operand::Text(s));
            }
            b'<' if b.get(i + 1) == Some(&b'<') => {
                skip_dictionary(b, &mut i);
                push(&mut operands, &mut open, Operand::Other);
            }
            b'<' => {
                let s = hex_string(b, &mut i);
                push(&mut operands, &mut open, Operand::Text(s));
            }
            b'[' => {
                if open.len() == max_depth {
                    return text;
                }
                open.push(Vec::new());
                i += 1;
            }
            b']' => {
                i += 1;
                if let Some(array) = open.pop() {
                    push(&mut operands, &mut open, Operand::Array(array));
                }
            }
            b'/' => {
                let start = i + 1;
                i += 1;
                while i < b.len() && !is_space(b[i]) && !is_delimiter(b[i]) {
                    i += 1;
                }
                push(
                    &mut operands,
                    &mut open,
                    Operand::Name(b[start..i].to_vec()),
                );
            }
            b')' | b'>' | b'{' | b'}' => i += 1,
            _ => {
                let start = i;
                while i < b.len() && !is_space(b[i]) && !is_delimiter(b[i]) {
                    i += 1;
                }
                let token = &b[start..i];
                if let Some(n) = std::str::from_utf8(token)
                    .ok()
                    .and_then(|t| t.parse::<f64>().ok())
                {
                    push(&mut operands, &mut open, Operand::Number(n));
                    continue;
                }
                // An operator: it takes the operands before it (an array left open is
                // dropped, as a parser would refuse it).
                open.clear();
                match token {
                    b"Tf" => {
                        font = match operands.first() {
                            Some(Operand::Name(name)) => encodings.get(name.as_slice()),
                            _ => None,
                        };
                    }
                    b"Tj" | b"TJ" => {
                        if let Some(font) = font {
                            show(&mut text, font, &operands);
                        }
                    }
                    b"'" => {
                        if let Some(font) = font {
                            new_line(&mut text);
                            show(&mut text, font, &operands);
                        }
                    }
                    b"\"" => {
                        if let Some(font) = font {
                            new_line(&mut text);
                            show(&mut text, font, operands.get(2..).unwrap_or_default());
                        }
                    }
                    b"T*" | b"ET" => new_line(&mut text),
                    b"BI" => skip_inline_image(b, &mut i),
                    _ => {}
                }
                operands.clear();
                if text.len() > max_text {
                    return text;
                }
            }
        }
    }
    text
}

/// Appends the strings of `operands` as `font` decodes them.
fn show(text: &mut String, font: &Encoding<'_>, operands: &[Operand]) {
    // An array's strings, then its own space: iteratively, arrays inside arrays too.
    let mut stack: Vec<(&[Operand], bool)> = vec![(operands, false)];
    while let Some((rest, in_array)) = stack.pop() {
        let Some((first, tail)) = rest.split_first() else {
            if in_array {
                text.push(' ');
            }
            continue;
        };
        stack.push((tail, in_array));
        match first {
            Operand::Text(bytes) => {
                // Bytes the font cannot decode show nothing.
                let _ = font.write_to_string(bytes, text);
            }
            Operand::Array(items) => stack.push((items, true)),
            Operand::Number(n) if *n < -100.0 && n.fract() == 0.0 => text.push(' '),
            _ => {}
        }
    }
}

/// A `(…)` string starting at `b[*i]`, escapes decoded; `*i` moves past it.
pub(super) fn literal_string(b: &[u8], i: &mut usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut depth = 1usize;
    *i += 1;
    while *i < b.len() {
        let c = b[*i];
        *i += 1;
        match c {
            b'(' => {
                depth += 1;
                out.push(c);
            }
            b')' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
                out.push(c);
            }
            b'\\' if *i < b.len() => {
                let e = b[*i];
                *i += 1;
                match e {
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'0'..=b'7' => {
                        let mut v = u16::from(e - b'0');
                        for _ in 0..2 {
                            match b.get(*i) {
                                Some(&d @ b'0'..=b'7') => {
                                    v = v * 8 + u16::from(d - b'0');
                                    *i += 1;
                                }
                                _ => break,
                            }
                        }
                        out.push(v as u8);
                    }
                    b'\r' => {
                        if b.get(*i) == Some(&b'\n') {
                            *i += 1;
                        }
                    }
                    b'\n' => {}
                    other => out.push(other),
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// A `<…>` hex string starting at `b[*i]`; `*i` moves past it.
pub(super) fn hex_string(b: &[u8], i: &mut usize) -> Vec<u8> {
    *i += 1;
    let mut digits = Vec::new();
    while *i < b.len() && b[*i] != b'>' {
        if let Some(d) = (b[*i] as char).to_digit(16) {
            digits.push(d as u8);
        }
        *i += 1;
    }
    *i += 1;
    if digits.len() % 2 == 1 {
        digits.push(0);
    }
    digits.chunks(2).map(|p| p[0] << 4 | p[1]).collect()
}

/// Moves `*i` past a `<<…>>` dictionary (a marked-content property list), nested ones
/// and strings in it included, counting instead of recursing.
fn skip_dictionary(b: &[u8], i: &mut usize) {
    let mut depth = 0usize;
    while *i < b.len() {
        if b[*i..].starts_with(b"<<") {
            depth += 1;
            *i += 2;
        } else if b[*i..].starts_with(b">>") {
            depth -= 1;
            *i += 2;
            if depth == 0 {
                return;
            }
        } else if b[*i] == b'(' {
            literal_string(b, i);
        } else {
            *i += 1;
        }
    }
}

/// Moves `*i` past an inline image's data, to the `EI` that ends it.
fn skip_inline_image(b: &[u8], i: &mut usize) {
    while *i + 2 < b.len() {
        if is_space(b[*i])
            && &b[*i + 1..*i + 3] == b"EI"
            && b.get(*i + 3).is_none_or(|&c| is_space(c))
        {
            *i += 3;
            return;
        }
        *i += 1;
    }
    *i = b.len();
}
