//! Folders the store writes: made private to their owner, and made durable after a rename
//! in them.

use std::fs::File;
use std::io;
use std::path::Path;

use crate::{Error, Result};

/// Creates `path` and its parents, and makes `path` itself accessible to its owner only.
pub(crate) fn create_private_dir(path: &Path) -> Result<()> {
    let io_err = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(path).map_err(io_err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).map_err(io_err)?;
    }
    Ok(())
}

/// Makes a rename in `dir` durable (a no-op where directories cannot be synced).
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
