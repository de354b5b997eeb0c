//! Secrets known by their name: the value of a `password`, `secret`, `token` or
//! `api_key` assignment, and the password of a `scheme://user:password@host` URL.

use super::tokens::token_at;
use super::{Found, Redaction, count, count_back, find, is_alnum, is_word, word_end};

/// Longest key name read back from a `:` or `=`.
const MAX_KEY: usize = 64;
/// Longest quoted value or URL authority looked at.
const MAX_VALUE: usize = 512;
/// Shortest assigned value taken for a secret, in chars.
const MIN_VALUE: usize = 6;

/// Names whose value is a secret: the key, lowercased with `-` as `_`, ends with one
/// of these, optionally followed by one of `KEY_SUFFIXES`.
const KEY_WORDS: [&[u8]; 10] = [
    b"password",
    b"passwd",
    b"pwd",
    b"passphrase",
    b"secret",
    b"token",
    b"api_key",
    b"apikey",
    b"access_key",
    b"accesskey",
];
const KEY_SUFFIXES: [&[u8]; 5] = [b"", b"_key", b"key", b"_value", b"value"];
/// Last three bytes of every name `KEY_WORDS` and `KEY_SUFFIXES` accept.
const KEY_ENDINGS: [&[u8; 3]; 8] = [
    b"ord", b"swd", b"pwd", b"ase", b"ret", b"ken", b"key", b"lue",
];
/// Keys whose value may be all digits (a PIN is a password; a token never is).
const PASSWORD_WORDS: [&[u8]; 4] = [b"password", b"passwd", b"pwd", b"passphrase"];
const REDACTED: &[u8] = b"[REDACTED:";
/// Bytes that end an unquoted value, besides whitespace.
const BARE_VALUE_ENDS: &[u8] = b",;&|\"'`)]}<>\\";
/// Bytes that end a URL's authority, besides whitespace.
const AUTHORITY_ENDS: &[u8] = b"/?#\"'`<>\\";

/// Lowercase, with `-` read as `_`.
fn fold(c: u8) -> u8 {
    if c == b'-' {
        b'_'
    } else {
        c.to_ascii_lowercase()
    }
}

/// Whether `hay` contains `needle` (lowercase, `_` for `-`) ignoring case and dashes.
fn contains_folded(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.iter().zip(needle).all(|(&a, &b)| fold(a) == b))
}

/// A `:` or `=` at `i`: a URL's `://`, or the separator of an assignment (`=>`
/// included). Comparisons (`==`, `!=`, `<=`) and paths (`::`) are not.
pub(super) fn separator(b: &[u8], i: usize) -> Option<Found> {
    let prev = if i > 0 { b[i - 1] } else { b'\n' };
    let next = b.get(i + 1).copied().unwrap_or(b'\n');
    if b[i] == b':' {
        if next == b'/' {
            return webhook_url(b, i).or_else(|| url_password(b, i));
        }
        if matches!(next, b':' | b'=') || prev == b':' {
            return None;
        }
    } else if matches!(next, b'=' | b'~')
        || matches!(
            prev,
            b'=' | b'!' | b'<' | b'>' | b'+' | b'-' | b'*' | b'/' | b'%' | b'|' | b'&' | b'^'
        )
    {
        return None;
    } else if next == b'>' {
        return assignment(b, i, true); // `'password' => '…'`
    }
    assignment(b, i, false)
}

/// What a key name says about its value.
struct Key {
    /// A password (may be all digits).
    password: bool,
    /// An AWS secret access key.
    aws: bool,
}

