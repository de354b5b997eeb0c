//! A new version of a source file: compared line by line (by uuid, else by bytes) with
//! the archive of the versions before, what it no longer holds is kept ahead of it (lines
//! it lacks) or apart (lines it says otherwise, superseded).

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::Path;

use eywa_storage::BlobInfo;

use super::Archive;
use crate::claude::{Line, uuid_key};
use crate::graph::SourceRecord;
use crate::{Error, Result};

/// A new version of a file, against the archive of the versions before: what of them to
/// keep ahead of the file's bytes.
pub(super) struct Split {
    /// Lines of the archive the file lacks, each once, in archive order.
    pub(super) kept: BlobInfo,
    pub(super) kept_lines: u64,
    /// Lines whose uuid the file holds with other content.
    pub(super) superseded: BlobInfo,
    pub(super) superseded_lines: u64,
    /// The file replaced the version last read (it lacks some of its lines, or holds
    /// them in another form), not just the same lines again.
    pub(super) replaced: bool,
}

/// How the lines of a file are told apart: by uuid when they have one, else by their
/// bytes; and a hash of their bytes, to tell a changed line from the same one.
#[derive(Default)]
struct LineSet {
    by_uuid: HashMap<u128, u64>,
    plain: HashSet<u64>,
}

impl LineSet {
    /// The lines of `reader`, up to its end.
    fn read(reader: impl Read) -> std::io::Result<LineSet> {
        let mut set = LineSet::default();
        for_each_line(reader, |line, _| {
            let (uuid, hash) = identify(line);
            match uuid {
                Some(uuid) => {
                    set.by_uuid.entry(uuid).or_insert(hash);
                }
                None => {
                    set.plain.insert(hash);
                }
            }
            Ok(())
        })?;
        Ok(set)
    }
}

/// A line's uuid (when it parses and has one) and a hash of its bytes.
fn identify(line: &[u8]) -> (Option<u128>, u64) {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    line.hash(&mut hasher);
    let uuid = Line::parse(line).and_then(|l| l.uuid().map(uuid_key));
    (uuid, hasher.finish())
}

/// Calls `f` with each complete line of `reader` (trimmed, blank ones skipped) and the
/// line with its newline; a last line without its newline is left out.
fn for_each_line(
    reader: impl Read,
    mut f: impl FnMut(&[u8], &[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut reader = std::io::BufReader::with_capacity(256 * 1024, reader);
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 || buf.last() != Some(&b'\n') {
            return Ok(());
        }
        let line = buf.trim_ascii();
        if !line.is_empty() {
            f(line, &buf)?;
        }
    }
}

impl Archive<'_> {
    /// Compares a file that is not an append of what was read with the archive of its
    /// versions so far: `None` when the file holds every archived line as it was (it is
    /// read whole, as new), else the lines to keep ahead of it and those it supersedes.
    /// Leaves the file at its start.
    pub(super) fn split_versions(
        &self,
        file: &mut std::fs::File,
        path: &Path,
        known: &SourceRecord,
    ) -> Result<Option<Split>> {
        let Some(archive) = self.archive_reader(known)? else {
            return Ok(None);
        };
        let now = LineSet::read(&mut *file).map_err(Error::io(path))?;
        file.seek(SeekFrom::Start(0)).map_err(Error::io(path))?;
        let blobs = self.graph.store().blobs();
        let mut kept = blobs.writer()?.inline_up_to(eywa_storage::INLINE_MAX);
        let mut superseded = blobs.writer()?.inline_up_to(eywa_storage::INLINE_MAX);
        let (mut kept_lines, mut superseded_lines, mut lost_from_file) = (0, 0, false);
        // Each line is kept once: by uuid, or by its bytes when it has none.
        let (mut kept_uuids, mut kept_plain, mut superseded_seen) =
            (HashSet::new(), HashSet::new(), HashSet::new());
        let mut at = 0u64;
        for_each_line(archive, |line, raw| {
            let from_file = at >= known.shift;
            at += raw.len() as u64;
            let (uuid, hash) = identify(line);
            let sink = match uuid.map(|u| (u, now.by_uuid.get(&u))) {
                Some((_, Some(&same))) if same == hash => return Ok(()),
                Some((uuid, Some(_))) => {
                    if !superseded_seen.insert((uuid, hash)) {
                        return Ok(());
                    }
                    superseded_lines += 1;
                    &mut superseded
                }
                Some((uuid, None)) => {
                    if !kept_uuids.insert(uuid) {
                        return Ok(());
                    }
                    kept_lines += 1;
                    lost_from_file |= from_file;
                    &mut kept
                }
                None => {
                    if now.plain.contains(&hash) || !kept_plain.insert(hash) {
                        return Ok(());
                    }
                    kept_lines += 1;
                    lost_from_file |= from_file;
                    &mut kept
                }
            };
            sink.write_all(line)?;
            sink.write_all(b"\n")
        })
        .map_err(Error::io(blobs.path().to_path_buf()))?;
        if kept_lines == 0 && superseded_lines == 0 {
            return Ok(None);
        }
        Ok(Some(Split {
            kept: kept.finish()?,
            kept_lines,
            superseded: superseded.finish()?,
            superseded_lines,
            replaced: lost_from_file || superseded_lines > 0,
        }))
    }
}
