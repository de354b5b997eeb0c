//! `<data>/serve.json`: a running `eywa serve` says where it listens, so every other
//! `eywa` command on the same data directory asks it instead of waiting on the store's
//! lock. Written atomically once the listener is bound, removed on shutdown; a file left
//! by a server that died is recognised (its process is gone, or the pid now belongs to
//! another process) and ignored.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

const FILE: &str = "serve.json";

/// What a running server says of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announcement {
    /// `HOST:PORT` it listens on.
    pub addr: String,
    /// The server's process id.
    pub pid: u32,
    /// When it started listening (RFC 3339).
    pub started: String,
    /// The eywa version serving.
    pub version: String,
    /// When the process started, in clock ticks since boot (Linux `/proc/<pid>/stat`), so
    /// a pid taken over by another process is told apart.
    #[serde(default)]
    pub process_start: Option<u64>,
    /// The TLS certificate it presents (PEM), when it takes remote callers: clients on this
    /// machine trust it.
    #[serde(default)]
    pub tls_cert: Option<String>,
    /// The file of the token that may write, when calls need one.
    #[serde(default)]
    pub token_file: Option<String>,
}

impl Announcement {
    /// The announcement file in `data_dir` (`serve.json`).
    pub fn path(data_dir: &Path) -> PathBuf {
        data_dir.join(FILE)
    }

    /// This process, listening on `addr`.
    pub fn of_this_process(addr: std::net::SocketAddr) -> Announcement {
        let pid = std::process::id();
        Announcement {
            addr: addr.to_string(),
            pid,
            started: crate::model::Timestamp::now().to_rfc3339(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            process_start: process_start(pid),
            tls_cert: None,
            token_file: None,
        }
    }

    /// Writes the file (0600), replacing any.
    pub fn write(&self, data_dir: &Path) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(self).expect("an announcement serializes");
        crate::fs::write_private_atomically(&Announcement::path(data_dir), &bytes)
    }

    /// Removes the file if it is this process's.
    pub fn withdraw(data_dir: &Path) -> Result<()> {
        let path = Announcement::path(data_dir);
        match Announcement::read(data_dir) {
            Some(a) if a.pid == std::process::id() => {
                std::fs::remove_file(&path).map_err(Error::io(&path))
            }
            _ => Ok(()),
        }
    }

    /// The file as written, whoever wrote it (`None` when missing or unreadable).
    pub fn read(data_dir: &Path) -> Option<Announcement> {
        let bytes = std::fs::read(Announcement::path(data_dir)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The server announced in `data_dir`, if its process is still the one that wrote it.
    pub fn read_live(data_dir: &Path) -> Option<Announcement> {
        Announcement::read(data_dir).filter(Announcement::is_live)
    }

    /// Whether the announcing process still runs.
    pub fn is_live(&self) -> bool {
        if self.pid == 0 || i32::try_from(self.pid).is_err() {
            return false;
        }
        // SAFETY: signal 0 only checks that the process exists and may be signalled.
        let alive = unsafe { libc::kill(self.pid as i32, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive {
            return false;
        }
        match (self.process_start, process_start(self.pid)) {
            (Some(announced), Some(now)) => announced == now,
            _ => true,
        }
    }
}

/// When process `pid` started, in clock ticks since boot: field 22 of `/proc/<pid>/stat`
/// (`None` where there is no procfs).
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_live_and_a_reused_or_dead_pid_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let me = Announcement::of_this_process("127.0.0.1:4242".parse().unwrap());
        assert!(me.process_start.is_some(), "procfs gives a start time");
        me.write(dir.path()).unwrap();
        assert_eq!(Announcement::read_live(dir.path()), Some(me.clone()));
        // Our pid, but another process's start time: the pid was reused.
        let reused = Announcement {
            process_start: me.process_start.map(|t| t + 1),
            ..me.clone()
        };
        reused.write(dir.path()).unwrap();
        assert_eq!(Announcement::read_live(dir.path()), None);
        // A pid that no process has: a child that has exited and been reaped.
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let _ = child.wait_with_output();
        let dead = Announcement { pid, ..me.clone() };
        dead.write(dir.path()).unwrap();
        assert_eq!(Announcement::read_live(dir.path()), None);
        // Only the announcing process withdraws the file.
        Announcement::withdraw(dir.path()).unwrap();
        assert!(Announcement::path(dir.path()).exists());
        me.write(dir.path()).unwrap();
        Announcement::withdraw(dir.path()).unwrap();
        assert!(!Announcement::path(dir.path()).exists());
        // A damaged file is no announcement.
        std::fs::write(Announcement::path(dir.path()), b"{not json").unwrap();
        assert_eq!(Announcement::read_live(dir.path()), None);
    }
}
