use std::io::Read;

use super::*;
use crate::Config;

/// A deterministic, compressible stream of `len` bytes handed out in pieces of 1 to 997
/// bytes, generated as it is read (never held whole).
struct Pattern {
    state: u64,
    left: usize,
    piece: usize,
}

impl Pattern {
    fn new(len: usize) -> Self {
        Self {
            state: 0x9E37_79B9_7F4A_7C15,
            left: len,
            piece: 0,
        }
    }

    fn next_byte(&mut self) -> u8 {
        // xorshift64, folded onto a small alphabet so that zstd has something to find.
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        b"abcdefgh  \n"[(self.state % 11) as usize]
    }
}

impl Read for Pattern {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.piece = self.piece % 997 + 1;
        let n = buf.len().min(self.piece).min(self.left);
        for b in &mut buf[..n] {
            *b = self.next_byte();
        }
        self.left -= n;
        Ok(n)
    }
}

/// Fails after yielding some bytes.
struct Failing(usize);

impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.0 == 0 {
            return Err(std::io::Error::other("the input broke"));
        }
        let n = buf.len().min(self.0);
        buf[..n].fill(b'x');
        self.0 -= n;
        Ok(n)
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    to_hex(&Sha256::digest(bytes))
}

/// Identifies a file on disk (its inode where there are inodes).
fn file_id(path: &Path) -> u64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(path).unwrap().ino()
    }
    #[cfg(not(unix))]
    {
        fs::metadata(path).unwrap().len()
    }
}

fn tmp_entries(store: &Store) -> usize {
    fs::read_dir(store.blobs().path().join(TMP_DIR))
        .unwrap()
        .count()
}

