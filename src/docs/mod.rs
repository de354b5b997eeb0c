//! Documents a user adds (`eywa docs add`): markdown, text and PDF files read into text
//! (a PDF page by page), each change of a file a new version in a chain by content hash
//! with a latest pointer per path, every version's text kept in the cold tier. Writing
//! one is `crate::ingest`'s; here are reading a file, the records, and reading, listing
//! and finding what to add as a client asks.

use std::path::Path;

use eywa_storage::{Keyspace, Store};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::Timestamp;
use crate::{Error, Result};

mod files;
mod pdf;
mod worker;

pub(crate) use self::files::{collect_files, files_to_add, normal_path};
pub use self::worker::{CHILD_COMMAND, isolate_in, run_child};

/// Bytes of a file read as a document at most.
pub const MAX_DOCUMENT_BYTES: u64 = 64 * 1024 * 1024;
/// Documents a list shows at most.
pub const MAX_DOCUMENTS: usize = 1_000;
/// Characters of a document's summary at most.
const SUMMARY_CHARS: usize = 400;
/// Sentences of a document's summary at most.
const SUMMARY_SENTENCES: usize = 3;
/// Characters of a title taken from a first line.
const TITLE_CHARS: usize = 120;
/// Pages of a document's text are joined by this character in its cold-tier blob.
pub(crate) const PAGE_BREAK: char = '\u{c}';

/// Key prefix of a document's latest pointer: `d | id (8 bytes)`.
const HEAD: u8 = b'd';
/// Key prefix of a version: `v | id (8 bytes) | version (u32, big-endian)`.
const VERSION: u8 = b'v';

pub use crate::model::DOCUMENT_TYPE;

/// One version of a document, as stored (seed 002's Document).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentInfo {
    /// 16 hex digits, from the file's absolute path: every version of a path has it.
    pub id: String,
    /// The file's absolute path.
    pub path: String,
    /// 1 for the first version read, one more for each change of content.
    pub version: u32,
    /// sha256 of the file's bytes, hex.
    pub hash: String,
    /// `md`, `txt` or `pdf`.
    pub mime: String,
    /// Bytes of the file.
    pub bytes: u64,
    /// Pages of a PDF; 0 for a file without pages.
    pub pages: u32,
    /// Characters of its text.
    pub chars: u64,
    /// Its first heading, else its first line, else its file name.
    pub title: String,
    /// Its most telling sentences (extractive: those saying most of its key concepts),
    /// in their order.
    pub summary: String,
    /// The terms it says most.
    pub key_concepts: Vec<String>,
    /// Graph entities it mentions, as (type, name): its key concepts, and the project
    /// whose folder holds it.
    pub entities: Vec<(String, String)>,
    /// The project it belongs to: given when added, else the one whose folder holds it.
    pub project: Option<String>,
    /// The file's modification time when this version was read.
    pub modified_at: Timestamp,
    /// When this version was read.
    pub added_at: Timestamp,
    /// When a newer version replaced it; `None` for the latest.
    pub replaced_at: Option<Timestamp>,
    /// The cold-tier blob of its text (pages joined by a form feed).
    pub text_blob: String,
}

/// A document's latest pointer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Head {
    pub path: String,
    pub latest: u32,
}

/// A file that could not be read as a document, added or in a followed folder: a
/// followed folder's is not read again until it changes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailedDocument {
    /// The file, absolute.
    pub path: String,
    /// Why it could not be read.
    pub reason: String,
    /// When it failed (the last time).
    pub failed_at: Timestamp,
    /// Its size then.
    pub bytes: u64,
    /// Its modification time then.
    pub modified_at: Timestamp,
}

/// A version of a document with its text.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentText {
    /// The version.
    pub info: DocumentInfo,
    /// Its text, page by page (one page for a file without pages).
    pub pages: Vec<String>,
}

/// What adding a file did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Added {
    /// A path not seen before: version 1.
    New,
    /// The content changed: a new version, linked to the one before.
    Changed,
    /// The content is the latest version's: nothing was written.
    Unchanged,
}

