//! What the index keys text by: each character folded ([`fold`]), three of them as one
//! trigram ([`grams_of`]), and the trigrams a pattern's literal parts require
//! ([`need_of`]).

use std::collections::HashMap;

use regex_syntax::hir::{Class, Hir, HirKind};

/// What a pattern needs of a line's text, in trigrams: every one of `All`, one of
/// `Either`, or nothing the index can tell (`Any`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    Any,
    Gram(u64),
    All(Vec<Need>),
    Either(Vec<Need>),
}

/// `c` as the index keeps it: the least character of its simple case-folding orbit
/// (lowercased when that is ASCII), so every character a case-insensitive pattern takes
/// for `c` keys the same trigram.
pub fn fold(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    thread_local! {
        static FOLDED: std::cell::RefCell<HashMap<char, char>> =
            std::cell::RefCell::new(HashMap::new());
    }
    FOLDED.with(|folded| {
        *folded.borrow_mut().entry(c).or_insert_with(|| {
            let mut class =
                regex_syntax::hir::ClassUnicode::new([regex_syntax::hir::ClassUnicodeRange::new(
                    c, c,
                )]);
            class.case_fold_simple();
            class
                .ranges()
                .first()
                .map_or(c, |r| r.start().to_ascii_lowercase())
        })
    })
}

/// Three folded characters as one key: 21 bits each.
pub(super) fn gram(a: char, b: char, c: char) -> u64 {
    (u64::from(a) << 42) | (u64::from(b) << 21) | u64::from(c)
}

/// Adds the folded trigrams of `text` to `out` (unsorted, with repeats).
pub fn grams_of(text: &str, out: &mut Vec<u64>) {
    let mut window = ['\0'; 2];
    for (seen, c) in text.chars().enumerate() {
        let c = fold(c);
        if seen >= 2 {
            out.push(gram(window[0], window[1], c));
        }
        window = [window[1], c];
    }
}

/// The trigrams a match of `pattern` must contain, from its literal parts; `Any` when it
/// has no literal run of three characters the index can key (or does not parse: the
/// caller's regex reports that).
pub fn need_of(pattern: &str, regex: bool) -> Need {
    if !regex {
        return literal_need(&pattern.chars().map(fold).collect::<Vec<_>>());
    }
    match regex_syntax::ParserBuilder::new().build().parse(pattern) {
        Ok(hir) => simplify(need_hir(&hir)),
        Err(_) => Need::Any,
    }
}

fn literal_need(chars: &[char]) -> Need {
    if chars.len() < 3 {
        return Need::Any;
    }
    let mut grams: Vec<u64> = chars.windows(3).map(|w| gram(w[0], w[1], w[2])).collect();
    grams.sort_unstable();
    grams.dedup();
    Need::All(grams.into_iter().map(Need::Gram).collect())
}

/// The one folded character a class stands for, when all it holds fold to one.
fn single_char(class: &Class) -> Option<char> {
    let Class::Unicode(class) = class else {
        return None;
    };
    let mut one = None;
    for range in class.ranges() {
        // Orbits are small: a wider range is not one character's cases.
        if u32::from(range.end()) - u32::from(range.start()) > 4 {
            return None;
        }
        for c in range.start()..=range.end() {
            let f = fold(c);
            match one {
                None => one = Some(f),
                Some(o) if o == f => {}
                Some(_) => return None,
            }
        }
    }
    one
}

fn need_hir(hir: &Hir) -> Need {
    match hir.kind() {
        HirKind::Literal(lit) => match std::str::from_utf8(&lit.0) {
            Ok(s) => literal_need(&s.chars().map(fold).collect::<Vec<_>>()),
            Err(_) => Need::Any,
        },
        HirKind::Repetition(rep) if rep.min >= 1 => need_hir(&rep.sub),
        HirKind::Capture(cap) => need_hir(&cap.sub),
        HirKind::Concat(parts) => {
            let mut all = Vec::new();
            let mut run: Vec<char> = Vec::new();
            for part in parts {
                let chars = match part.kind() {
                    HirKind::Literal(lit) => std::str::from_utf8(&lit.0)
                        .ok()
                        .map(|s| s.chars().map(fold).collect::<Vec<_>>()),
                    HirKind::Class(class) => single_char(class).map(|c| vec![c]),
                    _ => None,
                };
                if let Some(chars) = chars {
                    run.extend(chars);
                } else {
                    all.push(literal_need(&run));
                    run.clear();
                    all.push(need_hir(part));
                }
            }
            all.push(literal_need(&run));
            Need::All(all)
        }
        HirKind::Alternation(parts) => Need::Either(parts.iter().map(need_hir).collect()),
        HirKind::Class(_) | HirKind::Empty | HirKind::Look(_) | HirKind::Repetition(_) => Need::Any,
    }
}

/// `need` with `Any` parts of an `All` dropped, an `Either` with an `Any` branch made
/// `Any`, and one-part groups unwrapped.
fn simplify(need: Need) -> Need {
    match need {
        Need::All(parts) => {
            let mut kept: Vec<Need> = parts
                .into_iter()
                .map(simplify)
                .filter(|p| *p != Need::Any)
                .flat_map(|p| match p {
                    Need::All(inner) => inner,
                    other => vec![other],
                })
                .collect();
            kept.sort_by_key(|p| match p {
                Need::Gram(g) => *g,
                _ => u64::MAX,
            });
            kept.dedup();
            match kept.len() {
                0 => Need::Any,
                1 => kept.pop().expect("one part"),
                _ => Need::All(kept),
            }
        }
        Need::Either(parts) => {
            let mut kept = Vec::with_capacity(parts.len());
            for part in parts {
                match simplify(part) {
                    Need::Any => return Need::Any,
                    p => kept.push(p),
                }
            }
            match kept.len() {
                0 => Need::Any,
                1 => kept.pop().expect("one part"),
                _ => Need::Either(kept),
            }
        }
        other => other,
    }
}