#[test]
fn blobs_are_named_by_the_lowercase_hex_sha256_of_their_content() {
    let store = Config::new().temporary(true).open().unwrap();
    let abc = store.blobs().put_bytes(b"abc").unwrap();
    assert_eq!(
        abc.hash,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(abc.raw_len, 3);
    let empty = store.blobs().put_bytes(b"").unwrap();
    assert_eq!(
        empty.hash,
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(store.blobs().read(&empty.hash).unwrap(), Some(Vec::new()));
    let path = store.blobs().path_of(&abc.hash).unwrap();
    assert!(
        path.ends_with(
            "cold/ba/7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad.zst"
        )
    );
    assert_eq!(fs::metadata(&path).unwrap().len(), abc.stored_len);
}

#[test]
fn a_multi_megabyte_stream_in_small_pieces_round_trips() {
    const LEN: usize = 3 * 1024 * 1024 + 17;
    let store = Config::new().temporary(true).open().unwrap();
    let info = store.blobs().put(Pattern::new(LEN)).unwrap();
    let mut expected = Vec::with_capacity(LEN);
    Pattern::new(LEN).read_to_end(&mut expected).unwrap();
    assert_eq!(info.raw_len, LEN as u64);
    assert_eq!(info.hash, sha256_hex(&expected));

    let mut streamed = Vec::new();
    let mut reader = store.blobs().open(&info.hash).unwrap().unwrap();
    let mut piece = [0u8; 4096];
    loop {
        let n = reader.read(&mut piece).unwrap();
        if n == 0 {
            break;
        }
        streamed.extend_from_slice(&piece[..n]);
    }
    assert!(streamed == expected, "the streamed content differs");
    assert!(store.blobs().read(&info.hash).unwrap().unwrap() == expected);
    assert_eq!(store.blobs().verify(&info.hash).unwrap(), Some(true));
    assert_eq!(tmp_entries(&store), 0);
}

#[test]
fn the_same_content_is_stored_once() {
    let store = Config::new().temporary(true).open().unwrap();
    let first = store.blobs().put_bytes(b"twice").unwrap();
    let path = store.blobs().path_of(&first.hash).unwrap();
    let first_file = file_id(&path);
    let second = store.blobs().put(&b"twice"[..]).unwrap();
    assert_eq!(first, second);
    assert_eq!(
        file_id(&path),
        first_file,
        "the first file is kept, not replaced"
    );
    assert_eq!(store.blobs().list().unwrap(), [first.hash]);
    assert_eq!(tmp_entries(&store), 0);
}

#[test]
fn compressible_content_is_stored_smaller() {
    let store = Config::new().temporary(true).open().unwrap();
    let text = "all work and no play makes jack a dull boy\n".repeat(1000);
    let info = store.blobs().put_bytes(text.as_bytes()).unwrap();
    assert_eq!(info.raw_len, text.len() as u64);
    assert!(info.stored_len * 10 < info.raw_len, "{info:?}");
}

#[test]
fn a_corrupted_blob_fails_verification_and_reading() {
    let store = Config::new().temporary(true).open().unwrap();
    let blobs = store.blobs();
    let info = blobs.put_bytes(&[7u8; 10_000]).unwrap();
    let path = blobs.path_of(&info.hash).unwrap();

    // A valid zstd file of other content: decodes, but to the wrong bytes.
    fs::write(&path, zstd::encode_all(&b"something else"[..], 3).unwrap()).unwrap();
    assert_eq!(blobs.verify(&info.hash).unwrap(), Some(false));
    let err = blobs.read(&info.hash).unwrap_err();
    assert!(matches!(err, Error::CorruptBlob { .. }), "{err:?}");

    // A truncated file does not decode at all.
    let good = blobs
        .put_bytes(b"truncate me, truncate me, truncate me")
        .unwrap();
    let path = blobs.path_of(&good.hash).unwrap();
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert_eq!(blobs.verify(&good.hash).unwrap(), Some(false));
    assert!(blobs.read(&good.hash).is_err());

    let absent = sha256_hex(b"never stored");
    assert_eq!(blobs.verify(&absent).unwrap(), None);
    assert_eq!(blobs.read(&absent).unwrap(), None);
    assert!(blobs.open(&absent).unwrap().is_none());
}

#[test]
fn hashes_that_are_not_64_lowercase_hex_characters_are_refused() {
    let store = Config::new().temporary(true).open().unwrap();
    let valid = store.blobs().put_bytes(b"x").unwrap().hash;
    let bad = [
        String::new(),
        "../../etc/passwd".to_owned(),
        valid.to_uppercase(),
        valid[..63].to_owned(),
        format!("{valid}0"),
        format!("{}g", &valid[..63]),
        format!("{}/{}", &valid[..2], &valid[3..]),
        format!("{}é", &valid[..62]),
    ];
    let blobs = store.blobs();
    for hash in &bad {
        let refused = |r: Result<()>| matches!(r, Err(Error::BadBlobHash { .. }));
        assert!(refused(blobs.open(hash).map(drop)), "{hash:?}");
        assert!(refused(blobs.read(hash).map(drop)), "{hash:?}");
        assert!(refused(blobs.verify(hash).map(drop)), "{hash:?}");
        assert!(refused(blobs.delete(hash).map(drop)), "{hash:?}");
        assert!(refused(store.blob_info(hash).map(drop)), "{hash:?}");
        let info = BlobInfo {
            hash: hash.clone(),
            raw_len: 1,
            stored_len: 1,
            inline: None,
        };
        assert!(refused(Batch::new().put_blob(&info)), "{hash:?}");
        assert!(!blobs.contains(hash), "{hash:?}");
    }
    assert!(blobs.contains(&valid));
}

#[test]
fn deleting_a_blob_says_whether_it_was_there() {
    let store = Config::new().temporary(true).open().unwrap();
    let info = store.blobs().put_bytes(b"short lived").unwrap();
    assert!(store.blobs().contains(&info.hash));
    assert!(store.blobs().delete(&info.hash).unwrap());
    assert!(!store.blobs().contains(&info.hash));
    assert!(!store.blobs().delete(&info.hash).unwrap());
}

#[test]
fn a_failing_input_is_an_error_and_leaves_no_file() {
    let store = Config::new().temporary(true).open().unwrap();
    let err = store.blobs().put(Failing(100_000)).unwrap_err();
    assert!(matches!(err, Error::BlobInput(_)), "{err:?}");
    assert_eq!(tmp_entries(&store), 0);
    assert!(store.blobs().list().unwrap().is_empty());
}

#[test]
fn temporary_files_left_by_a_crash_are_removed_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let kept = {
        let store = Config::new().path(&path).open().unwrap();
        let kept = store.blobs().put_bytes(b"kept").unwrap();
        fs::write(path.join("cold/tmp/1234-0.tmp"), b"half a blob").unwrap();
        fs::write(path.join("cold/tmp/1234-1.tmp"), b"").unwrap();
        kept
    };
    let store = Config::new().path(&path).open().unwrap();
    assert_eq!(tmp_entries(&store), 0);
    assert_eq!(
        store.blobs().read(&kept.hash).unwrap().as_deref(),
        Some(&b"kept"[..])
    );
}

#[test]
fn orphan_blobs_are_found_and_removed() {
    let store = Config::new().temporary(true).open().unwrap();
    let recorded = store.blobs().put_bytes(b"recorded").unwrap();
    let orphan = store.blobs().put_bytes(b"orphan").unwrap();
    let mut batch = Batch::new();
    batch.put_blob(&recorded).unwrap();
    store.apply(batch).unwrap();
    // Stray files that are not named like blobs are not orphans, just ignored.
    fs::write(store.blobs().path().join("README"), b"not a blob").unwrap();

    assert_eq!(
        store.blob_info(&recorded.hash).unwrap(),
        Some(recorded.clone())
    );
    assert_eq!(store.blob_info(&orphan.hash).unwrap(), None);
    assert_eq!(
        store.orphan_blobs().unwrap(),
        std::slice::from_ref(&orphan.hash)
    );
    assert_eq!(store.remove_orphan_blobs().unwrap(), 1);
    assert!(store.orphan_blobs().unwrap().is_empty());
    assert!(store.blobs().contains(&recorded.hash));
    assert!(!store.blobs().contains(&orphan.hash));
    assert_eq!(store.remove_orphan_blobs().unwrap(), 0);
}

/// A small blob stays in its record: no file, readable once recorded, gone with its
/// record; a large one written the same way spills to a file as usual.
#[test]
fn small_blobs_live_in_their_record_and_large_ones_spill_to_files() {
    let store = Config::new().temporary(true).open().unwrap();
    let blobs = store.blobs();
    let small = b"a small read state".repeat(20);
    let info = blobs.put_small(&small).unwrap();
    assert_eq!(info.hash, sha256_hex(&small));
    assert!(
        info.inline
            .as_ref()
            .is_some_and(|b| b.len() as u64 == info.stored_len)
    );
    assert!(!blobs.contains(&info.hash), "no file for an inline blob");
    assert_eq!(tmp_entries(&store), 0);
    assert_eq!(
        store.read_blob(&info.hash).unwrap(),
        None,
        "not recorded yet"
    );
    let mut batch = Batch::new();
    batch.put_blob(&info).unwrap();
    store.apply(batch).unwrap();
    assert_eq!(store.read_blob(&info.hash).unwrap(), Some(small.clone()));
    assert_eq!(store.blob_info(&info.hash).unwrap(), Some(info.clone()));

    // Streamed through a writer past the limit: a file, as any blob.
    let mut large = Vec::new();
    Pattern::new(3 * INLINE_MAX * 4)
        .read_to_end(&mut large)
        .unwrap();
    let mut writer = blobs.writer().unwrap().inline_up_to(INLINE_MAX);
    for piece in large.chunks(1000) {
        writer.write_all(piece).unwrap();
    }
    let spilled = writer.finish().unwrap();
    assert_eq!(spilled.inline, None);
    assert!(blobs.contains(&spilled.hash));
    let mut batch = Batch::new();
    batch.put_blob(&spilled).unwrap();
    store.apply(batch).unwrap();
    assert_eq!(store.read_blob(&spilled.hash).unwrap(), Some(large));

    // A damaged inline blob fails its check, like a damaged file.
    let mut damaged = info.clone();
    let bytes = damaged.inline.as_mut().unwrap();
    let last = bytes.len() - 5;
    bytes[last] ^= 0x55;
    let mut batch = Batch::new();
    batch.put_blob(&damaged).unwrap();
    store.apply(batch).unwrap();
    assert!(store.read_blob(&info.hash).is_err());

    // Its record gone, it is gone: it was never an orphan file.
    let mut batch = Batch::new();
    batch.delete_blob(&info.hash);
    store.apply(batch).unwrap();
    assert_eq!(store.read_blob(&info.hash).unwrap(), None);
    assert!(store.orphan_blobs().unwrap().is_empty());
    // A writer dropped before finishing leaves nothing either way.
    let mut writer = blobs.writer().unwrap().inline_up_to(INLINE_MAX);
    writer.write_all(b"abandoned").unwrap();
    drop(writer);
    assert_eq!(tmp_entries(&store), 0);
}
