//! Compiles `proto/eywa/v1/*.proto` with a vendored `protoc`, so the build needs only cargo.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    let include = protoc_bin_vendored::include_path()?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let protos: Vec<PathBuf> = [
        "common",
        "retrieval",
        "graph",
        "ingest",
        "admin",
        "sessions",
        "memory",
        "documents",
    ]
    .iter()
    .map(|name| PathBuf::from(format!("proto/eywa/v1/{name}.proto")))
    .collect();
    for proto in &protos {
        println!("cargo:rerun-if-changed={}", proto.display());
    }
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc);
    tonic_prost_build::configure()
        // A request that does not decode answers INVALID_ARGUMENT (src/api/codec.rs).
        .codec_path("crate::api::codec::Codec")
        .file_descriptor_set_path(out_dir.join("eywa_descriptor.bin"))
        .compile_with_config(config, &protos, &[PathBuf::from("proto"), include])?;
    Ok(())
}
