//! Backups of a store: what one holds (its manifest), taking one while the store is in
//! use (the engine holds the ingest lock around `take`, which holds writes while the warm
//! tier is copied), copying a tree as eywa keeps its files, and bringing a backup back as
//! a data dir's store.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::graph::Graph;
use crate::semantic::Semantic;
use crate::{Error, Result};

/// The file in a backup that says what it holds.
pub const MANIFEST: &str = "eywa-backup.json";

/// What a backup holds, as its `eywa-backup.json` says.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct BackupManifest {
    /// The eywa version that took it.
    pub version: String,
    /// The store layout (`FORMAT_VERSION`).
    pub format: u32,
    /// When it was taken (RFC 3339).
    pub created: String,
    /// The data dir it was taken from.
    pub from: String,
    /// Main sessions in the store when it was taken.
    pub sessions: u64,
    /// Episodes in the store when it was taken.
    pub episodes: u64,
    /// Bytes copied into the backup.
    pub bytes: u64,
}

/// What `eywa backup` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BackupReport {
    /// The backup's folder.
    pub dir: String,
    /// What it holds, as written to its manifest.
    pub manifest: BackupManifest,
    /// How long the backup took, in seconds.
    pub seconds: f64,
}

/// Fails unless `dir` may take a backup: an absolute path, missing or an empty folder.
pub(crate) fn check_target(dir: &Path) -> Result<()> {
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
    Ok(())
}

/// Copies the store of `graph` and `semantic`, kept in `data_dir`, to `dir` (checked by
/// `check_target`) as it is at one moment: graph writes and the embedder wait while the
/// files are copied. The caller holds the ingest lock; `started` is when the backup began.
pub(crate) fn take(
    dir: &Path,
    data_dir: &Path,
    graph: &Graph,
    semantic: &Semantic,
    started: Instant,
) -> Result<BackupReport> {
    // Read before the writer is held (reading them takes it); no ingest runs now.
    let counts = graph.counts()?;
    let _graph = graph.hold_writes();
    semantic.save(graph.store())?;
    let _embedder = semantic.lock_write();
    graph.store().flush()?;
    crate::fs::create_private_dir(dir)?;
    let store_dir = dir.join("store");
    // The warm tier as one snapshot; the rest of the store (the cold tier's blobs, the
    // text index) as files.
    let mut bytes = graph.store().copy_warm_to(&store_dir)?;
    let from = graph.store().path();
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

/// Copies a file or a folder tree (private, as eywa keeps its files), leaving out the
/// cold tier's half-written blobs; returns the bytes copied.
pub fn copy_tree(from: &Path, to: &Path) -> Result<u64> {
    let meta = std::fs::symlink_metadata(from).map_err(Error::io(from))?;
    if meta.is_file() {
        let bytes = std::fs::copy(from, to).map_err(Error::io(to))?;
        return Ok(bytes);
    }
    if !meta.is_dir() {
        return Ok(0);
    }
    crate::fs::create_private_dir(to)?;
    let mut bytes = 0;
    for entry in std::fs::read_dir(from).map_err(Error::io(from))? {
        let entry = entry.map_err(Error::io(from))?;
        let name = entry.file_name();
        if name == "tmp" && from.ends_with("cold") {
            continue;
        }
        bytes += copy_tree(&entry.path(), &to.join(&name))?;
    }
    Ok(bytes)
}

/// Fails with [`Error::StoreLocked`] when another process holds the store in `store_dir`
/// (checked at once, without waiting for it).
pub fn ensure_store_free(store_dir: &Path) -> Result<()> {
    eywa_storage::Config::new()
        .path(store_dir)
        .lock_wait_ms(0)
        .open()?;
    Ok(())
}

/// Brings the backup in `backup` back as the store of `data_dir`, which no process may
/// hold. What `data_dir` held is moved aside (to `<name>.before-restore-<time>` beside
/// it), never deleted. Returns the manifest and where the old store went.
pub fn restore(backup: &Path, data_dir: &Path) -> Result<(BackupManifest, Option<PathBuf>)> {
    let manifest_path = backup.join(MANIFEST);
    let manifest: BackupManifest =
        serde_json::from_slice(&std::fs::read(&manifest_path).map_err(|e| {
            Error::InvalidArgument(format!(
                "{} is not an eywa backup (no {MANIFEST}: {e})",
                crate::error::quote_path(backup)
            ))
        })?)
        .map_err(|e| {
            Error::InvalidArgument(format!("{}: {e}", crate::error::quote_path(&manifest_path)))
        })?;
    if manifest.format > eywa_storage::FORMAT_VERSION {
        return Err(Error::InvalidArgument(format!(
            "the backup's store layout {} is newer than this eywa's {}: upgrade eywa",
            manifest.format,
            eywa_storage::FORMAT_VERSION
        )));
    }
    crate::fs::create_private_dir(data_dir)?;
    let mut aside = None;
    let held: Vec<&str> = ["store", "handoffs", "handoff-index.json"]
        .into_iter()
        .filter(|name| data_dir.join(name).exists())
        .collect();
    if !held.is_empty() {
        let stamp = crate::model::Timestamp::now().0;
        let name = data_dir
            .file_name()
            .map_or("eywa".into(), |n| n.to_string_lossy().into_owned());
        let target = data_dir.with_file_name(format!("{name}.before-restore-{stamp}"));
        crate::fs::create_private_dir(&target)?;
        for name in held {
            let from = data_dir.join(name);
            std::fs::rename(&from, target.join(name)).map_err(Error::io(&from))?;
        }
        aside = Some(target);
    }
    for name in ["store", "handoffs", "handoff-index.json"] {
        let from = backup.join(name);
        if from.exists() {
            copy_tree(&from, &data_dir.join(name))?;
        }
    }
    Ok((manifest, aside))
}
