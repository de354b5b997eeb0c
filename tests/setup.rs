//! `eywa setup claude` on a scratch HOME: merging into a `settings.json` that has hooks of
//! its own, running twice, `--dry-run`, `--uninstall` giving back the original bytes, the
//! project scope, files that are symlinks into a dotfiles folder, eywa hooks and servers
//! the user wrote themselves, and Claude Code's CLI seeing what setup registered (and the
//! plugin).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

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

/// `~/.claude.json` as Claude Code keeps it: keys of its own, no MCP server yet.
const USER_MCP: &str = "{\n  \"numStartups\": 3,\n  \"projects\": {}\n}\n";

/// A team's eywa, run by the user's own hook: not setup's to replace.
const THEIR_HOOK: &str =
    "/opt/eywa/bin/eywa --data-dir /srv/team-eywa hook session-start --max-tokens 6000";

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

    fn claude_dir(&self) -> PathBuf {
        self.home.path().join(".claude")
    }

    fn settings(&self) -> PathBuf {
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

/// The user (or Claude Code) sets a key of `settings.json` between two runs of setup.
fn set_model(home: &Home, model: &str) {
    let mut settings = json(&home.settings());
    settings["model"] = model.into();
    std::fs::write(
        home.settings(),
        serde_json::to_vec_pretty(&settings).unwrap(),
    )
    .unwrap();
}

#[test]
fn uninstall_after_other_changes_removes_only_eywa() {
    let home = Home::new();
    std::fs::write(home.settings(), SETTINGS).unwrap();
    home.setup(home.home.path(), &[]);
    // The user (or Claude Code) changes the file meanwhile.
    set_model(&home, "opus");
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
fn an_edit_between_two_setups_survives_the_uninstall() {
    let home = Home::new();
    std::fs::write(home.settings(), SETTINGS).unwrap();
    home.setup(home.home.path(), &[]);
    set_model(&home, "opus");
    // A second setup that changes the file again: the bytes before the first are stale.
    home.setup(home.home.path(), &["--prompt-hook"]);
    home.setup(home.home.path(), &["--uninstall"]);
    let mut expected: Value = serde_json::from_str(SETTINGS).unwrap();
    expected["model"] = "opus".into();
    assert_eq!(json(&home.settings()), expected);
}

/// `<file>.eywa-backup`, beside the file.
#[cfg(unix)]
fn backup(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".eywa-backup");
    PathBuf::from(name)
}

#[cfg(unix)]
#[test]
fn setup_writes_through_symlinks_and_leaves_them_links() {
    use std::os::unix::fs::{PermissionsExt as _, symlink};
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let set_mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let home = Home::new();
    let dotfiles = home.home.path().join("dotfiles");
    std::fs::create_dir_all(dotfiles.join("claude")).unwrap();
    // settings.json: an absolute link to a private file.
    let settings = dotfiles.join("claude/settings.json");
    std::fs::write(&settings, SETTINGS).unwrap();
    set_mode(&settings, 0o600);
    symlink(&settings, home.settings()).unwrap();
    // ~/.claude.json: a relative link.
    let user_mcp = dotfiles.join("claude.json");
    std::fs::write(&user_mcp, USER_MCP).unwrap();
    set_mode(&user_mcp, 0o644);
    let user_mcp_link = home.home.path().join(".claude.json");
    symlink("dotfiles/claude.json", &user_mcp_link).unwrap();
    // A project's .mcp.json: a link to a file that does not exist yet.
    let project = home.home.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let project_mcp = dotfiles.join("project-mcp.json");
    let project_mcp_link = project.join(".mcp.json");
    symlink("../dotfiles/project-mcp.json", &project_mcp_link).unwrap();
    let links = [
        (home.settings(), settings.clone()),
        (user_mcp_link.clone(), PathBuf::from("dotfiles/claude.json")),
        (
            project_mcp_link,
            PathBuf::from("../dotfiles/project-mcp.json"),
        ),
    ];
    let links_intact = || {
        for (link, to) in &links {
            let meta = std::fs::symlink_metadata(link).unwrap();
            assert!(meta.file_type().is_symlink(), "{}", link.display());
            assert_eq!(&std::fs::read_link(link).unwrap(), to);
        }
    };

    let said = home.setup(home.home.path(), &[]);
    assert!(
        said.contains(&format!("(a link to {})", settings.display())),
        "{said}"
    );
    home.setup(&project, &["--scope", "project"]);
    links_intact();
    let eywa = env!("CARGO_BIN_EXE_eywa");
    assert_eq!(commands(&json(&settings), "SessionStart").len(), 1);
    assert_eq!(commands(&json(&settings), "Stop").len(), 2);
    let registered = json(&user_mcp);
    assert_eq!(registered["mcpServers"]["eywa"]["command"], eywa);
    assert_eq!(registered["numStartups"], 3);
    assert_eq!(json(&project_mcp)["mcpServers"]["eywa"]["type"], "stdio");
    // The files keep their modes; their backups sit beside them, with the same modes.
    assert_eq!(mode(&settings), 0o600);
    assert_eq!(mode(&user_mcp), 0o644);
    assert_eq!(
        std::fs::read_to_string(backup(&settings)).unwrap(),
        SETTINGS
    );
    assert_eq!(mode(&backup(&settings)), 0o600);
    assert_eq!(
        std::fs::read_to_string(backup(&user_mcp)).unwrap(),
        USER_MCP
    );
    assert_eq!(mode(&backup(&user_mcp)), 0o644);
    assert!(
        !backup(&project_mcp).exists(),
        "it did not exist: nothing to back up"
    );
    assert!(!backup(&home.settings()).exists());
    assert!(!backup(&user_mcp_link).exists());

    // Twice is once, through links too.
    let bytes = [
        std::fs::read(&settings).unwrap(),
        std::fs::read(&user_mcp).unwrap(),
    ];
    let said = home.setup(home.home.path(), &[]);
    assert!(said.contains("unchanged"), "{said}");
    assert_eq!(
        [
            std::fs::read(&settings).unwrap(),
            std::fs::read(&user_mcp).unwrap()
        ],
        bytes
    );
    links_intact();

    // Uninstalled: the same links, and the bytes they pointed at; the file setup created
    // is gone and its link stays, dangling as it was.
    home.setup(home.home.path(), &["--uninstall"]);
    home.setup(&project, &["--scope", "project", "--uninstall"]);
    links_intact();
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), SETTINGS);
    assert_eq!(mode(&settings), 0o600);
    assert_eq!(std::fs::read_to_string(&user_mcp).unwrap(), USER_MCP);
    assert!(!project_mcp.exists());
    assert!(!project.join(".claude/settings.json").exists());
}

