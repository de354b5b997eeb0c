//! Moving or copying a session's files to another workspace folder of Claude Code's
//! `projects/` (seed 003's migrate): the transcript, its subagents' transcripts and meta
//! files, with `cwd` and file paths rewritten to the new project root on the raw bytes.
//! Everything is written beside the target first and renamed into place; a failure removes
//! what was placed and leaves the source as it was; an existing target is never
//! overwritten.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// One session that could not be migrated, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MigrateError {
    /// The session as the caller named it (id or prefix).
    pub session: String,
    /// Why it failed.
    pub message: String,
}

/// What a migration did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MigrateResult {
    /// Sessions migrated.
    pub success_count: u32,
    /// Sessions that could not be migrated.
    pub failed_count: u32,
    /// Each session that could not be migrated, and why.
    pub errors: Vec<MigrateError>,
    /// The transcripts written, for each session migrated.
    pub written: Vec<String>,
    /// The project folder the transcripts go to (`<claude>/projects/<encoded target>`).
    pub target_dir: String,
    /// True when that folder did not exist before: the migration created it.
    pub created_dir: bool,
}

/// Copy (the default) or move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrateMode {
    Copy,
    Move,
}

impl MigrateMode {
    pub fn as_str(self) -> &'static str {
        match self {
            MigrateMode::Copy => "copy",
            MigrateMode::Move => "move",
        }
    }

    pub fn parse(s: &str) -> Result<MigrateMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "copy" => Ok(MigrateMode::Copy),
            "move" => Ok(MigrateMode::Move),
            other => Err(Error::InvalidArgument(format!(
                "unknown migrate mode {other}: use copy or move",
                other = crate::error::quote(other)
            ))),
        }
    }
}

/// Refuses a migration target that is not an absolute, normalized path (no `.` or `..`,
/// no doubled `/`), or that lies in `/proc`, `/sys` or `/dev`.
pub fn check_destination(destination: &str) -> Result<()> {
    let absolute = destination.starts_with('/') || destination.as_bytes().get(1) == Some(&b':');
    if !absolute {
        return Err(Error::InvalidArgument(format!(
            "the destination {destination} is not an absolute path",
            destination = crate::error::quote(destination)
        )));
    }
    let unnormal = destination.contains("//")
        || destination
            .split(['/', '\\'])
            .any(|part| part == "." || part == "..");
    if unnormal {
        return Err(Error::InvalidArgument(format!(
            "the destination {destination} is not a normalized path (no `.`, `..` or `//`)",
            destination = crate::error::quote(destination)
        )));
    }
    for system in ["/proc", "/sys", "/dev"] {
        if destination == system || destination.starts_with(&format!("{system}/")) {
            return Err(Error::InvalidArgument(format!(
                "the destination {destination} is in {system}: not a workspace",
                destination = crate::error::quote(destination)
            )));
        }
    }
    Ok(())
}

