//! The `eywa` command: glue over the library. Errors print as one chain on stderr.

/// `eprintln!` that does not panic when stderr is closed (`eywa … 2>&-`, or a log reader
/// that went away): what cannot be said is dropped, and the command goes on.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `println!` that hands a closed stdout (`eywa … | head -1`) back as an error instead
/// of panicking; `main` ends quietly on a broken pipe.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*)?;
    }};
}

/// `print!`, as [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout(), $($arg)*)?;
    }};
}

mod agents;
mod app;
mod cli;

use std::process::ExitCode;

/// Writes allocate and free many small keys and values: on the sled store of layout 3,
/// glibc's allocator spent a quarter of a 100k-session import in malloc and free.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    match cli::run() {
        Ok(code) => code,
        Err(err) => {
            // A reader that went away (`eywa … | head -1`) took all it wanted.
            if err
                .chain()
                .any(|e| io_kind(e) == Some(std::io::ErrorKind::BrokenPipe))
            {
                return ExitCode::SUCCESS;
            }
            errln!(
                "eywa: {}",
                eywa::error::bounded_message(&format!("{err:#}"))
            );
            ExitCode::FAILURE
        }
    }
}

fn io_kind(err: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    if let Some(e) = err.downcast_ref::<std::io::Error>() {
        return Some(e.kind());
    }
    err.downcast_ref::<serde_json::Error>()
        .and_then(serde_json::Error::io_error_kind)
}
