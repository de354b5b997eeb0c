//! Which files a document add reads: a path made one file's name, and the markdown, text
//! and PDF files under a folder.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// `path` made absolute and lexically normal (no `.` or `..`), so that one file has one
/// id however it is named. Symlinks are not followed.
pub(crate) fn normal_path(path: &Path) -> Result<PathBuf> {
    if path.as_os_str().is_empty() {
        return Err(Error::InvalidArgument("an empty path names no file".into()));
    }
    let absolute = std::path::absolute(path).map_err(|e| {
        Error::InvalidArgument(format!(
            "{} cannot be made absolute: {e}",
            crate::error::quote_path(path)
        ))
    })?;
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    Ok(out)
}

/// Files found under one folder at most.
const MAX_FILES: usize = 100_000;

/// The files eywa reads under `dir`, hidden entries and folders that cannot be listed left
/// out, sorted.
pub(crate) fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<_> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(std::result::Result::ok).collect(),
        // A folder that cannot be listed is passed over: its files are not found.
        Err(e) => {
            tracing::debug!(dir = %dir.display(), error = %e, "a folder cannot be listed");
            return Ok(());
        }
    };
    entries.sort_by_key(std::fs::DirEntry::path);
    for entry in entries {
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            collect_files(&path, out)?;
        } else if kind.is_file()
            && path.extension().is_some_and(|e| {
                matches!(
                    e.to_string_lossy().to_lowercase().as_str(),
                    "md" | "markdown" | "txt" | "text" | "pdf"
                )
            })
        {
            if out.len() == MAX_FILES {
                return Err(Error::InvalidArgument(format!(
                    "more than {MAX_FILES} files under {}",
                    crate::error::quote_path(dir)
                )));
            }
            out.push(path);
        }
    }
    Ok(())
}

/// The files adding `paths` adds: each file of them, and every `.md`, `.txt` and `.pdf`
/// file under each folder of them ([`collect_files`]), made absolute. None is an error.
pub(crate) fn files_to_add(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        let path = normal_path(path)?;
        if path.is_dir() {
            collect_files(&path, &mut files)?;
        } else {
            files.push(path);
        }
    }
    if files.is_empty() {
        return Err(Error::InvalidArgument(
            "no .md, .txt or .pdf file to add".into(),
        ));
    }
    Ok(files)
}
