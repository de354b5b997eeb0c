//! A PDF's text, page by page, read with limits on everything the file can make us do:
//! the nesting of its objects (lopdf refuses more than 100 levels), the bytes any stream
//! inflates to, the pages, the span of a font's ToUnicode map, and the text kept. The
//! text of a page comes from our own lexer over its content streams: one pass, no
//! recursion, no list of every operation in memory. What breaks a limit is the file's
//! refusal, with the reason; nothing here reads the file system.
//!
//! lopdf's own `extract_text` is not used: it lists pages through `get_pages`, whose
//! size hint trusts a forged `/Count` (an allocation of terabytes, an abort), and it
//! decodes whole content streams into operation lists.

use std::collections::BTreeMap;

use lopdf::{Dictionary, Document, Encoding, LoadOptions, Object, Stream};

mod content;

use self::content::content_text;

/// What a PDF may make the reader do.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Nesting of arrays in a content stream (lopdf bounds objects at 100 itself).
    pub max_depth: usize,
    /// Bytes any one stream may inflate to.
    pub max_stream: usize,
    /// Bytes all the content streams of the file may inflate to, together.
    pub max_content: usize,
    /// Pages read at most.
    pub max_pages: usize,
    /// Codes a font's ToUnicode ranges may span (lopdf expands every one).
    pub max_cmap_span: u64,
    /// Bytes of text kept, all pages together.
    pub max_text: usize,
}

/// The limits every PDF is read with.
pub(crate) const LIMITS: Limits = Limits {
    max_depth: 64,
    max_stream: 32 << 20,
    max_content: 256 << 20,
    max_pages: 20_000,
    max_cmap_span: 1 << 20,
    max_text: 64 << 20,
};

/// Bytes a ToUnicode map may inflate to.
const MAX_CMAP_BYTES: usize = 1 << 20;

/// Why a PDF is not read: a sentence for the user, without the file's name.
pub(crate) type Refusal = String;

/// The text of each page of the PDF in `bytes`, trimmed at the end; an encrypted one
/// is refused unless its user password is empty.
pub(crate) fn pages(bytes: &[u8], limits: &Limits) -> Result<Vec<String>, Refusal> {
    let mut doc = load(bytes, limits, false)?;
    // lopdf rebuilds a damaged cross-reference table only for loads without a filter:
    // one whose page tree did not load is loaded again, rebuilt by a scan.
    if doc.page_iter().next().is_none()
        && let Ok(rebuilt) = load(bytes, limits, true)
    {
        doc = rebuilt;
    }
    // A PDF encrypted with an empty user password opens as it loads; one with a password
    // does not.
    if doc.is_encrypted() && doc.authenticate_password("").is_err() {
        return Err(
            "the PDF is encrypted with a password; eywa cannot read it (save a copy \
                    without a password to add it)"
                .into(),
        );
    }
    let mut budget = Budget {
        content: limits.max_content,
        text: limits.max_text,
    };
    let mut pages = Vec::new();
    // `page_iter`, not `get_pages`: see the module's comment.
    for page in doc.page_iter() {
        if pages.len() == limits.max_pages {
            return Err(format!(
                "the PDF has more than {} pages; eywa reads at most that many",
                limits.max_pages
            ));
        }
        let text = page_text(&doc, page, limits, &mut budget)?;
        pages.push(text.trim_end().to_owned());
    }
    if pages.is_empty() {
        return Err("the PDF has no pages".into());
    }
    if pages.iter().all(|p| p.trim().is_empty()) {
        return Err(
            "the PDF has no text layer (scanned or image-only pages); eywa does not read images"
                .into(),
        );
    }
    Ok(pages)
}

/// Memory the objects of the PDF being loaded on this thread may still take, and whether
/// they took more. lopdf's load filter is a plain `fn`: the budget lives here.
#[derive(Debug, Clone, Copy, Default)]
struct Loaded {
    budget: usize,
    over: bool,
}

thread_local! {
    static LOADED: std::cell::Cell<Loaded> = const {
        std::cell::Cell::new(Loaded { budget: 0, over: false })
    };
}

/// lopdf's load filter: counts what each object takes, and drops every object once they
/// took the budget (a 500 KB stream listed 2,000 times in the cross-reference table is
/// 1 GB of copies).
fn count_object(id: lopdf::ObjectId, object: &mut Object) -> Option<(lopdf::ObjectId, Object)> {
    let mut loaded = LOADED.with(std::cell::Cell::get);
    let size = object_size(object);
    if loaded.over || size > loaded.budget {
        loaded.over = true;
        LOADED.with(|l| l.set(loaded));
        return None;
    }
    loaded.budget -= size;
    LOADED.with(|l| l.set(loaded));
    // lopdf keeps `object` itself for an object of the file, and what is returned for a
    // member of an object stream (never a stream): no stream is copied.
    let kept = match object {
        Object::Stream(_) => Object::Null,
        other => other.clone(),
    };
    Some((id, kept))
}