/// `key = value`, `key: value`, `"key": "value"`, `KEY=value`, `key := value` and,
/// with `arrow`, `'key' => 'value'`: the value, when the key is a secret's name and the
/// value is not code, prose or a placeholder. An arrow's value must be quoted.
fn assignment(b: &[u8], i: usize, arrow: bool) -> Option<Found> {
    let mut k = i;
    if b[i] == b'=' && k > 0 && b[k - 1] == b':' {
        k -= 1;
    }
    let before_spaces = k;
    k -= count_back(b, k, |c| c == b' ' || c == b'\t');
    let spaced = k < before_spaces;
    let quoted_key = k > 0 && matches!(b[k - 1], b'"' | b'\'' | b'`');
    if quoted_key {
        k -= 1;
        if k > 0 && b[k - 1] == b'\\' {
            k -= 1;
        }
    }
    // The cheap gate: the last three bytes of the key.
    let tail = b.get(k.checked_sub(3)?..k)?;
    let tail = [fold(tail[0]), fold(tail[1]), fold(tail[2])];
    if !KEY_ENDINGS.contains(&&tail) {
        return None;
    }
    let key_start = k - count_back(b, k, |c| is_word(c) || c == b'.').min(MAX_KEY);
    if quoted_key && key_start > 0 && b[key_start - 1] == b' ' {
        return None; // `"reset password": …` is a label in prose
    }
    if let Some(found) = azure_key(b, &b[key_start..k], i) {
        return Some(found);
    }
    let key = key_kind(&b[key_start..k])?;

    let after = i + 1 + usize::from(arrow);
    let v = after + count(b, after, |c| c == b' ' || c == b'\t');
    let compact = b[i] == b'=' && !spaced && v == i + 1 && !quoted_key && !arrow;
    let (start, end, quoted) = value_span(b, v)?;
    if arrow && !quoted {
        return None;
    }
    if token_at(b, start, word_end(b, start)).is_some() {
        return None; // a prefixed token: left to its own kind
    }
    let value = &b[start..end];
    if !is_secret_value(value, quoted, compact, key.password) {
        return None;
    }
    let aws = key.aws
        && value.len() == 40
        && value
            .iter()
            .all(|&c| is_alnum(c) || matches!(c, b'/' | b'+' | b'='));
    let kind = if aws {
        Redaction::AwsSecretKey
    } else {
        Redaction::Password
    };
    Some(Found { kind, start, end })
}

/// Whether `name` is a secret's name: `password`, `DB_PASSWORD`, `client_secret`,
/// `secret_key`, `x-api-key`, `accessToken`; not `token_count`, `tokens`, `tokenizer`.
fn key_kind(name: &[u8]) -> Option<Key> {
    let mut buf = [0u8; MAX_KEY];
    let folded = &mut buf[..name.len()];
    for (f, &c) in folded.iter_mut().zip(name) {
        *f = fold(c);
    }
    let folded = &*folded;
    let secret = KEY_SUFFIXES.iter().any(|suffix| {
        folded
            .strip_suffix(*suffix)
            .is_some_and(|base| KEY_WORDS.iter().any(|word| base.ends_with(word)))
    });
    secret.then(|| Key {
        password: PASSWORD_WORDS.iter().any(|w| find(folded, w).is_some()),
        aws: find(folded, b"secret").is_some()
            && (find(folded, b"aws").is_some()
                || folded.ends_with(b"access_key")
                || folded.ends_with(b"accesskey")),
    })
}

/// The value starting at `v`: `(start, end, quoted)`. A quoted value (also `\"…\"` in
/// JSON-encoded text) ends at its closing quote on the same line; a bare one at
/// whitespace or `,;&|` or a bracket or quote.
fn value_span(b: &[u8], v: usize) -> Option<(usize, usize, bool)> {
    let limit = b.len().min(v + MAX_VALUE);
    match *b.get(v)? {
        q @ (b'"' | b'\'' | b'`') => {
            let mut j = v + 1;
            while j < limit {
                match b[j] {
                    c if c == q => return Some((v + 1, j, true)),
                    b'\n' => return None,
                    b'\\' => j += 2,
                    _ => j += 1,
                }
            }
            None
        }
        b'\\' if matches!(b.get(v + 1), Some(b'"' | b'\'')) => {
            let q = b[v + 1];
            let start = v + 2;
            let close = (start..limit.saturating_sub(1))
                .take_while(|&j| b[j] != b'\n')
                .find(|&j| b[j] == b'\\' && b[j + 1] == q)?;
            Some((start, close, true))
        }
        _ => {
            let len = count(b, v, |c| {
                !(c.is_ascii_whitespace() || BARE_VALUE_ENDS.contains(&c))
            });
            Some((v, v + len, false))
        }
    }
}

