//! Where a PDF is read: in a child process when this process can start one (the `eywa`
//! binary names itself with [`isolate_in`]), else on a thread of its own. A child has
//! caps on its memory, CPU time and core dumps, and a deadline; whatever happens to it
//! (a stack overflow, an abort, a kill) is the file's error, never the caller's. The
//! thread has a large stack, catches panics and has the same deadline, but a reader
//! that overran it is left running: only the child is a wall.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::pdf::{self, LIMITS, Refusal};

/// How long a PDF may take to read.
pub(crate) const TIME_LIMIT: Duration = Duration::from_secs(60);
/// Address space of a reading child: room for the limits of [`pdf::LIMITS`] (a stream
/// of 32 MB inflated beside the file of at most 64 MB and its objects) and the
/// allocator's reservations, far from what a bomb would take.
const CHILD_ADDRESS_SPACE: u64 = 4 << 30;
/// Stack of the thread that reads a PDF (address space; only what is used is memory).
const STACK: usize = 256 << 20;
/// The hidden subcommand of `eywa` that reads a PDF from stdin ([`run_child`]).
pub const CHILD_COMMAND: &str = "read-pdf-child";

static CHILD_EXE: OnceLock<PathBuf> = OnceLock::new();

/// Has this process read PDFs in a child: `exe CHILD_COMMAND` must run [`run_child`].
/// Set once, before the first document is read; later calls change nothing.
pub fn isolate_in(exe: PathBuf) {
    let _ = CHILD_EXE.set(exe);
}

/// What a child answers on stdout.
#[derive(Debug, Serialize, Deserialize)]
enum Answer {
    Pages(Vec<String>),
    Refused(Refusal),
}

/// The text of each page of the PDF in `bytes`, or why it is not read.
pub(crate) fn read_pdf(bytes: &[u8]) -> Result<Vec<String>, Refusal> {
    match CHILD_EXE.get() {
        Some(exe) => match in_child(exe, bytes, TIME_LIMIT) {
            // The reader could not be started (no process to spare): not the file's
            // fault, so it is read here rather than refused.
            Err(Failed::Start(why)) => {
                tracing::warn!(error = %why, "cannot start the PDF reader: reading in process");
                on_thread(bytes.to_vec())
            }
            Err(Failed::Read(why)) => Err(why),
            Ok(pages) => Ok(pages),
        },
        None => on_thread(bytes.to_vec()),
    }
}

/// Reads the PDF on its own thread: a large stack, panics caught, [`TIME_LIMIT`].
fn on_thread(bytes: Vec<u8>) -> Result<Vec<String>, Refusal> {
    let (send, receive) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("eywa-pdf".into())
        .stack_size(STACK)
        .spawn(move || {
            let read = std::panic::catch_unwind(|| pdf::pages(&bytes, &LIMITS))
                .unwrap_or_else(|_| Err("the PDF reader failed on this file".into()));
            let _ = send.send(read);
        });
    if let Err(e) = spawned {
        return Err(format!("cannot start the PDF reader: {e}"));
    }
    match receive.recv_timeout(TIME_LIMIT) {
        Ok(read) => read,
        Err(_) => Err(format!(
            "the PDF took more than {} s to read",
            TIME_LIMIT.as_secs()
        )),
    }
}

/// Why a child gave no pages.
enum Failed {
    /// It could not be started.
    Start(String),
    /// The file was refused, or the child died or ran out of time on it.
    Read(Refusal),
}

/// Reads the PDF in a child process (see the module's comment).
fn in_child(
    exe: &std::path::Path,
    bytes: &[u8],
    time_limit: Duration,
) -> Result<Vec<String>, Failed> {
    use std::os::unix::process::CommandExt as _;
    use std::process::{Command, Stdio};

    let mut command = Command::new(exe);
    command
        .arg(CHILD_COMMAND)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .env_remove("EYWA_LOG");
    let cpu = time_limit.as_secs() + 5;
    // SAFETY: between fork and exec the closure only calls getrlimit and setrlimit,
    // which are async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            limit(libc::RLIMIT_CORE, 0)?;
            limit(libc::RLIMIT_CPU, cpu)?;
            limit(libc::RLIMIT_AS, CHILD_ADDRESS_SPACE)?;
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|e| Failed::Start(e.to_string()))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        // Fed and drained on threads of their own, so that neither side waits on a full
        // pipe; the answer is at most the text kept, as JSON.
        s.spawn(move || {
            let _ = stdin.write_all(bytes);
        });
        s.spawn(move || {
            let mut out = Vec::new();
            let cap = (LIMITS.max_text as u64) * 6 + (1 << 20);
            let read = (&mut stdout).take(cap).read_to_end(&mut out);
            let _ = send.send(read.map(|_| out));
        });
        let answer = receive.recv_timeout(time_limit);
        if answer.is_err() {
            let _ = child.kill();
        }
        let status = child.wait();
        let answer = match answer {
            Ok(Ok(out)) => out,
            Ok(Err(e)) => {
                return Err(Failed::Read(format!(
                    "the PDF reader's answer was lost: {e}"
                )));
            }
            Err(_) => {
                return Err(Failed::Read(format!(
                    "the PDF took more than {} s to read",
                    time_limit.as_secs()
                )));
            }
        };
        match serde_json::from_slice::<Answer>(&answer) {
            Ok(Answer::Pages(pages)) => Ok(pages),
            Ok(Answer::Refused(why)) => Err(Failed::Read(why)),
            Err(_) => Err(Failed::Read(match status {
                Ok(status) => format!("the PDF reader stopped on this file ({})", ended(status)),
                Err(e) => format!("the PDF reader stopped on this file ({e})"),
            })),
        }
    })
}

