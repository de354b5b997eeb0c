//! The engine's side of documents: adding files and folders (each file alone: one that
//! cannot be read is reported and leaves nothing behind), and reading versions back.

use std::path::PathBuf;

use serde::Serialize;

use super::Engine;
use crate::docs::{Added, DocumentInfo, DocumentText, Documents, FailedDocument};
use crate::model::Timestamp;
use crate::{Error, Result};

/// Documents a list shows at most.
pub const MAX_DOCUMENTS: usize = 1_000;

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

impl Engine {
    /// Adds each file of `paths`, and every `.md`, `.txt` and `.pdf` file under each folder
    /// (hidden ones left out), as a document: a new version only when its content changed.
    /// A file that cannot be read (an encrypted or scanned PDF, not UTF-8 text, another
    /// kind) is reported in its outcome and nothing of it is written; the others are.
    /// `project` names their project (else the project whose folder holds each). When
    /// every file fails, that is the error.
    pub fn add_documents(
        &self,
        paths: &[PathBuf],
        project: Option<&str>,
    ) -> Result<Vec<DocumentOutcome>> {
        let project = project.map(str::trim).filter(|p| !p.is_empty());
        let mut files = Vec::new();
        for path in paths {
            let path = crate::docs::normal_path(path)?;
            if path.is_dir() {
                crate::docs::collect_files(&path, &mut files)?;
            } else {
                files.push(path);
            }
        }
        if files.is_empty() {
            return Err(Error::InvalidArgument(
                "no .md, .txt or .pdf file to add".into(),
            ));
        }
        let outcomes = self.add_files(&files, project)?;
        if outcomes.iter().all(|o| o.result.is_err()) {
            let why: Vec<&str> = outcomes
                .iter()
                .filter_map(|o| o.result.as_ref().err().map(String::as_str))
                .collect();
            return Err(Error::InvalidArgument(why.join("; ")));
        }
        Ok(outcomes)
    }

    /// Adds each of `files` on its own: one that cannot be read is reported in its
    /// outcome, the others are written; the text index is committed once.
    fn add_files(&self, files: &[PathBuf], project: Option<&str>) -> Result<Vec<DocumentOutcome>> {
        let now = self.config.clock.now();
        let outcomes = self.write(|w| {
            let mut out = Vec::with_capacity(files.len());
            for file in files {
                let result = match w.add_document(file, project, now, false) {
                    Ok(added) => Ok(added),
                    Err(Error::InvalidArgument(why)) => Err(why),
                    Err(e) => return Err(e),
                };
                out.push(DocumentOutcome {
                    path: file.display().to_string(),
                    result,
                });
            }
            Ok(out)
        })?;
        self.writer().commit_writes()?;
        // Its first chunks are embedded now, as a memory's are: found by meaning at once.
        self.embed_now(None);
        Ok(outcomes)
    }

    /// Document `reference` (its id or path) with its text: the latest version, version
    /// `version`, or the version that was current at `as_of`.
    pub fn document(
        &self,
        reference: &str,
        version: Option<u32>,
        as_of: Option<Timestamp>,
    ) -> Result<DocumentText> {
        let docs = self.documents();
        let id = docs.resolve(reference)?;
        let info = match (version, as_of) {
            (Some(_), Some(_)) => {
                return Err(Error::InvalidArgument(
                    "give a version or a time, not both".into(),
                ));
            }
            (Some(v), None) => docs.version(&id, v)?.ok_or_else(|| {
                Error::NotFound(format!(
                    "{} has no version {v}",
                    crate::error::quote(reference)
                ))
            })?,
            (None, Some(at)) => docs
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
            (None, None) => docs.latest(&id)?.ok_or_else(|| {
                Error::NotFound(format!("no document {}", crate::error::quote(reference)))
            })?,
        };
        let pages = docs.text(&info)?;
        Ok(DocumentText { info, pages })
    }

    /// The latest version of each document, most recently added first: `limit` from
    /// `offset`, and how many there are.
    pub fn list_documents(&self, limit: usize, offset: usize) -> Result<(Vec<DocumentInfo>, u64)> {
        if limit == 0 || limit > MAX_DOCUMENTS {
            return Err(Error::InvalidArgument(format!(
                "limit must be 1 to {MAX_DOCUMENTS}, not {limit}"
            )));
        }
        let mut all = self.documents().all()?;
        all.sort_by(|a, b| b.added_at.cmp(&a.added_at).then(a.path.cmp(&b.path)));
        let total = all.len() as u64;
        Ok((all.into_iter().skip(offset).take(limit).collect(), total))
    }

    /// The files that could not be read as documents (added, or in a followed folder),
    /// most recent failure first: `limit` from `offset`, and how many there are. One in a
    /// followed folder is read again once it changes.
    pub fn failed_documents(
        &self,
        limit: usize,
        offset: usize,
    ) -> Result<(Vec<FailedDocument>, u64)> {
        if limit == 0 || limit > MAX_DOCUMENTS {
            return Err(Error::InvalidArgument(format!(
                "limit must be 1 to {MAX_DOCUMENTS}, not {limit}"
            )));
        }
        let all = crate::ingest::failed_documents(self.graph.store())?;
        let total = all.len() as u64;
        Ok((all.into_iter().skip(offset).take(limit).collect(), total))
    }

    /// Every version of document `reference` (its id or path), oldest first.
    pub fn document_history(&self, reference: &str) -> Result<Vec<DocumentInfo>> {
        let docs = self.documents();
        let id = docs.resolve(reference)?;
        docs.history(&id)
    }

    /// Follows `folders`: every ingest run (`serve` polls) adds what changed in them, with
    /// `project` as their project. Adds them now; returns what that did. With `stop`, they
    /// are no longer followed (what was added stays) and nothing is added.
    pub fn follow_folders(
        &self,
        folders: &[PathBuf],
        project: Option<&str>,
        stop: bool,
    ) -> Result<Vec<DocumentOutcome>> {
        let project = project.map(str::trim).filter(|p| !p.is_empty());
        let mut batch = eywa_storage::Batch::new();
        let mut absolute = Vec::new();
        for folder in folders {
            let path = crate::docs::normal_path(folder)?;
            if !stop && !path.is_dir() {
                return Err(Error::InvalidArgument(format!(
                    "{}: not a folder",
                    crate::error::quote_path(&path)
                )));
            }
            let mut key = crate::ingest::FOLLOWED.to_vec();
            key.extend_from_slice(path.display().to_string().as_bytes());
            if stop {
                if !self
                    .graph
                    .store()
                    .contains(eywa_storage::Keyspace::Settings, &key)?
                {
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
        self.graph.store().apply(batch)?;
        if stop {
            return Ok(Vec::new());
        }
        let mut files = Vec::new();
        for folder in &absolute {
            crate::docs::collect_files(folder, &mut files)?;
        }
        self.add_files(&files, project)
    }

    /// The folders followed, with the project each was followed with.
    pub fn followed_folders(&self) -> Result<Vec<(String, Option<String>)>> {
        crate::ingest::followed_folders(self.graph.store())
    }

    fn documents(&self) -> Documents<'_> {
        Documents {
            store: self.graph.store(),
        }
    }
}
