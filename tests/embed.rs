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
    check_parity(model.as_ref(), &ours);
    // sentence-transformers' own vectors, when ../shared is beside the checkout.
    if let Some(shared) = support::shared("eval/embeddings/minilm-reference.json") {
        check_parity(model.as_ref(), &reference(&shared));
    }
    assert_eq!(model.dim(), 384);
    assert!(
        model
            .model_id()
            .starts_with("all-MiniLM-L6-v2@53aa51172d14")
    );
}