/// Lowers `resource` to `value`, or to the hard limit already set when that is lower (a
/// process may not raise it).
fn limit(resource: libc::__rlimit_resource_t, value: u64) -> std::io::Result<()> {
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given; it is async-signal-safe.
    if unsafe { libc::getrlimit(resource, &mut current) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let value = value.min(current.rlim_max);
    let limit = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: setrlimit reads the struct it is given.
    if unsafe { libc::setrlimit(resource, &limit) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// How a child ended, in words.
fn ended(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (_, Some(libc::SIGSEGV)) => "it overflowed its stack or touched bad memory".into(),
        (_, Some(libc::SIGABRT)) => "it aborted, out of memory or stack".into(),
        (_, Some(libc::SIGXCPU)) => "it ran out of CPU time".into(),
        (_, Some(libc::SIGKILL)) => "it was killed".into(),
        (_, Some(signal)) => format!("signal {signal}"),
        (Some(code), None) => format!("exit status {code}"),
        (None, None) => "no status".into(),
    }
}

/// The child's side: reads a PDF from stdin (at most [`super::MAX_DOCUMENT_BYTES`]),
/// writes its pages or why it is refused to stdout.
pub fn run_child() -> std::io::Result<()> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(super::MAX_DOCUMENT_BYTES + 1)
        .read_to_end(&mut bytes)?;
    let answer = if bytes.len() as u64 > super::MAX_DOCUMENT_BYTES {
        Answer::Refused(format!(
            "a document is at most {} bytes",
            super::MAX_DOCUMENT_BYTES
        ))
    } else {
        match on_thread(bytes) {
            Ok(pages) => Answer::Pages(pages),
            Err(why) => Answer::Refused(why),
        }
    };
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &answer)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for `eywa read-pdf-child`: a shell script doing `body`.
    fn child(dir: &std::path::Path, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.join("reader");
        std::fs::write(&path, format!("#!/bin/sh\ncat > /dev/null\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
        path
    }

    #[test]
    fn whatever_happens_to_the_child_is_the_files_error() {
        let dir = tempfile::tempdir().unwrap();
        let read = |body: &str, limit: u64| {
            in_child(
                &child(dir.path(), body),
                b"%PDF-1.4",
                Duration::from_secs(limit),
            )
            .map_err(|e| match e {
                Failed::Start(why) | Failed::Read(why) => why,
            })
        };
        let crashed = read("kill -SEGV $$", 10).unwrap_err();
        assert!(crashed.contains("overflowed its stack"), "{crashed}");
        let aborted = read("kill -ABRT $$", 10).unwrap_err();
        assert!(aborted.contains("aborted"), "{aborted}");
        let slow = read("exec sleep 30", 1).unwrap_err();
        assert_eq!(slow, "the PDF took more than 1 s to read");
        let garbage = read("echo not json; exit 3", 10).unwrap_err();
        assert!(garbage.contains("exit status 3"), "{garbage}");
        let pages = read(r#"echo '{"Pages":["one","two"]}'"#, 10).unwrap();
        assert_eq!(pages, ["one", "two"]);
        let refused = read(r#"echo '{"Refused":"the PDF has no pages"}'"#, 10).unwrap_err();
        assert_eq!(refused, "the PDF has no pages");
        // A reader that cannot be started is not the file's fault.
        let missing = in_child(&dir.path().join("none"), b"%PDF", Duration::from_secs(1));
        assert!(matches!(missing, Err(Failed::Start(_))));
    }

    #[test]
    fn a_file_that_is_not_a_pdf_is_refused_on_a_thread_too() {
        // Not a PDF at all: lopdf's refusal, on the reading thread.
        let refused = on_thread(b"not a pdf".to_vec()).unwrap_err();
        assert!(refused.starts_with("not a PDF eywa can read"), "{refused}");
    }
}
