//! `redact` against planted secrets of every kind, and against ordinary text that must
//! come back untouched.

use super::*;

#[path = "planted.rs"]
mod planted;

use self::planted::{body, planted, private_key_block};

#[test]
fn at_least_thirty_kinds_are_redacted() {
    assert!(Redaction::ALL.len() >= 30, "{}", Redaction::ALL.len());
}

#[test]
fn every_planted_secret_is_replaced_and_counted_under_its_kind() {
    for (kind, text, expected) in planted() {
        let mut counts = RedactionCounts::default();
        let out = redact(&text, &mut counts);
        assert_eq!(out, expected, "{kind:?} in {text:?}");
        assert_eq!(counts.get(kind), 1, "{kind:?}: {counts:?}");
        assert_eq!(counts.total(), 1, "{kind:?}: {counts:?}");
    }
}

#[test]
fn the_planted_secrets_cover_every_kind() {
    let planted: Vec<Redaction> = planted().into_iter().map(|(kind, ..)| kind).collect();
    for kind in Redaction::ALL {
        assert!(planted.contains(&kind), "no planted {kind:?}");
    }
}

#[test]
fn several_secrets_in_one_text_are_all_replaced() {
    let rows = planted();
    let text: String = rows.iter().map(|(_, t, _)| format!("{t}\n")).collect();
    let expected: String = rows.iter().map(|(_, _, r)| format!("{r}\n")).collect();
    let mut counts = RedactionCounts::default();
    assert_eq!(redact(&text, &mut counts), expected);
    assert_eq!(counts.total(), rows.len() as u64);
    assert_eq!(counts.get(Redaction::Password), 9);
    assert_eq!(counts.get(Redaction::CommandLineSecret), 10);
}

#[test]
fn redacting_redacted_text_changes_nothing_more() {
    let text: String = planted().iter().map(|(_, t, _)| format!("{t}\n")).collect();
    let once = redact(&text, &mut RedactionCounts::default()).into_owned();
    let mut counts = RedactionCounts::default();
    let twice = redact(&once, &mut counts);
    if let Cow::Owned(changed) = &twice {
        let diff: Vec<(&str, &str)> = once
            .lines()
            .zip(changed.lines())
            .filter(|(a, b)| a != b)
            .collect();
        panic!("redacted again: {diff:#?}");
    }
    assert!(counts.is_empty(), "{counts:?}");
}

#[test]
fn ordinary_code_prose_and_data_come_back_borrowed() {
    let samples = [
        // Rust
        "fn login(user: &str, password: &str) -> Result<Token, Error> {\n    \
         let password = read_password()?;\n    let token = tokens.next();\n    \
         if password == expected && token != None { self.password = password; }\n    \
         match token { Token::Ident(name) => name, _ => unreachable!() }\n}",
        "pub struct Config { pub api_key: Option<String>, pub secret: Vec<u8>, token_limit: u32 }",
        "const BEGIN: &str = \"-----BEGIN RSA PRIVATE KEY-----\";",
        "pub paren_token: token::Paren,\nfn dispatch(token: mio::Token, htoken: *const c_void) {}\n\
         pub Token: PULONG64,\nlet js_token = quote! { js };\nToken::Password => \"password\",\n\
         let f = |token| token.trim(); let g = x => x.token;",
        // shell
        "cargo test --lib extract::redact && git push origin main",
        "export PATH=\"$HOME/.cargo/bin:$PATH\"\nPASSWORD=$(pass show db)\nexport TOKEN=${GITHUB_TOKEN}",
        "curl -H \"Authorization: Bearer $TOKEN\" https://api.example.com/v1/items?page=2&limit=50",
        "psql postgres://app@localhost:5432/app && ssh git@github.com && open http://localhost:8080/",
        // JSON and config
        "{\"token_count\": 12, \"input_tokens\": 1234567, \"output_tokens\": 88, \
         \"token_type\": \"bearer\", \"password\": \"\", \"api_key\": \"${API_KEY}\", \
         \"secret\": \"<your-secret>\", \"max_token\": 4096000}",
        "password: ${DB_PASSWORD}\ntoken: process.env.TOKEN\npassword: required\nsecret: ********",
        "connect(user=user, password=password, api_key=os.environ[\"OPENAI_API_KEY\"])",
        "interface Login { password: string; token?: string }\nlabel: \"Enter your password\"",
        "{\"password\": \"Password\", \"api_key\": \"YOUR_API_KEY\", \"token\": \"your-token-here\"}",
        "password=\npassword=<your-password>\nsecret_key=config.secret_key\nOLDPWD=/home/ana/src",
        // prose
        "The tokenizer splits words; sk-learn is a typo for scikit-learn, and \
         sk-learn-style-pipelines-for-everyone is a phrase. The password reset flow emails a link \
         and the password field is masked. Keys starting with AKIA belong to IAM users. Bearer \
         authentication is described in RFC 6750. Slack bot tokens start with xoxb-. \
         See \"Volume 1: Basic Architecture\" for the basic usage.",
        // identifiers and data
        "session 0b5e6f1c-0000-4000-8000-000000000001 at commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
        "| token | 1234 |\n|---|---|\nhf_hub_download, npm_config_cache, ghp_ prefix, eyJ prefix",
        // command lines that take no secret, or a placeholder
        "docker login -u ana --password-stdin < token.txt\nssh -p 2222 ana@host\n\
         mysql -u root -p app\ndocker run -p 8080:80 app\nkubectl --token=$TOKEN get pods\n\
         gh auth login --with-token < token.txt --secret-name my-secret\n\
         deploy --password \"$DB_PASSWORD\" --token ${TOKEN} --api-key <key> --pass -\n\
         cargo build --release -p eywa-storage --target-dir /tmp/t\n\
         curl -u ana https://example.com\ncurl -u \"ana:$PASSWORD\" https://x.example\n\
         curl -u ana: https://x.example\ntar -uf archive.tar a:b\nps -u ana:staff",
        // prefixes in ordinary words and ids
        "a key-value store; key-0123 and SKU-123; dapibus, hvs.foo, SG.io, ya29.x, \
         glc_ok, AccountKey=<key>, https://hooks.slack.com/services/ and sbp_123",
    ];
    for text in samples {
        let mut counts = RedactionCounts::default();
        let out = redact(text, &mut counts);
        assert!(
            matches!(out, Cow::Borrowed(_)),
            "changed:\n{text}\n→\n{out}"
        );
        assert!(counts.is_empty(), "{counts:?} in {text}");
    }
}

