//! Adding a user's document: the file read into text (nothing is written when it cannot
//! be), a new version only when its bytes changed, the version's text in the cold tier,
//! its pages in the text index and semantic memory, and its node in the graph, MENTIONS
//! its key concepts and the project whose folder holds it, all in one transaction but
//! the text index (committed right after, and rebuilt from the store if that is lost).

use eywa_storage::Batch;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

mod links;

use super::Writer;
use crate::archive::Stamp;
use crate::docs::{
    Added, DOCUMENT_TYPE, DocumentInfo, Documents, FailedDocument, Head, MAX_DOCUMENT_BYTES,
    PAGE_BREAK, document_id, extract, head_key, source, summary, version_key,
};
use crate::extract::{redact_in_place, text_keywords};
use crate::index::TextDoc;
use crate::model::Timestamp;
use crate::{Error, Result};

/// Settings prefix of a followed folder: `docs_follow/ | absolute path` → its project.
const FOLLOWED: &[u8] = b"docs_follow/";

/// Settings prefix of a file that cannot be read: `docs_failed/ | path` → [`Failure`].
const FAILED: &[u8] = b"docs_failed/";
/// Authors a document's node names at most.
const MAX_AUTHORS: usize = 64;

/// A file that could not be read, as noted: its size and modification time then (all a
/// note held before reasons were kept), why, and when.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Failure {
    bytes: u64,
    modified_ms: i64,
    #[serde(default)]
    reason: String,
    /// Unknown (0) for a note of an earlier version.
    #[serde(default = "unknown_time")]
    at: Timestamp,
}

fn unknown_time() -> Timestamp {
    Timestamp(0)
}

/// The files that could not be read, most recent failure first.
pub(crate) fn failed_documents(store: &eywa_storage::Store) -> Result<Vec<FailedDocument>> {
    let mut out: Vec<FailedDocument> = store
        .scan::<Failure>(eywa_storage::Keyspace::Settings, FAILED)
        .map(|kv| {
            let (key, f) = kv?;
            Ok(FailedDocument {
                path: String::from_utf8_lossy(&key[FAILED.len()..]).into_owned(),
                reason: if f.reason.is_empty() {
                    "it could not be read".to_owned()
                } else {
                    f.reason
                },
                failed_at: f.at,
                bytes: f.bytes,
                modified_at: Timestamp(f.modified_ms),
            })
        })
        .collect::<Result<_>>()?;
    out.sort_by(|a, b| b.failed_at.cmp(&a.failed_at).then(a.path.cmp(&b.path)));
    Ok(out)
}

/// A file's size and modification time (ms).
pub(super) type FileStamp = (u64, i64);

/// Why a file was not added: it cannot be read (noted as failed), it is not there or not
/// a file (said, not noted), or the store failed.
enum Unread {
    File(Error),
    Refused(Error),
    Store(Error),
}

impl From<Error> for Unread {
    fn from(e: Error) -> Unread {
        Unread::Store(e)
    }
}

impl From<eywa_storage::Error> for Unread {
    fn from(e: eywa_storage::Error) -> Unread {
        Unread::Store(e.into())
    }
}

/// A file's size and modification time (ms), when it can be read.
fn file_stamp(file: &std::path::Path) -> Option<FileStamp> {
    let stamp = Stamp::of(&std::fs::metadata(file).ok()?);
    Some((stamp.len, stamp.modified_ms))
}

/// The size and modification time noted under `prefix | path` in settings, if any.
pub(super) fn noted_stamp(
    store: &eywa_storage::Store,
    prefix: &[u8],
    path: &std::path::Path,
) -> Result<(Vec<u8>, Option<FileStamp>)> {
    let key = settings_key(prefix, path);
    let noted = store.get(eywa_storage::Keyspace::Settings, &key)?;
    Ok((key, noted))
}

/// The settings key `prefix | path`.
fn settings_key(prefix: &[u8], path: &std::path::Path) -> Vec<u8> {
    let mut key = prefix.to_vec();
    key.extend_from_slice(path.display().to_string().as_bytes());
    key
}

/// The folders followed, by path, with the project given when each was followed.
pub(crate) fn followed_folders(
    store: &eywa_storage::Store,
) -> Result<Vec<(String, Option<String>)>> {
    store
        .scan::<Option<String>>(eywa_storage::Keyspace::Settings, FOLLOWED)
        .map(|kv| {
            let (key, project) = kv?;
            Ok((
                String::from_utf8_lossy(&key[FOLLOWED.len()..]).into_owned(),
                project,
            ))
        })
        .collect()
}

