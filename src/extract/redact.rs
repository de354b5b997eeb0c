//! Secrets out of transcript text: keys, tokens, private keys and password values become
//! `[REDACTED:<kind>]` before text reaches an index, a handoff or the graph.
//!
//! One pass over the bytes. Runs of `[A-Za-z0-9_-]` shorter than `MIN_TOKEN` and every
//! `:`/`=` whose key does not end like a secret's name are dismissed after a byte or two;
//! only the rare candidate is parsed in detail, and text without a secret comes back
//! borrowed.

mod assignment;
mod tokens;

use std::borrow::Cow;
use std::collections::BTreeMap;

use self::assignment::{flag_value, separator};
use self::tokens::{after_escape, basic, bearer, token_at};

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
    /// The credentials after `Authorization: Basic `.
    BasicAuth,
    /// The value assigned to a password, secret, token or API key name.
    Password,
    /// The password of a `scheme://user:password@host` URL.
    UrlPassword,
    /// `pypi-AgE…`: a PyPI upload token (a macaroon).
    PypiToken,
    /// `glpat-`, `gldt-`, `glrt-`, `glptt-` and 20 more.
    GitlabToken,
    /// `SG.`, 22, `.`, 43.
    SendgridKey,
    /// `key-` and 32 hex digits.
    MailgunKey,
    /// `SK` and 32 hex digits: a Twilio API key SID's secret pair.
    TwilioKey,
    /// `shpat_`, `shpss_`, `shpca_`, `shppa_` and 32 hex digits.
    ShopifyToken,
    /// `dop_v1_`, `doo_v1_`, `dor_v1_` and 64 hex digits.
    DigitaloceanToken,
    /// `dapi` and 32 hex digits.
    DatabricksToken,
    /// `lin_api_` and 32 more.
    LinearKey,
    /// `AGE-SECRET-KEY-1` and 58 more.
    AgeSecretKey,
    /// `hvs.`, `hvb.`, `hvr.` and 24 more: HashiCorp Vault.
    VaultToken,
    /// `ya29.` access tokens and `GOCSPX-` client secrets.
    GoogleOauth,
    /// `sbp_` and 40 hex digits.
    SupabaseToken,
    /// `dckr_pat_` and 20 more.
    DockerToken,
    /// `NRAK-` and 27 more.
    NewrelicKey,
    /// `sntrys_` and 40 more, `sntryu_` and 64 hex digits.
    SentryToken,
    /// `ntn_` and 40 more.
    NotionToken,
    /// `glsa_` and 32 more, `glc_` and 32 more.
    GrafanaToken,
    /// The `AccountKey=` or `SharedAccessKey=` of an Azure connection string.
    AzureStorageKey,
    /// The secret path of a Slack or Discord webhook URL.
    WebhookUrl,
    /// The value after `--password`, `--token`, `--api-key`… on a command line, `-p'…'`,
    /// `mysql -p…`, `sshpass -p …`, and the password of curl's `-u user:password`.
    CommandLineSecret,
}

