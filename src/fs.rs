//! Files and folders eywa creates for itself: private to the user; and paths as a user
//! gives them (`~` at the start).

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Creates `path` and its parents if missing, and makes `path` private (0700 on Unix).
pub fn create_private_dir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(Error::io(path))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
            .map_err(Error::io(path))?;
    }
    Ok(())
}

/// Makes every file this process creates private to the user (umask 077): the warm tier's, Tantivy's
/// and the handoff files alike, whatever opens them. For the `eywa` binary; a library
/// user's process keeps its own umask.
pub fn keep_created_files_private() {
    #[cfg(unix)]
    // SAFETY: umask(2) only swaps the process's file-creation mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
}

/// Makes everything under `root` private: folders 0700, files 0600. Symlinks are left
/// alone (their modes mean nothing), and so is what they point at. For stores written
/// before eywa kept its files private.
pub fn make_tree_private(root: &Path) -> Result<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mut changed = 0;
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).map_err(Error::io(&dir))? {
                let entry = entry.map_err(Error::io(&dir))?;
                let path = entry.path();
                let meta = std::fs::symlink_metadata(&path).map_err(Error::io(&path))?;
                let want = if meta.is_dir() {
                    stack.push(path.clone());
                    0o700
                } else if meta.is_file() {
                    0o600
                } else {
                    continue;
                };
                if meta.permissions().mode() & 0o777 != want {
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(want))
                        .map_err(Error::io(&path))?;
                    changed += 1;
                }
            }
        }
        Ok(changed)
    }
    #[cfg(not(unix))]
    {
        let _ = root;
        Ok(0)
    }
}

/// Flushes a directory's entries (a created, renamed or removed file) to disk.
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let handle = std::fs::File::open(dir).map_err(Error::io(dir))?;
        handle.sync_all().map_err(Error::io(dir))?;
    }
    Ok(())
}

/// Writes `bytes` to `path` so that a reader sees the old file or the new one, never a
/// part: a private (0600) temporary file beside it, synced, then renamed over it.
pub fn write_private_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(name);
    let result = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&tmp).map_err(Error::io(&tmp))?;
        file.write_all(bytes).map_err(Error::io(&tmp))?;
        file.sync_all().map_err(Error::io(&tmp))?;
        std::fs::rename(&tmp, path).map_err(Error::io(path))?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A path as the user gave it, where `~` or `~/…` at its very start stands for `$HOME`
/// (a shell leaves it as is in `--dir=~/x`, in quotes and in environment variables). A
/// `~` anywhere else, or `~name`, is a plain character.
pub fn user_path(given: &str) -> std::result::Result<PathBuf, String> {
    let rest = match given.strip_prefix('~') {
        Some("") => "",
        Some(rest) if rest.starts_with('/') => rest.trim_start_matches('/'),
        _ => return Ok(PathBuf::from(given)),
    };
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or_else(|| format!("{given:?} starts with ~, but HOME is not set"))?;
    Ok(PathBuf::from(home).join(rest))
}
