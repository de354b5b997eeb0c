//! The cold tier: zstd-compressed blob files named by the sha256 of their raw content.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::store::create_private_dir;
use crate::{Batch, Error, Keyspace, Result, Store};

/// zstd level of blob files: 3, zstd's own default (fast, about 3x on text).
const ZSTD_LEVEL: i32 = 3;
/// Bytes read from a blob's input per step of [`BlobStore::put`]: 64 KiB.
const COPY_BUFFER_BYTES: usize = 64 * 1024;
/// Where blobs are written before they are renamed into place; emptied on open.
const TMP_DIR: &str = "tmp";
const BLOB_SUFFIX: &str = ".zst";

/// What [`BlobStore::put`] stored. Record it with [`Batch::put_blob`] in the same batch as
/// whatever refers to the blob, or the blob counts as an orphan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobInfo {
    /// sha256 of the raw content, 64 lowercase hex characters.
    pub hash: String,
    /// Bytes of the raw (uncompressed) content.
    pub raw_len: u64,
    /// Bytes of the compressed file on disk.
    pub stored_len: u64,
}

/// Content-addressed blob files under `<store>/cold`: `<first 2 hex>/<other 62 hex>.zst`.
/// Putting the same content twice stores one file. Reads are streamed and checked against
/// the hash at the end.
#[derive(Debug, Clone)]
pub struct BlobStore {
    root: PathBuf,
}

