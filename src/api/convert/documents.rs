//! The Documents service's messages: adding files, reading a version, listing, history.

use super::wire::wire;
use crate::api::pb;
use crate::docs::{DocumentInfo, DocumentText, FailedDocument};
use crate::engine::{DocumentOutcome, Followed, MAX_DOCUMENTS};
use crate::model::Timestamp;

wire! {
    DocumentInfo <=> pb::DocumentInfo {
        id, path, version, hash, mime, bytes, pages, chars, title, summary, key_concepts,
        entities: pairs, project: text, modified_at: time, added_at: time,
        replaced_at: maybe_time,
    }
    // Where its text is in the cold tier is the server's business.
    from_wire(_d) { text_blob: String::new() }
}

wire! {
    DocumentText <=> pb::GetDocumentResponse { info = document: present, pages }
}

wire! {
    DocumentOutcome <=> pb::DocumentOutcome {
        path, result => { added, document, error }: added,
    }
}

/// An `AddDocument` request.
pub struct AddQuery {
    pub paths: Vec<String>,
    pub project: Option<String>,
}

wire! {
    AddQuery <=> pb::AddDocumentRequest { paths, project: trimmed }
}

/// A `GetDocument` request.
pub struct DocumentQuery {
    pub document: String,
    pub version: Option<u32>,
    pub as_of: Option<Timestamp>,
}

wire! {
    DocumentQuery <=> pb::GetDocumentRequest { document, version: page_number, as_of: maybe_time }
}

wire! {
    FailedDocument <=> pb::FailedDocument {
        path, reason, failed_at: time, bytes, modified_at: time,
    }
}

/// A `ListDocuments` request, checked.
pub struct DocumentListQuery {
    pub limit: usize,
    pub offset: usize,
    /// The files that failed to be read, instead of the documents.
    pub failed: bool,
}

wire! {
    DocumentListQuery <=> pb::ListDocumentsRequest {
        limit: count(50, MAX_DOCUMENTS), offset: size32, failed,
    }
}

/// What `ListDocuments` answers: a page of documents, or of files that failed.
pub enum Listed {
    Documents(Vec<DocumentInfo>, u64),
    Failed(Vec<FailedDocument>, u64),
}

impl DocumentListQuery {
    /// The engine's answer to this request.
    pub(crate) fn answer(&self, engine: &crate::engine::Engine) -> crate::Result<Listed> {
        if self.failed {
            let (failed, total) = engine.failed_documents(self.limit, self.offset)?;
            Ok(Listed::Failed(failed, total))
        } else {
            let (documents, total) = engine.list_documents(self.limit, self.offset)?;
            Ok(Listed::Documents(documents, total))
        }
    }
}

impl From<Listed> for pb::ListDocumentsResponse {
    fn from(listed: Listed) -> Self {
        match listed {
            Listed::Documents(documents, total) => pb::ListDocumentsResponse {
                documents: documents.into_iter().map(Into::into).collect(),
                total,
                failed: Vec::new(),
            },
            Listed::Failed(failed, total) => pb::ListDocumentsResponse {
                documents: Vec::new(),
                total,
                failed: failed.into_iter().map(Into::into).collect(),
            },
        }
    }
}

impl From<Vec<DocumentOutcome>> for pb::AddDocumentResponse {
    fn from(outcomes: Vec<DocumentOutcome>) -> Self {
        pb::AddDocumentResponse {
            outcomes: outcomes.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<Vec<DocumentInfo>> for pb::DocumentHistoryResponse {
    fn from(versions: Vec<DocumentInfo>) -> Self {
        pb::DocumentHistoryResponse {
            versions: versions.into_iter().map(Into::into).collect(),
        }
    }
}

/// A `FollowFolders` request.
pub struct FollowQuery {
    pub paths: Vec<String>,
    pub project: Option<String>,
    pub stop: bool,
}

wire! {
    FollowQuery <=> pb::FollowFoldersRequest { paths, project: trimmed, stop }
}

impl From<Followed> for pb::FollowFoldersResponse {
    fn from(f: Followed) -> Self {
        pb::FollowFoldersResponse {
            outcomes: f.outcomes.into_iter().map(Into::into).collect(),
            folders: f
                .folders
                .into_iter()
                .map(|(path, project)| pb::FollowedFolder {
                    path,
                    project: project.unwrap_or_default(),
                })
                .collect(),
        }
    }
}

impl TryFrom<pb::FollowFoldersResponse> for Followed {
    type Error = tonic::Status;

    fn try_from(r: pb::FollowFoldersResponse) -> Result<Self, Self::Error> {
        Ok(Followed {
            outcomes: r
                .outcomes
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_, _>>()?,
            folders: r
                .folders
                .into_iter()
                .map(|f| (f.path, super::some(f.project)))
                .collect(),
        })
    }
}
