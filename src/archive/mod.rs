//! Reading a transcript file: whole, or — when Claude Code only appended to it since the
//! last read — from where that read stopped, archiving just the new bytes.
//!
//! A source's archive is a base blob plus the segments appended since, in order;
//! concatenated they are the source's history: the lines of earlier versions of the file
//! that later ones no longer hold (`shift` bytes), then the file's bytes as read. After
//! each read the reader's state is saved as a blob (its texts redacted), with hashes of the
//! file's first and of the last 4 KiB read, so that the next read can check the file still
//! holds what was read (it was appended to, not rewritten) and go on from the saved offset.
//!
//! A file that shrank or was rewritten is a new version: it is compared line by line with
//! the archive, and what it no longer holds is kept ahead of it — lines it lacks in the
//! archive, lines it holds in another form (the same uuid) apart, as superseded.

mod owners;
mod versions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use eywa_storage::{Batch, BlobInfo, BlobWriter};
use sha2::{Digest, Sha256};

use crate::claude::{History, Mode, ReadPoint, Transcript, read_resumable};
use crate::extract::scrub_read_point;
use crate::graph::{Graph, SourceRecord, SourceVersion};
use crate::model::Timestamp;
use crate::{Error, Result};

pub(crate) use self::owners::Authors;

/// Bytes at the end of what was read kept to recognize an appended file.
const TAIL_BYTES: usize = 4096;
/// Bytes at the start of a file hashed to recognize it.
const HEAD_BYTES: usize = 4096;
/// Appended segments a source keeps at most: past this they are merged into one (the
/// archive's base stays).
const MAX_SEGMENTS: usize = 32;
/// Version of the saved read state; a state of another version is ignored.
const STATE_VERSION: u32 = 2;

/// Where the bytes of a source are kept after a read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Archived {
    /// Blobs this read wrote (the base or a new segment, and the state): to record in the
    /// same batch as the source.
    pub blobs: Vec<BlobInfo>,
    /// Bytes of the file as read.
    pub len: u64,
    /// Bytes of earlier versions' lines the archive holds ahead of the file's.
    pub shift: u64,
    pub archive: Option<String>,
    pub archive_tail: Vec<String>,
    pub state: Option<String>,
    /// The versions the file replaced, this read's find included.
    pub versions: Vec<SourceVersion>,
    /// The file's inode and status-change time when it was read.
    pub inode: u64,
    pub changed_ns: i64,
    /// Blobs this read wrote but does not keep (segments merged into one).
    pub dropped: Vec<String>,
    /// The read went on from a saved state: only what was appended was read.
    pub appended: bool,
    /// The file replaced the version read before (it shrank or was rewritten).
    pub new_version: bool,
    /// Bytes read from the file this time.
    pub read: u64,
}

impl Archived {
    /// A file archived whole as one blob, with no read state (plans, memory files).
    pub(crate) fn whole(blob: BlobInfo, inode: u64, changed_ns: i64) -> Archived {
        Archived {
            len: blob.raw_len,
            archive: Some(blob.hash.clone()),
            read: blob.raw_len,
            blobs: vec![blob],
            inode,
            changed_ns,
            ..Archived::default()
        }
    }

    /// The archive a source record names, to read again without writing anything.
    pub(crate) fn kept(record: &SourceRecord) -> Archived {
        Archived {
            len: record.len,
            shift: record.shift,
            archive: record.archive.clone(),
            archive_tail: record.archive_tail.clone(),
            versions: record.versions.clone(),
            inode: record.inode,
            changed_ns: record.changed_ns,
            ..Archived::default()
        }
    }

    /// The hashes this source refers to.
    fn hashes(&self) -> impl Iterator<Item = &str> {
        self.archive
            .iter()
            .chain(&self.archive_tail)
            .chain(&self.state)
            .chain(self.versions.iter().filter_map(|v| v.superseded.as_ref()))
            .map(String::as_str)
    }

    /// Fills a source record's archive fields.
    pub(crate) fn record(&self, record: &mut SourceRecord) {
        record.len = self.len;
        record.shift = self.shift;
        record.archive = self.archive.clone();
        record.archive_tail = self.archive_tail.clone();
        record.state = self.state.clone();
        record.versions = self.versions.clone();
        record.inode = self.inode;
        record.changed_ns = self.changed_ns;
    }

    /// Records the blobs this read wrote.
    pub(crate) fn put(&self, batch: &mut Batch) -> Result<()> {
        for blob in &self.blobs {
            batch.put_blob(blob)?;
        }
        Ok(())
    }
}

