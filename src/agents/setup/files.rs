//! Claude Code's settings files as setup reads and writes them: read whole within a
//! bound, written where a symlink points and never through a half-written file, backed up
//! before the first change, and recorded so that `--uninstall` gives each back.

use std::ffi::OsString;
use std::fs::Permissions;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::{Change, MAX_LINKS, as_written};
use crate::app::Paths;

/// A JSON file's bytes (`None`: it does not exist) and its object.
type JsonFile = (Option<Vec<u8>>, Map<String, Value>);

/// The largest settings file setup reads (Claude Code's `~/.claude.json` holds a few MB
/// of history at most); a larger one is refused, not read whole. Nesting is bounded by
/// serde_json (128 levels).
const MAX_SETTINGS_BYTES: u64 = 64 << 20;

pub(super) fn read_json(path: &Path) -> anyhow::Result<JsonFile> {
    let bytes = match std::fs::File::open(path) {
        Ok(file) => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(
                &mut std::io::Read::take(file, MAX_SETTINGS_BYTES + 1),
                &mut bytes,
            )
            .with_context(|| format!("cannot read {}", path.display()))?;
            if bytes.len() as u64 > MAX_SETTINGS_BYTES {
                anyhow::bail!(
                    "{} is over {} MiB: setup does not read it",
                    path.display(),
                    MAX_SETTINGS_BYTES >> 20
                );
            }
            bytes
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, Map::new())),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok((Some(bytes), Map::new()));
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok((Some(bytes), map)),
        Ok(_) => anyhow::bail!("{} is not a JSON object: fix it first", path.display()),
        Err(e) => anyhow::bail!(
            "{} is not valid JSON ({e}): fix it first, setup will not overwrite it",
            path.display()
        ),
    }
}

fn to_bytes(map: &Map<String, Value>) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(map).unwrap_or_default();
    out.push(b'\n');
    out
}

/// The bytes setup leaves in a file: the same bytes when its content is unchanged, and
/// none for a file that setup would leave empty and that did not exist.
pub(super) fn after_bytes(before: Option<&[u8]>, after: &Map<String, Value>) -> Option<Vec<u8>> {
    let unchanged = match before {
        Some(bytes) => serde_json::from_slice::<Value>(bytes)
            .ok()
            .is_some_and(|v| v.as_object() == Some(after)),
        None => after.is_empty(),
    };
    if unchanged {
        before.map(<[u8]>::to_vec)
    } else {
        Some(to_bytes(after))
    }
}

/// The file a path names once its symlinks are followed, which need not exist yet (a
/// dangling link). Setup writes there, so a settings file kept in a dotfiles folder stays
/// a link to it. A relative link is read from the link's folder.
pub(super) fn resolve_links(path: &Path) -> anyhow::Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..=MAX_LINKS {
        if !is_link(&at)? {
            return Ok(at);
        }
        let link =
            std::fs::read_link(&at).with_context(|| format!("cannot read {}", at.display()))?;
        at = at.parent().unwrap_or(Path::new("")).join(link);
    }
    anyhow::bail!(
        "{}: more than {MAX_LINKS} symlinks in a row (a loop?)",
        path.display()
    )
}