/// About the bytes `object` takes in memory, counted without recursion.
fn object_size(object: &Object) -> usize {
    let mut stack = vec![object];
    let mut size = 0usize;
    while let Some(o) = stack.pop() {
        size = size.saturating_add(32);
        match o {
            Object::String(s, _) | Object::Name(s) => size = size.saturating_add(s.len()),
            Object::Array(items) => stack.extend(items.iter()),
            Object::Dictionary(d) => {
                for (k, v) in d {
                    size = size.saturating_add(k.len());
                    stack.push(v);
                }
            }
            Object::Stream(s) => {
                size = size.saturating_add(s.content.len());
                for (k, v) in &s.dict {
                    size = size.saturating_add(k.len());
                    stack.push(v);
                }
            }
            _ => {}
        }
    }
    size
}

/// The document in `bytes`, its objects counted against the budget as they load (see
/// [`count_object`]), its cross-reference table rebuilt by a scan when `rebuild`.
fn load(bytes: &[u8], limits: &Limits, rebuild: bool) -> Result<Document, Refusal> {
    let options = LoadOptions {
        max_decompressed_size: Some(limits.max_stream),
        filter: Some(count_object),
        force_reconstruct: rebuild,
        ..LoadOptions::default()
    };
    LOADED.with(|l| {
        l.set(Loaded {
            budget: bytes.len().saturating_mul(4).saturating_add(64 << 20),
            over: false,
        });
    });
    let loaded = Document::load_mem_with_options(bytes, options);
    if LOADED.with(|l| l.get().over) {
        return Err(
            "the PDF's objects take more than four times its size in memory (an object \
             listed many times over?)"
                .into(),
        );
    }
    loaded.map_err(|e| match e {
        lopdf::Error::Decompress(_) => format!(
            "a stream of the PDF inflates past {} MB (a decompression bomb?)",
            limits.max_stream >> 20
        ),
        e => format!("not a PDF eywa can read ({e})"),
    })
}

/// What is left to spend on the rest of the file.
struct Budget {
    content: usize,
    text: usize,
}

/// One page's text.
fn page_text(
    doc: &Document,
    page: lopdf::ObjectId,
    limits: &Limits,
    budget: &mut Budget,
) -> Result<String, Refusal> {
    // Fonts whose ToUnicode maps we inflated and checked ourselves, then their encodings
    // (which borrow them).
    let fonts: Vec<(Vec<u8>, Dictionary)> = doc
        .get_page_fonts(page)
        .unwrap_or_default()
        .into_iter()
        .map(|(name, font)| Ok((name, checked_font(doc, font, limits)?)))
        .collect::<Result<_, Refusal>>()?;
    let encodings: BTreeMap<&[u8], Encoding<'_>> = fonts
        .iter()
        .filter_map(|(name, font)| {
            font.get_font_encoding_with_limit(doc, MAX_CMAP_BYTES)
                .ok()
                .map(|e| (name.as_slice(), e))
        })
        .collect();
    let mut content = Vec::new();
    for id in doc.get_page_contents(page) {
        let Ok(stream) = doc.get_object(id).and_then(Object::as_stream) else {
            continue;
        };
        let room = limits.max_stream.min(budget.content);
        let plain = match stream.decompressed_content_with_limit(room) {
            Ok(plain) => plain,
            Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded {
                ..
            })) => {
                return Err(if room < limits.max_stream {
                    format!(
                        "the PDF's pages inflate past {} MB in all (a decompression bomb?)",
                        limits.max_content >> 20
                    )
                } else {
                    format!(
                        "a page of the PDF inflates past {} MB (a decompression bomb?)",
                        limits.max_stream >> 20
                    )
                });
            }
            // A stream that does not decode shows no text; the rest of the page may.
            Err(_) => continue,
        };
        budget.content -= plain.len();
        content.extend_from_slice(&plain);
        content.push(b'\n');
    }
    let text = content_text(&content, &encodings, limits.max_depth, budget.text);
    if text.len() > budget.text {
        return Err(format!(
            "the PDF's text is over {} MB; eywa keeps at most that much",
            limits.max_text >> 20
        ));
    }
    budget.text -= text.len();
    Ok(text)
}

/// `font`, its ToUnicode map inflated and checked by us (size and the codes its ranges
/// span) and put in place as a plain stream, so that lopdf parses only what passed.
fn checked_font(doc: &Document, font: &Dictionary, limits: &Limits) -> Result<Dictionary, Refusal> {
    let mut font = font.clone();
    let Ok(map) = font
        .get_deref(b"ToUnicode", doc)
        .and_then(Object::as_stream)
    else {
        return Ok(font);
    };
    let plain = match map.decompressed_content_with_limit(MAX_CMAP_BYTES) {
        Ok(plain) => plain,
        Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { .. })) => {
            return Err(format!(
                "a font's ToUnicode map inflates past {} MB",
                MAX_CMAP_BYTES >> 20
            ));
        }
        // Unreadable: the font is read without it.
        Err(_) => {
            font.remove(b"ToUnicode");
            return Ok(font);
        }
    };
    let span = cmap_span(&plain);
    if span > limits.max_cmap_span {
        return Err(format!(
            "a font's ToUnicode map spans {span} codes; eywa reads maps of at most {}",
            limits.max_cmap_span
        ));
    }
    font.set(
        "ToUnicode",
        Object::Stream(Stream::new(Dictionary::new(), plain)),
    );
    Ok(font)
}

