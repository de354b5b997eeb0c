//! A gRPC client of a running `eywa serve`, using the generated `eywa.v1` types.
//!
//! ```sh
//! cargo run --example grpc_client -- "tokenizer" eywa
//! ```

use eywa::api::pb;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let query = args.next().unwrap_or_default();
    let project = args.next();
    let addr = std::env::var("EYWA_ADDR").unwrap_or_else(|_| "127.0.0.1:50051".to_owned());
    let endpoint = format!("http://{addr}");

    let mut retrieval = pb::retrieval_client::RetrievalClient::connect(endpoint.clone()).await?;
    let response = retrieval
        .get_handoffs(pb::GetHandoffsRequest {
            query,
            days_back: Some(30),
            limit: Some(5),
            projects: project.iter().cloned().collect(),
            ..Default::default()
        })
        .await?
        .into_inner();
    for hit in response.handoffs {
        let h = hit.handoff.unwrap_or_default();
        println!(
            "{:>8.3}  {}  {}",
            hit.score.unwrap_or(0.0),
            h.date,
            h.headline
        );
    }

    if let Some(project) = project {
        let mut graph = pb::graph_client::GraphClient::connect(endpoint).await?;
        let touched = graph
            .what_touched(pb::WhatTouchedRequest {
                entity: format!("project:{project}"),
                ..Default::default()
            })
            .await?
            .into_inner();
        println!("{} sessions touched {project}", touched.touches.len());
    }
    Ok(())
}
