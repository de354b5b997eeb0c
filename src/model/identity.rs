//! Who wrote a session: the person and the machine, as a team's shared memory attributes
//! every session it holds.

use serde::{Deserialize, Serialize};

/// The longest user or machine name kept.
pub const MAX_IDENTITY_CHARS: usize = 128;

/// A session's author: the user (`$USER` by default) on the machine (its host name).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Identity {
    /// The person: a login name.
    pub user: String,
    /// The machine: a host name.
    pub machine: String,
}

impl Identity {
    /// `user` on `machine`, each checked by [`Identity::name`].
    pub fn new(user: &str, machine: &str) -> Result<Identity, String> {
        Ok(Identity {
            user: Identity::name("user", user)?,
            machine: Identity::name("machine", machine)?,
        })
    }

    /// A user or machine name as kept: trimmed, not empty, at most
    /// [`MAX_IDENTITY_CHARS`] characters, none of them a control character or `/`.
    pub fn name(what: &str, given: &str) -> Result<String, String> {
        let name = given.trim();
        if name.is_empty() {
            return Err(format!("the {what} name is empty"));
        }
        if name.chars().count() > MAX_IDENTITY_CHARS {
            return Err(format!(
                "the {what} name is over {MAX_IDENTITY_CHARS} characters"
            ));
        }
        if let Some(c) = name.chars().find(|c| c.is_control() || *c == '/') {
            return Err(format!(
                "the {what} name {name:?} holds {c:?}, which a name may not"
            ));
        }
        Ok(name.to_owned())
    }
}

/// A filter on who wrote a session: any of `users`, on any of `machines` (an empty list
/// keeps every one), names compared without regard to case.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attribution {
    /// User names kept; empty keeps every user.
    pub users: Vec<String>,
    /// Machine names kept; empty keeps every machine.
    pub machines: Vec<String>,
}

impl Attribution {
    /// Whether it keeps every session.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty() && self.machines.is_empty()
    }

    /// Whether it keeps what `user` wrote on `machine`.
    pub fn keeps(&self, user: &str, machine: &str) -> bool {
        let among = |name: &str, names: &[String]| {
            names.is_empty() || names.iter().any(|n| n.trim().eq_ignore_ascii_case(name))
        };
        among(user, &self.users) && among(machine, &self.machines)
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.user, self.machine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_checked() {
        let id = Identity::new("  ana ", "build-01").unwrap();
        assert_eq!(id.to_string(), "ana@build-01");
        assert!(
            Identity::new("", "m")
                .unwrap_err()
                .contains("user name is empty")
        );
        assert!(
            Identity::new("a", "   ")
                .unwrap_err()
                .contains("machine name is empty")
        );
        assert!(Identity::new("a/b", "m").unwrap_err().contains("'/'"));
        assert!(Identity::new("a\nb", "m").is_err());
        let long = "x".repeat(MAX_IDENTITY_CHARS + 1);
        assert!(Identity::new(&long, "m").unwrap_err().contains("over 128"));
        assert!(Identity::new(&long[1..], "m").is_ok());
    }

    #[test]
    fn filters_keep_by_name_without_case() {
        let by = |users: &[&str], machines: &[&str]| Attribution {
            users: users.iter().map(ToString::to_string).collect(),
            machines: machines.iter().map(ToString::to_string).collect(),
        };
        assert!(by(&[], &[]).is_empty() && by(&[], &[]).keeps("Ana", "laptop"));
        assert!(by(&["ana"], &[]).keeps("Ana", "laptop"));
        assert!(by(&["bo", " ANA "], &["Laptop"]).keeps("Ana", "laptop"));
        assert!(!by(&["bo"], &[]).keeps("Ana", "laptop"));
        assert!(!by(&[], &["desk"]).keeps("Ana", "laptop"));
        assert!(!by(&["ana"], &[]).is_empty());
    }
}
