//! Cutting text into pieces worth one embedding each: prose, about a paragraph long, each
//! with the range of the text it covers.

/// Characters of one chunk at most: about 250 tokens, what the model reads.
pub const MAX_CHUNK_CHARS: usize = 1_000;
/// Paragraphs are packed into one chunk up to this many characters.
const TARGET_CHUNK_CHARS: usize = 600;
/// A chunk needs this many letters or digits to say anything.
const MIN_ALPHANUMERIC: usize = 3;

/// One chunk of a text: what is embedded, and where in the text it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The chunk's prose: its paragraphs joined by a blank line, code blocks left out,
    /// line ends trimmed.
    pub text: String,
    /// Characters (not bytes) of the text before the chunk's first character.
    pub start_char: usize,
    /// Characters of the text up to the chunk's last character: the chunk covers
    /// `start_char..end_char`.
    pub end_char: usize,
}

/// The chunks of `text` to embed, at most `max`: fenced code blocks are left out (code is
/// not prose), paragraphs are packed up to ~600 characters, a longer paragraph is cut at
/// sentence ends, a longer sentence at spaces; pieces with almost no letters are dropped.
pub fn chunks(text: &str, max: usize) -> Vec<String> {
    spans(text, max).into_iter().map(|s| s.text).collect()
}

/// [`chunks`], each with the range of `text` it covers.
pub fn spans(text: &str, max: usize) -> Vec<Span> {
    let mut out = Vec::new();
    // The chunk being packed, and the byte range of `text` it covers so far.
    let mut current = String::new();
    let mut range = (0, 0);
    let flush = |current: &mut String, range: (usize, usize), out: &mut Vec<Span>| {
        let piece = current.trim();
        if piece.chars().filter(|c| c.is_alphanumeric()).count() >= MIN_ALPHANUMERIC {
            out.push(Span {
                text: piece.to_owned(),
                start_char: text[..range.0].chars().count(),
                end_char: text[..range.1].chars().count(),
            });
        }
        current.clear();
    };
    for paragraph in paragraphs(text) {
        for (piece, start, end) in fit(&paragraph) {
            if !current.is_empty() && current.len() + 2 + piece.len() > TARGET_CHUNK_CHARS {
                flush(&mut current, range, &mut out);
            }
            if current.is_empty() {
                range.0 = paragraph.original(start);
            } else {
                current.push_str("\n\n");
            }
            range.1 = paragraph.original(end);
            current.push_str(&piece);
        }
        if out.len() >= max {
            break;
        }
    }
    flush(&mut current, range, &mut out);
    out.truncate(max);
    out
}

/// A paragraph: its lines, right-trimmed and joined by `\n`, and where each line starts
/// in the text it came from.
struct Paragraph {
    text: String,
    /// `(offset in text, offset in the source)` of each line's first byte.
    lines: Vec<(usize, usize)>,
}

impl Paragraph {
    /// The byte of the source at byte `at` of the paragraph's text.
    fn original(&self, at: usize) -> usize {
        let i = self.lines.partition_point(|&(own, _)| own <= at).max(1) - 1;
        let (own, source) = self.lines[i];
        source + (at - own)
    }
}

/// Paragraphs (separated by blank lines), with fenced code blocks left out.
fn paragraphs(text: &str) -> Vec<Paragraph> {
    let mut out = Vec::new();
    let mut current = Paragraph {
        text: String::new(),
        lines: Vec::new(),
    };
    let mut in_code = false;
    let mut offset = 0;
    for raw in text.split_inclusive('\n') {
        let at = offset;
        offset += raw.len();
        let line = raw.trim_end_matches('\n').trim_end_matches('\r');
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if trimmed.is_empty() {
            if !current.text.trim().is_empty() {
                out.push(std::mem::replace(
                    &mut current,
                    Paragraph {
                        text: String::new(),
                        lines: Vec::new(),
                    },
                ));
            }
            current.text.clear();
            current.lines.clear();
            continue;
        }
        if !current.text.is_empty() {
            current.text.push('\n');
        }
        current.lines.push((current.text.len(), at));
        current.text.push_str(line.trim_end());
    }
    if !current.text.trim().is_empty() {
        out.push(current);
    }
    out
}

/// A paragraph as pieces of at most [`MAX_CHUNK_CHARS`], each with the byte range of the
/// paragraph's text it covers: whole if it fits, else its sentences packed, a sentence too
/// long cut at a space.
fn fit(paragraph: &Paragraph) -> Vec<(String, usize, usize)> {
    let text = paragraph.text.as_str();
    if text.len() <= MAX_CHUNK_CHARS {
        // The range starts at its first character, past an indent.
        let lead = text.len() - text.trim_start().len();
        return vec![(text.to_owned(), lead, text.len().max(lead))];
    }
    let at = |part: &str| part.as_ptr() as usize - text.as_ptr() as usize;
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut range = (0, 0);
    for sentence in sentences(text) {
        for part in cut(sentence) {
            let part = part.trim();
            if !current.is_empty() && current.len() + 1 + part.len() > MAX_CHUNK_CHARS {
                pieces.push((std::mem::take(&mut current), range.0, range.1));
            }
            if current.is_empty() {
                range.0 = at(part);
            } else {
                current.push(' ');
            }
            range.1 = at(part) + part.len();
            current.push_str(part);
        }
    }
    if !current.is_empty() {
        pieces.push((current, range.0, range.1));
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

    #[test]
    fn each_span_names_the_range_of_the_text_it_covers() {
        let text = format!(
            "Intro line é.  \r\n\n```sh\nls -la\n```\n\nSecond paragraph\nwith two lines\n\n{}",
            "A long sentence goes on here. ".repeat(80)
        );
        let got = spans(&text, 16);
        assert!(got.len() >= 3, "{got:?}");
        let chars: Vec<char> = text.chars().collect();
        for span in &got {
            let covered: String = chars[span.start_char..span.end_char].iter().collect();
            // The range starts at the chunk's first character and ends at its last.
            let head: String = span.text.chars().take(8).collect();
            let last: String = span
                .text
                .chars()
                .rev()
                .take(8)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            assert!(covered.starts_with(&head), "{covered:?} / {span:?}");
            assert!(covered.ends_with(&last), "{covered:?} / {span:?}");
            // Every word of the chunk is in the range it names.
            for word in span.text.split_whitespace() {
                assert!(covered.contains(word), "{word} not in {covered:?}");
            }
        }
        // The first chunk packs both short paragraphs, and its range runs over the code.
        assert_eq!(
            got[0].text,
            "Intro line é.\n\nSecond paragraph\nwith two lines"
        );
        assert_eq!(got[0].start_char, 0);
        assert!(
            chars[..got[0].end_char]
                .iter()
                .collect::<String>()
                .contains("ls -la")
        );
        assert_eq!(
            chunks(&text, 16),
            got.iter().map(|s| s.text.clone()).collect::<Vec<_>>()
        );
    }
}
