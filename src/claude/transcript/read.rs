//! Reading a transcript whole, or on from where a read stopped.

use std::io::BufRead;
use std::path::Path;

use super::accumulator::Accumulator;
use super::types::Transcript;
use super::{History, Mode, NoHistory};
use crate::claude::line::Line;

/// Reads a transcript file line by line. Malformed lines are skipped and counted; only an
/// I/O error fails the read.
pub fn read_transcript(path: &Path, session_id: &str) -> std::io::Result<Transcript> {
    read_transcript_from(std::fs::File::open(path)?, session_id, Mode::Main)
}

/// [`read_transcript`] over any reader (an archived copy, say).
pub fn read_transcript_from(
    reader: impl std::io::Read,
    session_id: &str,
    mode: Mode,
) -> std::io::Result<Transcript> {
    read_transcript_with(reader, session_id, mode, &NoHistory)
}

/// [`read_transcript_from`], telling lines replayed from other sessions apart and
/// resolving labels other files gave to this one's messages.
pub fn read_transcript_with(
    reader: impl std::io::Read,
    session_id: &str,
    mode: Mode,
    history: &dyn History,
) -> std::io::Result<Transcript> {
    read_resumable(reader, session_id, mode, history, None).map(|(t, _)| t)
}

/// Where a read of a transcript stopped: the reader's state after the last complete line
/// and the byte offset just past it. Reading on from there (the file appended to) gives
/// what reading the whole file again would.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ReadPoint {
    state: Accumulator,
    pub offset: u64,
}

impl ReadPoint {
    /// Hands every piece of text the saved state keeps to `f` (to redact it).
    pub fn visit_texts(&mut self, f: &mut dyn FnMut(&mut String)) {
        self.state.visit_texts(f);
    }
}

/// Reads a transcript from the start, or on from `from` with `reader` positioned at
/// `from.offset`; returns the transcript and where to go on from next time. A last line
/// without its newline (Claude Code still writing it) is read, but the returned point
/// stops before it, so it is read again, whole, next time.
pub fn read_resumable(
    reader: impl std::io::Read,
    session_id: &str,
    mode: Mode,
    history: &dyn History,
    from: Option<ReadPoint>,
) -> std::io::Result<(Transcript, ReadPoint)> {
    let mut reader = std::io::BufReader::with_capacity(256 * 1024, reader);
    let (mut acc, mut offset) = match from {
        Some(point) => (point.state, point.offset),
        None => (Accumulator::new(session_id, mode), 0),
    };
    let mut partial = None;
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        if buf.last() == Some(&b'\n') {
            offset += n as u64;
        } else {
            partial = Some(acc.snapshot());
        }
        acc.t.bytes += n as u64;
        let bytes = buf.trim_ascii();
        if bytes.is_empty() {
            continue;
        }
        acc.t.lines += 1;
        match Line::read(bytes) {
            Ok(line) => acc.add(&line, history),
            Err(why) => {
                acc.t.skipped_lines += 1;
                if acc.t.first_skip.is_none() {
                    acc.t.first_skip = Some(format!("line {}: {why}", acc.t.lines));
                }
            }
        }
    }
    let point = ReadPoint {
        state: partial.unwrap_or_else(|| acc.snapshot()),
        offset,
    };
    Ok((acc.finish(history), point))
}
