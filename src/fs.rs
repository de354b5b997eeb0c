//! Files and folders eywa creates for itself: private to the user.

use std::path::Path;

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
