//! `redact` against planted secrets of every kind, and against ordinary text that must
//! come back untouched. Secrets are assembled at run time so that no scanner flags them.

use super::*;

/// `n` deterministic characters of mixed case and digits, like a real key's body.
fn body(n: usize) -> String {
    const ALPHABET: &[u8] = b"aZ3kP9qL2mX7vB4nR8tY1cW6dF5gH0jS";
    (0..n)
        .map(|i| ALPHABET[(i * 7 + n) % ALPHABET.len()] as char)
        .collect()
}

/// A JWT in the shape of jwt.io's example.
fn jwt() -> String {
    format!("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx{}.{}", body(12), body(43))
}

/// `n` lowercase hex digits.
fn hex(n: usize) -> String {
    (0..n)
        .map(|i| b"0123456789abcdef"[(i * 7 + n) % 16] as char)
        .collect()
}

/// `n` uppercase letters and digits.
fn upper(n: usize) -> String {
    body(n).to_ascii_uppercase()
}

fn private_key_block() -> String {
    format!(
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA{}\n{}\n-----END RSA PRIVATE KEY-----",
        body(48),
        body(64)
    )
}

/// `(kind, text with one secret, the same text redacted)`: at least one row per kind.
fn planted() -> Vec<(Redaction, String, String)> {
    let row = |kind: Redaction, before: &str, secret: &str, after: &str| {
        let redacted = format!("{before}[REDACTED:{}]{after}", kind.as_str());
        (kind, format!("{before}{secret}{after}"), redacted)
    };
    let anthropic = format!("sk-ant-api03-{}-{}AA", body(93), body(6));
    let openai = format!("sk-proj-{}", body(48));
    let openai_legacy = format!("sk-{}", body(48));
    let github = format!("ghp_{}", body(36));
    let github_pat = format!("github_pat_11ABCDEFG0{}_{}", body(12), body(59));
    let slack = format!("xoxb-123456789012-1234567890123-{}", body(24));
    let stripe = format!("sk_live_{}", body(24));
    let google = format!("AIza{}", body(35));
    let npm = format!("npm_{}", body(36));
    let hugging_face = format!("hf_{}", body(34));
    let bearer = body(40);
    vec![
        row(
            Redaction::AnthropicKey,
            "export ANTHROPIC_API_KEY=",
            &anthropic,
            "\ncargo run",
        ),
        row(Redaction::OpenaiKey, "use ", &openai, " for the demo"),
        row(
            Redaction::OpenaiKey,
            "OPENAI_API_KEY=\"",
            &openai_legacy,
            "\"",
        ),
        row(
            Redaction::AwsAccessKeyId,
            "aws_access_key_id = ",
            "AKIAIOSFODNN7EXAMPLE",
            "\nregion = us-east-1",
        ),
        row(
            Redaction::AwsSecretKey,
            "[default]\naws_secret_access_key = ",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "\n",
        ),
        row(
            Redaction::GithubToken,
            "git remote set-url origin https://",
            &github,
            "@github.com/acme/app.git",
        ),
        row(
            Redaction::GithubToken,
            "GH_TOKEN=",
            &github_pat,
            " gh pr list",
        ),
        row(
            Redaction::SlackToken,
            "client = WebClient(token=\"",
            &slack,
            "\")",
        ),
        row(Redaction::StripeKey, "stripe.api_key = \"", &stripe, "\""),
        row(
            Redaction::GoogleApiKey,
            "https://maps.googleapis.com/maps/api/geocode/json?key=",
            &google,
            "&address=Paris",
        ),
        row(
            Redaction::NpmToken,
            "//registry.npmjs.org/:_authToken=",
            &npm,
            "\n",
        ),
        row(
            Redaction::HuggingfaceToken,
            "huggingface-cli login --token ",
            &hugging_face,
            "",
        ),
        row(Redaction::Jwt, "Cookie: session=", &jwt(), "; Path=/"),
        row(
            Redaction::PrivateKey,
            "cat id_rsa\n",
            &private_key_block(),
            "\ndone",
        ),
        row(
            Redaction::PrivateKey,
            "gpg --armor --export-secret-keys ana > key.asc\n",
            &format!(
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBF{}\n\
                 -----END PGP PRIVATE KEY BLOCK-----",
                body(64)
            ),
            "",
        ),
        row(
            Redaction::BearerToken,
            "curl -H \"Authorization: Bearer ",
            &bearer,
            "\" https://api.example.com/v1/items",
        ),
        row(
            Redaction::BasicAuth,
            "curl -H 'Authorization: Basic ",
            "YWxhZGRpbjpvcGVuc2VzYW1l",
            "' https://api.example.com",
        ),
        row(
            Redaction::Password,
            "DB_PASSWORD=",
            "hunter2!",
            "\nDB_USER=app",
        ),
        row(
            Redaction::Password,
            "{\"password\": \"",
            "correct horse battery staple",
            "\", \"user\": \"ana\"}",
        ),
        row(Redaction::Password, "api_key = '", "k3y-9f8e7d6c", "'"),
        row(Redaction::Password, "client_secret: ", "9f8e7d6c5b4a", "\n"),
        row(Redaction::Password, "PASSWORD: \"", "S3cret!x", "\""),
        row(
            Redaction::Password,
            "mysql --user=root --password=",
            "Tr0ub4dor",
            " app",
        ),
        row(Redaction::Password, "'password' => '", "hunter22", "',"),
        row(
            Redaction::GoogleOauth,
            "token_type=bearer&access_token=",
            "ya29.a0AfH6SMBx1234567890",
            "&expires_in=3599",
        ),
        row(
            Redaction::Password,
            "Server=db;User Id=sa;Password=",
            "P@ssw0rd!",
            ";",
        ),
        row(
            Redaction::UrlPassword,
            "DATABASE_URL=postgres://app:",
            "s3cr3t-pw",
            "@db.internal:5432/app",
        ),
        row(
            Redaction::UrlPassword,
            "mongodb+srv://admin:",
            "Xy9!long",
            "@cluster0.example.net/db",
        ),
        row(
            Redaction::UrlPassword,
            "redis://:",
            "r3dis",
            "@cache:6379/0",
        ),
    ]
    .into_iter()
    .chain(more_planted())
    .collect()
}