/// What a file looks like from outside: enough to tell that it changed without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub len: u64,
    /// Modification time, ms since the epoch.
    pub modified_ms: i64,
    pub inode: u64,
    /// Status-change time, ns since the epoch.
    pub changed_ns: i64,
}

impl Stamp {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Stamp {
        let modified_ms = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let (inode, changed_ns) = file_identity(meta);
        Stamp {
            len: meta.len(),
            modified_ms,
            inode,
            changed_ns,
        }
    }

    /// Whether the file is still what `record` was read from: the same size, mtime, inode
    /// and status-change time. A file replaced by another (an editor's save, `sed -i`) or
    /// written in place keeps its size and mtime only if they are set back, and not its
    /// inode or status-change time. Records from before eywa kept those (inode 0) go by
    /// size and mtime.
    pub(crate) fn matches(&self, record: &SourceRecord) -> bool {
        record.len == self.len
            && record.modified_ms == self.modified_ms
            && (record.inode == 0
                || (record.inode == self.inode && record.changed_ns == self.changed_ns))
    }
}

/// The inode and status-change time (ns) of a file; 0 where the platform has none.
fn file_identity(meta: &std::fs::Metadata) -> (u64, i64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (
            meta.ino(),
            meta.ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.ctime_nsec()),
        )
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (0, 0)
    }
}

/// A read's saved state: where to go on from, and the bytes just before that point.
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedRead {
    version: u32,
    /// Bytes of the archive: earlier versions' lines (`shift`), then the file's as read.
    len: u64,
    /// sha256 of the last bytes read (up to [`TAIL_BYTES`]) and how many there were.
    tail_hash: Vec<u8>,
    tail_len: u64,
    /// Where to go on from; its offset counts the archive's bytes, `shift` included.
    point: ReadPoint,
    #[serde(default)]
    shift: u64,
    /// sha256 of the file's first bytes (up to [`HEAD_BYTES`]) and how many there were;
    /// empty in states saved before eywa kept it.
    #[serde(default)]
    head_hash: Vec<u8>,
    #[serde(default)]
    head_len: u64,
}

impl SavedRead {
    /// Bytes of the file read.
    fn file_len(&self) -> u64 {
        self.len - self.shift
    }
}

/// The archive of the sources the graph knows: reading a source into it, reading it
/// back, and dropping what no source refers to any more.
pub(crate) struct Archive<'a> {
    graph: &'a Graph,
}

