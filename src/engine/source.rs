//! Reading a transcript file: whole, or — when Claude Code only appended to it since the
//! last read — from where that read stopped, archiving just the new bytes.
//!
//! A source's archive is a base blob (the file as first read whole) plus the segments
//! appended since, in order; concatenated they are the file's bytes as read. After each
//! read the reader's state is saved as a blob (its texts redacted), with a hash of the
//! last 4 KiB read, so that the next read can check the file still holds what was read
//! (it was appended to, not rewritten) and go on from the saved offset.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use eywa_storage::{Batch, BlobInfo, BlobWriter};
use sha2::{Digest, Sha256};

use super::Engine;
use std::collections::HashMap;

use super::ingest::RunHistory;
use crate::claude::{Mode, ReadPoint, Transcript, read_resumable};
use crate::extract::scrub_read_point;
use crate::graph::SourceRecord;
use crate::{Error, Result};

/// Bytes at the end of what was read kept to recognize an appended file.
const TAIL_BYTES: usize = 4096;
/// Appended segments a source keeps at most: past this they are merged into one (the
/// archive's base, the file as first read, stays).
const MAX_SEGMENTS: usize = 32;
/// Version of the saved read state; a state of another version is ignored.
const STATE_VERSION: u32 = 1;

/// Where the bytes of a source are kept after a read.
#[derive(Debug, Clone)]
pub(super) struct Archived {
    /// Blobs this read wrote (the base or a new segment, and the state): to record in the
    /// same batch as the source.
    pub blobs: Vec<BlobInfo>,
    /// Bytes of the file as read: the base and every segment.
    pub len: u64,
    pub archive: Option<String>,
    pub archive_tail: Vec<String>,
    pub state: Option<String>,
    /// Blobs this read wrote but does not keep (segments merged into one).
    pub dropped: Vec<String>,
    /// The read went on from a saved state: only what was appended was read.
    pub appended: bool,
    /// Bytes read from the file this time.
    pub read: u64,
}

impl Archived {
    /// A file archived whole as one blob, with no read state (plans, memory files).
    pub(super) fn whole(blob: BlobInfo) -> Archived {
        Archived {
            len: blob.raw_len,
            archive: Some(blob.hash.clone()),
            archive_tail: Vec::new(),
            state: None,
            read: blob.raw_len,
            blobs: vec![blob],
            dropped: Vec::new(),
            appended: false,
        }
    }

    /// The hashes this source refers to.
    fn hashes(&self) -> impl Iterator<Item = &str> {
        self.archive
            .iter()
            .chain(&self.archive_tail)
            .chain(&self.state)
            .map(String::as_str)
    }

    /// Fills a source record's archive fields.
    pub(super) fn record(&self, record: &mut SourceRecord) {
        record.len = self.len;
        record.archive = self.archive.clone();
        record.archive_tail = self.archive_tail.clone();
        record.state = self.state.clone();
    }

    /// Records the blobs this read wrote.
    pub(super) fn put(&self, batch: &mut Batch) -> Result<()> {
        for blob in &self.blobs {
            batch.put_blob(blob)?;
        }
        Ok(())
    }
}

/// A read's saved state: where to go on from, and the bytes just before that point.
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedRead {
    version: u32,
    /// Bytes of the file read (the archive's length).
    len: u64,
    /// sha256 of the last bytes read (up to [`TAIL_BYTES`]) and how many there were.
    tail_hash: Vec<u8>,
    tail_len: u64,
    point: ReadPoint,
}

