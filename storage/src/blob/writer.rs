//! Writing a blob: small ones compressed in memory, large ones streamed to a temporary file
//! through zstd, hashed as they go, then renamed into place.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::{BlobInfo, BlobStore, ZSTD_LEVEL, create_private_file, io_at, to_hex};
use crate::Result;

/// Where a blob's compressed bytes go: memory until they pass `spill_at`, then a
/// temporary file.
struct Sink {
    pub(super) tmp: PathBuf,
    memory: Vec<u8>,
    file: Option<File>,
    spill_at: usize,
}

impl Sink {
    fn spill(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            let mut file = create_private_file(&self.tmp)?;
            file.write_all(&self.memory)?;
            self.memory = Vec::new();
            self.file = Some(file);
        }
        Ok(self.file.as_mut().expect("just created"))
    }
}

impl io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.file.is_none() && self.memory.len() + buf.len() <= self.spill_at {
            self.memory.extend_from_slice(buf);
            return Ok(buf.len());
        }
        self.spill()?.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

/// Raw bytes a blob may reach before it is compressed as a stream rather than at once:
/// 256 KiB. Smaller blobs (most read states and small transcripts) are compressed in one
/// call with a context kept per thread, not one made per blob.
const STREAM_AFTER: usize = 256 * 1024;

thread_local! {
    static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// `raw` compressed as one zstd frame, with this thread's compressor.
fn compress(raw: &[u8]) -> io::Result<Vec<u8>> {
    COMPRESSOR.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = Some(zstd::bulk::Compressor::new(ZSTD_LEVEL)?);
        }
        slot.as_mut().expect("just made").compress(raw)
    })
}

/// A blob being written: bytes go through sha256 and zstd into a temporary file (or, for
/// a writer [`BlobWriter::inline_up_to`] a size, into memory while they fit).
pub struct BlobWriter<'a> {
    store: &'a BlobStore,
    pub(super) tmp: PathBuf,
    /// The raw bytes while the blob is small.
    raw: Option<Vec<u8>>,
    /// The stream, once the blob outgrew [`STREAM_AFTER`].
    encoder: Option<zstd::stream::write::Encoder<'static, Sink>>,
    hasher: Sha256,
    raw_len: u64,
    spill_at: usize,
    inline: bool,
}

impl<'a> BlobWriter<'a> {
    /// A writer into `store`, its bytes going first to `tmp`.
    pub(super) fn new(store: &'a BlobStore, tmp: PathBuf) -> Self {
        BlobWriter {
            store,
            tmp,
            raw: Some(Vec::new()),
            encoder: None,
            hasher: Sha256::new(),
            raw_len: 0,
            spill_at: 0,
            inline: false,
        }
    }

    /// Keeps the blob inline (in its [`BlobInfo`]) if it compresses to at most `max`
    /// bytes: no file is created for it.
    pub fn inline_up_to(mut self, max: usize) -> Self {
        self.spill_at = max;
        self.inline = true;
        self
    }

    /// Turns the buffered raw bytes into a compressing stream.
    fn stream(&mut self) -> io::Result<&mut zstd::stream::write::Encoder<'static, Sink>> {
        if self.encoder.is_none() {
            let sink = Sink {
                tmp: self.tmp.clone(),
                memory: Vec::new(),
                file: None,
                spill_at: self.spill_at,
            };
            let mut encoder = zstd::stream::write::Encoder::new(sink, ZSTD_LEVEL)?;
            encoder.write_all(&self.raw.take().unwrap_or_default())?;
            self.encoder = Some(encoder);
        }
        Ok(self.encoder.as_mut().expect("just made"))
    }

    /// Syncs the file and moves it into place (or drops it when the blob exists); an
    /// inline blob is returned in its info, nothing written.
    pub fn finish(mut self) -> Result<BlobInfo> {
        let hash = to_hex(&std::mem::take(&mut self.hasher).finalize());
        let mut sink = match (self.raw.take(), self.encoder.take()) {
            (Some(raw), None) => {
                let compressed = compress(&raw).map_err(io_at(&self.tmp))?;
                Sink {
                    tmp: self.tmp.clone(),
                    memory: compressed,
                    file: None,
                    spill_at: self.spill_at,
                }
            }
            (_, Some(encoder)) => encoder.finish().map_err(io_at(&self.tmp))?,
            (None, None) => unreachable!("a writer holds its bytes until it finishes"),
        };
        if sink.file.is_none() && self.inline && sink.memory.len() <= self.spill_at {
            return Ok(BlobInfo {
                hash,
                raw_len: self.raw_len,
                stored_len: sink.memory.len() as u64,
                inline: Some(sink.memory),
            });
        }
        let file = sink.spill().map_err(io_at(&self.tmp))?;
        file.sync_all().map_err(io_at(&self.tmp))?;
        let stored_len = self.store.commit(&self.tmp, &hash)?;
        Ok(BlobInfo {
            hash,
            raw_len: self.raw_len,
            stored_len,
            inline: None,
        })
    }
}

impl io::Write for BlobWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.raw {
            Some(raw) if raw.len() + buf.len() <= STREAM_AFTER => raw.extend_from_slice(buf),
            _ => self.stream()?.write_all(buf)?,
        }
        self.hasher.update(buf);
        self.raw_len += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for BlobWriter<'_> {
    fn drop(&mut self) {
        // Unfinished: a spilled stream leaves a temporary file to remove.
        if let Some(encoder) = self.encoder.take()
            && encoder.get_ref().file.is_some()
        {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}
