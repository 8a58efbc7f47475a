//! The MCP glue (crate `rmcp`): the tools, the prompt and the resources of
//! [`NeuronprofServer`]. Each tool runs its work ([`super::tools`]) on a thread of its
//! own, so the protocol keeps answering (pings, other calls) while a trace is read, and
//! a failure — a refused path, a damaged trace, bad SQL, even a panic — comes back as the
//! tool's error result with its message.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, GetPromptResult, Implementation, ListResourcesResult,
    PaginatedRequestParams, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{
    prompt, prompt_handler, prompt_router, tool, tool_handler, tool_router, ErrorData, RoleServer,
    ServerHandler,
};
use schemars::JsonSchema;
use serde::Deserialize;

use super::confine::AllowedDirs;
use super::tools::{self, ToolOutput};

/// The URI of the SQL schema resource.
pub const SCHEMA_URI: &str = "neuronprof://sql/schema";
/// The URI of the SQL guide resource (`docs/SQL.md`: sources, schema, ready queries).
pub const GUIDE_URI: &str = "neuronprof://sql/guide";

/// The SQL guide, as the binary was built with it.
const SQL_GUIDE: &str = include_str!("../../../docs/SQL.md");

/// The server: the allowed folders and the routers of its tools and prompt.
#[derive(Clone)]
pub struct NeuronprofServer {
    allowed: Arc<AllowedDirs>,
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
}

impl std::fmt::Debug for NeuronprofServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NeuronprofServer")
            .field("allowed", &self.allowed)
            .finish_non_exhaustive()
    }
}

impl NeuronprofServer {
    /// A server whose tools use only the `allowed` folders.
    pub fn new(allowed: AllowedDirs) -> Self {
        NeuronprofServer {
            allowed: Arc::new(allowed),
            tool_router: Self::tool_router(),
            prompt_router: Self::prompt_router(),
        }
    }

    /// Runs `work` on a thread of its own with the allowed folders; its answer or its
    /// error (or panic) as the tool's result.
    async fn run<A: Send + 'static>(
        &self,
        tool: &'static str,
        args: A,
        work: fn(&AllowedDirs, A) -> anyhow::Result<ToolOutput>,
    ) -> Result<CallToolResult, ErrorData> {
        let allowed = Arc::clone(&self.allowed);
        let (answer, answered) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name(format!("mcp-{tool}"))
            .spawn(move || {
                let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| work(&allowed, args)));
                let _ = answer.send(outcome);
            });
        if let Err(err) = spawned {
            return Ok(failure(tool, &format!("starting its thread: {err}")));
        }
        Ok(match answered.await {
            Ok(Ok(Ok(output))) => success(output),
            Ok(Ok(Err(err))) => failure(tool, &format!("{err:#}")),
            Ok(Err(panic)) => {
                let why = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("no message");
                failure(
                    tool,
                    &format!("internal error (a bug: please report it): {why}"),
                )
            }
            Err(_) => failure(tool, "internal error: the work ended without an answer"),
        })
    }
}

/// A tool's answer: the command's output as text and, when it is a JSON object, as
/// structured content too; notes (damage skipped) as a second text block.
fn success(output: ToolOutput) -> CallToolResult {
    let structured = output
        .json
        .then(|| serde_json::from_str::<serde_json::Value>(&output.text).ok())
        .flatten()
        .filter(serde_json::Value::is_object);
    let mut result = match structured {
        Some(value) => {
            let mut result = CallToolResult::structured(value);
            result.content = vec![ContentBlock::text(output.text)];
            result
        }
        None => CallToolResult::success(vec![ContentBlock::text(output.text)]),
    };
    if let Some(notes) = output.notes {
        result.content.push(ContentBlock::text(notes));
    }
    result
}

fn failure(tool: &str, message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!("{tool}: {message}"))])
}