impl Added {
    /// `new`, `changed` or `unchanged`.
    pub fn as_str(self) -> &'static str {
        match self {
            Added::New => "new",
            Added::Changed => "changed",
            Added::Unchanged => "unchanged",
        }
    }

    /// Parses [`Added::as_str`].
    pub fn parse(s: &str) -> Option<Added> {
        [Added::New, Added::Changed, Added::Unchanged]
            .into_iter()
            .find(|a| a.as_str() == s)
    }
}

/// What adding one file did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DocumentOutcome {
    /// The file, absolute.
    pub path: String,
    /// The version it is now, and whether it is new, changed or unchanged; or why it
    /// could not be read (nothing of it was written).
    pub result: std::result::Result<(DocumentInfo, Added), String>,
}

/// What following folders did, and the folders followed after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Followed {
    /// What adding the folders' files did.
    pub outcomes: Vec<DocumentOutcome>,
    /// Every folder followed, with the project it was followed with.
    pub folders: Vec<(String, Option<String>)>,
}

/// `outcomes`, unless every file failed: then why each failed is the error.
pub(crate) fn unless_all_failed(outcomes: Vec<DocumentOutcome>) -> Result<Vec<DocumentOutcome>> {
    if outcomes.iter().all(|o| o.result.is_err()) {
        let why: Vec<&str> = outcomes
            .iter()
            .filter_map(|o| o.result.as_ref().err().map(String::as_str))
            .collect();
        return Err(Error::InvalidArgument(why.join("; ")));
    }
    Ok(outcomes)
}

/// Why `limit` is not a page of documents (or of files that failed), if it is not: it is
/// from 1 to [`MAX_DOCUMENTS`].
pub(crate) fn check_page(limit: usize) -> Result<()> {
    if limit == 0 || limit > MAX_DOCUMENTS {
        return Err(Error::InvalidArgument(format!(
            "limit must be 1 to {MAX_DOCUMENTS}, not {limit}"
        )));
    }
    Ok(())
}

/// `limit` of `all` from `offset`, and how many there are.
pub(crate) fn one_page<T>(all: Vec<T>, limit: usize, offset: usize) -> (Vec<T>, u64) {
    let total = all.len() as u64;
    (all.into_iter().skip(offset).take(limit).collect(), total)
}

/// A file read into text.
pub(crate) struct Extracted {
    pub mime: &'static str,
    pub pages: Vec<String>,
    pub title: String,
}

/// Reads `bytes` of the file at `path` into text, by its extension: `.md`/`.markdown`,
/// `.txt`/`.text`, `.pdf`. A PDF that is encrypted (with a password), that does not parse,
/// or that has no text layer (scanned pages) is refused with the reason.
pub(crate) fn extract(path: &Path, bytes: &[u8]) -> Result<Extracted> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let (mime, pages) = match ext.as_str() {
        "md" | "markdown" => ("md", vec![utf8(path, bytes)?]),
        "txt" | "text" => ("txt", vec![utf8(path, bytes)?]),
        "pdf" => ("pdf", pdf_pages(path, bytes)?),
        other => {
            return Err(Error::InvalidArgument(format!(
                "{}: eywa reads .md, .txt and .pdf files, not {}",
                crate::error::quote_path(path),
                if other.is_empty() {
                    "files without an extension".to_owned()
                } else {
                    format!(".{other}")
                }
            )));
        }
    };
    let title = title(mime, &pages).unwrap_or(name);
    Ok(Extracted { mime, pages, title })
}