/// Follows `folders` (each made absolute; each must be a folder) with `project` as their
/// project, or with `stop` follows them no more (each must be followed); all of them or
/// none. Returns the files under them to add now: none with `stop`.
pub(crate) fn follow(
    store: &eywa_storage::Store,
    folders: &[std::path::PathBuf],
    project: Option<&str>,
    stop: bool,
) -> Result<Vec<std::path::PathBuf>> {
    let mut batch = Batch::new();
    let mut absolute = Vec::new();
    for folder in folders {
        let path = crate::docs::normal_path(folder)?;
        if !stop && !path.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "{}: not a folder",
                crate::error::quote_path(&path)
            )));
        }
        let key = settings_key(FOLLOWED, &path);
        if stop {
            if !store.contains(eywa_storage::Keyspace::Settings, &key)? {
                return Err(Error::NotFound(format!(
                    "{} is not followed",
                    crate::error::quote_path(&path)
                )));
            }
            batch.delete(eywa_storage::Keyspace::Settings, key);
        } else {
            batch.put(eywa_storage::Keyspace::Settings, key, &project)?;
        }
        absolute.push(path);
    }
    store.apply(batch)?;
    if stop {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for folder in &absolute {
        crate::docs::collect_files(folder, &mut files)?;
    }
    Ok(files)
}

