//! The cold tier: zstd-compressed blob files named by the sha256 of their raw content.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::dirs::{create_private_dir, sync_dir};
use crate::{Batch, Error, Keyspace, Result, Store};

/// zstd level of blob files: 3, zstd's own default (fast, about 3x on text).
mod writer;

pub use self::writer::BlobWriter;

const ZSTD_LEVEL: i32 = 3;
/// Bytes read from a blob's input per step of [`BlobStore::put`]: 64 KiB.
const COPY_BUFFER_BYTES: usize = 64 * 1024;
/// Where blobs are written before they are renamed into place; emptied on open.
const TMP_DIR: &str = "tmp";
const BLOB_SUFFIX: &str = ".zst";

/// Compressed bytes up to which a blob written with [`BlobWriter::inline_up_to`] or
/// [`BlobStore::put_small`] is kept in its record rather than in a file: 16 KiB.
pub const INLINE_MAX: usize = 16 * 1024;

/// What [`BlobStore::put`] stored. Record it with [`Batch::put_blob`] in the same batch as
/// whatever refers to the blob, or the blob counts as an orphan (an inline blob is then
/// simply gone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobInfo {
    /// sha256 of the raw content, 64 lowercase hex characters.
    pub hash: String,
    /// Bytes of the raw (uncompressed) content.
    pub raw_len: u64,
    /// Bytes of the compressed content, in its file or inline.
    pub stored_len: u64,
    /// A small blob's compressed bytes, kept in its record: no file, no sync of its own,
    /// and it lands with the batch that records it.
    #[serde(default, with = "inline_bytes")]
    pub inline: Option<Vec<u8>>,
}

/// Inline bytes as a MessagePack `bin`.
mod inline_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        bytes: &Option<Vec<u8>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match bytes {
            Some(b) => s.serialize_some(&serde_bytes_ref(b)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<u8>>, D::Error> {
        Option::<Bytes>::deserialize(d).map(|b| b.map(|b| b.0))
    }

    struct Ref<'a>(&'a [u8]);

    impl serde::Serialize for Ref<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }

    fn serde_bytes_ref(b: &[u8]) -> Ref<'_> {
        Ref(b)
    }

    struct Bytes(Vec<u8>);

    impl<'de> Deserialize<'de> for Bytes {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Bytes;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("bytes")
                }
                fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
                    Ok(Bytes(v.to_vec()))
                }
                fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
                    Ok(Bytes(v))
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(
                    self,
                    mut seq: A,
                ) -> Result<Bytes, A::Error> {
                    let mut out = Vec::new();
                    while let Some(b) = seq.next_element::<u8>()? {
                        out.push(b);
                    }
                    Ok(Bytes(out))
                }
            }
            d.deserialize_byte_buf(Visit)
        }
    }
}

/// Content-addressed blob files under `<store>/cold`: `<first 2 hex>/<other 62 hex>.zst`.
/// Putting the same content twice stores one file. Reads are streamed and checked against
/// the hash at the end.
#[derive(Debug, Clone)]
pub struct BlobStore {
    root: PathBuf,
    /// Bytes that must stay free on the disk for a blob to be started.
    min_free: u64,
}

impl BlobStore {
    /// Opens the cold tier at `root`, removing temporary files a crash left behind. The
    /// caller must hold the store's lock.
    pub(crate) fn init(root: PathBuf, min_free: u64) -> Result<BlobStore> {
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
        Ok(BlobStore { root, min_free })
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
        crate::error::ensure_room(&self.root, self.min_free)?;
        Ok(BlobWriter::new(self, self.temp_path()))
    }

    /// Stores `bytes` in a blob file, as [`BlobStore::put`] does for a reader.
    pub fn put_bytes(&self, bytes: &[u8]) -> Result<BlobInfo> {
        self.put(bytes)
    }

    /// Stores `bytes`, inline in the returned info when they compress to at most
    /// [`INLINE_MAX`], else in a file.
    pub fn put_small(&self, bytes: &[u8]) -> Result<BlobInfo> {
        let mut writer = self.writer()?.inline_up_to(INLINE_MAX);
        writer.write_all(bytes).map_err(io_at(&writer.tmp))?;
        writer.finish()
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

    /// A reader of the blob `info` describes: its inline bytes, else its file (a blob just
    /// written, before its record lands).
    pub fn open_info(&self, info: &BlobInfo) -> Result<Option<Box<dyn Read + Send>>> {
        let Some(bytes) = &info.inline else {
            return Ok(self
                .open(&info.hash)?
                .map(|r| Box::new(r) as Box<dyn Read + Send>));
        };
        let decoder = zstd::stream::read::Decoder::with_buffer(io::Cursor::new(bytes.clone()))
            .map_err(|source| Error::CorruptBlob {
                hash: info.hash.clone(),
                source,
            })?;
        Ok(Some(Box::new(VerifyingReader {
            inner: decoder,
            expected: info.hash.clone(),
            state: Check::Hashing(Sha256::new()),
        })))
    }

    /// The whole raw content; `Ok(None)` if there is no such blob.
    pub fn read(&self, hash: &str) -> Result<Option<Vec<u8>>> {
        read_whole(self.open(hash)?, hash)
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

    /// A streaming reader of a blob's raw content, inline or in its file; `Ok(None)` if
    /// there is neither. Checked against the hash at the end, as [`BlobStore::open`].
    pub fn open_blob(&self, hash: &str) -> Result<Option<Box<dyn Read + Send>>> {
        match self.blob_info(hash)? {
            Some(info) if info.inline.is_some() => self.blobs().open_info(&info),
            _ => Ok(self
                .blobs()
                .open(hash)?
                .map(|r| Box::new(r) as Box<dyn Read + Send>)),
        }
    }

    /// A blob's whole raw content, inline or in its file; `Ok(None)` if there is neither.
    pub fn read_blob(&self, hash: &str) -> Result<Option<Vec<u8>>> {
        read_whole(self.open_blob(hash)?, hash)
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

#[cfg(test)]
mod tests;

/// Reads a blob's reader to its end (its hash checked there); `Ok(None)` with no reader.
fn read_whole(reader: Option<impl Read>, hash: &str) -> Result<Option<Vec<u8>>> {
    let Some(mut reader) = reader else {
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