/// Reads `bytes` as the document `name` would be read (its text, title, summary and key
/// concepts), a PDF on this thread with the limits every PDF is read with: for the fuzz
/// targets (eywa itself reads a PDF through [`worker`]).
#[doc(hidden)]
pub fn read_here(name: &str, bytes: &[u8]) -> Result<(String, String, Vec<String>)> {
    let path = Path::new(name);
    let extracted = if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pdf"))
    {
        let pages = pdf::pages(bytes, &pdf::LIMITS).map_err(Error::InvalidArgument)?;
        let title = title("pdf", &pages).unwrap_or_default();
        Extracted {
            mime: "pdf",
            pages,
            title,
        }
    } else {
        extract(path, bytes)?
    };
    let text = extracted.pages.join(&PAGE_BREAK.to_string());
    let concepts = crate::extract::text_keywords(&text);
    let summary = summary(&text, &concepts);
    Ok((extracted.title, summary, concepts))
}

fn utf8(path: &Path, bytes: &[u8]) -> Result<String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| {
        Error::InvalidArgument(format!(
            "{}: not UTF-8 text",
            crate::error::quote_path(path)
        ))
    })
}

/// The text of each page of a PDF, read with limits (see [`pdf`]) where a failure is
/// this file's and never the process's (see [`worker`]).
fn pdf_pages(path: &Path, bytes: &[u8]) -> Result<Vec<String>> {
    worker::read_pdf(bytes)
        .map_err(|why| Error::InvalidArgument(format!("{}: {why}", crate::error::quote_path(path))))
}

/// A markdown file's first `# ` heading, else any document's first line.
fn title(mime: &str, pages: &[String]) -> Option<String> {
    let lines = || pages.iter().flat_map(|p| p.lines()).map(str::trim);
    let heading = (mime == "md")
        .then(|| lines().find_map(|l| l.strip_prefix("# ")))
        .flatten();
    heading
        .or_else(|| lines().find(|l| !l.is_empty()))
        .map(|t| {
            t.trim_start_matches('#')
                .trim()
                .chars()
                .take(TITLE_CHARS)
                .collect()
        })
}

/// The sentences of `text` that say most of `concepts` (up to three, in their order, at
/// most 400 characters); its first sentence when none does.
pub(crate) fn summary(text: &str, concepts: &[String]) -> String {
    let sentences: Vec<&str> = text
        .split(['.', '!', '?', '\n', PAGE_BREAK])
        .map(|s| s.trim().trim_start_matches('#').trim())
        .filter(|s| s.split_whitespace().count() >= 4)
        .collect();
    let mut scored: Vec<(usize, usize)> = sentences
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let lowered = s.to_lowercase();
            (
                i,
                concepts
                    .iter()
                    .filter(|c| lowered.contains(c.as_str()))
                    .count(),
            )
        })
        .collect();
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    // Sentences that say a concept, when some do; else the first.
    if scored.first().is_some_and(|(_, n)| *n > 0) {
        scored.retain(|(_, n)| *n > 0);
    } else {
        scored.truncate(1);
    }
    let mut picked: Vec<usize> = scored
        .iter()
        .take(SUMMARY_SENTENCES)
        .map(|(i, _)| *i)
        .collect();
    picked.sort_unstable();
    let mut out = String::new();
    for i in picked {
        let sentence = sentences[i];
        if !out.is_empty() && out.chars().count() + sentence.chars().count() + 2 > SUMMARY_CHARS {
            break;
        }
        if !out.is_empty() {
            out.push_str(". ");
        }
        out.push_str(sentence);
    }
    if !out.is_empty() {
        out.push('.');
    }
    out.chars().take(SUMMARY_CHARS).collect()
}

