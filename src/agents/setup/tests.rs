//! Setup's tests.

use super::files::{note_before, noted_before};
use super::*;

const THEIR_HOOK: &str =
    "/opt/eywa/bin/eywa --data-dir /srv/team-eywa hook session-start --max-tokens 6000";

#[test]
fn eywa_hooks_are_recognised_by_program_and_subcommand() {
    assert!(is_eywa_hook("/usr/local/bin/eywa hook session-start"));
    assert!(is_eywa_hook("'/opt/my tools/eywa' --data-dir /x hook stop"));
    assert!(is_eywa_hook(THEIR_HOOK));
    assert!(!is_eywa_hook("/usr/bin/other hook stop"));
    assert!(!is_eywa_hook("eywa serve"));
}

#[test]
fn setup_takes_out_only_the_hooks_it_wrote() {
    let prefix = "/usr/local/bin/eywa";
    let fresh = Written::new(prefix, None, None);
    assert!(fresh.has("/usr/local/bin/eywa hook stop"));
    assert!(!fresh.has("/old/eywa hook stop"));
    assert!(!fresh.has(THEIR_HOOK));
    let noted = json!({"commands": ["/old/eywa hook stop"], "wrote": "00"});
    assert!(Written::new(prefix, Some(&noted), None).has("/old/eywa hook stop"));
    // A record from before setup noted its commands, on a file as setup left it.
    let bytes: &[u8] = b"{}\n";
    let legacy = json!({"before": null, "wrote": hex(&Sha256::digest(bytes))});
    assert!(Written::new(prefix, Some(&legacy), Some(bytes)).has("/old/eywa hook stop"));
    let edited: &[u8] = b"{ }\n";
    assert!(!Written::new(prefix, Some(&legacy), Some(edited)).has("/old/eywa hook stop"));
}

#[test]
fn bytes_before_round_trip_through_the_record() {
    let not_utf8: &[u8] = b"{\"a\": \"\xff\"}";
    let text: &[u8] = b"{}\n";
    for before in [None, Some(text), Some(not_utf8)] {
        let noted = json!({"before": note_before(before)});
        assert_eq!(noted_before(&noted), Some(before.map(<[u8]>::to_vec)));
    }
    // Older records: text, or null for a file that did not exist.
    assert_eq!(
        noted_before(&json!({"before": "{}"})),
        Some(Some(b"{}".to_vec()))
    );
    assert_eq!(noted_before(&json!({"before": null})), Some(None));
    assert_eq!(noted_before(&json!({"wrote": "00"})), None);
}

#[cfg(unix)]
#[test]
fn links_are_followed_to_their_file_and_a_loop_is_an_error() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    // Relative to the link's folder, then absolute; the file need not exist.
    symlink("file", at("a")).unwrap();
    symlink(at("a"), at("b")).unwrap();
    assert_eq!(resolve_links(&at("b")).unwrap(), at("file"));
    assert_eq!(resolve_links(&at("file")).unwrap(), at("file"));
    symlink("y", at("x")).unwrap();
    symlink("x", at("y")).unwrap();
    assert!(resolve_links(&at("x")).is_err());
}

#[test]
fn shell_words_round_trip() {
    let prefix = format!(
        "{} --data-dir {}",
        shell_word("/a b/eywa"),
        shell_word("/d'x")
    );
    assert_eq!(
        shell_split(&prefix),
        vec!["/a b/eywa", "--data-dir", "/d'x"]
    );
}