/// Whether an assigned value is a secret rather than empty, a placeholder (`${VAR}`,
/// `<your-password>`, `****`, `YOUR_TOKEN`), already redacted, code (`read_password()`,
/// `config.password`) or a label (`"Password"`, `"Enter your password"`).
/// `compact` is `KEY=value` with no spaces, as in env files, shells and query strings.
fn is_secret_value(v: &[u8], quoted: bool, compact: bool, password: bool) -> bool {
    let chars = v.iter().filter(|&&c| c & 0xC0 != 0x80).count();
    if chars < MIN_VALUE || v.starts_with(REDACTED) {
        return false;
    }
    let (first, last) = (v[0], v[v.len() - 1]);
    let digit = v.iter().any(u8::is_ascii_digit);
    let letters_only = v.iter().all(u8::is_ascii_alphabetic);
    let identifier = v.iter().all(|&c| is_alnum(c) || c == b'_' || c == b'.');
    let placeholder = matches!(first, b'$' | b'%' | b'{')
        || (first == b'<' && last == b'>')
        || v.iter().all(|&c| c == first)
        || contains_folded(&v[..4], b"your")
        || (!password && v.iter().all(u8::is_ascii_digit));
    let names_key = KEY_WORDS.iter().any(|w| contains_folded(v, w))
        && (letters_only || v.iter().any(|c| matches!(c, b' ' | b'.' | b'_')));
    if placeholder || names_key {
        return false;
    }
    if quoted {
        return true;
    }
    let path = v.iter().any(|&c| c == b'.' || c == b'_');
    // `UINT32`, `Sha256`: a type name, letters then digits after a capital.
    let letters = v.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    let type_name = first.is_ascii_uppercase() && v[letters..].iter().all(u8::is_ascii_digit);
    // `quote!`: a macro.
    let mac = last == b'!' && v[..v.len() - 1].iter().all(|&c| is_alnum(c) || c == b'_');
    let code = v.iter().any(|c| matches!(c, b'(' | b'[' | b'{'))
        || find(v, b"::").is_some()
        || matches!(first, b'/' | b'~' | b'.' | b'*')
        || v.starts_with(b"0x")
        || (compact && identifier && v.contains(&b'.') && !digit)
        || (!compact && (mac || (identifier && (path || !digit || type_name))));
    !code
}

/// The `AccountKey=…` (or `SharedAccessKey=…`) of an Azure connection string: 40+
/// characters of base64. `separator` is the `=`.
fn azure_key(b: &[u8], name: &[u8], separator: usize) -> Option<Found> {
    let named =
        name.eq_ignore_ascii_case(b"AccountKey") || name.eq_ignore_ascii_case(b"SharedAccessKey");
    if !named || b[separator] != b'=' {
        return None;
    }
    let start = separator + 1;
    let len = count(b, start, |c| is_alnum(c) || matches!(c, b'+' | b'/' | b'='));
    (len >= 40).then_some(Found {
        kind: Redaction::AzureStorageKey,
        start,
        end: start + len,
    })
}

/// Flags whose value is a secret besides those `key_kind` names: `--pass`.
const SECRET_FLAGS: [&[u8]; 1] = [b"pass"];
/// Commands whose `-p` takes a password joined to it: `mysql -pSECRET` (`mysql -p db`
/// prompts for one, and `db` is a database).
const MYSQL_COMMANDS: [&[u8]; 5] = [
    b"mysql",
    b"mysqldump",
    b"mysqladmin",
    b"mariadb",
    b"mysqlimport",
];

