//! Secrets known by their shape: prefixed keys and tokens, JWTs, private key blocks and
//! the credentials of `Authorization` headers.

use super::{Found, MIN_TOKEN, Redaction, count, count_back, find, is_alnum, is_word, word_end};

/// The prefixed token starting the run `start..run_end`, if any.
pub(super) fn token_at(b: &[u8], start: usize, run_end: usize) -> Option<Found> {
    let run = &b[start..run_end];
    let prefixed = |len: usize, kind, class: fn(u8) -> bool, min: usize| {
        let end = start + len + count(b, start + len, class);
        (end - start - len >= min).then_some(Found { kind, start, end })
    };
    // `exactly` hex digits (or `class`) after the prefix, and no more letters or digits.
    let exact = |len: usize, kind, class: fn(u8) -> bool, n: usize| {
        let end = start + len + n;
        let body = b.get(start + len..end)?;
        let bounded = b.get(end).is_none_or(|c| !c.is_ascii_alphanumeric());
        (body.iter().all(|&c| class(c)) && bounded).then_some(Found { kind, start, end })
    };
    // `SG`, `ya29`, `hvs` and the dot after them: a dotted token from its start (an
    // assigned value, a bearer token).
    if run_end - start <= 4 && b.get(run_end) == Some(&b'.') {
        let found = dotted(b, run_end + 1, word_end(b, run_end + 1));
        if found.is_some_and(|f| f.start == start) {
            return found;
        }
    }
    if start > 0
        && b[start - 1] == b'.'
        && let Some(found) = dotted(b, start, run_end)
    {
        return Some(found);
    }
    match *run.first()? {
        b's' if run.starts_with(b"shp")
            && [&b"shpat_"[..], b"shpss_", b"shpca_", b"shppa_"]
                .iter()
                .any(|p| run.starts_with(p)) =>
        {
            exact(6, Redaction::ShopifyToken, is_hex, 32)
        }
        b's' if run.starts_with(b"sbp_") => exact(4, Redaction::SupabaseToken, is_hex, 40),
        b's' if run.starts_with(b"sntrys_") => prefixed(7, Redaction::SentryToken, is_word, 40),
        b's' if run.starts_with(b"sntryu_") => exact(7, Redaction::SentryToken, is_hex, 64),
        b'p' if run.starts_with(b"pypi-AgE") => prefixed(5, Redaction::PypiToken, is_word, 50),
        b'g' if run.starts_with(b"gl") => {
            for (prefix, kind) in [
                (&b"glpat-"[..], Redaction::GitlabToken),
                (b"glptt-", Redaction::GitlabToken),
                (b"gldt-", Redaction::GitlabToken),
                (b"glrt-", Redaction::GitlabToken),
                (b"glsa_", Redaction::GrafanaToken),
                (b"glc_", Redaction::GrafanaToken),
            ] {
                if run.starts_with(prefix) {
                    let min = if kind == Redaction::GitlabToken {
                        20
                    } else {
                        32
                    };
                    return prefixed(prefix.len(), kind, is_word, min);
                }
            }
            None
        }
        b'k' if run.starts_with(b"key-") => exact(4, Redaction::MailgunKey, is_hex, 32),
        b'S' if run.starts_with(b"SK") => exact(2, Redaction::TwilioKey, is_hex, 32),
        b'd' if run.starts_with(b"dapi") => exact(4, Redaction::DatabricksToken, is_hex, 32),
        b'd' if run.starts_with(b"dckr_pat_") => prefixed(9, Redaction::DockerToken, is_word, 20),
        b'd' if [&b"dop_v1_"[..], b"doo_v1_", b"dor_v1_"]
            .iter()
            .any(|p| run.starts_with(p)) =>
        {
            exact(7, Redaction::DigitaloceanToken, is_hex, 64)
        }
        b'l' if run.starts_with(b"lin_api_") => prefixed(8, Redaction::LinearKey, is_alnum, 32),
        b'A' if run.starts_with(b"AGE-SECRET-KEY-1") => prefixed(
            16,
            Redaction::AgeSecretKey,
            |c| c.is_ascii_uppercase() || c.is_ascii_digit(),
            58,
        ),
        b'G' if run.starts_with(b"GOCSPX-") => prefixed(7, Redaction::GoogleOauth, is_word, 20),
        b'N' if run.starts_with(b"NRAK-") => prefixed(
            5,
            Redaction::NewrelicKey,
            |c| c.is_ascii_uppercase() || c.is_ascii_digit(),
            27,
        ),
        b'n' if run.starts_with(b"ntn_") => prefixed(4, Redaction::NotionToken, is_alnum, 40),
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
        b'h' if run.starts_with(b"hf_") => huggingface(b, start),
        b'e' if run.starts_with(b"eyJ") => jwt(b, start, run_end),
        b'-' if run.starts_with(b"-----BEGIN") => private_key(b, start),
        _ => None,
    }
}

