//! `neuronprof mcp --allow DIR [--allow DIR…]`: neuronprof's commands as a Model Context
//! Protocol server on standard input and output, for agents (Claude, Cursor, VS Code …
//! start it as a stdio server).
//!
//! # Tools
//!
//! Each tool calls the library function its CLI command calls, and answers with exactly
//! what the command's `--json` prints (as text, and as structured content when it is a
//! JSON object), so an agent sees the numbers a person sees:
//!
//! | tool | command | notes |
//! |---|---|---|
//! | `inspect` | `inspect PATH… --json` | |
//! | `analyze` | `analyze PATH… --json` | `sections` picks parts of the report ([`Section`]); all by default |
//! | `critical_path` | `critical-path PATH… --json` | `overlay` writes HTA's overlay traces |
//! | `what_if` | `what-if PATH… --scale … --json` | `out` writes the predicted traces |
//! | `diff` | `diff A B --json` | |
//! | `query` | `query "SQL" PATH… --format json` | read-only; `csv`, `table` too; results up to 8 MiB |
//! | `export` | `export … -o OUT --json` | perfetto, perfetto-archive, csv, parquet, neuron-explorer |
//!
//! Inputs are typed: each tool's JSON schema is generated from its argument struct (in
//! `tools.rs`), with the CLI flags' names and help, and unknown arguments are refused. A
//! failure — a path refused, a damaged trace (with file, byte offset and event), bad SQL
//! (with line and column), a panic — is the tool's error result (`isError`) whose text
//! says what and where; the server goes on.
//!
//! The resource `neuronprof://sql/schema` is the SQL schema of `query` (generated from
//! `exporters::tables::SCHEMAS`, as `docs/SQL.md`'s), and `neuronprof://sql/guide` is
//! `docs/SQL.md` itself (sources and ready queries). The prompt `investigate` (arguments
//! `paths`, `rank`) walks a run from the insights down: insights, step breakdown,
//! critical path, the roofline's top opportunities, then what-if on each.
//!
//! # The path rule
//!
//! Every path a tool reads or writes must lie in a folder named with `--allow`
//! ([`confine`] has the details): the folders are canonicalized at start; `..` in a
//! path is refused; a relative path is taken in the first allowed folder; an input's
//! canonical path (symlinks resolved) must be inside, and so must every symlink's
//! target below an input folder; an output (export's `out`, what-if's `out`,
//! critical-path's `overlay`) may be new, but the part of it that exists must resolve
//! inside, and an existing output folder is checked like an input folder. A
//! `device_spec` that is not a built-in device name is a file under the same rule.
//! Answers name the canonical paths.
//!
//! # Crate and protocol
//!
//! The server is built on `rmcp` 3.11, the official Rust SDK of the Model Context
//! Protocol (its `server`, `macros` and stdio `transport-io` features), on a
//! current-thread tokio runtime; the tools' work runs on threads of its own (analyses
//! use every core). It answers the `initialize` handshake with the client's protocol
//! version when it is one rmcp knows with a handshake (2024-11-05, 2025-03-26,
//! 2025-06-18, 2025-11-25; else 2025-11-25), and serves clients of 2026-07-28 that send
//! the version in each request's `_meta` instead. Messages are JSON-RPC 2.0, one per
//! line; logs go to standard error, never to standard output.

pub mod confine;
mod prompt;
mod sections;
mod server;
mod tools;

use std::path::PathBuf;

use anyhow::Context as _;
use rmcp::ServiceExt as _;

pub use confine::AllowedDirs;
pub use sections::Section;
use server::NeuronprofServer;
pub use server::{GUIDE_URI, SCHEMA_URI};

/// Serves the tools on standard input and output until the client closes them.
pub fn serve_stdio(allow: &[PathBuf]) -> anyhow::Result<()> {
    let allowed = AllowedDirs::new(allow)?;
    eprintln!(
        "neuronprof mcp: serving on standard input and output; allowed folders: {}",
        allowed.describe()
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let service = NeuronprofServer::new(allowed)
            .serve(rmcp::transport::stdio())
            .await
            .context("starting the MCP session")?;
        service.waiting().await.context("serving MCP")?;
        anyhow::Ok(())
    })
}
