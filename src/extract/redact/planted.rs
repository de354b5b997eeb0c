//! Planted secrets of every kind `redact` knows, each in a line of ordinary text, with
//! the line as it must read redacted. Shared by the unit tests of `redact` and the
//! integration tests that check every way text enters (documents, memories, hooks, MCP).
//! Secrets are assembled at run time so that no scanner flags them.

#![allow(dead_code)]

use super::Redaction;

/// `n` deterministic characters of mixed case and digits, like a real key's body.
pub(super) fn body(n: usize) -> String {
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
pub(super) fn hex(n: usize) -> String {
    (0..n)
        .map(|i| b"0123456789abcdef"[(i * 7 + n) % 16] as char)
        .collect()
}

/// `n` uppercase letters and digits.
fn upper(n: usize) -> String {
    body(n).to_ascii_uppercase()
}

pub(super) fn private_key_block() -> String {
    format!(
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA{}\n{}\n-----END RSA PRIVATE KEY-----",
        body(48),
        body(64)
    )
}

/// `(kind, text with one secret, the same text redacted)`: at least one row per kind.
pub(super) fn planted() -> Vec<(Redaction, String, String)> {
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
        // curl's user:password (the hostile run's other miss).
        row(
            Redaction::CommandLineSecret,
            "curl -fsSL -u admin:",
            "hunter2pass",
            " https://ci.example.com/api",
        ),
        row(
            Redaction::CommandLineSecret,
            "curl -X POST \\\n  -H 'Accept: application/json' \\\n  -u admin:",
            "c0ntinu3dPw",
            " \\\n  https://ci.example.com/api",
        ),
        row(
            Redaction::CommandLineSecret,
            "curl --user=deploy:",
            "Xq9!vP2m",
            " -X POST https://ci.example.com/hook",
        ),
        row(
            Redaction::CommandLineSecret,
            "curl -s --proxy-user 'ops:",
            "pr0xyP4ss",
            "' https://example.com",
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