/// Whether `path` is a symlink (a missing file is not).
fn is_link(path: &Path) -> anyhow::Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(meta.file_type().is_symlink()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Where setup remembers the files it changed: their bytes before, a digest of what it
/// wrote, and the entries it wrote (no other entry is its to take out).
pub(super) fn record_path(paths: &Paths, scope: &str, settings: &Path) -> PathBuf {
    let key = hex(&Sha256::digest(settings.display().to_string().as_bytes())[..8]);
    paths
        .data_dir
        .join("setup")
        .join(format!("claude-{scope}-{key}.json"))
}

/// A file's key in the record: its path as Claude Code names it (a link's, not its
/// target's).
pub(super) fn record_key(path: &Path) -> String {
    path.display().to_string()
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(digits: &str) -> Option<Vec<u8>> {
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(digits.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A file's bytes before setup, for the record: whether it existed, and its bytes as text
/// (as hex when they are not UTF-8, so that no file is taken for one that did not exist).
pub(super) fn note_before(bytes: Option<&[u8]>) -> Value {
    let Some(bytes) = bytes else {
        return json!({"existed": false});
    };
    match std::str::from_utf8(bytes) {
        Ok(text) => json!({"existed": true, "text": text}),
        Err(_) => json!({"existed": true, "hex": hex(bytes)}),
    }
}

/// What the record says a file held before setup: `Some(None)` when it did not exist,
/// and `None` when the record does not know (uninstalling then takes eywa's entries out
/// instead). Older records hold `before` as text, or null for a file that did not exist.
pub(super) fn noted_before(noted: &Value) -> Option<Option<Vec<u8>>> {
    match noted.get("before")? {
        Value::Null => Some(None),
        Value::String(text) => Some(Some(text.as_bytes().to_vec())),
        Value::Object(before) if before.get("existed") == Some(&Value::Bool(false)) => Some(None),
        Value::Object(before) => match (before.get("text"), before.get("hex")) {
            (Some(Value::String(text)), _) => Some(Some(text.as_bytes().to_vec())),
            (_, Some(Value::String(digits))) => unhex(digits).map(Some),
            _ => None,
        },
        _ => None,
    }
}

pub(super) fn read_record(path: &Path) -> Map<String, Value> {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default()
}

pub(super) fn write_record(path: &Path, record: &Map<String, Value>) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        eywa::fs::create_private_dir(dir)?;
    }
    write_file(path, &to_bytes(record), None)
}

/// Writes `bytes` to `path` whole or not at all: a temporary file in its folder, renamed
/// over it. The file keeps its mode (or takes `mode`), and the temporary file is private
/// until then. `path` must not be a link: the rename would replace the link.
fn write_file(path: &Path, bytes: &[u8], mode: Option<Permissions>) -> anyhow::Result<()> {
    let dir = path.parent().context("a file with no folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut name = OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(".eywa-tmp");
    let tmp = dir.join(name);
    // A leftover of a run that stopped midway: created anew, it is private.
    let _ = std::fs::remove_file(&tmp);
    let mode = mode.or_else(|| std::fs::metadata(path).ok().map(|m| m.permissions()));
    let written = write_new(&tmp, bytes, mode).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.with_context(|| format!("cannot write {}", path.display()))
}

/// Creates `path` (private: 0600) with `bytes` on disk, then gives it `mode`.
fn write_new(path: &Path, bytes: &[u8], mode: Option<Permissions>) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    if let Some(mode) = mode {
        file.set_permissions(mode)?;
    }
    Ok(())
}

/// Backs a file up beside itself (`<file>.eywa-backup`), once: its bytes before setup's
/// first change, with its mode (a private file's backup is private too).
fn back_up(target: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut name = target.as_os_str().to_owned();
    name.push(".eywa-backup");
    let backup = PathBuf::from(name);
    if backup.exists() {
        return Ok(());
    }
    let mode = std::fs::metadata(target).ok().map(|m| m.permissions());
    write_file(&backup, bytes, mode).with_context(|| format!("cannot back up {}", target.display()))
}

/// Applies one change to the file's target (a link stays a link). Installing backs the
/// file up first and notes its bytes before; uninstalling gives those bytes back when the
/// file is as setup left it, and otherwise writes it without eywa's entries.
pub(super) fn apply(
    change: &Change,
    record: &mut Map<String, Value>,
    uninstall: bool,
) -> anyhow::Result<()> {
    let key = record_key(&change.path);
    let target = &change.target;
    if uninstall {
        let noted = record.remove(&key);
        let restore = noted
            .as_ref()
            .filter(|n| as_written(Some(*n), change.before.as_deref()))
            .and_then(noted_before);
        return match (restore, &change.after) {
            (Some(Some(bytes)), _) => write_file(target, &bytes, None),
            // Setup created it: it goes, and a link to it stays (dangling, as it was).
            (Some(None), _) => std::fs::remove_file(target)
                .with_context(|| format!("cannot remove {}", target.display())),
            (None, Some(bytes)) => write_file(target, bytes, None),
            (None, None) => Ok(()),
        };
    }
    if let Some(before) = &change.before {
        back_up(target, before)?;
    }
    let Some(after) = &change.after else {
        return Ok(());
    };
    write_file(target, after, None)?;
    let before = match record.get(&key) {
        // The bytes before the first setup stay noted while the file is as setup left it.
        Some(noted) if as_written(Some(noted), change.before.as_deref()) => {
            noted.get("before").cloned()
        }
        // Nothing of setup's in it: these bytes are the user's to give back.
        _ if !change.held_ours => Some(note_before(change.before.as_deref())),
        // Edited since setup wrote it: giving back older bytes would lose the edit, so
        // uninstalling only takes eywa's entries out.
        _ => None,
    };
    let mut noted = change.noted.clone();
    if let Some(before) = before {
        noted.insert("before".into(), before);
    }
    noted.insert("wrote".into(), json!(hex(&Sha256::digest(after))));
    record.insert(key, Value::Object(noted));
    Ok(())
}