/// The id of the document at `path` (absolute).
pub(crate) fn document_id(path: &str) -> String {
    Sha256::digest(path.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn id_bytes(id: &str) -> Option<[u8; 8]> {
    (id.len() == 16)
        .then(|| u64::from_str_radix(id, 16).ok())
        .flatten()
        .map(u64::to_be_bytes)
}

pub(crate) fn head_key(id: &str) -> Vec<u8> {
    let mut k = vec![HEAD];
    k.extend_from_slice(&id_bytes(id).unwrap_or_default());
    k
}

pub(crate) fn version_key(id: &str, version: u32) -> Vec<u8> {
    let mut k = vec![VERSION];
    k.extend_from_slice(&id_bytes(id).unwrap_or_default());
    k.extend_from_slice(&version.to_be_bytes());
    k
}

/// The source a document's text-index entries and chunks are filed under.
pub(crate) fn source(id: &str) -> String {
    format!("doc:{id}")
}

/// Reading documents from the store.
pub(crate) struct Documents<'s> {
    pub store: &'s Store,
}

impl Documents<'_> {
    pub(crate) fn head(&self, id: &str) -> Result<Option<Head>> {
        Ok(self.store.get(Keyspace::Docs, &head_key(id))?)
    }

    pub(crate) fn version(&self, id: &str, version: u32) -> Result<Option<DocumentInfo>> {
        Ok(self.store.get(Keyspace::Docs, &version_key(id, version))?)
    }

    pub(crate) fn latest(&self, id: &str) -> Result<Option<DocumentInfo>> {
        match self.head(id)? {
            Some(head) => self.version(id, head.latest),
            None => Ok(None),
        }
    }

    /// The id a reference names: an id (16 hex digits), or a path (made absolute).
    pub(crate) fn resolve(&self, reference: &str) -> Result<String> {
        let reference = reference.trim();
        if reference.is_empty() {
            return Err(Error::InvalidArgument(
                "name a document by its id or its path".into(),
            ));
        }
        if id_bytes(reference).is_some() && self.head(reference)?.is_some() {
            return Ok(reference.to_owned());
        }
        let path = normal_path(Path::new(reference))
            .map_or_else(|_| reference.to_owned(), |p| p.display().to_string());
        let id = document_id(&path);
        if self.head(&id)?.is_some() {
            return Ok(id);
        }
        Err(Error::NotFound(format!(
            "no document {}",
            crate::error::quote(reference)
        )))
    }

    /// Every version of document `id`, oldest first.
    pub(crate) fn history(&self, id: &str) -> Result<Vec<DocumentInfo>> {
        let mut prefix = vec![VERSION];
        prefix.extend_from_slice(&id_bytes(id).unwrap_or_default());
        self.store
            .scan::<DocumentInfo>(Keyspace::Docs, &prefix)
            .map(|kv| Ok(kv?.1))
            .collect()
    }

    /// Every version of every document, as stored, with its key.
    pub(crate) fn versions(&self) -> impl Iterator<Item = Result<(Vec<u8>, DocumentInfo)>> + '_ {
        self.store
            .scan::<DocumentInfo>(Keyspace::Docs, &[VERSION])
            .map(|kv| kv.map_err(Into::into))
    }

    /// The latest version of every document.
    pub(crate) fn all(&self) -> Result<Vec<DocumentInfo>> {
        let mut out = Vec::new();
        for kv in self.store.scan::<Head>(Keyspace::Docs, &[HEAD]) {
            let (key, head) = kv?;
            let id: String = key[1..].iter().map(|b| format!("{b:02x}")).collect();
            out.extend(self.version(&id, head.latest)?);
        }
        Ok(out)
    }

    /// A version's text, page by page, from the cold tier.
    pub(crate) fn text(&self, info: &DocumentInfo) -> Result<Vec<String>> {
        let bytes = self.store.read_blob(&info.text_blob)?.ok_or_else(|| {
            Error::NotFound(format!(
                "the text of {} version {} is missing from the cold tier",
                info.path, info.version
            ))
        })?;
        let text = String::from_utf8_lossy(&bytes);
        // Only a PDF has pages: a text file's own form feeds are its text.
        if info.mime != "pdf" {
            return Ok(vec![text.into_owned()]);
        }
        Ok(text.split(PAGE_BREAK).map(str::to_owned).collect())
    }

    /// Document `reference` (its id or path) with its text: the latest version, version
    /// `version`, or the version that was current at `as_of`.
    pub(crate) fn read(
        &self,
        reference: &str,
        version: Option<u32>,
        as_of: Option<Timestamp>,
    ) -> Result<DocumentText> {
        let id = self.resolve(reference)?;
        let info = match (version, as_of) {
            (Some(_), Some(_)) => {
                return Err(Error::InvalidArgument(
                    "give a version or a time, not both".into(),
                ));
            }
            (Some(v), None) => self.version(&id, v)?.ok_or_else(|| {
                Error::NotFound(format!(
                    "{} has no version {v}",
                    crate::error::quote(reference)
                ))
            })?,
            (None, Some(at)) => self
                .history(&id)?
                .into_iter()
                .rfind(|v| v.added_at <= at)
                .ok_or_else(|| {
                    Error::NotFound(format!(
                        "{} was not added yet at {}",
                        crate::error::quote(reference),
                        at.to_rfc3339()
                    ))
                })?,
            (None, None) => self.latest(&id)?.ok_or_else(|| {
                Error::NotFound(format!("no document {}", crate::error::quote(reference)))
            })?,
        };
        let pages = self.text(&info)?;
        Ok(DocumentText { info, pages })
    }

    /// The latest version of each document, most recently added first: `limit` from
    /// `offset`, and how many there are.
    pub(crate) fn page(&self, limit: usize, offset: usize) -> Result<(Vec<DocumentInfo>, u64)> {
        check_page(limit)?;
        let mut all = self.all()?;
        all.sort_by(|a, b| b.added_at.cmp(&a.added_at).then(a.path.cmp(&b.path)));
        Ok(one_page(all, limit, offset))
    }

    /// Every version of document `reference` (its id or path), oldest first.
    pub(crate) fn history_of(&self, reference: &str) -> Result<Vec<DocumentInfo>> {
        let id = self.resolve(reference)?;
        self.history(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_files_are_read_and_other_kinds_refused() {
        let md = extract(
            Path::new("/d/notes.md"),
            b"Intro\n\n# Release plan\n\nShip it.",
        )
        .unwrap();
        assert_eq!((md.mime, md.title.as_str()), ("md", "Release plan"));
        let txt = extract(Path::new("/d/a.TXT"), b"\n  First line here\nmore").unwrap();
        assert_eq!(
            (txt.mime, txt.title.as_str(), txt.pages.len()),
            ("txt", "First line here", 1)
        );
        let empty = extract(Path::new("/d/empty.txt"), b"").unwrap();
        assert_eq!(empty.title, "empty.txt");
        for (path, bytes, why) in [
            ("/d/a.docx", &b"x"[..], ".docx"),
            ("/d/README", b"x", "without an extension"),
            ("/d/bad.md", b"\xff\xfe", "not UTF-8"),
            ("/d/bad.pdf", b"%PDF-1.4 garbage", "not a PDF"),
        ] {
            let e = extract(Path::new(path), bytes).err().unwrap().to_string();
            assert!(e.contains(why), "{path}: {e}");
        }
    }

    #[test]
    fn the_summary_keeps_the_sentences_that_say_most() {
        let text = "Welcome to the handbook for everyone. Deploys run on fly with a canary. \
                    Lunch is at noon every day here. A canary deploy on fly takes ten minutes.";
        let s = summary(text, &["fly".into(), "canary".into(), "deploy".into()]);
        assert_eq!(
            s,
            "Deploys run on fly with a canary. A canary deploy on fly takes ten minutes."
        );
        assert_eq!(summary("Too short. Also short.", &[]), "");
    }

    #[test]
    fn passages_name_their_document_and_page() {
        assert_eq!(
            crate::model::document_passage("doc:0123456789abcdef#p3"),
            Some(("0123456789abcdef".into(), Some(3)))
        );
        assert_eq!(
            crate::model::document_passage("doc:0123456789abcdef#text"),
            Some(("0123456789abcdef".into(), None))
        );
        assert_eq!(crate::model::document_passage("/x.jsonl#1.0"), None);
    }
}