/// The value of a command-line flag that holds a secret; the flag is `b[flag..end]` and
/// `end` the byte after it. `--password SECRET`, `--token "…"`, `--api-key=` is left
/// to [`assignment`]; `-p'SECRET'` anywhere; `-pSECRET` and `-p SECRET` after a MySQL
/// client or `sshpass` on the same line.
pub(super) fn flag_value(b: &[u8], flag: usize, end: usize) -> Option<Found> {
    let name = &b[flag..end];
    let found = |start: usize, stop: usize| {
        Some(Found {
            kind: Redaction::CommandLineSecret,
            start,
            end: stop,
        })
    };
    // The command's line, with the lines a trailing `\` continues (`curl -X POST \⏎
    // -u admin:…`): a few at most.
    let mut line_start = flag;
    for _ in 0..8 {
        line_start = b[..line_start]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |n| n + 1);
        let continued = (line_start >= 2 && b[line_start - 2] == b'\\')
            || (line_start >= 3 && b[line_start - 3..line_start - 1] == *b"\\\r");
        if !continued {
            break;
        }
        line_start -= 1;
    }
    let line = &b[line_start..flag];
    let after = |command: &[u8]| {
        line.windows(command.len()).enumerate().any(|(at, w)| {
            w == command
                && (at == 0 || !is_word(line[at - 1]))
                && line.get(at + command.len()).is_none_or(|&c| !is_word(c))
        })
    };
    if let Some(found) = curl_credentials(b, flag, end, || after(b"curl")) {
        return Some(found);
    }
    if let Some(long) = name.strip_prefix(b"--") {
        if long.len() < 4 || long.len() > MAX_KEY || !matches!(b.get(end), Some(b' ' | b'\t')) {
            return None;
        }
        // The cheap gate first, as for assignments: the last three bytes of the name.
        let n = long.len();
        let tail = [fold(long[n - 3]), fold(long[n - 2]), fold(long[n - 1])];
        let named = SECRET_FLAGS.iter().any(|f| long.eq_ignore_ascii_case(f));
        if !named && !KEY_ENDINGS.contains(&&tail) {
            return None;
        }
        let key = key_kind(long);
        if !named && key.is_none() {
            return None;
        }
        let password = named || key.is_some_and(|k| k.password);
        let v = end + count(b, end, |c| c == b' ' || c == b'\t');
        let (start, stop, _) = value_span(b, v)?;
        if token_at(b, start, word_end(b, start)).is_some() {
            return None; // a prefixed token: left to its own kind
        }
        let value = &b[start..stop];
        if value.first() == Some(&b'-') || !is_secret_value(value, true, false, password) {
            return None;
        }
        return found(start, stop);
    }
    let rest = name.strip_prefix(b"-p")?;
    if rest.is_empty() {
        // `-p'…'` / `-p"…"`, or `sshpass -p SECRET`.
        let v = match b.get(end) {
            Some(b'\'' | b'"') => end,
            Some(b' ') if after(b"sshpass") => end + count(b, end, |c| c == b' '),
            _ => return None,
        };
        let (start, stop, _) = value_span(b, v)?;
        let value = &b[start..stop];
        let placeholder = value.is_empty()
            || value.starts_with(REDACTED)
            || matches!(value[0], b'$' | b'<' | b'{' | b'-' | b'%')
            || value.iter().all(|&c| c == value[0]);
        return (!placeholder).then(|| found(start, stop))?;
    }
    // `-pSECRET`: the rest of the run (and what follows it up to a space).
    if !MYSQL_COMMANDS.iter().any(|command| after(command)) {
        return None;
    }
    let start = flag + 2;
    let stop = start
        + count(b, start, |c| {
            !(c.is_ascii_whitespace() || BARE_VALUE_ENDS.contains(&c))
        });
    let placeholder =
        matches!(b.get(start), Some(b'$' | b'<' | b'{')) || b[start..].starts_with(REDACTED);
    (!placeholder && stop - start >= 4).then(|| found(start, stop))?
}