impl Writer<'_> {
    fn documents(&self) -> Documents<'_> {
        Documents {
            store: self.graph.store(),
        }
    }

    /// Adds the file at `path` (absolute) as a document, or a new version of it when its
    /// content changed. `project` names its project; else the project whose folder holds
    /// it, if any.
    pub(crate) fn add_document(
        &self,
        path: &std::path::Path,
        project: Option<&str>,
        now: Timestamp,
        commit: bool,
    ) -> Result<(DocumentInfo, Added)> {
        match self.read_document(path, project, now, commit) {
            Err(Unread::File(e)) => {
                // Noted with why, listed by `docs list --failed`, and not read again from
                // a followed folder until it changes.
                self.remember_failure(path, &e.to_string(), now)?;
                Err(e)
            }
            Err(Unread::Refused(e) | Unread::Store(e)) => Err(e),
            Ok(done) => Ok(done),
        }
    }

    fn read_document(
        &self,
        path: &std::path::Path,
        project: Option<&str>,
        now: Timestamp,
        commit: bool,
    ) -> std::result::Result<(DocumentInfo, Added), Unread> {
        let cannot_read = |e: std::io::Error| {
            Unread::File(Error::InvalidArgument(format!(
                "{}: cannot be read: {e}",
                crate::error::quote_path(path)
            )))
        };
        let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Unread::Refused(Error::InvalidArgument(format!(
                "{}: no such file",
                crate::error::quote_path(path)
            ))),
            _ => cannot_read(e),
        })?;
        if !meta.is_file() {
            return Err(Unread::Refused(Error::InvalidArgument(format!(
                "{}: not a file",
                crate::error::quote_path(path)
            ))));
        }
        if meta.len() > MAX_DOCUMENT_BYTES {
            return Err(Unread::File(Error::InvalidArgument(format!(
                "{}: {} bytes; a document is at most {MAX_DOCUMENT_BYTES}",
                crate::error::quote_path(path),
                meta.len()
            ))));
        }
        let path_text = path.display().to_string();
        let id = document_id(&path_text);
        let previous = self.documents().latest(&id)?;
        let modified_at = Timestamp(Stamp::of(&meta).modified_ms);
        // Same size and modification time as the latest version: not read again (a
        // followed folder is looked at on every poll).
        if let Some(previous) = &previous
            && previous.bytes == meta.len()
            && previous.modified_at == modified_at
        {
            return Ok((previous.clone(), Added::Unchanged));
        }
        let bytes = std::fs::read(path).map_err(cannot_read)?;
        let hash: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if let Some(previous) = &previous
            && previous.hash == hash
        {
            // Touched, not changed: the version keeps its content and learns the file's
            // new time, so the next look does not read it again.
            let touched = DocumentInfo {
                modified_at,
                bytes: meta.len(),
                ..previous.clone()
            };
            let mut batch = Batch::new();
            batch.put(
                eywa_storage::Keyspace::Docs,
                version_key(&id, previous.version),
                &touched,
            )?;
            self.graph.store().apply(batch)?;
            return Ok((touched, Added::Unchanged));
        }
        // Read before anything is written: a file that cannot be read leaves no trace.
        let mut extracted = extract(path, &bytes).map_err(Unread::File)?;
        // Secrets out before anything is kept: the stored text `docs show` reads, its
        // title, summary and concepts, its passages and chunks all come from this.
        let mut redacted = crate::extract::RedactionCounts::default();
        for page in extracted.pages.iter_mut().chain([&mut extracted.title]) {
            redact_in_place(page, &mut redacted);
        }
        if !redacted.is_empty() {
            tracing::info!(path = %path.display(), redacted = redacted.total(), "secrets redacted from a document");
        }
        let text = extracted.pages.join(&PAGE_BREAK.to_string());
        let key_concepts = text_keywords(&text);
        // A new version keeps the project its last one was given, unless told another.
        let project = match project {
            Some(p) => Some(p.to_owned()),
            None => match previous.as_ref().and_then(|p| p.project.clone()) {
                Some(kept) => Some(kept),
                None => self.project_holding(path)?.map(|(name, _)| name),
            },
        };
        let mut entities: Vec<(String, String)> = key_concepts
            .iter()
            .map(|c| ("Concept".to_owned(), c.clone()))
            .collect();
        if let Some(p) = &project {
            entities.push(("Project".to_owned(), p.clone()));
        }
        let store = self.graph.store();
        let blob = store.blobs().put_small(text.as_bytes())?;
        let info = DocumentInfo {
            id: id.clone(),
            path: path_text.clone(),
            version: previous.as_ref().map_or(1, |p| p.version + 1),
            hash,
            mime: extracted.mime.to_owned(),
            bytes: meta.len(),
            pages: if extracted.mime == "pdf" {
                u32::try_from(extracted.pages.len()).unwrap_or(u32::MAX)
            } else {
                0
            },
            chars: text.chars().count() as u64,
            title: extracted.title,
            summary: summary(&text, &key_concepts),
            key_concepts,
            entities,
            project,
            modified_at,
            added_at: now,
            replaced_at: None,
            text_blob: blob.hash.clone(),
        };
        let mut batch = Batch::new();
        batch.put_blob(&blob)?;
        if let Some(previous) = &previous {
            let replaced = DocumentInfo {
                replaced_at: Some(now),
                ..previous.clone()
            };
            batch.put(
                eywa_storage::Keyspace::Docs,
                version_key(&id, previous.version),
                &replaced,
            )?;
        }
        batch.put(
            eywa_storage::Keyspace::Docs,
            version_key(&id, info.version),
            &info,
        )?;
        batch.put(
            eywa_storage::Keyspace::Docs,
            head_key(&id),
            &Head {
                path: path_text,
                latest: info.version,
            },
        )?;
        batch.delete(eywa_storage::Keyspace::Settings, settings_key(FAILED, path));
        let docs = document_text_docs(&info, &extracted.pages);
        let source = source(&id);
        let mark = self.mark_pending(&mut batch, &source);
        let staged = self
            .semantic()?
            .stage(store, &source, &docs, true, &mut batch)?;
        self.graph
            .write_facts(batch, &self.document_facts(&info, &text)?)?;
        self.semantic()?.applied(staged);
        self.stage_text(mark, docs);
        if commit {
            self.commit_writes()?;
        }
        let added = if previous.is_some() {
            Added::Changed
        } else {
            self.link_earlier_sessions(&info)?;
            Added::New
        };
        Ok((info, added))
    }

    /// The folders followed: every ingest run adds what changed in them. By path, with
    /// the project given when each was followed.
    pub(crate) fn followed_folders(&self) -> Result<Vec<(String, Option<String>)>> {
        followed_folders(self.graph.store())
    }

    /// Adds what changed in the followed folders; files that cannot be read are counted,
    /// not fatal. Returns (added or changed, failed).
    pub(super) fn follow_folders(&self, now: Timestamp) -> Result<(u64, u64)> {
        let (mut added, mut failed) = (0, 0);
        for (folder, project) in self.followed_folders()? {
            let mut files = Vec::new();
            if let Err(e) = crate::docs::collect_files(std::path::Path::new(&folder), &mut files) {
                tracing::debug!(folder, error = %e, "cannot list a followed folder");
                continue;
            }
            for file in files {
                if self.failed_before(&file)? {
                    failed += 1;
                    continue;
                }
                match self.add_document(&file, project.as_deref(), now, false) {
                    Ok((_, Added::Unchanged)) => {}
                    Ok(_) => added += 1,
                    // A file that cannot be read (or went away, or may not be read) is
                    // counted (and remembered until it changes: `add_document` notes
                    // it); the run goes on.
                    Err(e @ (Error::InvalidArgument(_) | Error::Io { .. })) => {
                        tracing::debug!(path = %file.display(), error = %e, "a followed file cannot be read");
                        failed += 1;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok((added, failed))
    }

    /// Whether `file` failed to be read before and has not changed since (same size and
    /// modification time): it is not read again on every poll.
    fn failed_before(&self, file: &std::path::Path) -> Result<bool> {
        let Some(stamp) = file_stamp(file) else {
            return Ok(false);
        };
        let known: Option<Failure> = self.graph.store().get(
            eywa_storage::Keyspace::Settings,
            &settings_key(FAILED, file),
        )?;
        Ok(known.is_some_and(|f| (f.bytes, f.modified_ms) == stamp))
    }

    /// Notes that `file`, as it is now, cannot be read, and why.
    fn remember_failure(&self, file: &std::path::Path, reason: &str, now: Timestamp) -> Result<()> {
        if let Some((bytes, modified_ms)) = file_stamp(file) {
            let key = settings_key(FAILED, file);
            let failure = Failure {
                bytes,
                modified_ms,
                // The path is the note's key: the reason need not say it again.
                reason: crate::error::bounded_message(
                    reason
                        .strip_prefix(&format!("{}: ", crate::error::quote_path(file)))
                        .unwrap_or(reason),
                )
                .into_owned(),
                at: now,
            };
            let mut batch = Batch::new();
            batch.put(eywa_storage::Keyspace::Settings, key, &failure)?;
            self.graph.store().apply(batch)?;
        }
        Ok(())
    }

    /// What document `id`'s latest version puts in the text index (none when it has none).
    pub(super) fn document_docs_of(&self, id: &str) -> Result<Vec<TextDoc>> {
        let docs = self.documents();
        let Some(info) = docs.latest(id)? else {
            return Ok(Vec::new());
        };
        Ok(document_text_docs(&info, &docs.text(&info)?))
    }

    /// Puts the latest version of every document in the text index and queues its chunks
    /// (a rebuild of the text index). Returns how many.
    pub(crate) fn index_documents(&self) -> Result<u64> {
        let store = self.graph.store();
        let mut n = 0;
        for info in self.documents().all()? {
            let pages = match self.documents().text(&info) {
                Ok(pages) => pages,
                Err(e) => {
                    tracing::warn!(path = info.path, error = %e, "a document's text is missing: not indexed");
                    continue;
                }
            };
            let docs = document_text_docs(&info, &pages);
            self.text()?.put(&docs)?;
            self.semantic()?
                .enqueue(store, &source(&info.id), &docs, false)?;
            n += 1;
        }
        Ok(n)
    }
}

/// What a document version puts in the text index and semantic memory: each page of a
/// PDF on its own (so a hit names its page), a text file whole; each with its title.
fn document_text_docs(info: &DocumentInfo, pages: &[String]) -> Vec<TextDoc> {
    let paged = info.mime == "pdf";
    pages
        .iter()
        .enumerate()
        .filter(|(_, text)| !text.trim().is_empty())
        .map(|(i, text)| {
            let page = paged.then(|| u32::try_from(i + 1).unwrap_or(u32::MAX));
            TextDoc {
                id: match page {
                    Some(p) => format!("{}#p{p}", source(&info.id)),
                    None => format!("{}#text", source(&info.id)),
                },
                source: source(&info.id),
                session: String::new(),
                project: info.project.as_deref().unwrap_or("").to_lowercase(),
                kind: DOCUMENT_TYPE.to_owned(),
                agent: None,
                timestamp: info.modified_at.0,
                text: format!("{}\n{text}", info.title),
                message: None,
                lead: info.title.chars().count() + 1,
                page,
            }
        })
        .collect()
}
