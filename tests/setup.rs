//! `eywa setup claude` on a scratch HOME: merging into a `settings.json` that has hooks of
//! its own, running twice, `--dry-run`, `--uninstall` giving back the original bytes, the
//! project scope, and Claude Code's CLI seeing what setup registered (and the plugin).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::clients;

/// A user's settings, in their own formatting (four-space indents, keys in their order).
const SETTINGS: &str = r#"{
    "theme": "dark",
    "hooks": {
        "Stop": [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": "notify-send done"
                    }
                ]
            }
        ],
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": "/usr/local/bin/guard"
                    }
                ]
            }
        ]
    },
    "permissions": {
        "allow": [
            "Bash(ls:*)"
        ]
    }
}
"#;

struct Home {
    home: tempfile::TempDir,
    data: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let home = Home {
            home: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(home.claude_dir().join("projects")).unwrap();
        home
    }

    fn claude_dir(&self) -> std::path::PathBuf {
        self.home.path().join(".claude")
    }

    fn settings(&self) -> std::path::PathBuf {
        self.claude_dir().join("settings.json")
    }

    fn setup(&self, cwd: &Path, args: &[&str]) -> String {
        let out = crate::support::succeed(
            Command::new(env!("CARGO_BIN_EXE_eywa"))
                .env("HOME", self.home.path())
                .env("EYWA_DATA_DIR", self.data.path())
                .env_remove("EYWA_CLAUDE_DIR")
                .env_remove("CLAUDE_CONFIG_DIR")
                .current_dir(cwd)
                .args(["setup", "claude"])
                .args(args),
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The hook commands of one event.
fn commands(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .flat_map(|e| e["hooks"].as_array().unwrap())
                .map(|h| h["command"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn setup_merges_its_hooks_and_uninstall_gives_back_the_original_bytes() {
    let home = Home::new();
    std::fs::write(home.settings(), SETTINGS).unwrap();
    let user_mcp = home.home.path().join(".claude.json");

    // A dry run says what it would do, and does nothing.
    let said = home.setup(home.home.path(), &["--dry-run"]);
    assert!(said.contains("would change"), "{said}");
    assert!(said.contains("SessionStart hook"), "{said}");
    assert_eq!(std::fs::read_to_string(home.settings()).unwrap(), SETTINGS);
    assert!(!user_mcp.exists());

    home.setup(home.home.path(), &[]);
    let settings = json(&home.settings());
    let eywa = env!("CARGO_BIN_EXE_eywa");
    let data = home.data.path().display().to_string();
    assert_eq!(
        commands(&settings, "SessionStart"),
        [format!("{eywa} --data-dir {data} hook session-start")]
    );
    assert_eq!(
        commands(&settings, "Stop"),
        [
            "notify-send done".to_owned(),
            format!("{eywa} --data-dir {data} hook stop")
        ]
    );
    assert_eq!(commands(&settings, "PreToolUse"), ["/usr/local/bin/guard"]);
    assert_eq!(commands(&settings, "SessionEnd").len(), 1);
    assert_eq!(commands(&settings, "PreCompact").len(), 1);
    assert!(
        commands(&settings, "UserPromptSubmit").is_empty(),
        "off by default"
    );
    assert_eq!(settings["theme"], "dark");
    assert_eq!(settings["permissions"]["allow"][0], "Bash(ls:*)");
    let keys: Vec<&String> = settings.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["theme", "hooks", "permissions"],
        "the user's order is kept"
    );
    let backup = home.claude_dir().join("settings.json.eywa-backup");
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), SETTINGS);
    let registered = json(&user_mcp);
    assert_eq!(registered["mcpServers"]["eywa"]["command"], eywa);
    assert_eq!(
        registered["mcpServers"]["eywa"]["args"],
        serde_json::json!(["--data-dir", data, "mcp"])
    );

    // Twice is once.
    let (settings_bytes, mcp_bytes) = (
        std::fs::read(home.settings()).unwrap(),
        std::fs::read(&user_mcp).unwrap(),
    );
    let said = home.setup(home.home.path(), &[]);
    assert!(said.contains("unchanged"), "{said}");
    assert_eq!(std::fs::read(home.settings()).unwrap(), settings_bytes);
    assert_eq!(std::fs::read(&user_mcp).unwrap(), mcp_bytes);

    // The prompt hook on request, still one of each.
    home.setup(home.home.path(), &["--prompt-hook"]);
    let settings = json(&home.settings());
    assert_eq!(commands(&settings, "UserPromptSubmit").len(), 1);
    assert_eq!(commands(&settings, "SessionStart").len(), 1);

    // Uninstalled: the very bytes the user had, and no file setup created.
    let said = home.setup(home.home.path(), &["--uninstall"]);
    assert!(said.contains("removed eywa from"), "{said}");
    assert_eq!(std::fs::read_to_string(home.settings()).unwrap(), SETTINGS);
    assert!(!user_mcp.exists());
}

#[test]
fn uninstall_after_other_changes_removes_only_eywa() {
    let home = Home::new();
    std::fs::write(home.settings(), SETTINGS).unwrap();
    home.setup(home.home.path(), &[]);
    // The user (or Claude Code) changes the file meanwhile.
    let mut settings = json(&home.settings());
    settings["model"] = "opus".into();
    std::fs::write(
        home.settings(),
        serde_json::to_vec_pretty(&settings).unwrap(),
    )
    .unwrap();
    home.setup(home.home.path(), &["--uninstall"]);
    let settings = json(&home.settings());
    assert_eq!(settings["model"], "opus");
    assert_eq!(commands(&settings, "Stop"), ["notify-send done"]);
    assert!(commands(&settings, "SessionStart").is_empty());
    let mut expected: Value = serde_json::from_str(SETTINGS).unwrap();
    expected["model"] = "opus".into();
    assert_eq!(settings, expected);
}

#[test]
fn the_project_scope_writes_the_projects_files() {
    let home = Home::new();
    let project = tempfile::tempdir().unwrap();
    home.setup(project.path(), &["--scope", "project"]);
    let settings = json(&project.path().join(".claude/settings.json"));
    assert_eq!(commands(&settings, "SessionStart").len(), 1);
    let mcp = json(&project.path().join(".mcp.json"));
    assert_eq!(mcp["mcpServers"]["eywa"]["type"], "stdio");
    assert!(
        !home.settings().exists(),
        "the user's settings are not the project's"
    );
    home.setup(project.path(), &["--scope", "project", "--uninstall"]);
    assert!(!project.path().join(".claude/settings.json").exists());
    assert!(!project.path().join(".mcp.json").exists());
}

#[test]
fn claude_code_sees_what_setup_registered_and_installs_the_plugin() {
    let Some(claude) = clients::claude() else {
        return;
    };
    let home = Home::new();
    home.setup(home.home.path(), &[]);
    let run = |args: &[&str]| clients::run_claude(&claude, home.home.path(), args);
    let listed = run(&["mcp", "list"]);
    let line = listed
        .lines()
        .find(|l| l.starts_with("eywa:"))
        .unwrap_or_else(|| panic!("eywa not listed:\n{listed}"));
    assert!(line.contains("Connected"), "{line}");
    // The plugin folder, from this clone.
    let clone = env!("CARGO_MANIFEST_DIR");
    let plugin = format!("{clone}/plugin");
    assert!(run(&["plugin", "validate", &plugin]).contains("Validation passed"));
    run(&["plugin", "marketplace", "add", clone]);
    run(&["plugin", "install", "eywa@eywa"]);
    let plugins = run(&["plugin", "list"]);
    assert!(plugins.contains("eywa@eywa"), "{plugins}");
}