impl BlobStore {
    /// Opens the cold tier at `root`, removing temporary files a crash left behind. The
    /// caller must hold the store's lock.
    pub(crate) fn init(root: PathBuf) -> Result<BlobStore> {
        create_private_dir(&root)?;
        let tmp = root.join(TMP_DIR);
        create_private_dir(&tmp)?;
        for entry in fs::read_dir(&tmp).map_err(io_at(&tmp))? {
            let path = entry.map_err(io_at(&tmp))?.path();
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(source) => return Err(Error::BlobIo { path, source }),
            }
        }
        Ok(BlobStore { root })
    }

    /// The directory of the cold tier.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Stores everything `reader` yields, streaming it through sha256 and zstd into a
    /// temporary file that is synced and then renamed into place.
    pub fn put(&self, mut reader: impl Read) -> Result<BlobInfo> {
        let mut writer = self.writer()?;
        let mut buf = vec![0; COPY_BUFFER_BYTES];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::BlobInput(e)),
            };
            writer.write_all(&buf[..n]).map_err(io_at(&writer.tmp))?;
        }
        writer.finish()
    }

    /// A blob written piece by piece (e.g. while the same bytes are parsed). Nothing is
    /// stored unless [`BlobWriter::finish`] is called; a dropped writer leaves no file.
    pub fn writer(&self) -> Result<BlobWriter<'_>> {
        let tmp = self.temp_path();
        let file = create_private_file(&tmp).map_err(io_at(&tmp))?;
        let encoder = zstd::stream::write::Encoder::new(file, ZSTD_LEVEL).map_err(io_at(&tmp))?;
        Ok(BlobWriter {
            store: self,
            tmp,
            encoder: Some(encoder),
            hasher: Sha256::new(),
            raw_len: 0,
        })
    }

    pub fn put_bytes(&self, bytes: &[u8]) -> Result<BlobInfo> {
        self.put(bytes)
    }

    /// A streaming reader of the raw content; `Ok(None)` if there is no such blob. Reading
    /// fails with [`io::ErrorKind::InvalidData`] at the end if the content does not match
    /// the hash, and with another error if the file does not decode.
    pub fn open(&self, hash: &str) -> Result<Option<impl Read + Send + use<>>> {
        let path = self.path_of(hash)?;
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(Error::BlobIo { path, source }),
        };
        let decoder = zstd::stream::read::Decoder::new(file).map_err(io_at(&path))?;
        Ok(Some(VerifyingReader {
            inner: decoder,
            expected: hash.to_owned(),
            state: Check::Hashing(Sha256::new()),
        }))
    }

    /// The whole raw content; `Ok(None)` if there is no such blob.
    pub fn read(&self, hash: &str) -> Result<Option<Vec<u8>>> {
        let Some(mut reader) = self.open(hash)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|source| Error::CorruptBlob {
                hash: hash.to_owned(),
                source,
            })?;
        Ok(Some(bytes))
    }

    /// Whether the blob file exists (`false` for a malformed hash).
    pub fn contains(&self, hash: &str) -> bool {
        self.path_of(hash).is_ok_and(|path| path.is_file())
    }

    /// Removes the blob file; `Ok(false)` if it was not there.
    pub fn delete(&self, hash: &str) -> Result<bool> {
        let path = self.path_of(hash)?;
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(Error::BlobIo { path, source }),
        }
    }

    /// Decompresses the blob and re-hashes it: `Some(true)` if it matches its name,
    /// `Some(false)` if it does not or cannot be decoded, `None` if there is no such blob.
    pub fn verify(&self, hash: &str) -> Result<Option<bool>> {
        let Some(mut reader) = self.open(hash)? else {
            return Ok(None);
        };
        Ok(Some(io::copy(&mut reader, &mut io::sink()).is_ok()))
    }

    /// Hashes of every blob file, sorted. Files that are not named like blobs are skipped.
    pub fn list(&self) -> Result<Vec<String>> {
        let mut hashes = Vec::new();
        for shard in fs::read_dir(&self.root).map_err(io_at(&self.root))? {
            let shard = shard.map_err(io_at(&self.root))?;
            let name = shard.file_name();
            let Some(prefix) = name.to_str().filter(|p| p.len() == 2 && is_hex(p)) else {
                continue;
            };
            let dir = shard.path();
            if !dir.is_dir() {
                continue;
            }
            for entry in fs::read_dir(&dir).map_err(io_at(&dir))? {
                let name = entry.map_err(io_at(&dir))?.file_name();
                let Some(rest) = name.to_str().and_then(|n| n.strip_suffix(BLOB_SUFFIX)) else {
                    continue;
                };
                let hash = format!("{prefix}{rest}");
                if is_valid_hash(&hash) {
                    hashes.push(hash);
                }
            }
        }
        hashes.sort_unstable();
        Ok(hashes)
    }

    /// The file of a blob; refuses anything but 64 lowercase hex characters, so that no
    /// path is ever built from arbitrary input.
    pub(crate) fn path_of(&self, hash: &str) -> Result<PathBuf> {
        check_hash(hash)?;
        Ok(self
            .root
            .join(&hash[..2])
            .join(format!("{}{BLOB_SUFFIX}", &hash[2..])))
    }

    fn temp_path(&self) -> PathBuf {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        self.root
            .join(TMP_DIR)
            .join(format!("{}-{n}.tmp", std::process::id()))
    }

    /// Moves a synced temporary file to the blob's path, or drops it if the blob is already
    /// there. Returns the bytes of the file in place.
    fn commit(&self, tmp: &Path, hash: &str) -> Result<u64> {
        let path = self.path_of(hash)?;
        if let Ok(existing) = fs::metadata(&path) {
            fs::remove_file(tmp).map_err(io_at(tmp))?;
            return Ok(existing.len());
        }
        let dir = path.parent().expect("a blob path has a shard directory");
        create_shard_dir(dir).map_err(io_at(dir))?;
        let stored_len = fs::metadata(tmp).map_err(io_at(tmp))?.len();
        fs::rename(tmp, &path).map_err(io_at(&path))?;
        sync_dir(dir).map_err(io_at(dir))?;
        Ok(stored_len)
    }
}

impl Batch {
    /// Records a blob in [`Keyspace::Blobs`] under its hash (the 64 hex characters as bytes).
    pub fn put_blob(&mut self, info: &BlobInfo) -> Result<()> {
        check_hash(&info.hash)?;
        self.put(Keyspace::Blobs, info.hash.as_bytes(), info)
    }

    /// Removes a blob's record; delete its file ([`BlobStore::delete`]) once this landed.
    pub fn delete_blob(&mut self, hash: &str) {
        self.delete(Keyspace::Blobs, hash.as_bytes());
    }
}