/// Kinds added for issue 14: the formats a hostile run found missing, and more.
fn more_planted() -> Vec<(Redaction, String, String)> {
    let row = |kind: Redaction, before: &str, secret: &str, after: &str| {
        let redacted = format!("{before}[REDACTED:{}]{after}", kind.as_str());
        (kind, format!("{before}{secret}{after}"), redacted)
    };
    let secret =
        |kind, before: &str, secret: String, after: &str| row(kind, before, &secret, after);
    vec![
        // Short Hugging Face tokens, as `hf_ns26lrwbqcab69m64p2g` was.
        secret(
            Redaction::HuggingfaceToken,
            "HF_TOKEN=",
            format!("hf_{}", body(20)),
            "
",
        ),
        secret(
            Redaction::PypiToken,
            "TWINE_PASSWORD=",
            format!("pypi-AgEIcHlwaS5vcmc{}", body(60)),
            "
",
        ),
        secret(
            Redaction::GitlabToken,
            "export GITLAB_TOKEN=",
            format!("glpat-{}", body(20)),
            "
",
        ),
        secret(
            Redaction::SendgridKey,
            "SENDGRID_API_KEY=",
            format!("SG.{}.{}", body(22), body(43)),
            "
",
        ),
        secret(
            Redaction::MailgunKey,
            "MAILGUN_API_KEY=",
            format!("key-{}", hex(32)),
            "
",
        ),
        secret(
            Redaction::TwilioKey,
            "TWILIO_API_KEY=",
            format!("SK{}", hex(32)),
            "
",
        ),
        secret(
            Redaction::ShopifyToken,
            "X-Shopify-Access-Token: ",
            format!("shpat_{}", hex(32)),
            "
",
        ),
        secret(
            Redaction::DigitaloceanToken,
            "doctl auth init -t ",
            format!("dop_v1_{}", hex(64)),
            "",
        ),
        secret(
            Redaction::DatabricksToken,
            "DATABRICKS_TOKEN=",
            format!("dapi{}", hex(32)),
            "
",
        ),
        secret(
            Redaction::LinearKey,
            "Authorization: ",
            format!("lin_api_{}", body(40)),
            "
",
        ),
        secret(
            Redaction::AgeSecretKey,
            "# created\n",
            format!("AGE-SECRET-KEY-1{}", upper(58)),
            "\n",
        ),
        secret(
            Redaction::VaultToken,
            "VAULT_TOKEN=",
            format!("hvs.{}", body(90)),
            "
",
        ),
        secret(
            Redaction::GoogleOauth,
            "{\"client_secret\":\"",
            format!("GOCSPX-{}", body(28)),
            "\"}",
        ),
        secret(
            Redaction::GoogleOauth,
            "curl -H 'Authorization: Bearer ",
            format!("ya29.{}", body(120)),
            "'",
        ),
        secret(
            Redaction::SupabaseToken,
            "supabase login --token ",
            format!("sbp_{}", hex(40)),
            "",
        ),
        secret(
            Redaction::DockerToken,
            "echo ",
            format!("dckr_pat_{}", body(27)),
            " | docker login -u ana --password-stdin",
        ),
        secret(
            Redaction::NewrelicKey,
            "NEW_RELIC_API_KEY=",
            format!("NRAK-{}", upper(27)),
            "
",
        ),
        secret(
            Redaction::SentryToken,
            "SENTRY_AUTH_TOKEN=",
            format!("sntrys_{}", body(60)),
            "
",
        ),
        secret(
            Redaction::NotionToken,
            "NOTION_TOKEN=",
            format!("ntn_{}", body(46)),
            "
",
        ),
        secret(
            Redaction::GrafanaToken,
            "GRAFANA_TOKEN=",
            format!("glsa_{}_{}", body(32), hex(8)),
            "
",
        ),
        secret(
            Redaction::AzureStorageKey,
            "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=",
            format!("{}==", body(86)),
            ";EndpointSuffix=core.windows.net",
        ),
        secret(
            Redaction::WebhookUrl,
            "curl -X POST https://hooks.slack.com/services/",
            format!("T0AAA1BBB/B0CCC2DDD/{}", body(24)),
            " -d @msg.json",
        ),
        secret(
            Redaction::WebhookUrl,
            "DISCORD_WEBHOOK=https://discord.com/api/webhooks/",
            format!("123456789012345678/{}", body(68)),
            "
",
        ),
        // The hostile run's miss: a password as a flag's next argument.
        row(
            Redaction::CommandLineSecret,
            "mysql -u root --password ",
            "SpfM2oeq3hDavJA7",
            " app",
        ),
        row(
            Redaction::CommandLineSecret,
            "mysql -uroot -p'",
            "Tr0ub4dor&3",
            "' app",
        ),
        row(
            Redaction::CommandLineSecret,
            "mysqldump -u root -p",
            "S3cr3tPw",
            " app > app.sql",
        ),
        row(
            Redaction::CommandLineSecret,
            "sshpass -p ",
            "hunter2x",
            " ssh ana@host",
        ),
        row(
            Redaction::CommandLineSecret,
            "--token\t",
            "9f8e7d6c5b4a",
            " --verbose\n",
        ),
        row(
            Redaction::CommandLineSecret,
            "deploy --api-key \"",
            "9f8e7d6c5b4a3f2e",
            "\" --env prod",
        ),
        // SSH keys, a GCP service-account file, an `.env` file.
        secret(
            Redaction::PrivateKey,
            "cat ~/.ssh/id_ed25519
",
            format!(
                "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmU{}
{}
                 -----END OPENSSH PRIVATE KEY-----",
                body(40),
                body(70)
            ),
            "
",
        ),
        secret(
            Redaction::PrivateKey,
            "{\"type\": \"service_account\", \"private_key\": \"",
            format!(
                "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC{}\\n                 -----END PRIVATE KEY-----",
                body(64)
            ),
            "\\n\", \"client_email\": \"ci@acme.iam.gserviceaccount.com\"}",
        ),
        secret(
            Redaction::Password,
            "# .env
SESSION_SECRET=",
            body(32),
            "
PORT=3000",
        ),
    ]
}

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
    assert_eq!(counts.get(Redaction::CommandLineSecret), 6);
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
         cargo build --release -p eywa-storage --target-dir /tmp/t",
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
