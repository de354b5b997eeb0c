//! Secrets out of transcript text: keys, tokens, private keys and password values become
//! `[REDACTED:<kind>]` before text reaches an index, a handoff or the graph.
//!
//! One pass over the bytes. Runs of `[A-Za-z0-9_-]` shorter than [`MIN_TOKEN`] and every
//! `:`/`=` whose key does not end like a secret's name are dismissed after a byte or two;
//! only the rare candidate is parsed in detail, and text without a secret comes back
//! borrowed.

use std::borrow::Cow;
use std::collections::BTreeMap;

/// What kind of secret was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Redaction {
    /// `sk-ant-…`.
    AnthropicKey,
    /// `sk-…`, `sk-proj-…`.
    OpenaiKey,
    /// `AKIA…` or `ASIA…` and 16 uppercase alphanumerics.
    AwsAccessKeyId,
    /// The 40-character value of an `aws_secret_access_key` assignment.
    AwsSecretKey,
    /// `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`.
    GithubToken,
    /// `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`.
    SlackToken,
    /// `sk_live_`, `sk_test_`, `rk_live_`, `rk_test_`.
    StripeKey,
    /// `AIza` and 35 more.
    GoogleApiKey,
    /// `npm_` and 36 alphanumerics.
    NpmToken,
    /// `hf_` and 34 alphanumerics.
    HuggingfaceToken,
    /// Three base64url segments, the first starting `eyJ`.
    Jwt,
    /// A `-----BEGIN … PRIVATE KEY-----` block up to its `-----END … -----`.
    PrivateKey,
    /// The token after `Bearer `.
    BearerToken,
    /// The value assigned to a password, secret, token or API key name.
    Password,
    /// The password of a `scheme://user:password@host` URL.
    UrlPassword,
}

impl Redaction {
    /// Every kind, in order.
    pub const ALL: [Redaction; 15] = [
        Redaction::AnthropicKey,
        Redaction::OpenaiKey,
        Redaction::AwsAccessKeyId,
        Redaction::AwsSecretKey,
        Redaction::GithubToken,
        Redaction::SlackToken,
        Redaction::StripeKey,
        Redaction::GoogleApiKey,
        Redaction::NpmToken,
        Redaction::HuggingfaceToken,
        Redaction::Jwt,
        Redaction::PrivateKey,
        Redaction::BearerToken,
        Redaction::Password,
        Redaction::UrlPassword,
    ];

    /// The snake_case name written into `[REDACTED:<kind>]` and into reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Redaction::AnthropicKey => "anthropic_key",
            Redaction::OpenaiKey => "openai_key",
            Redaction::AwsAccessKeyId => "aws_access_key_id",
            Redaction::AwsSecretKey => "aws_secret_key",
            Redaction::GithubToken => "github_token",
            Redaction::SlackToken => "slack_token",
            Redaction::StripeKey => "stripe_key",
            Redaction::GoogleApiKey => "google_api_key",
            Redaction::NpmToken => "npm_token",
            Redaction::HuggingfaceToken => "huggingface_token",
            Redaction::Jwt => "jwt",
            Redaction::PrivateKey => "private_key",
            Redaction::BearerToken => "bearer_token",
            Redaction::Password => "password",
            Redaction::UrlPassword => "url_password",
        }
    }
}

/// How many secrets of each kind were replaced; kinds never seen are absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct RedactionCounts(BTreeMap<Redaction, u64>);

impl RedactionCounts {
    /// Replacements of `kind`.
    pub fn get(&self, kind: Redaction) -> u64 {
        self.0.get(&kind).copied().unwrap_or(0)
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &RedactionCounts) {
        for (&kind, &n) in &other.0 {
            *self.0.entry(kind).or_insert(0) += n;
        }
    }

    /// Replacements of every kind.
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    /// True when nothing was replaced.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Kinds seen, in order, with their counts.
    pub fn iter(&self) -> impl Iterator<Item = (Redaction, u64)> + '_ {
        self.0.iter().map(|(&kind, &n)| (kind, n))
    }

    fn record(&mut self, kind: Redaction) {
        *self.0.entry(kind).or_insert(0) += 1;
    }
}