/// Claude Code's folder name for a working directory (Q16: every character but ASCII
/// letters and digits becomes `-`).
pub fn encode_project_dir(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// A file to place: where it comes from, its rewritten bytes, and where it goes.
struct Planned {
    from: PathBuf,
    to: PathBuf,
    bytes: Vec<u8>,
}

/// The files one session's migration writes, read and rewritten, not yet placed.
pub struct Plan {
    planned: Vec<Planned>,
    source: PathBuf,
    target: PathBuf,
    /// The session's own folder (its subagents, Claude Code 2.1+).
    folder: PathBuf,
    target_dir: PathBuf,
    old_root: String,
    destination: String,
}

impl Plan {
    /// Plans moving the transcript `source` and the subagent folder beside it into
    /// `target_dir`, with `old_root` rewritten to `destination`. `reference` names the
    /// session in errors.
    pub fn new(
        reference: &str,
        source: &Path,
        target_dir: &Path,
        old_root: &str,
        destination: &str,
    ) -> Result<Plan> {
        if !source.is_file() {
            return Err(Error::NotFound(format!(
                "the transcript of {reference} is gone from {}",
                crate::error::quote_path(source),
                reference = crate::error::quote(reference)
            )));
        }
        let file_name = source.file_name().expect("a transcript has a name");
        let target = target_dir.join(file_name);
        if target == source {
            return Err(Error::InvalidArgument(format!(
                "{reference} is already in {destination}",
                reference = crate::error::quote(reference)
            )));
        }
        if target.exists() {
            return Err(Error::FailedPrecondition(format!(
                "{} exists: a migration never overwrites a session",
                crate::error::quote_path(&target)
            )));
        }
        let mut plan = Plan {
            planned: Vec::new(),
            source: source.to_path_buf(),
            target: target.clone(),
            folder: source.with_extension(""),
            target_dir: target_dir.to_path_buf(),
            old_root: old_root.to_owned(),
            destination: destination.to_owned(),
        };
        let bytes = std::fs::read(source).map_err(Error::io(source))?;
        plan.planned.push(Planned {
            bytes: plan.rewrite(bytes),
            from: source.to_path_buf(),
            to: target,
        });
        // Subagents in the session's folder (2.1+).
        if plan.folder.is_dir() {
            for file in walk(&plan.folder)? {
                let relative = file.strip_prefix(&plan.folder).expect("walked inside");
                let bytes = std::fs::read(&file).map_err(Error::io(&file))?;
                let to = target_dir
                    .join(plan.folder.file_name().expect("a folder name"))
                    .join(relative);
                let bytes = if is_text(&file) {
                    plan.rewrite(bytes)
                } else {
                    bytes
                };
                plan.planned.push(Planned {
                    bytes,
                    from: file,
                    to,
                });
            }
        }
        Ok(plan)
    }

    /// Adds a subagent transcript of Claude Code 2.0.x, which sits beside the session's
    /// own; anything else (elsewhere, gone, already planned) is left out.
    pub fn add_sibling(&mut self, path: &Path) -> Result<()> {
        if path.parent() != self.source.parent()
            || path == self.source
            || !path.is_file()
            || self.planned.iter().any(|p| p.from == path)
        {
            return Ok(());
        }
        let bytes = std::fs::read(path).map_err(Error::io(path))?;
        self.planned.push(Planned {
            to: self.target_dir.join(path.file_name().expect("a name")),
            bytes: self.rewrite(bytes),
            from: path.to_path_buf(),
        });
        Ok(())
    }

    /// Places every planned file (and, for a move, removes the originals); returns where
    /// the transcript went.
    pub fn carry_out(self, mode: MigrateMode) -> Result<PathBuf> {
        if let Some(existing) = self.planned.iter().find(|p| p.to.exists()) {
            return Err(Error::FailedPrecondition(format!(
                "{} exists: a migration never overwrites a session",
                crate::error::quote_path(&existing.to)
            )));
        }
        place(&self.planned, &self.target_dir)?;
        if mode == MigrateMode::Move {
            for p in &self.planned {
                std::fs::remove_file(&p.from).map_err(Error::io(&p.from))?;
            }
            if self.folder.is_dir() {
                std::fs::remove_dir_all(&self.folder).map_err(Error::io(&self.folder))?;
            }
        }
        Ok(self.target)
    }

    fn rewrite(&self, bytes: Vec<u8>) -> Vec<u8> {
        rewrite_root(bytes, &self.old_root, &self.destination)
    }
}

/// Writes every planned file to a staging folder beside the target, synced, then renames
/// each into place; on any failure removes what was placed and the staging folder.
fn place(planned: &[Planned], target_dir: &Path) -> Result<()> {
    let projects = target_dir.parent().expect("a project folder has a parent");
    let staging = projects.join(format!(
        ".eywa-migrate-{}-{}",
        std::process::id(),
        crate::model::Timestamp::now().0
    ));
    let staged: Vec<PathBuf> = (0..planned.len())
        .map(|i| staging.join(format!("{i}.part")))
        .collect();
    let result = (|| -> Result<Vec<PathBuf>> {
        std::fs::create_dir_all(&staging).map_err(Error::io(&staging))?;
        for (p, tmp) in planned.iter().zip(&staged) {
            let mut file = std::fs::File::create(tmp).map_err(Error::io(tmp))?;
            std::io::Write::write_all(&mut file, &p.bytes).map_err(Error::io(tmp))?;
            file.sync_all().map_err(Error::io(tmp))?;
        }
        let mut placed = Vec::new();
        for (p, tmp) in planned.iter().zip(&staged) {
            let dir = p.to.parent().expect("a target has a folder");
            let step = std::fs::create_dir_all(dir)
                .map_err(Error::io(dir))
                .and_then(|()| {
                    if p.to.exists() {
                        return Err(Error::FailedPrecondition(format!(
                            "{} exists: a migration never overwrites a session",
                            crate::error::quote_path(&p.to)
                        )));
                    }
                    std::fs::rename(tmp, &p.to).map_err(Error::io(&p.to))
                });
            if let Err(e) = step {
                for done in &placed {
                    let _ = std::fs::remove_file(done);
                }
                return Err(e);
            }
            placed.push(p.to.clone());
        }
        Ok(placed)
    })();
    let _ = std::fs::remove_dir_all(&staging);
    result.map(|_| ())
}

/// Every file under `dir`, sorted.
fn walk(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(Error::io(dir))? {
        let path = entry.map_err(Error::io(dir))?.path();
        if path.is_dir() {
            out.extend(walk(&path)?);
        } else {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn is_text(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e == "jsonl" || e == "json" || e == "md")
}

/// Rewrites JSON string values that are `old` or start with `old` and a separator to start
/// with `new` instead, on the raw bytes (every other byte is kept, so moving back gives the
/// original file).
fn rewrite_root(bytes: Vec<u8>, old: &str, new: &str) -> Vec<u8> {
    let escape = |s: &str| {
        let quoted = serde_json::to_string(s).expect("a string serializes");
        quoted[1..quoted.len() - 1].to_owned()
    };
    let (old, new) = (format!("\"{}", escape(old)), format!("\"{}", escape(new)));
    let sep = if old.contains("\\\\") { "\\\\" } else { "/" };
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => return e.into_bytes(),
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(&old) {
        let after = &rest[at + old.len()..];
        out.push_str(&rest[..at]);
        if after.starts_with('"') || after.starts_with(sep) {
            out.push_str(&new);
        } else {
            out.push_str(&old);
        }
        rest = after;
    }
    out.push_str(rest);
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_rewritten_only_as_whole_path_prefixes() {
        let line = r#"{"cwd":"/w/app","input":{"file_path":"/w/app/src/a.rs"},"other":"/w/apple","text":"cd /w/app"}"#;
        let out =
            String::from_utf8(rewrite_root(line.as_bytes().to_vec(), "/w/app", "/x/new")).unwrap();
        assert_eq!(
            out,
            r#"{"cwd":"/x/new","input":{"file_path":"/x/new/src/a.rs"},"other":"/w/apple","text":"cd /w/app"}"#
        );
        let back = rewrite_root(out.into_bytes(), "/x/new", "/w/app");
        assert_eq!(back, line.as_bytes());
        let windows = r#"{"cwd":"C:\\Code\\app","p":"C:\\Code\\app\\a.rs"}"#;
        let out = String::from_utf8(rewrite_root(
            windows.as_bytes().to_vec(),
            r"C:\Code\app",
            r"D:\new",
        ))
        .unwrap();
        assert_eq!(out, r#"{"cwd":"D:\\new","p":"D:\\new\\a.rs"}"#);
        assert_eq!(
            encode_project_dir("/Users/dain/my.app"),
            "-Users-dain-my-app"
        );
    }
}
