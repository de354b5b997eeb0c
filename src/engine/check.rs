//! `eywa check`: the store verified end to end (the graph's indexes against its primaries,
//! every archived transcript's blob against its hash, semantic memory's listing against
//! its queue and vectors, the text index), and repaired where it can be; `eywa backup`: a
//! consistent copy taken while the store is in use.

use std::path::Path;
use std::time::Instant;

use eywa_storage::Keyspace;
use serde::Serialize;

use super::Engine;
use crate::backup::{BackupManifest, BackupReport, MANIFEST, copy_tree};
use crate::graph::SourceRecord;
use crate::{Error, Result};

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

impl Engine {
    /// Verifies the store; with `repair`, rebuilds what is derived (graph indexes and
    /// counters, semantic memory's listing, the text index) and has transcripts whose
    /// archive is damaged read again. A repair needs the store to itself: no ingest runs
    /// meanwhile.
    pub fn check(&self, repair: bool) -> Result<CheckReport> {
        let started = Instant::now();
        let _ingest = self.ingest_lock.lock()?;
        let mut report = CheckReport::default();
        let store = self.graph.store();

        let graph = self.graph.check()?;
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
        let status = self.semantic_status();
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
        if self.writer().text_index_lags()? {
            CheckReport::note(
                &mut report.text,
                &mut report.problems,
                "the text index is behind the store (an ingest rebuilds it)".into(),
            );
        }

        if repair && report.problems > 0 {
            if !graph.is_empty() {
                let entries = self.graph.rebuild_indexes()?;
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
                let semantic = self.semantic()?;
                let lost = semantic.rebuild_if_stale(store)? + semantic.repair_listing(store)?;
                crate::ingest::mark_text_dirty(self.graph.store())?;
                report
                    .repaired
                    .push(format!("{lost} chunks queued again for embedding"));
            }
            if !report.text.is_empty() || !report.semantic.is_empty() {
                let docs = self.writer().reindex()?;
                report
                    .repaired
                    .push(format!("rebuilt the text index ({docs} documents)"));
            }
            report.unrepaired = self.graph.check()?.len() as u64 + lost;
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Copies the store to `dir` (which must be missing or empty) as it is at one moment:
    /// ingest, graph writes and the embedder wait while the files are copied. The copy is
    /// a data dir of its own (`store/`, `handoffs/`, `handoff-index.json`, and
    /// `eywa-backup.json` saying what it holds) that `eywa restore` brings back. Returns
    /// the bytes copied.
    pub fn backup(&self, dir: &Path) -> Result<BackupReport> {
        let started = Instant::now();
        if !dir.is_absolute() {
            return Err(Error::InvalidArgument(format!(
                "the backup folder {} is not an absolute path",
                crate::error::quote_path(dir)
            )));
        }
        if dir.exists() && !dir.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "the backup folder {} is not a folder",
                crate::error::quote_path(dir)
            )));
        }
        let unreadable = |e: std::io::Error| {
            Error::InvalidArgument(format!(
                "the backup folder {} cannot be read: {e}",
                crate::error::quote_path(dir)
            ))
        };
        if dir.exists() && std::fs::read_dir(dir).map_err(unreadable)?.next().is_some() {
            return Err(Error::InvalidArgument(format!(
                "the backup folder {} is not empty: a backup never overwrites",
                crate::error::quote_path(dir)
            )));
        }
        let data_dir = self.config.data_dir.clone().ok_or_else(|| {
            Error::InvalidArgument("a temporary store has no data dir to back up".into())
        })?;
        let semantic = self.semantic()?;
        let _ingest = self.ingest_lock.lock()?;
        // Read before the writer is held (reading them takes it); no ingest runs now.
        let counts = self.graph.counts()?;
        let _graph = self.graph.hold_writes();
        semantic.save(self.graph.store())?;
        let _embedder = semantic.lock_write();
        self.graph.store().flush()?;
        crate::fs::create_private_dir(dir)?;
        let store_dir = dir.join("store");
        // The warm tier as one snapshot; the rest of the store (the cold tier's blobs, the
        // text index) as files.
        let mut bytes = self.graph.store().copy_warm_to(&store_dir)?;
        let from = self.graph.store().path();
        for entry in std::fs::read_dir(from).map_err(Error::io(from))? {
            let entry = entry.map_err(Error::io(from))?;
            let name = entry.file_name();
            if !eywa_storage::Store::is_warm_tier_file(&name) {
                bytes += copy_tree(&entry.path(), &store_dir.join(&name))?;
            }
        }
        for name in ["handoffs", "handoff-index.json"] {
            let from = data_dir.join(name);
            if from.exists() {
                bytes += copy_tree(&from, &dir.join(name))?;
            }
        }
        let manifest = BackupManifest {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            format: eywa_storage::FORMAT_VERSION,
            created: crate::model::Timestamp::now().to_rfc3339(),
            from: data_dir.display().to_string(),
            sessions: counts.sessions,
            episodes: counts.episodes,
            bytes,
        };
        crate::fs::write_private_atomically(
            &dir.join(MANIFEST),
            &serde_json::to_vec_pretty(&manifest).expect("a manifest serializes"),
        )?;
        Ok(BackupReport {
            dir: dir.display().to_string(),
            manifest,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}