#[test]
fn a_private_key_without_end_is_redacted_to_the_end_of_the_text() {
    let text = format!(
        "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA{}\n{}",
        body(70),
        body(70)
    );
    let mut counts = RedactionCounts::default();
    assert_eq!(redact(&text, &mut counts), "key:\n[REDACTED:private_key]");
    assert_eq!(counts.get(Redaction::PrivateKey), 1);
}

#[test]
fn json_escaped_text_is_redacted_too() {
    let key = private_key_block().replace('\n', "\\n");
    let github = format!("ghp_{}", body(36));
    let text = format!(
        "{{\\\"password\\\": \\\"hunter22\\\"}}\\n{github}\\n\"private_key\": \"{key}\\n\""
    );
    let mut counts = RedactionCounts::default();
    let out = redact(&text, &mut counts);
    assert_eq!(
        out,
        "{\\\"password\\\": \\\"[REDACTED:password]\\\"}\\n[REDACTED:github_token]\\n\
         \"private_key\": \"[REDACTED:private_key]\\n\""
    );
    assert_eq!(counts.total(), 3, "{counts:?}");
}

#[test]
fn multibyte_text_around_secrets_never_splits_a_char() {
    let text = format!(
        "пароль→password=пароль123 日本 ghp_{}é Bearer {}😀 https://ü:pä55@höst/ \
         -----BEGIN PRIVATE KEY-----\n{}ß",
        body(36),
        body(20),
        body(40)
    );
    let mut counts = RedactionCounts::default();
    let out = redact(&text, &mut counts);
    assert!(
        out.starts_with("пароль→password=[REDACTED:password] 日本 "),
        "{out}"
    );
    assert!(out.contains("[REDACTED:github_token]é Bearer [REDACTED:bearer_token]😀"));
    assert!(
        out.contains("https://ü:[REDACTED:url_password]@höst/"),
        "{out}"
    );
    assert!(out.ends_with("[REDACTED:private_key]"), "{out}");
    // Every cut of the text, through secrets and chars alike, redacts without a panic.
    for (cut, _) in text.char_indices() {
        redact(&text[..cut], &mut counts);
        redact(&text[cut..], &mut counts);
    }
}

#[test]
fn counts_add_up_and_serialize_by_kind_name() {
    let mut a = RedactionCounts::default();
    redact("password=hunter22 token=abcdef123", &mut a);
    let mut b = RedactionCounts::default();
    redact(&format!("ghp_{}", body(36)), &mut b);
    a.add(&b);
    a.add(&b);
    assert_eq!(a.total(), 4);
    assert_eq!(
        a.iter().collect::<Vec<_>>(),
        [(Redaction::GithubToken, 2), (Redaction::Password, 2)]
    );
    let json = serde_json::to_string(&a).unwrap();
    assert_eq!(json, r#"{"github_token":2,"password":2}"#);
    let names: std::collections::HashMap<String, u64> = serde_json::from_str(&json).unwrap();
    assert_eq!(RedactionCounts::from_names(&names), a);
}

#[test]
fn kind_names_are_the_serialized_names() {
    for kind in Redaction::ALL {
        let json = serde_json::to_string(&kind).unwrap();
        assert_eq!(json, format!("\"{}\"", kind.as_str()));
        assert_eq!(Redaction::from_name(kind.as_str()), Some(kind));
    }
}

/// `cargo test --release --lib extract::redact -- --ignored --nocapture` prints MB/s.
#[test]
#[ignore]
fn throughput_on_ordinary_text() {
    let sample = "fn main() { let token_count = tokens.len(); println!(\"{token_count}\"); }\n\
        The tokenizer splits the password reset flow into steps; see https://example.com/docs.\n\
        {\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]},\
        \"usage\":{\"input_tokens\":1234,\"output_tokens\":56}}\n\
        cargo test --lib extract::redact -- --nocapture && git commit -m 'wip: key=value'\n";
    let text = sample.repeat(64 * 1024 * 1024 / sample.len());
    let start = std::time::Instant::now();
    let out = redact(&text, &mut RedactionCounts::default());
    let secs = start.elapsed().as_secs_f64();
    assert!(matches!(out, Cow::Borrowed(_)));
    println!("{:.0} MB/s", text.len() as f64 / secs / 1e6);
}