#[test]
fn an_eywa_hook_or_server_setup_did_not_write_stays() {
    let home = Home::new();
    let mut settings: Value = serde_json::from_str(SETTINGS).unwrap();
    settings["hooks"]["SessionStart"] =
        json!([{"hooks": [{"type": "command", "command": THEIR_HOOK}]}]);
    let original = serde_json::to_vec_pretty(&settings).unwrap();
    std::fs::write(home.settings(), &original).unwrap();
    let user_mcp = home.home.path().join(".claude.json");
    let their_server = json!({"type": "stdio", "command": "/opt/eywa/bin/eywa",
                              "args": ["--data-dir", "/srv/team-eywa", "mcp"]});
    let mcp_bytes =
        serde_json::to_vec_pretty(&json!({"mcpServers": {"eywa": their_server}})).unwrap();
    std::fs::write(&user_mcp, &mcp_bytes).unwrap();
    let kept_hook =
        format!("= kept your own SessionStart hook: {THEIR_HOOK} (not written by eywa setup)");
    let kept_server = "= kept your own MCP server eywa: /opt/eywa/bin/eywa --data-dir \
                       /srv/team-eywa mcp (not written by eywa setup)";

    // Said before, in words and in JSON.
    let said = home.setup(home.home.path(), &["--dry-run"]);
    assert!(said.contains(&kept_hook), "{said}");
    assert!(said.contains(kept_server), "{said}");
    let said = home.setup(home.home.path(), &["--dry-run", "--json"]);
    let report: Value = serde_json::from_str(&said).unwrap();
    let kept: Vec<&str> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["kept"].as_array().unwrap())
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(kept, [kept_hook.as_str(), kept_server]);

    let said = home.setup(home.home.path(), &[]);
    assert!(said.contains(&kept_hook), "{said}");
    assert!(said.contains(kept_server), "{said}");
    let settings = json(&home.settings());
    let eywa = env!("CARGO_BIN_EXE_eywa");
    let data = home.data.path().display().to_string();
    assert_eq!(
        commands(&settings, "SessionStart"),
        [THEIR_HOOK],
        "theirs, unchanged, and no second eywa"
    );
    assert_eq!(
        commands(&settings, "Stop"),
        [
            "notify-send done".to_owned(),
            format!("{eywa} --data-dir {data} hook stop")
        ]
    );
    assert_eq!(
        commands(&settings, "SessionEnd"),
        [format!("{eywa} --data-dir {data} hook session-end")]
    );
    assert_eq!(std::fs::read(&user_mcp).unwrap(), mcp_bytes);

    // Twice is once.
    let bytes = std::fs::read(home.settings()).unwrap();
    home.setup(home.home.path(), &[]);
    assert_eq!(std::fs::read(home.settings()).unwrap(), bytes);

    // Uninstalled: eywa's hooks go, theirs stay; both files as the user had them.
    let said = home.setup(home.home.path(), &["--uninstall"]);
    assert!(said.contains(&kept_hook), "{said}");
    assert_eq!(std::fs::read(home.settings()).unwrap(), original);
    assert_eq!(std::fs::read(&user_mcp).unwrap(), mcp_bytes);
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