/// Replaces every secret in `text` with `[REDACTED:<kind>]`; counts what it replaced.
///
/// Assignments and URLs keep their key and user (`password=[REDACTED:password]`); a
/// private key block goes whole, to the end of the text when it has no END line.
/// Idempotent: redacted text holds nothing more to replace.
pub fn redact<'a>(text: &'a str, counts: &mut RedactionCounts) -> Cow<'a, str> {
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(at) = candidate(b, i) {
        let (found, next) = examine(b, at);
        i = next;
        if let Some(f) = found {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
            out.push_str(&text[copied..f.start]);
            out.push_str("[REDACTED:");
            out.push_str(f.kind.as_str());
            out.push(']');
            counts.record(f.kind);
            copied = f.end;
            i = f.end;
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
    }
}

/// The pre-check: the next byte from `from` on worth a closer look, one byte at a time
/// and without a branch on the byte's class. It is the `MIN_TOKEN`th byte of an
/// `[A-Za-z0-9_-]` run, the byte ending a 6-byte run (`bearer`?), or a `:` or `=`.
#[inline]
fn candidate(b: &[u8], from: usize) -> Option<usize> {
    let mut run = 0usize;
    for (k, &c) in b.get(from..)?.iter().enumerate() {
        let word = WORD[c as usize];
        let ended6 = (run == 6) & !word;
        // `run + 1` or 0, as a mask: a branch would mispredict at every word's end.
        run = (run + 1) & 0usize.wrapping_sub(usize::from(word));
        if (run == MIN_TOKEN) | ended6 | (c == b':') | (c == b'=') {
            return Some(from + k);
        }
    }
    None
}

/// The secret found at the candidate byte `at`, if any, and where scanning resumes.
#[inline(never)]
fn examine(b: &[u8], at: usize) -> (Option<Found>, usize) {
    if WORD[b[at] as usize] {
        let start = at + 1 - MIN_TOKEN;
        let end = word_end(b, at + 1);
        let found = token_at(b, start, end).or_else(|| after_escape(b, start, end));
        return (found, end);
    }
    let bearer_word = at >= 6 && b[at - 6..at].eq_ignore_ascii_case(b"bearer");
    let found = bearer_word
        .then(|| bearer(b, at))
        .flatten()
        .or_else(|| matches!(b[at], b':' | b'=').then(|| separator(b, at))?);
    (found, at + 1)
}

/// Shortest run of `[A-Za-z0-9_-]` worth a closer look: a JWT's first segment and
/// `-----BEGIN` are 10 bytes, everything else longer.
const MIN_TOKEN: usize = 10;
/// Longest key name read back from a `:` or `=`.
const MAX_KEY: usize = 64;
/// Longest quoted value or URL authority looked at.
const MAX_VALUE: usize = 512;
/// Shortest assigned value taken for a secret, in chars.
const MIN_VALUE: usize = 6;

/// Bytes of a token run: `[A-Za-z0-9_-]`, which is also base64url.
static WORD: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        c += 1;
    }
    t
};

/// Names whose value is a secret: the key, lowercased with `-` as `_`, ends with one
/// of these, optionally followed by one of [`KEY_SUFFIXES`].
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
/// Last three bytes of every name [`KEY_WORDS`] and [`KEY_SUFFIXES`] accept.
const KEY_ENDINGS: [&[u8; 3]; 8] = [
    b"ord", b"swd", b"pwd", b"ase", b"ret", b"ken", b"key", b"lue",
];
/// Keys whose value may be all digits (a PIN is a password; a token never is).
const PASSWORD_WORDS: [&[u8]; 4] = [b"password", b"passwd", b"pwd", b"passphrase"];
const REDACTED: &[u8] = b"[REDACTED:";

/// One secret: the bytes `start..end` of the text, both on char boundaries.
#[derive(Debug, Clone, Copy)]
struct Found {
    kind: Redaction,
    start: usize,
    end: usize,
}

