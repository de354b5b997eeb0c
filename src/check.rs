//! `eywa check`: the store verified end to end (the graph's indexes against its primaries,
//! every archived transcript's blob against its hash, semantic memory's listing against
//! its queue and vectors, the text index), and repaired where it can be. The engine holds
//! the ingest lock around `run`.

use std::path::Path;
use std::time::Instant;

use eywa_storage::Keyspace;
use serde::Serialize;

use crate::Result;
use crate::graph::SourceRecord;
use crate::ingest::Writer;
use crate::semantic::SemanticStatus;

/// Problems listed per area; more are counted.
const LISTED: usize = 100;

/// What `eywa check` found, and what `--repair` did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CheckReport {
    /// Problems found, by area (at most 100 listed each; `problems` counts them all).
    pub graph: Vec<String>,
    /// Archived transcripts whose blob is missing or does not match its hash.
    pub archive: Vec<String>,
    /// Chunks neither queued nor embedded, or a vector index out of step with the warm tier.
    pub semantic: Vec<String>,
    /// A text index behind the store.
    pub text: Vec<String>,
    /// Problems found in every area, listed or not.
    pub problems: u64,
    /// Archived transcripts whose blobs were read back and hashed.
    pub blobs_checked: u64,
    /// What a repair did.
    pub repaired: Vec<String>,
    /// Problems a repair could not fix (0 when none, or when not repairing).
    pub unrepaired: u64,
    /// How long the check (and any repair) took, in seconds.
    pub seconds: f64,
}

impl CheckReport {
    fn note(list: &mut Vec<String>, problems: &mut u64, problem: String) {
        *problems += 1;
        if list.len() < LISTED {
            list.push(problem);
        }
    }
}

/// Verifies the store `writer` writes into; with `repair`, rebuilds what is derived (graph
/// indexes and counters, semantic memory's listing, the text index) and has transcripts
/// whose archive is damaged read again. `status` tells where semantic memory is: it is
/// asked once the blobs are read back. The caller holds the ingest lock; `started` is when
/// the check began.
pub(crate) fn run(
    writer: &Writer<'_>,
    status: impl FnOnce() -> SemanticStatus,
    repair: bool,
    started: Instant,
) -> Result<CheckReport> {
    let mut report = CheckReport::default();
    let store = writer.graph.store();

    let graph = writer.graph.check()?;
    for problem in &graph {
        CheckReport::note(&mut report.graph, &mut report.problems, problem.clone());
    }

    let mut reread = Vec::new();
    for entry in store.scan::<SourceRecord>(Keyspace::Sources, &[]) {
        let (key, mut source) = entry?;
        source.path = String::from_utf8_lossy(&key).into_owned();
        let blobs = source
            .archive
            .iter()
            .chain(&source.archive_tail)
            .chain(source.versions.iter().filter_map(|v| v.superseded.as_ref()));
        for hash in blobs {
            report.blobs_checked += 1;
            let why = match store.read_blob(hash) {
                Ok(Some(_)) => continue,
                Ok(None) => "is missing",
                Err(eywa_storage::Error::CorruptBlob { .. }) => "does not match its hash",
                Err(other) => return Err(other.into()),
            };
            CheckReport::note(
                &mut report.archive,
                &mut report.problems,
                format!("the archive of {} ({hash}) {why}", source.path),
            );
            reread.push((source.clone(), hash.clone()));
            break;
        }
    }

    let mut dangling = 0u64;
    for kv in store.entries(Keyspace::VectorsBySource, &[]) {
        let (k, pending) = kv?;
        let present = if pending.is_empty() {
            store.contains(Keyspace::Vectors, &k[k.len() - 8..])?
        } else {
            store.contains(Keyspace::EmbedQueue, &pending)?
        };
        dangling += u64::from(!present);
    }
    if dangling > 0 {
        CheckReport::note(
            &mut report.semantic,
            &mut report.problems,
            format!("{dangling} chunks listed for embedding are neither queued nor embedded"),
        );
    }
    let status = status();
    let stored = store.len(Keyspace::Vectors)? as u64;
    if status.vectors != stored && !status.rebuilding {
        CheckReport::note(
            &mut report.semantic,
            &mut report.problems,
            format!(
                "the vector index holds {} vectors, the warm tier {stored}",
                status.vectors
            ),
        );
    }
    if writer.text_index_lags()? {
        CheckReport::note(
            &mut report.text,
            &mut report.problems,
            "the text index is behind the store (an ingest rebuilds it)".into(),
        );
    }

    if repair && report.problems > 0 {
        if !graph.is_empty() {
            let entries = writer.graph.rebuild_indexes()?;
            report.repaired.push(format!(
                "rebuilt the graph's indexes ({entries} entries) and counters"
            ));
        }
        let mut lost = 0;
        for (mut source, hash) in reread {
            let superseded = source
                .versions
                .iter_mut()
                .find(|v| v.superseded.as_ref() == Some(&hash));
            if let Some(version) = superseded {
                // Only the superseded lines of one version are damaged: they go.
                version.superseded = None;
                version.superseded_lines = 0;
                store.blobs().delete(&hash)?;
                let mut batch = eywa_storage::Batch::new();
                batch.delete_blob(&hash);
                batch.put(Keyspace::Sources, source.path.as_bytes().to_vec(), &source)?;
                store.apply(batch)?;
                report.repaired.push(format!(
                    "dropped the damaged superseded lines of {}",
                    source.path
                ));
                continue;
            }
            if !Path::new(&source.path).is_file() {
                // The transcript is gone too: nothing to read it from.
                lost += 1;
                continue;
            }
            // A damaged file would be taken for the blob when the same bytes are
            // archived again: it goes first.
            store.blobs().delete(&hash)?;
            // Read again from its start at the next ingest, and archived again.
            source.len = 0;
            source.modified_ms = -1;
            source.archive = None;
            source.archive_tail.clear();
            source.state = None;
            // What earlier versions alone held went with the archive.
            source.shift = 0;
            let mut batch = eywa_storage::Batch::new();
            batch.put(Keyspace::Sources, source.path.as_bytes().to_vec(), &source)?;
            store.apply(batch)?;
            report
                .repaired
                .push(format!("{} is read again by the next ingest", source.path));
        }
        if !report.semantic.is_empty() {
            let semantic = writer.sinks.semantic()?;
            let lost = semantic.rebuild_if_stale(store)? + semantic.repair_listing(store)?;
            crate::ingest::mark_text_dirty(writer.graph.store())?;
            report
                .repaired
                .push(format!("{lost} chunks queued again for embedding"));
        }
        if !report.text.is_empty() || !report.semantic.is_empty() {
            let docs = writer.reindex()?;
            report
                .repaired
                .push(format!("rebuilt the text index ({docs} documents)"));
        }
        report.unrepaired = writer.graph.check()?.len() as u64 + lost;
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}
