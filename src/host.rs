//! This machine's identity: who is logged in and the host's name, the defaults of the
//! `user` and `machine` every session is attributed to.

use crate::model::Identity;

/// The user and machine sessions written here are attributed to when nothing sets them:
/// `EYWA_USER` (else `$USER`, else `$LOGNAME`, else the login name of this process's
/// user) and `EYWA_MACHINE` (else the host name); `unknown` for what none of them gives
/// as a valid name.
pub fn local_identity() -> Identity {
    let user = ["EYWA_USER", "USER", "LOGNAME"]
        .iter()
        .find_map(|var| valid("user", std::env::var(var).ok()))
        .or_else(|| valid("user", login_name()));
    let machine = valid("machine", std::env::var("EYWA_MACHINE").ok())
        .or_else(|| valid("machine", host_name()));
    Identity {
        user: user.unwrap_or_else(|| UNKNOWN.to_owned()),
        machine: machine.unwrap_or_else(|| UNKNOWN.to_owned()),
    }
}

/// What stands for a name nothing gives.
pub const UNKNOWN: &str = "unknown";

fn valid(what: &str, given: Option<String>) -> Option<String> {
    Identity::name(what, &given?).ok()
}

/// The login name of this process's real user (`getpwuid_r`).
pub fn login_name() -> Option<String> {
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0u8; 4096];
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: `entry` and `buf` outlive the call, which writes within `buf.len()` bytes
    // and points `found` at `entry` or leaves it null.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::getuid(),
            &mut entry,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut found,
        )
    };
    if rc != 0 || found.is_null() || entry.pw_name.is_null() {
        return None;
    }
    // SAFETY: on success `pw_name` points at a NUL-terminated string inside `buf`.
    let name = unsafe { std::ffi::CStr::from_ptr(entry.pw_name) };
    Some(name.to_string_lossy().into_owned())
}

/// The host's name (`gethostname`), without a domain part.
pub fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that much.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]);
    let short = name.split('.').next().unwrap_or_default().trim();
    (!short.is_empty()).then(|| short.to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_host_has_a_name() {
        let name = super::host_name().expect("gethostname answers");
        assert!(!name.is_empty() && !name.contains('.'));
        let login = super::login_name().expect("this process's user has a name");
        assert!(!login.is_empty());
        let id = super::local_identity();
        assert!(!id.user.is_empty() && !id.machine.is_empty());
    }
}
