//! The Ingest service's messages: ingesting the Claude dir, importing an Eywa folder,
//! embedding the backlog.

use std::path::PathBuf;

use tonic::Status;

use crate::api::pb;
use crate::engine::{EmbedReport, ImportReport, IngestReport, SkippedFile};
use crate::extract::RedactionCounts;
use crate::graph::Counts;

/// An `Import` request, validated.
pub struct ImportQuery {
    pub path: PathBuf,
}

impl TryFrom<pb::ImportRequest> for ImportQuery {
    type Error = Status;

    fn try_from(request: pb::ImportRequest) -> Result<Self, Status> {
        let pb::ImportRequest { path } = request;
        if path.trim().is_empty() {
            return Err(Status::invalid_argument(
                "path: give the Eywa folder to import",
            ));
        }
        Ok(ImportQuery { path: path.into() })
    }
}

impl From<IngestReport> for pb::IngestResponse {
    fn from(report: IngestReport) -> Self {
        let IngestReport {
            files_scanned,
            files_read,
            files_unchanged,
            files_failed,
            files_without_messages,
            agent_files_scanned,
            agent_files_read,
            redacted,
            plans,
            memory_files,
            bytes_read,
            files_versioned,
            skipped_files,
            files_skipped,
            counts,
            elapsed,
        } = report;
        pb::IngestResponse {
            skipped_files: skipped_files
                .into_iter()
                .map(|f| pb::SkippedFile {
                    path: f.path,
                    lines: f.lines,
                    reason: f.reason,
                })
                .collect(),
            files_skipped,
            files_versioned,
            plans,
            memory_files,
            bytes_read,
            redacted: redacted
                .iter()
                .map(|(k, n)| (k.as_str().to_owned(), n))
                .collect(),
            agent_files_scanned,
            agent_files_read,
            agents: counts.agents,
            files_scanned,
            files_read,
            files_unchanged,
            files_failed,
            files_without_messages,
            sessions: counts.sessions,
            episodes: counts.episodes,
            entities: counts.entities,
            edges: counts.edges,
            skipped_lines: counts.skipped_lines,
            sources: counts.sources,
            seconds: elapsed.as_secs_f64(),
        }
    }
}

/// For the CLI talking to a running server.
impl From<pb::IngestResponse> for IngestReport {
    fn from(response: pb::IngestResponse) -> Self {
        let pb::IngestResponse {
            files_scanned,
            files_read,
            files_unchanged,
            files_failed,
            files_without_messages,
            sessions,
            episodes,
            entities,
            edges,
            skipped_lines,
            seconds,
            sources,
            agent_files_scanned,
            agent_files_read,
            agents,
            redacted,
            plans,
            memory_files,
            bytes_read,
            skipped_files,
            files_skipped,
            files_versioned,
        } = response;
        IngestReport {
            skipped_files: skipped_files
                .into_iter()
                .map(|f| SkippedFile {
                    path: f.path,
                    lines: f.lines,
                    reason: f.reason,
                })
                .collect(),
            files_skipped,
            files_versioned,
            plans,
            memory_files,
            bytes_read,
            redacted: RedactionCounts::from_names(&redacted),
            agent_files_scanned,
            agent_files_read,
            files_scanned,
            files_read,
            files_unchanged,
            files_failed,
            files_without_messages,
            counts: Counts {
                sessions,
                agents,
                episodes,
                entities,
                edges,
                sources,
                skipped_lines,
            },
            elapsed: std::time::Duration::try_from_secs_f64(seconds).unwrap_or_default(),
        }
    }
}

impl From<ImportReport> for pb::ImportResponse {
    fn from(report: ImportReport) -> Self {
        let ImportReport {
            found,
            imported,
            known,
            already_imported,
            failed,
        } = report;
        pb::ImportResponse {
            found,
            imported,
            known,
            already_imported,
            failed: failed
                .into_iter()
                .map(|(file, reason)| pb::ImportFailure { file, reason })
                .collect(),
        }
    }
}

impl From<EmbedReport> for pb::EmbedResponse {
    fn from(report: EmbedReport) -> Self {
        let EmbedReport {
            chunks,
            embedded,
            seconds,
        } = report;
        pb::EmbedResponse {
            chunks,
            embedded,
            seconds,
        }
    }
}

impl From<pb::ImportResponse> for ImportReport {
    fn from(r: pb::ImportResponse) -> Self {
        let pb::ImportResponse {
            found,
            imported,
            known,
            already_imported,
            failed,
        } = r;
        ImportReport {
            found,
            imported,
            known,
            already_imported,
            failed: failed
                .into_iter()
                .map(|pb::ImportFailure { file, reason }| (file, reason))
                .collect(),
        }
    }
}

impl From<pb::EmbedResponse> for EmbedReport {
    fn from(r: pb::EmbedResponse) -> Self {
        let pb::EmbedResponse {
            chunks,
            embedded,
            seconds,
        } = r;
        EmbedReport {
            chunks,
            embedded,
            seconds,
        }
    }
}