impl Engine {
    /// Reads a transcript, whole or (unless `force`) from where the last read of it
    /// stopped, archiving the bytes it had not archived yet. `labels` are the summary
    /// labels known (stored, and this run's so far). Safe to run on several files at once.
    pub(super) fn read_source(
        &self,
        path: &Path,
        name: &str,
        mode: Mode,
        known: Option<&SourceRecord>,
        force: bool,
        labels: &HashMap<u128, String>,
    ) -> Result<(Transcript, Archived)> {
        let resume = match known.filter(|_| !force) {
            Some(known) => self.resume_point(path, known),
            None => None,
        };
        let mut file = std::fs::File::open(path).map_err(Error::io(path))?;
        let history = RunHistory {
            owners: &self.owners,
            labels,
        };
        let blobs = self.graph.store().blobs();
        // A small transcript (or appended segment) stays in its blob record: no file.
        let mut writer = blobs.writer()?.inline_up_to(eywa_storage::INLINE_MAX);
        let appended = resume.is_some();
        let (start, archived_len, tail, point) = match resume {
            Some((saved, tail)) => (saved.point.offset, saved.len, tail, Some(saved.point)),
            None => (0, 0, Vec::new(), None),
        };
        file.seek(SeekFrom::Start(start)).map_err(Error::io(path))?;
        let mut tee = ArchiveTee {
            inner: file,
            sink: &mut writer,
            pos: start,
            archive_from: archived_len,
            tail,
        };
        let (transcript, point) =
            read_resumable(&mut tee, name, mode, &history, point).map_err(Error::io(path))?;
        let tail = std::mem::take(&mut tee.tail);
        let segment = writer.finish()?;
        let read = segment.raw_len;
        let len = archived_len + segment.raw_len;
        let mut written = vec![segment];
        let mut dropped = Vec::new();
        let (archive, archive_tail) = match known.filter(|_| appended) {
            Some(known) => {
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
            None => (Some(written[0].hash.clone()), Vec::new()),
        };
        let mut point = point;
        scrub_read_point(&mut point);
        let saved = SavedRead {
            version: STATE_VERSION,
            len,
            tail_hash: Sha256::digest(&tail).to_vec(),
            tail_len: tail.len() as u64,
            point,
        };
        let state = blobs.put_small(&rmp_serde::to_vec(&saved).expect("a read state encodes"))?;
        Ok((
            transcript,
            Archived {
                len,
                archive,
                archive_tail,
                state: Some(state.hash.clone()),
                blobs: written.into_iter().chain([state]).collect(),
                dropped,
                appended,
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
    /// appended to since: it is longer, it still holds the bytes last read before the
    /// saved length, and the state decodes. Anything else reads it whole.
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
        if saved.version != STATE_VERSION || saved.len != known.len {
            return None;
        }
        let mut file = std::fs::File::open(path).ok()?;
        let at = saved.len.checked_sub(saved.tail_len)?;
        file.seek(SeekFrom::Start(at)).ok()?;
        let mut now = vec![0; usize::try_from(saved.tail_len).ok()?];
        file.read_exact(&mut now).ok()?;
        (Sha256::digest(&now).as_slice() == saved.tail_hash).then_some((saved, now))
    }

    /// The archived bytes of a source: its base and appended segments, in order.
    pub(super) fn archive_reader(
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
    pub(super) fn retire(&self, known: Option<&SourceRecord>, now: &Archived) -> Result<()> {
        for hash in &now.dropped {
            self.drop_blob_if_unused(hash)?;
        }
        let Some(known) = known else {
            return Ok(());
        };
        let kept: Vec<&str> = now.hashes().collect();
        let old = known
            .archive
            .iter()
            .chain(&known.archive_tail)
            .chain(&known.state);
        for hash in old {
            if !kept.contains(&hash.as_str()) {
                self.drop_blob_if_unused(hash)?;
            }
        }
        Ok(())
    }

    /// Removes a blob no source refers to any more.
    pub(super) fn drop_blob_if_unused(&self, hash: &str) -> Result<()> {
        let used = self.graph.sources()?.iter().any(|s| {
            s.archive.as_deref() == Some(hash)
                || s.state.as_deref() == Some(hash)
                || s.archive_tail.iter().any(|h| h == hash)
        });
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
/// keeping the last [`TAIL_BYTES`] of them.
struct ArchiveTee<'a, 'b> {
    inner: std::fs::File,
    sink: &'a mut BlobWriter<'b>,
    pos: u64,
    archive_from: u64,
    tail: Vec<u8>,
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
        self.pos += n as u64;
        Ok(n)
    }
}
