//! People a session's tool calls name, and where they work: commit authors as git prints
//! them (`Author: Name <email>`) and co-authors of commit trailers
//! (`Co-authored-by: Name <email>`), in the commands a session ran and in their output.
//! Only these forms are read: a name beside an address, in a field git defines, is a
//! person; a capitalized word in prose may be anything.

use crate::model::Timestamp;

/// The longest line read for an author (a trailer or git's header is far shorter).
const MAX_LINE: usize = 1_000;

/// People kept per session.
pub(super) const MAX_PEOPLE: usize = 64;

/// Someone a session's commands or their output name as an author.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PersonSeen {
    /// The organization their address belongs to: its domain, unless the address is a
    /// personal mailbox (`gmail.com`) or a forge's private relay.
    pub organization: Option<String>,
    /// How many times they were named.
    pub count: u32,
    pub first: Option<Timestamp>,
    pub last: Option<Timestamp>,
    /// uuid of the line that first named them (evidence).
    pub evidence: Option<String>,
}

/// Mail domains anyone can have an address at: they say nothing of an organization.
const PERSONAL_MAIL: [&str; 22] = [
    "gmail.com",
    "googlemail.com",
    "outlook.com",
    "hotmail.com",
    "live.com",
    "msn.com",
    "yahoo.com",
    "ymail.com",
    "icloud.com",
    "me.com",
    "mac.com",
    "aol.com",
    "proton.me",
    "protonmail.com",
    "pm.me",
    "gmx.de",
    "gmx.net",
    "web.de",
    "mail.ru",
    "yandex.ru",
    "qq.com",
    "163.com",
];

/// The (name, address) pairs `text` gives as authors.
pub(crate) fn authors_in(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines().filter_map(author_of_line)
}

/// `Author: Name <address>` (at the start of a line, as git prints it) or
/// `Co-authored-by: Name <address>` (anywhere: a trailer in a quoted commit message).
fn author_of_line(line: &str) -> Option<(&str, &str)> {
    // Cheap refusals first: a document may be 64 MB of lines.
    if line.len() > MAX_LINE || !(line.contains("uthor") || line.contains("UTHOR")) {
        return None;
    }
    let line = line.trim();
    let rest = strip_prefix_ignore_case(line, "author:").or_else(|| {
        let at = find_ignore_case(line, "co-authored-by:")?;
        Some(&line[at + "co-authored-by:".len()..])
    })?;
    let (name, rest) = rest.split_once('<')?;
    let (address, _) = rest.split_once('>')?;
    let name = name.trim().trim_matches(|c| c == '"' || c == '\'').trim();
    let address = address.trim();
    (is_name(name) && is_address(address) && !is_machine(name, address)).then_some((name, address))
}

/// A person's name as a person writes it: 2 to 60 characters of letters, spaces and the
/// marks names use, with at least one letter.
fn is_name(name: &str) -> bool {
    let chars = name.chars().count();
    (2..=60).contains(&chars)
        && name.chars().any(char::is_alphabetic)
        && name
            .chars()
            .all(|c| c.is_alphabetic() || matches!(c, ' ' | '.' | '-' | '\'' | '’'))
}

fn is_address(address: &str) -> bool {
    let Some((local, domain)) = address.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && address.len() <= 254
        && !address.contains(char::is_whitespace)
}

/// An author that is a program: a bot, an assistant's no-reply address.
fn is_machine(name: &str, address: &str) -> bool {
    let address = address.to_ascii_lowercase();
    let local = address.split('@').next().unwrap_or("");
    name.to_ascii_lowercase().contains("[bot]")
        || local.contains("noreply")
        || local.contains("no-reply")
        || local.ends_with("bot")
        || address.ends_with("@anthropic.com") && name.eq_ignore_ascii_case("claude")
}

/// The organization an address names: its domain, lowercased, unless anyone can have an
/// address there.
pub(crate) fn organization_of(address: &str) -> Option<String> {
    let domain = address.rsplit_once('@')?.1.trim().to_ascii_lowercase();
    let personal = PERSONAL_MAIL.contains(&domain.as_str())
        || domain.ends_with(".noreply.github.com")
        || domain == "users.noreply.gitlab.com"
        || domain == "localhost"
        || domain.ends_with(".local");
    (!personal && domain.contains('.')).then_some(domain)
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

fn find_ignore_case(haystack: &str, needle: &str) -> Option<usize> {
    haystack
        .as_bytes()
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authors_and_co_authors_are_read_and_programs_left_out() {
        let log = "commit 1a2b3c\nAuthor: Ada Lovelace <ada@analytical.org>\nDate:   Mon\n\n    \
                   fix\n\n    Co-authored-by: Grace Hopper <grace@gmail.com>\n    \
                   Co-Authored-By: Claude <noreply@anthropic.com>\n    \
                   Co-authored-by: dependabot[bot] <49699333+dependabot[bot]@users.noreply.github.com>";
        let found: Vec<_> = authors_in(log).collect();
        assert_eq!(
            found,
            [
                ("Ada Lovelace", "ada@analytical.org"),
                ("Grace Hopper", "grace@gmail.com")
            ]
        );
    }

    #[test]
    fn a_trailer_inside_a_quoted_commit_message_is_read() {
        let command = r#"git commit -m "feat: x

Co-authored-by: José Núñez <jose@example.es>""#;
        assert_eq!(
            authors_in(command).collect::<Vec<_>>(),
            [("José Núñez", "jose@example.es")]
        );
    }

    #[test]
    fn what_only_looks_like_an_author_is_not_one() {
        for line in [
            "author: <ada@analytical.org>",
            "Author: 42 <x@y.z>",
            "Author: Ada <not an address>",
            "Author: Ada Lovelace ada@analytical.org",
            "the author: Ada <ada>",
            "Author: {{name}} <{{email}}>",
        ] {
            assert_eq!(authors_in(line).count(), 0, "{line}");
        }
    }

    #[test]
    fn an_organization_is_an_address_domain_nobody_can_sign_up_at() {
        assert_eq!(
            organization_of("christian@BCT-Technology.com").as_deref(),
            Some("bct-technology.com")
        );
        assert_eq!(organization_of("grace@gmail.com"), None);
        assert_eq!(organization_of("1+ada@users.noreply.github.com"), None);
    }
}
