//! The Ingest service's messages: ingesting the Claude dir, importing an Eywa folder,
//! embedding the backlog.

use std::collections::HashMap;
use std::path::PathBuf;

use tonic::Status;

use super::wire::wire;
use crate::api::pb;
use crate::engine::{EmbedReport, ImportReport, IngestReport, SessionIngest, SkippedFile};
use crate::extract::RedactionCounts;

/// An `Import` request, validated.
pub struct ImportQuery {
    pub path: PathBuf,
}

wire! {
    ImportQuery <=> pb::ImportRequest { path: folder }
}

wire! {
    IngestReport <=> pb::IngestResponse {
        files_scanned, files_read, files_unchanged, files_failed, files_without_messages,
        agent_files_scanned, agent_files_read, redacted: into, plans, memory_files,
        claude_md_files, memories_written, documents_added, documents_failed,
        bytes_read, files_versioned, skipped_files: messages, files_skipped, summaries_made,
        summaries_cached, summaries_failed, summaries_capped,
        counts => { sessions, agents, episodes, entities, edges, sources, skipped_lines }: counts,
        elapsed = seconds: seconds,
    }
}

wire! {
    SkippedFile <=> pb::SkippedFile { path, lines, reason }
}

impl From<RedactionCounts> for HashMap<String, u64> {
    fn from(counts: RedactionCounts) -> Self {
        counts
            .iter()
            .map(|(kind, n)| (kind.as_str().to_owned(), n))
            .collect()
    }
}

impl From<HashMap<String, u64>> for RedactionCounts {
    fn from(counts: HashMap<String, u64>) -> Self {
        RedactionCounts::from_names(&counts)
    }
}

wire! {
    ImportReport <=> pb::ImportResponse {
        found, imported, known, already_imported, failed: messages,
    }
}

impl From<(String, String)> for pb::ImportFailure {
    fn from((file, reason): (String, String)) -> Self {
        pb::ImportFailure { file, reason }
    }
}

impl TryFrom<pb::ImportFailure> for (String, String) {
    type Error = Status;

    fn try_from(failure: pb::ImportFailure) -> Result<Self, Status> {
        Ok((failure.file, failure.reason))
    }
}

wire! {
    EmbedReport <=> pb::EmbedResponse { chunks, embedded, seconds }
}

impl From<SessionIngest> for pb::IngestSessionResponse {
    fn from(s: SessionIngest) -> Self {
        pb::IngestSessionResponse {
            report: Some(s.report.into()),
            session_id: s.session_id,
            handoff: s.handoff.map(Into::into),
            pending: false,
        }
    }
}

impl TryFrom<pb::IngestSessionResponse> for SessionIngest {
    type Error = Status;

    fn try_from(r: pb::IngestSessionResponse) -> Result<Self, Status> {
        Ok(SessionIngest {
            report: r
                .report
                .ok_or_else(|| Status::internal("the answer has no report"))?
                .try_into()?,
            session_id: r.session_id,
            handoff: r.handoff.map(TryInto::try_into).transpose()?,
        })
    }
}
