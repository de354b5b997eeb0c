//! The engine's side of documents: adding files and folders (each file alone: one that
//! cannot be read is reported and leaves nothing behind), and delegations to `crate::docs`
//! (reading versions back, listing) and `crate::ingest` (the folders followed).

use std::path::PathBuf;

use super::Engine;
use crate::docs::{DocumentInfo, DocumentOutcome, DocumentText, Documents, FailedDocument};
use crate::model::Timestamp;
use crate::{Error, Result};

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
        let files = crate::docs::files_to_add(paths)?;
        crate::docs::unless_all_failed(self.add_files(&files, project)?)
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
        self.documents().read(reference, version, as_of)
    }

    /// The latest version of each document, most recently added first: `limit` from
    /// `offset`, and how many there are.
    pub fn list_documents(&self, limit: usize, offset: usize) -> Result<(Vec<DocumentInfo>, u64)> {
        self.documents().page(limit, offset)
    }

    /// The files that could not be read as documents (added, or in a followed folder),
    /// most recent failure first: `limit` from `offset`, and how many there are. One in a
    /// followed folder is read again once it changes.
    pub fn failed_documents(
        &self,
        limit: usize,
        offset: usize,
    ) -> Result<(Vec<FailedDocument>, u64)> {
        crate::docs::check_page(limit)?;
        let all = crate::ingest::failed_documents(self.graph.store())?;
        Ok(crate::docs::one_page(all, limit, offset))
    }

    /// Every version of document `reference` (its id or path), oldest first.
    pub fn document_history(&self, reference: &str) -> Result<Vec<DocumentInfo>> {
        self.documents().history_of(reference)
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
        let files = crate::ingest::follow(self.graph.store(), folders, project, stop)?;
        if stop {
            return Ok(Vec::new());
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