#[tool_router]
impl NeuronprofServer {
    /// What a set of Kineto rank traces holds: ranks, devices, time span, event counts by
    /// category, memory events, flows matched and not, dropped records, damage (file,
    /// byte offset, event). `neuronprof inspect --json`.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn inspect(
        &self,
        Parameters(args): Parameters<tools::InspectArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run("inspect", args, tools::inspect).await
    }

    /// HTA's analyses and more, insights first: temporal and kernel breakdowns, idle
    /// time, overlap, stragglers, steps split into device work / collective transfer /
    /// waiting for peers / idle, collectives across ranks, utilization and MFU, memory,
    /// operators, the roofline per operator and shape. `neuronprof analyze --json`;
    /// `sections` returns only the parts named (the context always comes along).
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn analyze(
        &self,
        Parameters(args): Parameters<tools::AnalyzeArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run("analyze", args, tools::analyze).await
    }

    /// The critical path of one step, across every rank (collectives join ranks, so it
    /// runs through the rank that arrived last) or HTA's on one rank: its length, time
    /// by bound_by, the events on it. `neuronprof critical-path --json`. With `overlay`
    /// it also writes HTA's overlay traces into that folder.
    #[tool(annotations(
        read_only_hint = false,
        destructive_hint = true,
        open_world_hint = false
    ))]
    async fn critical_path(
        &self,
        Parameters(args): Parameters<tools::CriticalPathArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run("critical_path", args, tools::critical_path).await
    }

    /// Re-times the dependency graph of one step with scaled durations and predicts the
    /// step per rank and the new critical path. `neuronprof what-if --json`. With `out`
    /// it also writes the predicted traces into that folder.
    #[tool(annotations(
        read_only_hint = false,
        destructive_hint = true,
        open_world_hint = false
    ))]
    async fn what_if(
        &self,
        Parameters(args): Parameters<tools::WhatIfArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run("what_if", args, tools::what_if).await
    }

    /// Two traces (or rank folders) compared by operator and kernel name over their first
    /// ProfilerStep, and each operator with its arguments by efficiency (kernel time per
    /// call, percent of its roofline). `neuronprof diff --json`.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn diff(
        &self,
        Parameters(args): Parameters<tools::DiffArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run("diff", args, tools::diff).await
    }

    /// Read-only SQL (embedded DataFusion) over traces or an exported Parquet dataset;
    /// the tables and columns are in the resource neuronprof://sql/schema, ready queries
    /// in neuronprof://sql/guide. The result is what `neuronprof query --format json`
    /// prints (a JSON array of rows); statements that write or read other files are
    /// refused; results over 8 MiB stop with an error.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn query(
        &self,
        Parameters(args): Parameters<tools::QueryArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run("query", args, tools::query).await
    }

    /// Converts traces: a Perfetto trace (every rank on one time axis) or archive (a
    /// trace per rank, a machine per host), CSV tables, a Parquet dataset (for query,
    /// Spark, DuckDB) or Neuron Explorer profile folders, written to `out` inside the
    /// allowed folders. Returns what was written (`neuronprof export --json`).
    #[tool(annotations(
        read_only_hint = false,
        destructive_hint = true,
        open_world_hint = false
    ))]
    async fn export(
        &self,
        Parameters(args): Parameters<tools::ExportArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run("export", args, tools::export).await
    }
}

/// Arguments of the `investigate` prompt (the protocol passes prompt arguments as
/// strings).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct InvestigateArgs {
    /// The trace file or folder of rank traces to investigate (several: separated by
    /// commas).
    pub paths: String,
    /// The rank for per-rank sections (default: the first).
    #[serde(default)]
    pub rank: Option<String>,
}

#[prompt_router]
impl NeuronprofServer {
    /// Walk a profiled run from the insights down: insights, step breakdown, critical
    /// path, roofline's top opportunities, then what-if on each, ranked by the step time
    /// they would save.
    #[prompt(name = "investigate")]
    async fn investigate(
        &self,
        Parameters(args): Parameters<InvestigateArgs>,
    ) -> Result<GetPromptResult, ErrorData> {
        let rank = match args.rank.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(text) => Some(text.parse::<i64>().map_err(|e| {
                ErrorData::invalid_params(format!("rank `{text}`: not a rank number: {e}"), None)
            })?),
        };
        let text = super::prompt::investigate(&args.paths, rank);
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(format!("Investigate {} from the insights down", args.paths)),
        )
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for NeuronprofServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
        .with_server_info(
            Implementation::new("neuronprof", env!("CARGO_PKG_VERSION"))
                .with_title("neuronprof: Kineto trace analyses for PyTorch on Trainium"),
        )
        .with_instructions(format!(
            "The tools are neuronprof's commands over Kineto traces (any PyTorch profiler \
             trace: neuron, CUDA, ROCm, CPU) and Neuron Explorer profiles; their answers \
             are the commands' --json documents. Paths must lie in the allowed folders \
             ({}); a relative path is taken in the first. The prompt `investigate` walks \
             a trace from the insights down; the resource {SCHEMA_URI} is the SQL schema \
             of `query`.",
            self.allowed.describe()
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult {
            resources: vec![
                Resource::new(SCHEMA_URI, "sql-schema")
                    .with_title("SQL schema of the query tool")
                    .with_description(
                        "Every table query reads (events, kernels, collectives, memory, \
                         steps, ranks, operators, flows): columns, types, meaning",
                    )
                    .with_mime_type("text/markdown"),
                Resource::new(GUIDE_URI, "sql-guide")
                    .with_title("SQL over traces: sources, schema and ready queries")
                    .with_mime_type("text/markdown"),
            ],
            ..Default::default()
        })
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let text = match request.uri.as_str() {
            SCHEMA_URI => exporters::tables::schema_markdown(),
            GUIDE_URI => SQL_GUIDE.to_owned(),
            other => {
                return Err(ErrorData::resource_not_found(
                    format!("no resource {other}: the resources are {SCHEMA_URI} and {GUIDE_URI}"),
                    None,
                ))
            }
        };
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, request.uri.clone()).with_mime_type("text/markdown")
        ])
        .into())
    }
}