fn word_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && WORD[b[i] as usize] {
        i += 1;
    }
    i
}

/// Bytes from `from` on for which `pred` holds.
fn count(b: &[u8], from: usize, pred: impl Fn(u8) -> bool) -> usize {
    b[from.min(b.len())..]
        .iter()
        .take_while(|&&c| pred(c))
        .count()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

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

fn is_alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

fn is_word(c: u8) -> bool {
    WORD[c as usize]
}

/// The prefixed token starting the run `start..run_end`, if any.
fn token_at(b: &[u8], start: usize, run_end: usize) -> Option<Found> {
    let run = &b[start..run_end];
    let prefixed = |len: usize, kind, class: fn(u8) -> bool, min: usize| {
        let end = start + len + count(b, start + len, class);
        (end - start - len >= min).then_some(Found { kind, start, end })
    };
    match *run.first()? {
        b's' | b'r' => {
            if run.starts_with(b"sk-ant-") {
                return prefixed(7, Redaction::AnthropicKey, is_word, 20);
            }
            let stripe = [b"sk_live_", b"sk_test_", b"rk_live_", b"rk_test_"];
            if stripe.iter().any(|p| run.starts_with(*p)) {
                return prefixed(8, Redaction::StripeKey, is_alnum, 16);
            }
            run.starts_with(b"sk-").then(|| openai(b, start, run_end))?
        }
        b'g' if run.len() > 4
            && run.starts_with(b"gh")
            && matches!(run[2], b'p' | b'o' | b'u' | b's' | b'r')
            && run[3] == b'_' =>
        {
            prefixed(4, Redaction::GithubToken, is_alnum, 30)
        }
        b'g' if run.starts_with(b"github_pat_") => {
            prefixed(11, Redaction::GithubToken, |c| is_alnum(c) || c == b'_', 22)
        }
        b'x' if run.len() > 5
            && run.starts_with(b"xox")
            && matches!(run[3], b'b' | b'p' | b'a' | b'r' | b's')
            && run[4] == b'-' =>
        {
            prefixed(5, Redaction::SlackToken, |c| is_alnum(c) || c == b'-', 10)
        }
        b'A' if run.starts_with(b"AIza") => prefixed(4, Redaction::GoogleApiKey, is_word, 35),
        b'A' if run.starts_with(b"AKIA") || run.starts_with(b"ASIA") => aws_key_id(b, start),
        b'n' if run.starts_with(b"npm_") => prefixed(4, Redaction::NpmToken, is_alnum, 36),
        b'h' if run.starts_with(b"hf_") => prefixed(3, Redaction::HuggingfaceToken, is_alnum, 34),
        b'e' if run.starts_with(b"eyJ") => jwt(b, start, run_end),
        b'-' if run.starts_with(b"-----BEGIN") => private_key(b, start),
        _ => None,
    }
}

/// A token right after a literal `\n`, `\t` or `\r` of JSON-escaped text.
fn after_escape(b: &[u8], start: usize, run_end: usize) -> Option<Found> {
    let escaped = start > 0 && b[start - 1] == b'\\' && matches!(b[start], b'n' | b't' | b'r');
    (escaped && run_end - start > MIN_TOKEN).then(|| token_at(b, start + 1, run_end))?
}

/// `sk-`, an optional `proj-`-like scope, then 20+ random-looking characters: a
/// hyphenated phrase such as `sk-learn-style-pipelines` is not a key.
fn openai(b: &[u8], start: usize, run_end: usize) -> Option<Found> {
    let mut body = start + 3;
    for scope in [&b"proj-"[..], b"svcacct-", b"admin-"] {
        if b[body..run_end].starts_with(scope) {
            body += scope.len();
            break;
        }
    }
    let body = &b[body..run_end];
    let separators = body.iter().filter(|&&c| c == b'-' || c == b'_').count();
    let random = separators == 0
        || body
            .iter()
            .any(|c| c.is_ascii_digit() || c.is_ascii_uppercase());
    (body.len() >= 20 && separators * 8 <= body.len() && random).then_some(Found {
        kind: Redaction::OpenaiKey,
        start,
        end: run_end,
    })
}

/// `AKIA`/`ASIA` and exactly 16 of `[A-Z0-9]`.
fn aws_key_id(b: &[u8], start: usize) -> Option<Found> {
    let end = start + 20;
    let body = b.get(start + 4..end)?;
    let upper = body
        .iter()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    let bounded = b.get(end).is_none_or(|c| !c.is_ascii_alphanumeric());
    (upper && bounded).then_some(Found {
        kind: Redaction::AwsAccessKeyId,
        start,
        end,
    })
}

/// `eyJ…` and two more dot-separated base64url segments, each 10+ long.
fn jwt(b: &[u8], start: usize, run_end: usize) -> Option<Found> {
    let mut end = run_end;
    for _ in 0..2 {
        if b.get(end) != Some(&b'.') {
            return None;
        }
        let segment = end + 1;
        end = word_end(b, segment);
        if end - segment < MIN_TOKEN {
            return None;
        }
    }
    Some(Found {
        kind: Redaction::Jwt,
        start,
        end,
    })
}

/// `-----BEGIN <label> PRIVATE KEY-----`, a body that looks like one, and everything up
/// to the next `-----END …-----` (or the end of the text). A BEGIN line quoted in code,
/// with no base64 after it, is left alone.
fn private_key(b: &[u8], start: usize) -> Option<Found> {
    let label = start + "-----BEGIN ".len();
    if b.get(label - 1) != Some(&b' ') {
        return None;
    }
    let label_end = label
        + count(b, label, |c| {
            c.is_ascii_uppercase() || c.is_ascii_digit() || c == b' '
        })
        .min(48);
    if !b[label_end..].starts_with(b"-----") || find(&b[label..label_end], b"PRIVATE KEY").is_none()
    {
        return None;
    }
    let body = skip_blank(b, label_end + 5);
    let base64 = count(b, body, |c| is_alnum(c) || matches!(c, b'+' | b'/' | b'='));
    if base64 < 16 && !b[body..].starts_with(b"Proc-Type:") {
        return None;
    }
    let end = match find(&b[body..], b"-----END ") {
        Some(at) => {
            let label = body + at + "-----END ".len();
            let tail = &b[label..b.len().min(label + 64)];
            find(tail, b"-----").map_or(b.len(), |close| label + close + 5)
        }
        None => b.len(),
    };
    Some(Found {
        kind: Redaction::PrivateKey,
        start,
        end,
    })
}

/// Skips whitespace and the literal escapes `\n`, `\r`, `\t` of JSON-encoded text.
fn skip_blank(b: &[u8], mut i: usize) -> usize {
    loop {
        match b.get(i) {
            Some(c) if c.is_ascii_whitespace() => i += 1,
            Some(b'\\') => {
                let slashes = count(b, i, |c| c == b'\\');
                match b.get(i + slashes) {
                    Some(b'n' | b'r' | b't') => i += slashes + 1,
                    _ => return i,
                }
            }
            _ => return i,
        }
    }
}

/// The token after `Bearer ` (the word ends at `word_end`): 16+ characters with a digit
/// or mixed case, so that "bearer authentication" stays. A prefixed token is left to
/// its own kind.
fn bearer(b: &[u8], word_end_at: usize) -> Option<Found> {
    let spaces = count(b, word_end_at, |c| c == b' ' || c == b'\t');
    let start = word_end_at + spaces;
    let len = count(b, start, |c| {
        is_word(c) || matches!(c, b'.' | b'~' | b'+' | b'/' | b'=')
    });
    let token = &b[start..start + len];
    let digit = token.iter().any(u8::is_ascii_digit);
    let mixed =
        token.iter().any(u8::is_ascii_uppercase) && token.iter().any(u8::is_ascii_lowercase);
    let own_kind = token_at(b, start, word_end(b, start)).is_some();
    (spaces > 0 && len >= 16 && (digit || mixed) && !own_kind).then_some(Found {
        kind: Redaction::BearerToken,
        start,
        end: start + len,
    })
}

/// A `:` or `=` at `i`: a URL's `://`, or the separator of an assignment. Comparisons
/// (`==`, `!=`, `<=`), arrows (`=>`) and paths (`::`) are not.
fn separator(b: &[u8], i: usize) -> Option<Found> {
    let prev = if i > 0 { b[i - 1] } else { b'\n' };
    let next = b.get(i + 1).copied().unwrap_or(b'\n');
    if b[i] == b':' {
        if next == b'/' {
            return url_password(b, i);
        }
        if matches!(next, b':' | b'=') || prev == b':' {
            return None;
        }
    } else if matches!(next, b'=' | b'>' | b'~')
        || matches!(
            prev,
            b'=' | b'!' | b'<' | b'>' | b'+' | b'-' | b'*' | b'/' | b'%' | b'|' | b'&' | b'^'
        )
    {
        return None;
    }
    assignment(b, i)
}

/// What a key name says about its value.
struct Key {
    /// A password (may be all digits).
    password: bool,
    /// An AWS secret access key.
    aws: bool,
}

/// `key = value`, `key: value`, `"key": "value"`, `KEY=value`, `key := value`: the
/// value, when the key is a secret's name and the value is not code, prose or a
/// placeholder.
fn assignment(b: &[u8], i: usize) -> Option<Found> {
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
    let key = key_kind(&b[key_start..k])?;

    let v = i + 1 + count(b, i + 1, |c| c == b' ' || c == b'\t');
    let compact = b[i] == b'=' && !spaced && v == i + 1 && !quoted_key;
    let (start, end, quoted) = value_span(b, v)?;
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

/// Bytes before `to` for which `pred` holds.
fn count_back(b: &[u8], to: usize, pred: impl Fn(u8) -> bool) -> usize {
    b[..to].iter().rev().take_while(|&&c| pred(c)).count()
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
                !(c.is_ascii_whitespace()
                    || matches!(
                        c,
                        b',' | b';'
                            | b'&'
                            | b'|'
                            | b'"'
                            | b'\''
                            | b'`'
                            | b')'
                            | b']'
                            | b'}'
                            | b'<'
                            | b'>'
                            | b'\\'
                    ))
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
    let code = v.iter().any(|c| matches!(c, b'(' | b'[' | b'{'))
        || matches!(first, b'/' | b'~' | b'.')
        || (compact && identifier && v.contains(&b'.'))
        || (!compact && identifier && !digit);
    !code
}

/// `scheme://user:password@host`: the password, unless empty or a placeholder.
fn url_password(b: &[u8], colon: usize) -> Option<Found> {
    let scheme = count_back(b, colon, |c| is_alnum(c) || matches!(c, b'+' | b'.' | b'-'));
    if scheme < 2 || !b[colon - scheme].is_ascii_alphabetic() || !b[colon..].starts_with(b"://") {
        return None;
    }
    let authority = colon + 3;
    let len = count(b, authority, |c| {
        !(c.is_ascii_whitespace()
            || matches!(
                c,
                b'/' | b'?' | b'#' | b'"' | b'\'' | b'`' | b'<' | b'>' | b'\\'
            ))
    })
    .min(MAX_VALUE);
    let userinfo = &b[authority..authority + len];
    let at = userinfo.iter().rposition(|&c| c == b'@')?;
    // The first `:` that is not a redacted user's own.
    let user_end =
        (0..at).find(|&p| userinfo[p] == b':' && !userinfo[..p].ends_with(b"[REDACTED"))?;
    let password = &userinfo[user_end + 1..at];
    let placeholder = password
        .first()
        .is_none_or(|c| matches!(c, b'$' | b'{' | b'<' | b'%'))
        || password.starts_with(REDACTED)
        || password.iter().all(|&c| c == b'*');
    (!placeholder).then_some(Found {
        kind: Redaction::UrlPassword,
        start: authority + user_end + 1,
        end: authority + at,
    })
}

#[cfg(test)]
mod tests;