impl<'a> Archive<'a> {
    pub(crate) fn new(graph: &'a Graph) -> Archive<'a> {
        Archive { graph }
    }

    /// Reads a transcript, whole or (unless `force`) from where the last read of it
    /// stopped, archiving the bytes it had not archived yet. A file that no longer holds
    /// what was archived is a new version: what it lost is kept in the archive ahead of
    /// it (see the module's doc). `history` says which lines other
    /// sessions own and which labels are known. Safe to run on several files at once.
    pub(crate) fn read_source(
        &self,
        path: &Path,
        name: &str,
        mode: Mode,
        known: Option<&SourceRecord>,
        force: bool,
        history: &dyn History,
    ) -> Result<(Transcript, Archived)> {
        let resume = match known.filter(|_| !force) {
            Some(known) => self.resume_point(path, known),
            None => None,
        };
        let mut file = std::fs::File::open(path).map_err(Error::io(path))?;
        let (inode, changed_ns) = file_identity(&file.metadata().map_err(Error::io(path))?);
        let split = match (&resume, known) {
            (None, Some(known)) if known.archive.is_some() => {
                self.split_versions(&mut file, path, known)?
            }
            _ => None,
        };
        let blobs = self.graph.store().blobs();
        // A small transcript (or appended segment) stays in its blob record: no file.
        let mut writer = blobs.writer()?.inline_up_to(eywa_storage::INLINE_MAX);
        let appended = resume.is_some();
        let shift = match (&resume, &split) {
            (Some((saved, _)), _) => saved.shift,
            (None, Some(split)) => split.kept.raw_len,
            (None, None) => 0,
        };
        // Where the file is read from, and how much of it was archived before.
        let (start, archived_len, tail, point, head) = match resume {
            Some((saved, tail)) => (
                saved.point.offset - saved.shift,
                saved.file_len(),
                tail,
                Some(saved.point),
                Some((saved.head_hash, saved.head_len)),
            ),
            None => (0, 0, Vec::new(), None, None),
        };
        file.seek(SeekFrom::Start(start)).map_err(Error::io(path))?;
        let mut tee = ArchiveTee {
            inner: file,
            sink: &mut writer,
            pos: start,
            archive_from: archived_len,
            tail,
            head: Vec::new(),
        };
        let (transcript, point) = match &split {
            Some(split) => {
                let kept = blobs.open_info(&split.kept)?.ok_or_else(|| {
                    Error::NotFound(format!("the lines kept of {} are missing", path.display()))
                })?;
                read_resumable(kept.chain(&mut tee), name, mode, history, point)
            }
            None => read_resumable(&mut tee, name, mode, history, point),
        }
        .map_err(Error::io(path))?;
        let tail = std::mem::take(&mut tee.tail);
        let (head_hash, head_len) = head.unwrap_or_else(|| {
            let head = std::mem::take(&mut tee.head);
            (Sha256::digest(&head).to_vec(), head.len() as u64)
        });
        let segment = writer.finish()?;
        let read = segment.raw_len;
        let len = archived_len + segment.raw_len;
        let mut written = vec![segment];
        let mut dropped = Vec::new();
        let mut versions = known.map(|k| k.versions.clone()).unwrap_or_default();
        let new_version = split.as_ref().is_some_and(|s| s.replaced);
        let (archive, archive_tail) = match (known.filter(|_| appended), split) {
            (Some(known), _) => {
                let mut segments = known.archive_tail.clone();
                segments.push(written[0].hash.clone());
                if segments.len() > MAX_SEGMENTS {
                    let merged = self.merge_segments(&segments, &written)?;
                    dropped.push(written[0].hash.clone());
                    segments = vec![merged.hash.clone()];
                    written = vec![merged];
                }
                (known.archive.clone(), segments)
            }
            (None, Some(split)) => {
                if split.replaced {
                    tracing::info!(
                        path = %path.display(),
                        kept_lines = split.kept_lines,
                        superseded_lines = split.superseded_lines,
                        "a transcript shrank or was rewritten: its earlier lines are kept"
                    );
                    versions.push(SourceVersion {
                        replaced_ms: Timestamp::now().0,
                        len: known.map_or(0, |k| k.len),
                        kept_lines: split.kept_lines,
                        superseded: (split.superseded_lines > 0)
                            .then(|| split.superseded.hash.clone()),
                        superseded_lines: split.superseded_lines,
                    });
                }
                if split.superseded_lines > 0 {
                    written.push(split.superseded);
                }
                if split.kept.raw_len > 0 {
                    let file = written[0].hash.clone();
                    written.push(split.kept.clone());
                    (Some(split.kept.hash), vec![file])
                } else {
                    (Some(written[0].hash.clone()), Vec::new())
                }
            }
            (None, None) => (Some(written[0].hash.clone()), Vec::new()),
        };
        let mut point = point;
        scrub_read_point(&mut point);
        let saved = SavedRead {
            version: STATE_VERSION,
            len: shift + len,
            tail_hash: Sha256::digest(&tail).to_vec(),
            tail_len: tail.len() as u64,
            point,
            shift,
            head_hash,
            head_len,
        };
        let state = blobs.put_small(&rmp_serde::to_vec(&saved).expect("a read state encodes"))?;
        Ok((
            transcript,
            Archived {
                len,
                shift,
                archive,
                archive_tail,
                state: Some(state.hash.clone()),
                blobs: written.into_iter().chain([state]).collect(),
                versions,
                inode,
                changed_ns,
                dropped,
                appended,
                new_version,
                read,
            },
        ))
    }

    /// One blob holding the segments' bytes in order; `fresh` are segments written by
    /// this read, not recorded yet.
    fn merge_segments(&self, segments: &[String], fresh: &[BlobInfo]) -> Result<BlobInfo> {
        let blobs = self.graph.store().blobs();
        let mut writer = blobs.writer()?.inline_up_to(eywa_storage::INLINE_MAX);
        for hash in segments {
            let reader = match fresh.iter().find(|b| &b.hash == hash) {
                Some(info) => blobs.open_info(info)?,
                None => self.graph.store().open_blob(hash)?,
            };
            let mut reader = reader
                .ok_or_else(|| Error::NotFound(format!("archive segment {hash} is missing")))?;
            std::io::copy(&mut reader, &mut writer)
                .map_err(Error::io(blobs.path().to_path_buf()))?;
        }
        Ok(writer.finish()?)
    }

    /// The saved state to go on from, and the bytes last read, when the file was only
    /// appended to since: it is longer, it still begins as it did and holds the bytes last
    /// read before the saved length, and the state decodes. Anything else reads it whole.
    fn resume_point(&self, path: &Path, known: &SourceRecord) -> Option<(SavedRead, Vec<u8>)> {
        let hash = known.state.as_deref()?;
        known.archive.as_ref()?;
        let len = std::fs::metadata(path).ok()?.len();
        if len <= known.len {
            return None;
        }
        let bytes = match self.graph.store().read_blob(hash) {
            Ok(bytes) => bytes?,
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "read state unreadable");
                return None;
            }
        };
        let saved: SavedRead = rmp_serde::from_slice(&bytes).ok()?;
        if saved.version != STATE_VERSION
            || saved.shift > saved.len
            || saved.file_len() != known.len
            || saved.shift != known.shift
        {
            return None;
        }
        let mut file = std::fs::File::open(path).ok()?;
        let mut read_at = |at: u64, n: u64| -> Option<Vec<u8>> {
            file.seek(SeekFrom::Start(at)).ok()?;
            let mut bytes = vec![0; usize::try_from(n).ok()?];
            file.read_exact(&mut bytes).ok()?;
            Some(bytes)
        };
        if saved.head_len > 0
            && Sha256::digest(read_at(0, saved.head_len)?).as_slice() != saved.head_hash
        {
            return None;
        }
        let tail = read_at(
            saved.file_len().checked_sub(saved.tail_len)?,
            saved.tail_len,
        )?;
        (Sha256::digest(&tail).as_slice() == saved.tail_hash).then_some((saved, tail))
    }

    /// The archived bytes of a source: its base and appended segments, in order.
    pub(crate) fn archive_reader(
        &self,
        record: &SourceRecord,
    ) -> Result<Option<Box<dyn Read + Send>>> {
        let Some(base) = &record.archive else {
            return Ok(None);
        };
        let store = self.graph.store();
        let mut reader: Box<dyn Read + Send> = match store.open_blob(base)? {
            Some(r) => r,
            None => return Ok(None),
        };
        for segment in &record.archive_tail {
            match store.open_blob(segment)? {
                Some(r) => reader = Box::new(reader.chain(r)),
                None => return Ok(None),
            }
        }
        Ok(Some(reader))
    }

    /// Drops the blobs a source referred to before this read and no longer does, unless
    /// another source still refers to them.
    pub(crate) fn retire(&self, known: Option<&SourceRecord>, now: &Archived) -> Result<()> {
        for hash in &now.dropped {
            self.drop_blob_if_unused(hash)?;
        }
        let Some(known) = known else {
            return Ok(());
        };
        let kept: Vec<&str> = now.hashes().collect();
        for hash in known.blobs() {
            if !kept.contains(&hash.as_str()) {
                self.drop_blob_if_unused(hash)?;
            }
        }
        Ok(())
    }

    /// Removes a blob no source refers to any more.
    pub(crate) fn drop_blob_if_unused(&self, hash: &str) -> Result<()> {
        let used = self
            .graph
            .sources()?
            .iter()
            .any(|s| s.blobs().any(|h| h == hash));
        if used {
            return Ok(());
        }
        let store = self.graph.store();
        let mut batch = Batch::new();
        batch.delete_blob(hash);
        store.apply(batch)?;
        store.blobs().delete(hash)?;
        Ok(())
    }
}

/// Reads a file from `pos`, handing the bytes at or past `archive_from` to the archive and
/// keeping the last [`TAIL_BYTES`] of them, and the file's first [`HEAD_BYTES`] when it
/// reads them.
struct ArchiveTee<'a, 'b> {
    inner: std::fs::File,
    sink: &'a mut BlobWriter<'b>,
    pos: u64,
    archive_from: u64,
    tail: Vec<u8>,
    head: Vec<u8>,
}

impl Read for ArchiveTee<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let skip = usize::try_from(self.archive_from.saturating_sub(self.pos))
            .unwrap_or(usize::MAX)
            .min(n);
        let new = &buf[skip..n];
        self.sink.write_all(new)?;
        self.tail.extend_from_slice(new);
        if self.tail.len() > TAIL_BYTES {
            self.tail.drain(..self.tail.len() - TAIL_BYTES);
        }
        if let Some(room) = usize::try_from(self.pos)
            .ok()
            .and_then(|pos| HEAD_BYTES.checked_sub(pos))
            .filter(|&room| room > 0)
        {
            self.head.extend_from_slice(&buf[..n.min(room)]);
        }
        self.pos += n as u64;
        Ok(n)
    }
}