impl Redaction {
    /// Every kind, in order.
    pub const ALL: [Redaction; 37] = [
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
        Redaction::BasicAuth,
        Redaction::Password,
        Redaction::UrlPassword,
        Redaction::PypiToken,
        Redaction::GitlabToken,
        Redaction::SendgridKey,
        Redaction::MailgunKey,
        Redaction::TwilioKey,
        Redaction::ShopifyToken,
        Redaction::DigitaloceanToken,
        Redaction::DatabricksToken,
        Redaction::LinearKey,
        Redaction::AgeSecretKey,
        Redaction::VaultToken,
        Redaction::GoogleOauth,
        Redaction::SupabaseToken,
        Redaction::DockerToken,
        Redaction::NewrelicKey,
        Redaction::SentryToken,
        Redaction::NotionToken,
        Redaction::GrafanaToken,
        Redaction::AzureStorageKey,
        Redaction::WebhookUrl,
        Redaction::CommandLineSecret,
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
            Redaction::BasicAuth => "basic_auth",
            Redaction::Password => "password",
            Redaction::UrlPassword => "url_password",
            Redaction::PypiToken => "pypi_token",
            Redaction::GitlabToken => "gitlab_token",
            Redaction::SendgridKey => "sendgrid_key",
            Redaction::MailgunKey => "mailgun_key",
            Redaction::TwilioKey => "twilio_key",
            Redaction::ShopifyToken => "shopify_token",
            Redaction::DigitaloceanToken => "digitalocean_token",
            Redaction::DatabricksToken => "databricks_token",
            Redaction::LinearKey => "linear_key",
            Redaction::AgeSecretKey => "age_secret_key",
            Redaction::VaultToken => "vault_token",
            Redaction::GoogleOauth => "google_oauth",
            Redaction::SupabaseToken => "supabase_token",
            Redaction::DockerToken => "docker_token",
            Redaction::NewrelicKey => "newrelic_key",
            Redaction::SentryToken => "sentry_token",
            Redaction::NotionToken => "notion_token",
            Redaction::GrafanaToken => "grafana_token",
            Redaction::AzureStorageKey => "azure_storage_key",
            Redaction::WebhookUrl => "webhook_url",
            Redaction::CommandLineSecret => "command_line_secret",
        }
    }

    /// The kind named `name` by [`Redaction::as_str`].
    pub fn from_name(name: &str) -> Option<Redaction> {
        Redaction::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
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

    /// Counts keyed by [`Redaction::as_str`] names, as a report on the wire carries them;
    /// names this build does not know are dropped.
    pub fn from_names<'a, K: AsRef<str> + 'a>(
        names: impl IntoIterator<Item = (&'a K, &'a u64)>,
    ) -> RedactionCounts {
        let mut counts = RedactionCounts::default();
        for (name, &n) in names {
            if let Some(kind) = Redaction::from_name(name.as_ref()) {
                *counts.0.entry(kind).or_insert(0) += n;
            }
        }
        counts
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
    let shapes = replace(text, counts, |b, i| {
        let at = candidate(b, i)?;
        Some(examine(b, at))
    });
    // Command-line flags (`-` first in the text, or after a space or a newline) in a
    // second pass, found by memchr's searches: the first pass's byte loop stays as lean as
    // it was.
    let finders = [
        memchr::memmem::Finder::new(b" -"),
        memchr::memmem::Finder::new(b"\n-"),
    ];
    // The next hit of each finder at or after where it last looked (`usize::MAX`: none).
    let mut hits = [None::<usize>; 2];
    match replace(&shapes, counts, |b, i| {
        let flag = if i == 0 && b.first() == Some(&b'-') {
            0
        } else {
            for (hit, finder) in hits.iter_mut().zip(&finders) {
                if hit.is_none_or(|h| h != usize::MAX && h < i) {
                    *hit = Some(finder.find(&b[i..]).map_or(usize::MAX, |h| i + h + 1));
                }
            }
            let next = hits.iter().flatten().copied().min()?;
            (next != usize::MAX).then_some(next)?
        };
        let end = word_end(b, flag);
        let found = (end - flag >= 2)
            .then(|| flag_value(b, flag, end))
            .flatten();
        Some((found, end.max(flag + 1)))
    }) {
        Cow::Borrowed(_) => shapes,
        Cow::Owned(out) => Cow::Owned(out),
    }
}

/// `text` with every secret `next` finds replaced. `next(bytes, from)` returns the next
/// secret at or after `from` (or none there) and where to go on from; `None` when done.
fn replace<'a>(
    text: &'a str,
    counts: &mut RedactionCounts,
    mut next: impl FnMut(&[u8], usize) -> Option<(Option<Found>, usize)>,
) -> Cow<'a, str> {
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        let Some((found, resume)) = next(b, i) else {
            break;
        };
        i = resume;
        if let Some(f) = found {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
            // A dotted prefix (`SG.`) starts before the run that was examined.
            out.push_str(&text[copied..f.start.max(copied)]);
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
/// `[A-Za-z0-9_-]` run, the byte ending a 5- or 6-byte run (`basic`, `bearer`?), or a
/// `:` or `=`.
#[inline]
fn candidate(b: &[u8], from: usize) -> Option<usize> {
    let mut run = 0usize;
    for (k, &c) in b.get(from..)?.iter().enumerate() {
        let word = WORD[c as usize];
        // A 5- or 6-byte run ends (`basic`, `bearer`?), or a flag of 2+ bytes does.
        let ended = (run.wrapping_sub(5) < 2) & !word;
        // `run + 1` or 0, as a mask: a branch would mispredict at every word's end.
        run = (run + 1) & 0usize.wrapping_sub(usize::from(word));
        if (run == MIN_TOKEN) | ended | (c == b':') | (c == b'=') {
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
    let word_before = |w: &[u8]| at >= w.len() && b[at - w.len()..at].eq_ignore_ascii_case(w);
    let found = if word_before(b"bearer") {
        bearer(b, at)
    } else if word_before(b"basic") {
        basic(b, at)
    } else {
        None
    };
    let found = found.or_else(|| matches!(b[at], b':' | b'=').then(|| separator(b, at))?);
    (found, at + 1)
}

/// Shortest run of `[A-Za-z0-9_-]` worth a closer look: a JWT's first segment and
/// `-----BEGIN` are 10 bytes, everything else longer.
const MIN_TOKEN: usize = 10;

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

fn is_alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

fn is_word(c: u8) -> bool {
    WORD[c as usize]
}

/// Bytes before `to` for which `pred` holds.
fn count_back(b: &[u8], to: usize, pred: impl Fn(u8) -> bool) -> usize {
    b[..to].iter().rev().take_while(|&&c| pred(c)).count()
}

#[cfg(test)]
mod tests;
