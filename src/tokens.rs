//! The tokens a server takes from callers: the one that may write and the read-only one,
//! kept as digests and compared in constant time; made (and kept 0600) when missing. The
//! server's auth layer checks calls with them, and the web view signs a browser in.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// The two tokens a remote server accepts, kept as their sha256 so that checking one
/// compares fixed-size digests in constant time.
#[derive(Clone)]
pub struct Tokens {
    write: [u8; 32],
    read: [u8; 32],
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tokens(..)")
    }
}

/// What a call's token allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Read,
    Write,
}

impl Tokens {
    /// The tokens from the one that may write and the read-only one, kept as digests.
    pub fn new(write: &str, read: &str) -> Tokens {
        Tokens {
            write: digest(write),
            read: digest(read),
        }
    }

    /// The tokens in `write_file` and `read_file`, each created (0600, 32 random bytes as
    /// hex) when missing. A file that exists must hold a token of at least 16 characters.
    pub fn load_or_create(write_file: &Path, read_file: &Path) -> Result<Tokens> {
        let write = token_file(write_file)?;
        let read = token_file(read_file)?;
        if write == read {
            return Err(Error::InvalidArgument(format!(
                "{} and {} hold the same token: the read-only one must differ",
                write_file.display(),
                read_file.display()
            )));
        }
        Ok(Tokens::new(&write, &read))
    }

    /// Whether `token` is one of these (either scope): what a browser signs in with.
    pub fn admits(&self, token: &str) -> bool {
        self.scope_of(token).is_some()
    }

    /// What `token` may do: write, read only, or nothing.
    pub(crate) fn scope_of(&self, token: &str) -> Option<Scope> {
        let given = digest(token);
        // Both compared, whatever the first says.
        let write = constant_eq(&given, &self.write);
        let read = constant_eq(&given, &self.read);
        if write {
            Some(Scope::Write)
        } else if read {
            Some(Scope::Read)
        } else {
            None
        }
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn constant_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token in `path`, trimmed; a new random one written there (0600) when missing.
fn token_file(path: &Path) -> Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let token = text.trim().to_owned();
            if token.len() < 16 || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(Error::InvalidArgument(format!(
                    "{} must hold one token of at least 16 characters, without spaces",
                    path.display()
                )));
            }
            Ok(token)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let token = random_hex(32)?;
            if let Some(dir) = path.parent() {
                crate::fs::create_private_dir(dir)?;
            }
            crate::fs::write_private_atomically(path, format!("{token}\n").as_bytes())?;
            Ok(token)
        }
        Err(e) => Err(Error::io(path)(e)),
    }
}

/// `n` random bytes from the kernel, as lowercase hex.
pub fn random_hex(n: usize) -> Result<String> {
    use std::io::Read;
    let mut bytes = vec![0; n];
    let source = Path::new("/dev/urandom");
    std::fs::File::open(source)
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(Error::io(source))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
