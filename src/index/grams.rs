//! The trigram index behind `SearchSessions`: for each main session's transcript, the
//! distinct three-character sequences of its message text as eywa serves it (redacted),
//! case-folded. A search asks it which sessions hold every trigram its pattern's literal
//! parts require, and greps only those: the index narrows, the grep decides, so results
//! are the scan's. It lives in the index tier (`<store>/index/grams`) and is rebuilt from
//! the store.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;

use regex_syntax::hir::{Class, Hir, HirKind};
use tantivy::collector::DocSetCollector;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{FAST, Field, INDEXED, IndexRecordOption, STRING, Schema, TantivyDocument};
use tantivy::{Index, IndexReader, IndexWriter, Term};

use super::tantivy_error;

use crate::{Error, Result};

/// Memory the writer may use before it flushes a segment.
const WRITER_HEAP: usize = 48 * 1024 * 1024;

/// One source's entry: which transcript, its fingerprint when indexed, and the trigrams
/// of each of its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GramDoc {
    /// The source file (its key in the store): one entry each.
    pub path: String,
    pub session: String,
    /// What the source record said when its text was read: a different one means stale.
    pub fingerprint: u64,
    /// Keys the source itself is found by, whatever a pattern needs (a source that could
    /// not be read).
    pub always: Vec<u64>,
    /// Each message's distinct folded trigrams ([`grams_of`]): a session can hold a
    /// match only where one message holds every trigram a line of it needs.
    pub messages: Vec<Vec<u64>>,
}

/// What a document of the index is: a source's own, or one of its messages'.
const SOURCE_DOC: u64 = 0;
const MESSAGE_DOC: u64 = 1;

/// What a pattern needs of a line's text, in trigrams: every one of `All`, one of
/// `Either`, or nothing the index can tell (`Any`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    Any,
    Gram(u64),
    All(Vec<Need>),
    Either(Vec<Need>),
}

#[derive(Debug, Clone, Copy)]
struct Fields {
    path: Field,
    session: Field,
    fingerprint: Field,
    kind: Field,
    gram: Field,
}

impl Fields {
    fn schema() -> (Schema, Fields) {
        let mut b = Schema::builder();
        let fields = Fields {
            path: b.add_text_field("path", STRING | FAST),
            session: b.add_text_field("session", STRING | FAST),
            fingerprint: b.add_u64_field("fingerprint", FAST),
            kind: b.add_u64_field("kind", INDEXED | FAST),
            gram: b.add_u64_field("gram", INDEXED),
        };
        (b.build(), fields)
    }
}

/// The trigram index: one writer, searched through a reader refreshed on commit. The
/// commit's payload is the store's sources generation it holds every session of.
pub struct GramIndex {
    index: Index,
    fields: Fields,
    writer: Mutex<IndexWriter>,
    reader: IndexReader,
}

impl std::fmt::Debug for GramIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GramIndex").finish_non_exhaustive()
    }
}