/// The codes the `bfrange` sections of a CMap span, added up (`<lo> <hi> …` counts
/// `hi - lo + 1`).
fn cmap_span(map: &[u8]) -> u64 {
    let mut total = 0u64;
    let mut at = 0;
    while let Some(start) = find(map, at, b"beginbfrange") {
        let end = find(map, start, b"endbfrange").unwrap_or(map.len());
        let mut codes: Vec<u64> = Vec::with_capacity(2);
        let mut i = start;
        while i < end {
            match map[i] {
                // A comment, to the end of its line (lopdf skips them too: a `<` in one
                // must not count as a code).
                b'%' => {
                    i += map[i..end]
                        .iter()
                        .position(|&c| c == b'\n' || c == b'\r')
                        .unwrap_or(end - i);
                }
                // A range's targets given as an array end the range.
                b'[' => {
                    i += map[i..end]
                        .iter()
                        .position(|&c| c == b']')
                        .unwrap_or(end - i);
                    codes.clear();
                }
                b'<' => {
                    let close = find(map, i, b">").unwrap_or(end).min(end);
                    let value = map[i + 1..close]
                        .iter()
                        .filter(|c| c.is_ascii_hexdigit())
                        .fold(0u64, |v, &c| {
                            v.saturating_mul(16)
                                .saturating_add(u64::from((c as char).to_digit(16).unwrap_or(0)))
                        });
                    codes.push(value);
                    if codes.len() == 2 {
                        total = total
                            .saturating_add(codes[1].saturating_sub(codes[0]).saturating_add(1));
                    } else if codes.len() == 3 {
                        codes.clear();
                    }
                    i = close;
                }
                _ => {}
            }
            i += 1;
        }
        at = end;
        if at >= map.len() {
            break;
        }
    }
    total
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay.get(from..)?, needle).map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::content::{hex_string, literal_string};
    use super::*;

    fn text(content: &[u8]) -> String {
        content_text(content, &BTreeMap::new(), 8, 1 << 20)
    }

    #[test]
    fn deep_operands_are_read_without_recursion() {
        let mut content = b"BT /F1 12 Tf ".to_vec();
        content.extend(b"<< /A ".repeat(100_000));
        content.extend(b"1");
        content.extend(b" >>".repeat(100_000));
        content.extend(b" BDC ");
        content.extend(b"[".repeat(100_000));
        content.extend(b" ET");
        assert_eq!(text(&content), "");
    }

    #[test]
    fn the_ranges_of_a_cmap_are_added_up() {
        let map =
            b"2 beginbfrange\n<0000> <00FF> <0041>\n<0100> <0101> [<0041> <0042>]\nendbfrange\n\
                    1 beginbfrange\n<000000> <FFFFFF> <0041>\nendbfrange";
        assert_eq!(cmap_span(map), 256 + 2 + (1 << 24));
        assert_eq!(cmap_span(b"no ranges"), 0);
        // A comment hiding a code does not pair the ranges after it wrongly.
        let hidden =
            b"1 beginbfrange\n<0000> <0001> <0041> % <>\n<00000000> <FFFFFFFF> <0041>\nendbfrange";
        assert_eq!(cmap_span(hidden), 2 + (1 << 32));
        let wide = b"1 beginbfrange\n<00> <FFFFFFFFFFFFFFFFFFFF> <0041>\nendbfrange";
        assert_eq!(cmap_span(wide), u64::MAX);
    }

    #[test]
    fn a_pdf_whose_cross_reference_table_is_wrong_is_rebuilt_and_read() {
        let objects = [
            "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
            "<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"
                .to_owned(),
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_owned(),
            "<< /Length 40 >>\nstream\nBT /F1 12 Tf 72 720 Td (rebuilt) Tj ET\nendstream"
                .to_owned(),
        ];
        let mut pdf = "%PDF-1.4\n".to_owned();
        for (i, body) in objects.iter().enumerate() {
            pdf.push_str(&format!("{} 0 obj\n{body}\nendobj\n", i + 1));
        }
        // Every entry points at the start of the file: a table written for another file.
        let xref = pdf.len();
        pdf.push_str("xref\n0 6\n0000000000 65535 f \n");
        for _ in 0..5 {
            pdf.push_str("0000000000 00000 n \n");
        }
        pdf.push_str(&format!(
            "trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
        ));
        let pages = pages(pdf.as_bytes(), &LIMITS).unwrap();
        assert_eq!(pages, ["rebuilt"]);
    }

    #[test]
    fn strings_decode_their_escapes() {
        let mut i = 0;
        assert_eq!(
            literal_string(br"(a\(b\)c\101\n(d))", &mut i),
            b"a(b)cA\n(d)"
        );
        let mut i = 0;
        assert_eq!(hex_string(b"<48 65 6c6C6f7>", &mut i), b"Hello\x70");
    }
}
