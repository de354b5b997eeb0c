//! Cutting text into pieces worth one embedding each: prose, about a paragraph long.

/// Characters of one chunk at most: about 250 tokens, what the model reads.
pub const MAX_CHUNK_CHARS: usize = 1_000;
/// Paragraphs are packed into one chunk up to this many characters.
const TARGET_CHUNK_CHARS: usize = 600;
/// A chunk needs this many letters or digits to say anything.
const MIN_ALPHANUMERIC: usize = 3;

/// The chunks of `text` to embed, at most `max`: fenced code blocks are left out (code is
/// not prose), paragraphs are packed up to ~600 characters, a longer paragraph is cut at
/// sentence ends, a longer sentence at spaces; pieces with almost no letters are dropped.
pub fn chunks(text: &str, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let flush = |current: &mut String, out: &mut Vec<String>| {
        let piece = current.trim();
        if piece.chars().filter(|c| c.is_alphanumeric()).count() >= MIN_ALPHANUMERIC {
            out.push(piece.to_owned());
        }
        current.clear();
    };
    for paragraph in paragraphs(text) {
        for piece in fit(&paragraph) {
            if !current.is_empty() && current.len() + 2 + piece.len() > TARGET_CHUNK_CHARS {
                flush(&mut current, &mut out);
            }
            if !current.is_empty() {
                current.push_str("\n\n");
            }
            current.push_str(&piece);
        }
        if out.len() >= max {
            break;
        }
    }
    flush(&mut current, &mut out);
    out.truncate(max);
    out
}

/// Paragraphs (separated by blank lines), with fenced code blocks left out.
fn paragraphs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_code = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if trimmed.is_empty() {
            if !current.trim().is_empty() {
                out.push(std::mem::take(&mut current));
            }
            current.clear();
            continue;
        }
        if !current.is_empty() {
            current.push('\n');
        }
        current.push_str(line.trim_end());
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

/// A paragraph as pieces of at most [`MAX_CHUNK_CHARS`]: whole if it fits, else its
/// sentences packed, a sentence too long cut at a space.
fn fit(paragraph: &str) -> Vec<String> {
    if paragraph.len() <= MAX_CHUNK_CHARS {
        return vec![paragraph.to_owned()];
    }
    let mut pieces = Vec::new();
    let mut current = String::new();
    for sentence in sentences(paragraph) {
        for part in cut(sentence) {
            if !current.is_empty() && current.len() + 1 + part.len() > MAX_CHUNK_CHARS {
                pieces.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(part.trim());
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// Sentences: cut after `.`, `!`, `?` followed by whitespace, and at line ends.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let end_mark = matches!(c, '.' | '!' | '?')
            && chars.peek().is_some_and(|(_, next)| next.is_whitespace());
        if end_mark || c == '\n' {
            let end = i + c.len_utf8();
            if !text[start..end].trim().is_empty() {
                out.push(&text[start..end]);
            }
            start = end;
        }
    }
    if !text[start..].trim().is_empty() {
        out.push(&text[start..]);
    }
    out
}

/// A sentence as parts of at most [`MAX_CHUNK_CHARS`], cut at the last space before the
/// limit (or at the limit, on a character boundary, when there is none).
fn cut(sentence: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = sentence.trim();
    while rest.len() > MAX_CHUNK_CHARS {
        let mut limit = MAX_CHUNK_CHARS;
        while !rest.is_char_boundary(limit) {
            limit -= 1;
        }
        let at = rest[..limit]
            .rfind(char::is_whitespace)
            .filter(|&i| i > 0)
            .unwrap_or(limit);
        out.push(&rest[..at]);
        rest = rest[at..].trim_start();
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_prose_is_one_chunk_and_code_is_left_out() {
        let text = "Fixed the tokenizer.\n\n```rust\nfn main() {}\n```\n\nIt now keeps emoji.";
        assert_eq!(
            chunks(text, 8),
            ["Fixed the tokenizer.\n\nIt now keeps emoji."]
        );
        assert!(chunks("```\nonly code\n```", 8).is_empty());
        assert!(chunks("  \n -- \n", 8).is_empty());
    }

    #[test]
    fn long_text_is_cut_at_paragraphs_then_sentences_then_spaces() {
        let paragraph = |n: usize| format!("{} end.", "word ".repeat(n));
        let text = [paragraph(60), paragraph(60), paragraph(60)].join("\n\n");
        let got = chunks(&text, 8);
        // Each paragraph is ~305 characters: two do not fit under 600 together.
        assert_eq!(got.len(), 3);
        let sentence = "This sentence repeats itself. ".repeat(60);
        let got = chunks(&sentence, 8);
        assert!(got.iter().all(|c| c.len() <= MAX_CHUNK_CHARS));
        assert!(got.iter().all(|c| c.ends_with("itself.")), "{got:?}");
        let no_spaces = "é".repeat(1_500);
        let got = chunks(&no_spaces, 8);
        assert!(got.iter().all(|c| c.len() <= MAX_CHUNK_CHARS));
        assert_eq!(got.concat(), no_spaces);
        let words = "lorem ipsum ".repeat(400);
        let got = chunks(&words, 3);
        assert_eq!(got.len(), 3);
    }
}