fn is_hex(c: u8) -> bool {
    c.is_ascii_hexdigit()
}

/// `hf_` and 16+ letters and digits with a digit or mixed case (newer tokens are 34
/// long, older ones shorter); `hf_hub_download` is a name.
fn huggingface(b: &[u8], start: usize) -> Option<Found> {
    let body = start + 3;
    let end = body + count(b, body, is_alnum);
    let token = &b[body..end];
    let digit = token.iter().any(u8::is_ascii_digit);
    let mixed =
        token.iter().any(u8::is_ascii_uppercase) && token.iter().any(u8::is_ascii_lowercase);
    let bounded = b.get(end).is_none_or(|&c| !is_word(c));
    (token.len() >= 16 && (digit || mixed) && bounded).then_some(Found {
        kind: Redaction::HuggingfaceToken,
        start,
        end,
    })
}

/// A token whose prefix ends in a dot, found from the run after it (`start..run_end`):
/// SendGrid's `SG.<22>.<43>`, Google's `ya29.` access tokens and Vault's `hvs.`.
fn dotted(b: &[u8], start: usize, run_end: usize) -> Option<Found> {
    let dot = start - 1;
    let word = dot - count_back(b, dot, is_alnum);
    if word > 0 && (is_word(b[word - 1]) || b[word - 1] == b'.') {
        return None;
    }
    let found = |kind, end| {
        Some(Found {
            kind,
            start: word,
            end,
        })
    };
    match &b[word..dot] {
        b"SG" if run_end - start == 22 && b.get(run_end) == Some(&b'.') => {
            let end = word_end(b, run_end + 1);
            (end - run_end - 1 == 43).then(|| found(Redaction::SendgridKey, end))?
        }
        b"ya29" if run_end - start >= 20 => found(Redaction::GoogleOauth, run_end),
        b"hvs" | b"hvb" | b"hvr" if run_end - start >= 24 => found(Redaction::VaultToken, run_end),
        _ => None,
    }
}

/// A token right after a literal `\n`, `\t` or `\r` of JSON-escaped text.
pub(super) fn after_escape(b: &[u8], start: usize, run_end: usize) -> Option<Found> {
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
    // `Proc-Type: 4,ENCRYPTED`, `Version: GnuPG v2`: a PEM or armor header.
    let header = count(b, body, |c| is_alnum(c) || c == b'-');
    if base64 < 16 && !(header > 0 && b.get(body + header) == Some(&b':')) {
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

/// The token after `Bearer ` (the word ends at `word_end_at`): 16+ characters with a digit
/// or mixed case, so that "bearer authentication" stays. A prefixed token is left to
/// its own kind.
pub(super) fn bearer(b: &[u8], word_end_at: usize) -> Option<Found> {
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

/// The credentials after `Basic ` (the word ends at `word_end_at`) in an
/// `Authorization` header: `Basic` right after a `:` or a quote, then base64.
pub(super) fn basic(b: &[u8], word_end_at: usize) -> Option<Found> {
    let word = word_end_at - "basic".len();
    let k = word - count_back(b, word, |c| c == b' ');
    if !matches!(k.checked_sub(1).map(|k| b[k]), Some(b':' | b'"' | b'\'')) {
        return None;
    }
    let spaces = count(b, word_end_at, |c| c == b' ');
    let start = word_end_at + spaces;
    let len = count(b, start, |c| is_alnum(c) || matches!(c, b'+' | b'/' | b'='));
    let token = &b[start..start + len];
    // Base64, not a word: `Basic Architecture` is a title.
    let upper = token.iter().filter(|c| c.is_ascii_uppercase()).count();
    let random = upper >= 2 || token.iter().any(|&c| !c.is_ascii_alphabetic());
    (spaces > 0 && len >= 8 && len % 4 == 0 && random).then_some(Found {
        kind: Redaction::BasicAuth,
        start,
        end: start + len,
    })
}
