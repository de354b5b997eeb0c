//! The `eywa` command: glue over the library. Errors print as one chain on stderr.

mod cli;

use std::process::ExitCode;

/// sled copies and frees a leaf's entries on every write: glibc's allocator spent a
/// quarter of a 100k-session import in malloc and free.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    match cli::run() {
        Ok(code) => code,
        Err(err) => {
            if err
                .chain()
                .filter_map(|e| e.downcast_ref::<std::io::Error>())
                .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("eywa: {err:#}");
            ExitCode::FAILURE
        }
    }
}
