//! Integration tests, compiled as one binary.

mod support;

mod agents;
mod append;
mod archive;
mod bounded;
mod check;
mod chunks;
mod cli;
mod context;
mod corpus;
mod crash;
mod diskfull;
mod embed;
mod fuzzing;
mod grpc;
mod handoffs;
mod hostile;
mod import;
mod ingest;
mod library;
mod memories;
mod migrate;
mod parity;
mod plans;
mod remote;
mod search;
mod secrets;
mod semantic;
mod sequences;
mod serving;
mod temporal;
mod transcripts;
mod versions;
mod view;
mod walks;