/// The password of curl's `-u USER:PASSWORD` (`--user`, `-U`/`--proxy-user`, `--user=…`,
/// `-uUSER:PASSWORD`, quoted or not) after `curl` on the same line: what follows the
/// first `:`. A user alone (curl asks for the password) and placeholders are left.
fn curl_credentials(b: &[u8], flag: usize, end: usize, curl: impl Fn() -> bool) -> Option<Found> {
    let name = &b[flag..end];
    let v = match name {
        b"-u" | b"-U" | b"--user" | b"--proxy-user" => match b.get(end) {
            Some(b' ' | b'\t') => end + count(b, end, |c| c == b' ' || c == b'\t'),
            Some(b'=') if name.starts_with(b"--") => end + 1,
            Some(b'\'' | b'"') if name.len() == 2 => end,
            _ => return None,
        },
        // `-uUSER:PASSWORD`, joined.
        [b'-', b'u' | b'U', c, ..] if *c != b'-' => flag + 2,
        _ => return None,
    };
    if !curl() {
        return None;
    }
    let (start, stop, _) = value_span(b, v)?;
    let value = &b[start..stop];
    let colon = value.iter().position(|&c| c == b':')?;
    let password = &value[colon + 1..];
    (!placeholder_password(password)).then_some(Found {
        kind: Redaction::CommandLineSecret,
        start: start + colon + 1,
        end: stop,
    })
}

/// A Slack (`hooks.slack.com/services/…`) or Discord (`discord.com/api/webhooks/…`)
/// webhook URL: its path is the secret. `colon` is the `:` of `://`.
fn webhook_url(b: &[u8], colon: usize) -> Option<Found> {
    let authority = colon + 3;
    let rest = b.get(authority..)?;
    let prefix = [
        &b"hooks.slack.com/services/"[..],
        b"discord.com/api/webhooks/",
        b"discordapp.com/api/webhooks/",
    ]
    .into_iter()
    .find(|p| rest.starts_with(p))?;
    let start = authority + prefix.len();
    let len = count(b, start, |c| is_word(c) || c == b'/');
    (len >= 20).then_some(Found {
        kind: Redaction::WebhookUrl,
        start,
        end: start + len,
    })
}

/// Whether the password of a `user:password` pair is none: empty, a variable or a
/// template (`$PW`, `{pw}`, `<pw>`, `%s`), already redacted, or stars.
fn placeholder_password(password: &[u8]) -> bool {
    password
        .first()
        .is_none_or(|c| matches!(c, b'$' | b'{' | b'<' | b'%'))
        || password.starts_with(REDACTED)
        || password.iter().all(|&c| c == b'*')
}

/// `scheme://user:password@host`: the password, unless empty or a placeholder.
fn url_password(b: &[u8], colon: usize) -> Option<Found> {
    let scheme = count_back(b, colon, |c| is_alnum(c) || matches!(c, b'+' | b'.' | b'-'));
    if scheme < 2 || !b[colon - scheme].is_ascii_alphabetic() || !b[colon..].starts_with(b"://") {
        return None;
    }
    let authority = colon + 3;
    let len = count(b, authority, |c| {
        !(c.is_ascii_whitespace() || AUTHORITY_ENDS.contains(&c))
    })
    .min(MAX_VALUE);
    let userinfo = &b[authority..authority + len];
    let at = userinfo.iter().rposition(|&c| c == b'@')?;
    // The first `:` that is not a redacted user's own.
    let user_end =
        (0..at).find(|&p| userinfo[p] == b':' && !userinfo[..p].ends_with(b"[REDACTED"))?;
    let password = &userinfo[user_end + 1..at];
    (!placeholder_password(password)).then_some(Found {
        kind: Redaction::UrlPassword,
        start: authority + user_end + 1,
        end: authority + at,
    })
}