impl GramIndex {
    /// Opens the index in `dir`, creating it if missing; one of another schema is removed
    /// and created empty (every session reads as stale, and is indexed again).
    pub fn open(dir: &Path) -> Result<GramIndex> {
        let (schema, fields) = Fields::schema();
        let (index, _) = super::open_or_create(dir, schema, "trigram index")?;
        let (writer, reader) = super::writer_and_reader(&index, WRITER_HEAP)?;
        Ok(GramIndex {
            index,
            fields,
            writer: Mutex::new(writer),
            reader,
        })
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, IndexWriter> {
        self.writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The sources generation the last commit brought the index up to; `None` before one.
    pub fn synced(&self) -> Result<Option<u64>> {
        let metas = self.index.load_metas().map_err(tantivy_error)?;
        Ok(metas.payload.and_then(|p| p.parse().ok()))
    }

    /// Every entry's source path and fingerprint.
    pub fn entries(&self) -> Result<HashMap<String, u64>> {
        let searcher = self.reader.searcher();
        let mut out = HashMap::new();
        for segment in searcher.segment_readers() {
            let fast = segment.fast_fields();
            let Some(paths) = fast.str("path").map_err(tantivy_error)? else {
                continue;
            };
            let prints = fast.u64("fingerprint").map_err(tantivy_error)?;
            let kinds = fast.u64("kind").map_err(tantivy_error)?;
            let mut path = String::new();
            for doc in 0..segment.max_doc() {
                if segment.is_deleted(doc) || kinds.first(doc) != Some(SOURCE_DOC) {
                    continue;
                }
                let Some(ord) = paths.term_ords(doc).next() else {
                    continue;
                };
                path.clear();
                paths
                    .ord_to_str(ord, &mut path)
                    .map_err(|e| Error::Index(e.to_string()))?;
                out.insert(path.clone(), prints.first(doc).unwrap_or(0));
            }
        }
        Ok(out)
    }

    /// Replaces the entries of `docs`' paths (committed by [`GramIndex::commit`]).
    pub fn put(&self, docs: &[GramDoc]) -> Result<()> {
        let f = self.fields;
        let writer = self.writer();
        for d in docs {
            writer.delete_term(Term::from_field_text(f.path, &d.path));
            let entry = |kind: u64, grams: &[u64]| {
                let mut doc = TantivyDocument::new();
                doc.add_text(f.path, &d.path);
                doc.add_text(f.session, &d.session);
                doc.add_u64(f.fingerprint, d.fingerprint);
                doc.add_u64(f.kind, kind);
                for &g in grams {
                    doc.add_u64(f.gram, g);
                }
                doc
            };
            writer
                .add_document(entry(SOURCE_DOC, &d.always))
                .map_err(tantivy_error)?;
            for grams in d.messages.iter().filter(|g| !g.is_empty()) {
                writer
                    .add_document(entry(MESSAGE_DOC, grams))
                    .map_err(tantivy_error)?;
            }
        }
        Ok(())
    }

    /// Drops the entries of these source paths (committed by [`GramIndex::commit`]).
    pub fn remove(&self, paths: &[String]) {
        let writer = self.writer();
        for path in paths {
            writer.delete_term(Term::from_field_text(self.fields.path, path));
        }
    }

    /// Makes what was put and removed durable and visible, as holding every session of
    /// sources generation `synced` (`None`: not known to hold them all).
    pub fn commit(&self, synced: Option<u64>) -> Result<()> {
        let mut writer = self.writer();
        let mut prepared = writer.prepare_commit().map_err(tantivy_error)?;
        if let Some(generation) = synced {
            prepared.set_payload(&generation.to_string());
        }
        prepared.commit().map_err(tantivy_error)?;
        drop(writer);
        self.reader.reload().map_err(tantivy_error)?;
        Ok(())
    }

    /// The sessions (by id) some of whose sources hold what `need` asks; `None` when the
    /// index cannot narrow it (every session may match).
    pub fn sessions(&self, need: &Need) -> Result<Option<HashSet<String>>> {
        let Some(query) = self.query(need) else {
            return Ok(None);
        };
        self.sessions_for(query.as_ref()).map(Some)
    }

    /// The source paths indexed for `session`.
    pub fn paths_of(&self, session: &str) -> Result<Vec<String>> {
        let term = |t| Box::new(TermQuery::new(t, IndexRecordOption::Basic)) as Box<dyn Query>;
        let query = BooleanQuery::new(vec![
            (
                Occur::Must,
                term(Term::from_field_text(self.fields.session, session)),
            ),
            (
                Occur::Must,
                term(Term::from_field_u64(self.fields.kind, SOURCE_DOC)),
            ),
        ]);
        self.column_of(&query, "path")
    }

    /// Every indexed session.
    pub fn all_sessions(&self) -> Result<HashSet<String>> {
        let query = TermQuery::new(
            Term::from_field_u64(self.fields.kind, SOURCE_DOC),
            IndexRecordOption::Basic,
        );
        self.sessions_for(&query)
    }

    fn sessions_for(&self, query: &dyn Query) -> Result<HashSet<String>> {
        Ok(self.column_of(query, "session")?.into_iter().collect())
    }

    /// The values of the string column `name` of every document `query` matches.
    fn column_of(&self, query: &dyn Query, name: &str) -> Result<Vec<String>> {
        let searcher = self.reader.searcher();
        let found = searcher
            .search(query, &DocSetCollector)
            .map_err(tantivy_error)?;
        let mut by_segment: HashMap<u32, Vec<u32>> = HashMap::new();
        for address in found {
            by_segment
                .entry(address.segment_ord)
                .or_default()
                .push(address.doc_id);
        }
        let mut out = Vec::new();
        let mut value = String::new();
        for (segment, docs) in by_segment {
            let reader = searcher.segment_reader(segment);
            let Some(column) = reader.fast_fields().str(name).map_err(tantivy_error)? else {
                continue;
            };
            for doc in docs {
                for ord in column.term_ords(doc) {
                    value.clear();
                    column
                        .ord_to_str(ord, &mut value)
                        .map_err(|e| Error::Index(e.to_string()))?;
                    out.push(value.clone());
                }
            }
        }
        Ok(out)
    }

    fn query(&self, need: &Need) -> Option<Box<dyn Query>> {
        match need {
            Need::Any => None,
            Need::Gram(g) => Some(Box::new(TermQuery::new(
                Term::from_field_u64(self.fields.gram, *g),
                IndexRecordOption::Basic,
            ))),
            Need::All(parts) => {
                let clauses: Vec<(Occur, Box<dyn Query>)> = parts
                    .iter()
                    .filter_map(|p| self.query(p))
                    .map(|q| (Occur::Must, q))
                    .collect();
                (!clauses.is_empty()).then(|| Box::new(BooleanQuery::new(clauses)) as _)
            }
            Need::Either(parts) => {
                let clauses: Option<Vec<(Occur, Box<dyn Query>)>> = parts
                    .iter()
                    .map(|p| self.query(p).map(|q| (Occur::Should, q)))
                    .collect();
                clauses.map(|c| Box::new(BooleanQuery::new(c)) as _)
            }
        }
    }
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
fn gram(a: char, b: char, c: char) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn grams(text: &str) -> HashSet<u64> {
        let mut out = Vec::new();
        grams_of(text, &mut out);
        out.into_iter().collect()
    }

    /// Whether text holding `grams` can satisfy `need`.
    fn holds(need: &Need, grams: &HashSet<u64>) -> bool {
        match need {
            Need::Any => true,
            Need::Gram(g) => grams.contains(g),
            Need::All(parts) => parts.iter().all(|p| holds(p, grams)),
            Need::Either(parts) => parts.iter().any(|p| holds(p, grams)),
        }
    }

    #[test]
    fn a_word_needs_its_trigrams_in_any_case() {
        let need = need_of("Recipe", false);
        assert!(holds(&need, &grams("a RECIPE for bread")));
        assert!(holds(&need, &grams("recipes")));
        assert!(!holds(&need, &grams("recip e")));
        assert_eq!(need_of("ab", false), Need::Any);
    }

    #[test]
    fn unicode_case_variants_key_the_same_trigram() {
        // The Kelvin sign and long s fold with k and s, as the regex crate's (?i) does.
        assert!(holds(&need_of("kiss", false), &grams("\u{212A}i\u{17F}s")));
        assert!(holds(&need_of("ÉTÉ", false), &grams("un été chaud")));
    }

    #[test]
    fn regexes_need_their_literal_parts() {
        let need = need_of(r"fn\s+parse_(line|row)s?", true);
        assert!(holds(&need, &grams("fn  parse_rows(")));
        assert!(holds(&need, &grams("fn parse_line")));
        assert!(!holds(&need, &grams("fn parse_col")));
        // (?i) classes of one letter's cases still make literal runs.
        let need = need_of("(?i)error", true);
        assert!(holds(&need, &grams("ERROR")));
        assert!(!holds(&need, &grams("erro")));
        // Nothing to key on: every session may match.
        assert_eq!(need_of(r"\d+", true), Need::Any);
        assert_eq!(need_of("a|bcd", true), Need::Any);
        assert_eq!(need_of("(abc)?", true), Need::Any);
        assert_eq!(need_of("(", true), Need::Any);
    }

    #[test]
    fn the_index_narrows_to_the_sessions_that_hold_every_trigram() {
        let dir = tempfile::tempdir().unwrap();
        let index = GramIndex::open(dir.path()).unwrap();
        assert_eq!(index.synced().unwrap(), None);
        let doc = |path: &str, session: &str, text: &str| GramDoc {
            path: path.into(),
            session: session.into(),
            fingerprint: text.len() as u64,
            always: Vec::new(),
            messages: text
                .split('|')
                .map(|message| {
                    let mut grams = Vec::new();
                    grams_of(message, &mut grams);
                    grams.sort_unstable();
                    grams.dedup();
                    grams
                })
                .collect(),
        };
        index
            .put(&[
                doc("/a.jsonl", "a", "the recipe for bread"),
                doc("/b.jsonl", "b", "a regex parser"),
                doc("/b2.jsonl", "b", "moved copy"),
            ])
            .unwrap();
        index.commit(Some(7)).unwrap();
        assert_eq!(index.synced().unwrap(), Some(7));
        let found = |p: &str, regex| index.sessions(&need_of(p, regex)).unwrap();
        assert_eq!(
            found("RECIPE", false),
            Some(HashSet::from(["a".to_owned()]))
        );
        assert_eq!(
            found("recipe|parser", true),
            Some(HashSet::from(["a".to_owned(), "b".to_owned()]))
        );
        assert_eq!(found("nowhere", false), Some(HashSet::new()));
        // Every trigram in one message: `bread` is split over two of b's.
        index
            .put(&[doc("/c.jsonl", "c", "a loaf of br|ead")])
            .unwrap();
        index.commit(Some(7)).unwrap();
        assert_eq!(found("bread", false), Some(HashSet::from(["a".to_owned()])));
        assert_eq!(found(".*", true), None);
        let mut paths = index.paths_of("b").unwrap();
        paths.sort();
        assert_eq!(paths, ["/b.jsonl", "/b2.jsonl"]);

        // Replaced and removed entries are gone from what it answers.
        index.put(&[doc("/a.jsonl", "a", "no bread")]).unwrap();
        index.remove(&["/b.jsonl".into()]);
        index.commit(Some(8)).unwrap();
        assert_eq!(found("recipe", false), Some(HashSet::new()));
        assert_eq!(found("parser", false), Some(HashSet::new()));
        let entries = index.entries().unwrap();
        assert_eq!(
            entries,
            HashMap::from([
                ("/a.jsonl".to_owned(), 8),
                ("/b2.jsonl".to_owned(), 10),
                ("/c.jsonl".to_owned(), 16)
            ])
        );
        drop(index);
        // What was committed is there after a reopen; a commit not known to hold every
        // session says so.
        let index = GramIndex::open(dir.path()).unwrap();
        assert_eq!(index.synced().unwrap(), Some(8));
        index.commit(None).unwrap();
        assert_eq!(index.synced().unwrap(), None);
        assert_eq!(index.all_sessions().unwrap().len(), 3);
    }
}