impl Store {
    /// The record of a blob written by [`Batch::put_blob`]; `Ok(None)` if there is none,
    /// [`Error::BadBlobHash`] if `hash` is malformed.
    pub fn blob_info(&self, hash: &str) -> Result<Option<BlobInfo>> {
        check_hash(hash)?;
        self.get(Keyspace::Blobs, hash.as_bytes())
    }

    /// Hashes of blob files that have no record in [`Keyspace::Blobs`], sorted.
    pub fn orphan_blobs(&self) -> Result<Vec<String>> {
        let mut orphans = Vec::new();
        for hash in self.blobs().list()? {
            if !self.contains(Keyspace::Blobs, hash.as_bytes())? {
                orphans.push(hash);
            }
        }
        Ok(orphans)
    }

    /// Deletes the files of [`Store::orphan_blobs`]; returns how many were removed. Blobs
    /// that this store's own operations are writing are safe; a caller that puts blobs
    /// itself must not call this between its `put` and the batch that records the blob.
    pub fn remove_orphan_blobs(&self) -> Result<u64> {
        let _gate = self.lock_blob_gate();
        let mut removed = 0;
        for hash in self.orphan_blobs()? {
            if self.blobs().delete(&hash)? {
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// A blob being written: bytes go through sha256 and zstd into a temporary file.
pub struct BlobWriter<'a> {
    store: &'a BlobStore,
    tmp: PathBuf,
    encoder: Option<zstd::stream::write::Encoder<'static, File>>,
    hasher: Sha256,
    raw_len: u64,
}

impl BlobWriter<'_> {
    /// Syncs the file and moves it into place (or drops it when the blob exists).
    pub fn finish(mut self) -> Result<BlobInfo> {
        let encoder = self.encoder.take().expect("finish runs once");
        let file = encoder.finish().map_err(io_at(&self.tmp))?;
        file.sync_all().map_err(io_at(&self.tmp))?;
        let hash = to_hex(&std::mem::take(&mut self.hasher).finalize());
        let stored_len = self.store.commit(&self.tmp, &hash)?;
        Ok(BlobInfo {
            hash,
            raw_len: self.raw_len,
            stored_len,
        })
    }
}

impl io::Write for BlobWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let encoder = self
            .encoder
            .as_mut()
            .ok_or_else(|| io::Error::other("blob writer already finished"))?;
        encoder.write_all(buf)?;
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
        if self.encoder.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Passes decoded bytes through and checks their sha256 once the inner reader ends.
struct VerifyingReader<R> {
    inner: R,
    expected: String,
    state: Check,
}

enum Check {
    Hashing(Sha256),
    Matched,
    Mismatched,
}

impl<R: Read> Read for VerifyingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mismatch = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "blob content does not match its hash",
            )
        };
        if matches!(self.state, Check::Mismatched) {
            return Err(mismatch());
        }
        let n = self.inner.read(buf)?;
        match &mut self.state {
            Check::Hashing(hasher) if n > 0 => hasher.update(&buf[..n]),
            Check::Hashing(_) if !buf.is_empty() => {
                let Check::Hashing(hasher) = std::mem::replace(&mut self.state, Check::Matched)
                else {
                    unreachable!("the state was just matched as hashing");
                };
                if to_hex(&hasher.finalize()) != self.expected {
                    self.state = Check::Mismatched;
                    return Err(mismatch());
                }
            }
            _ => {}
        }
        Ok(n)
    }
}

fn check_hash(hash: &str) -> Result<()> {
    if is_valid_hash(hash) {
        Ok(())
    } else {
        Err(Error::BadBlobHash {
            hash: hash.to_owned(),
        })
    }
}

fn is_valid_hash(hash: &str) -> bool {
    hash.len() == 64 && is_hex(hash)
}

/// Lowercase hex digits only.
fn is_hex(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Lowercase hex of `bytes`.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        hex.push(DIGITS[usize::from(b >> 4)] as char);
        hex.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    hex
}

fn io_at(path: &Path) -> impl Fn(io::Error) -> Error + '_ {
    move |source| Error::BlobIo {
        path: path.to_path_buf(),
        source,
    }
}

fn create_private_file(path: &Path) -> io::Result<File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

fn create_shard_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Makes a rename in `dir` durable (a no-op where directories cannot be synced).
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests;
