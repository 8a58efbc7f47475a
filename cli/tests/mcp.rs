//! `neuronprof mcp` spoken to as an MCP client would: JSON-RPC 2.0 lines over the
//! built binary's standard input and output (the stdio transport), with nothing of the
//! server's code or SDK. The client initializes, lists the tools, calls them on a
//! vendored two-rank neuron trace (`analysis/tests/data/gpt-2ranks-4steps`) and gets
//! exactly the bytes the CLI's `--json` prints; paths outside the allowed folders,
//! `..`, symlinks leading out and export targets outside are refused; a damaged trace
//! and bad SQL come back as tool errors that say what and where, and the server goes on.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_neuronprof");

/// The longest a request may take (debug build, loaded machine).
const TIMEOUT: Duration = Duration::from_secs(300);

/// The vendored two-rank trace folder, canonical (the server answers with canonical
/// paths, so the CLI is given the same ones).
fn trace_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../analysis/tests/data/gpt-2ranks-4steps")
        .canonicalize()
        .expect("the vendored trace folder")
}

/// A fresh folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// What the CLI prints on standard output for `args` (it must succeed).
fn cli(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("running neuronprof");
    assert!(
        out.status.success(),
        "neuronprof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// An MCP client over a server child's standard input and output.
struct Client {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
    stderr: PathBuf,
}

impl Client {
    /// Starts `neuronprof mcp --allow …` and initializes the session.
    fn start(allow: &[&Path], log: &Path) -> Client {
        let mut command = Command::new(BIN);
        command.arg("mcp");
        for dir in allow {
            command.arg("--allow").arg(dir);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("starting neuronprof mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = Client {
            child,
            stdin,
            lines,
            next_id: 1,
            stderr: log.to_owned(),
        };
        let init = client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "neuronprof-test-client", "version": "1"}
            }),
        );
        assert_eq!(init["protocolVersion"], "2025-11-25", "{init}");
        assert_eq!(init["serverInfo"]["name"], "neuronprof", "{init}");
        for capability in ["tools", "prompts", "resources"] {
            assert!(init["capabilities"][capability].is_object(), "{init}");
        }
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("writing to the server");
        self.stdin.flush().unwrap();
    }

    /// Sends a request; its response (`result`, or the JSON-RPC error as `{"error"}`).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = match self.lines.recv_timeout(TIMEOUT) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => panic!("{method}: no answer in {TIMEOUT:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "{method}: the server closed its output; its log:\n{}",
                    std::fs::read_to_string(&self.stderr).unwrap_or_default()
                ),
            };
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not a JSON-RPC line ({e}): {line}"));
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
            if message["id"] != json!(id) {
                continue; // a notification or log message
            }
            if let Some(error) = message.get("error") {
                return json!({ "error": error });
            }
            return message["result"].clone();
        }
    }

    /// Calls a tool; its result (`content`, `structuredContent`, `isError`).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Calls a tool that must succeed; the text of its first content block.
    fn text(&mut self, tool: &str, arguments: Value) -> String {
        let result = self.call(tool, arguments.clone());
        assert_eq!(
            result["isError"], false,
            "{tool} {arguments}: {}",
            result["content"][0]["text"]
        );
        result["content"][0]["text"]
            .as_str()
            .expect("a text block")
            .to_owned()
    }

    /// Calls a tool that must fail; its error text.
    fn error(&mut self, tool: &str, arguments: Value) -> String {
        let result = self.call(tool, arguments.clone());
        assert_eq!(result["isError"], true, "{tool} {arguments} succeeded");
        result["content"][0]["text"].as_str().unwrap().to_owned()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_client_gets_the_clis_numbers_over_stdio() {
    let dir = trace_dir();
    let d = dir.to_str().unwrap();
    let work = scratch("numbers");
    let mut client = Client::start(&[&dir, &work], &work.join("server.log"));

    let tools = client.request("tools/list", json!({}));
    let mut names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "analyze",
            "critical_path",
            "diff",
            "export",
            "inspect",
            "query",
            "what_if"
        ]
    );
    let analyze = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "analyze")
        .unwrap();
    let schema = analyze["inputSchema"].to_string();
    assert_eq!(analyze["inputSchema"]["type"], "object");
    assert_eq!(
        analyze["inputSchema"]["required"],
        json!(["paths"]),
        "{schema}"
    );
    for typed in ["\"sections\"", "\"roofline\"", "\"insights\"", "\"rank\""] {
        assert!(
            schema.contains(typed),
            "analyze's schema lacks {typed}: {schema}"
        );
    }

    // analyze: the whole report, byte for byte, as text and as structured content.
    let expected = cli(&["analyze", d, "--json"]);
    let result = client.call("analyze", json!({ "paths": [d] }));
    assert_eq!(result["isError"], false, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text, expected,
        "analyze over MCP differs from analyze --json"
    );
    let cli_value: Value = serde_json::from_str(&expected).unwrap();
    assert_eq!(result["structuredContent"], cli_value);

    // Every section named gives the whole report again (the selection misses nothing).
    let every = [
        "insights",
        "temporal_breakdown",
        "comm_comp_overlap",
        "kernel_breakdown",
        "per_rank",
        "stragglers",
        "steps",
        "collectives",
        "utilization",
        "compile",
    ];
    let text = client.text("analyze", json!({ "paths": [d], "sections": every }));
    assert_eq!(text, expected, "all sections differ from analyze --json");

    // A few sections: exactly those parts of the CLI's report, and the context.
    let some: Value = serde_json::from_str(&client.text(
        "analyze",
        json!({ "paths": [d], "sections": ["insights", "roofline"], "rank": 1 }),
    ))
    .unwrap();
    let full: Value = serde_json::from_str(&cli(&["analyze", d, "--json", "--rank", "1"])).unwrap();
    let keys: Vec<&String> = some.as_object().unwrap().keys().collect();
    let context = [
        "mode",
        "hta_version",
        "device_type",
        "ranks",
        "device_activity",
        "last_step_filtered",
        "step",
        "errors",
        "notes",
    ];
    for key in context.iter().chain(&["insights"]) {
        assert_eq!(some[key], full[key], "{key}");
    }
    assert_eq!(keys.len(), context.len() + 2, "{keys:?}");
    assert!(!full["insights"].as_array().unwrap().is_empty());
    let roofline = &some["per_rank"][0]["roofline"];
    assert_eq!(some["per_rank"][0]["rank"], 1);
    assert_eq!(roofline, &full["per_rank"][0]["roofline"]);
    assert!(
        !roofline["ops"].as_array().unwrap().is_empty(),
        "{roofline}"
    );

    // query: the rows `query --format json` prints.
    let sql = "SELECT rank, name, count(*) AS calls, sum(dur_ns) AS total_ns FROM kernels \
               GROUP BY rank, name ORDER BY total_ns DESC, name, rank LIMIT 10";
    let expected = cli(&["query", sql, d, "--format", "json"]);
    let rows = client.text("query", json!({ "sql": sql, "paths": [d] }));
    assert_eq!(
        rows, expected,
        "query over MCP differs from query --format json"
    );
    let rows: Value = serde_json::from_str(&rows).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 10);
    assert!(rows[0]["total_ns"].as_i64().unwrap() > 0, "{rows}");

    // The other commands: the same JSON as their --json.
    let r0 = dir.join("rank0.pt.trace.json.gz");
    let r1 = dir.join("rank1.pt.trace.json.gz");
    let (r0, r1) = (r0.to_str().unwrap(), r1.to_str().unwrap());
    let same = [
        (
            "inspect",
            json!({ "paths": [d] }),
            vec!["inspect", d, "--json"],
        ),
        (
            "critical_path",
            json!({ "paths": [d] }),
            vec!["critical-path", d, "--json"],
        ),
        (
            "what_if",
            json!({ "paths": [d], "scales": ["rank:1=0.5"] }),
            vec!["what-if", d, "--scale", "rank:1=0.5", "--json"],
        ),
        (
            "diff",
            json!({ "control": r0, "test": r1, "rows": "device" }),
            vec!["diff", r0, r1, "--rows", "device", "--json"],
        ),
    ];
    for (tool, arguments, args) in same {
        assert_eq!(client.text(tool, arguments), cli(&args), "{tool}");
    }

    // export: the summary of export --json, the wall time aside.
    for (format, file) in [("perfetto", "t.pftrace"), ("perfetto-archive", "t.tar")] {
        let out_mcp = work.join(format!("mcp-{file}"));
        let out_cli = work.join(format!("cli-{file}"));
        let mut ours: Value = serde_json::from_str(&client.text(
            "export",
            json!({ "paths": [d], "format": format, "out": out_mcp }),
        ))
        .unwrap();
        let out = out_cli.to_str().unwrap();
        let mut theirs: Value = serde_json::from_str(&cli(&[
            "export", d, "--format", format, "-o", out, "--json",
        ]))
        .unwrap();
        for summary in [&mut ours, &mut theirs] {
            let object = summary.as_object_mut().unwrap();
            assert!(object.remove("seconds").unwrap().as_f64().unwrap() > 0.0);
            object.remove("out");
        }
        assert_eq!(ours, theirs, "{format}");
        assert_eq!(ours["format"], format);
        assert_eq!(
            std::fs::metadata(&out_mcp).unwrap().len(),
            ours["bytes_written"].as_u64().unwrap(),
            "{format}"
        );
    }

    // The schema resource is the documented schema, and the prompt walks the tools.
    let resources = client.request("resources/list", json!({}));
    assert!(
        resources.to_string().contains("neuronprof://sql/schema"),
        "{resources}"
    );
    let schema = client.request("resources/read", json!({"uri": "neuronprof://sql/schema"}));
    let schema = schema["contents"][0]["text"].as_str().unwrap();
    let documented = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/SQL-schema.md"),
    )
    .unwrap();
    assert_eq!(schema, documented);
    let prompt = client.request(
        "prompts/get",
        json!({"name": "investigate", "arguments": {"paths": d}}),
    );
    let steps = prompt["messages"][0]["content"]["text"].as_str().unwrap();
    let order: Vec<usize> = [
        "\"insights\"",
        "\"steps\"",
        "`critical_path`",
        "\"roofline\"",
        "`what_if`",
    ]
    .iter()
    .map(|s| {
        steps
            .find(s)
            .unwrap_or_else(|| panic!("the prompt lacks {s}"))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{steps}");
    drop(client);
    std::fs::remove_dir_all(&work).unwrap();
}

#[test]
fn paths_outside_the_allowed_folders_are_refused() {
    let dir = trace_dir();
    let d = dir.to_str().unwrap();
    let work = scratch("refused");
    let outside = common::shared_traces()
        .join("hta/simple_add.json.gz")
        .canonicalize()
        .unwrap();
    let elsewhere = scratch("refused-elsewhere");
    let mut client = Client::start(&[&dir, &work], &elsewhere.join("server.log"));

    // A trace that exists, outside: refused, naming the argument and the path.
    let text = client.error("analyze", json!({ "paths": [outside] }));
    assert!(
        text.contains("paths[0]")
            && text.contains(outside.to_str().unwrap())
            && text.contains("outside the allowed folders"),
        "{text}"
    );
    // `..` out of an allowed folder, even to a real trace folder.
    let dots = format!("{d}/../compiled-block");
    let text = client.error("inspect", json!({ "paths": [dots] }));
    assert!(text.contains("`..` is not allowed"), "{text}");
    // A symlink inside an allowed folder leading out: refused as a path and inside a
    // folder given.
    std::os::unix::fs::symlink(outside.parent().unwrap(), work.join("escape")).unwrap();
    let link = work.join("escape/simple_add.json.gz");
    let text = client.error("query", json!({ "sql": "SELECT 1", "paths": [link] }));
    assert!(text.contains("outside the allowed folders"), "{text}");
    let text = client.error("inspect", json!({ "paths": [work] }));
    assert!(text.contains("leads out of the allowed folders"), "{text}");
    std::fs::remove_file(work.join("escape")).unwrap();
    // A device file outside.
    let text = client.error("analyze", json!({ "paths": [d], "device_spec": outside }));
    assert!(
        text.contains("device_spec") && text.contains("outside"),
        "{text}"
    );
    // Export targets outside: nothing is written there.
    let target = elsewhere.join("out.pftrace");
    let text = client.error(
        "export",
        json!({ "paths": [d], "format": "perfetto", "out": target }),
    );
    assert!(text.contains("out `") && text.contains("outside"), "{text}");
    assert!(!target.exists(), "an export outside was written");
    let text = client.error(
        "export",
        json!({ "paths": [d], "format": "csv", "out": format!("{}/../x", work.display()) }),
    );
    assert!(text.contains("`..` is not allowed"), "{text}");
    std::os::unix::fs::symlink(&target, work.join("dangling.pftrace")).unwrap();
    let text = client.error(
        "export",
        json!({ "paths": [d], "format": "perfetto", "out": work.join("dangling.pftrace") }),
    );
    assert!(text.contains("does not resolve"), "{text}");
    assert!(
        !target.exists(),
        "an export through a symlink was written outside"
    );
    let text = client.error(
        "what_if",
        json!({ "paths": [d], "scales": ["host=0.5"], "out": elsewhere.join("predicted") }),
    );
    assert!(text.contains("outside"), "{text}");
    assert!(!elsewhere.join("predicted").exists());
    // Inside, the same export is written; relative paths are in the first folder.
    let inside = work.join("t.pftrace");
    client.text(
        "export",
        json!({ "paths": [d], "format": "perfetto", "out": inside }),
    );
    assert!(inside.is_file());
    client.text("inspect", json!({ "paths": ["rank0.pt.trace.json.gz"] }));
    drop(client);
    std::fs::remove_dir_all(&work).unwrap();
    std::fs::remove_dir_all(&elsewhere).unwrap();
}

#[test]
fn bad_traces_and_sql_are_tool_errors_that_say_what_and_where() {
    let dir = trace_dir();
    let d = dir.to_str().unwrap();
    let work = scratch("errors");
    // rank 0 cut short in the middle of its events.
    let whole = common::gunzip(&dir.join("rank0.pt.trace.json.gz"));
    let cut = work.join("cut.json");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let mut client = Client::start(&[&dir, &work], &work.join("server.log"));

    let text = client.error("analyze", json!({ "paths": [cut] }));
    assert!(
        text.starts_with("analyze: ") && text.contains("cut.json") && text.contains("byte"),
        "{text}"
    );
    let text = client.error(
        "query",
        json!({ "sql": "SELECT no_such_column FROM kernels", "paths": [d] }),
    );
    assert!(
        text.contains("no_such_column") && text.contains("line 1"),
        "{text}"
    );
    let copy = work.join("copied.csv");
    let text = client.error(
        "query",
        json!({ "sql": format!("COPY (SELECT name FROM kernels) TO '{}'", copy.display()),
                "paths": [d] }),
    );
    assert!(
        !copy.exists() && text.contains("read-only") && !text.contains("--allow-write"),
        "{text}"
    );
    let text = client.error(
        "query",
        json!({ "sql": "SELECT * FROM '/etc/passwd'", "paths": [d] }),
    );
    assert!(
        text.contains("/etc/passwd") && text.contains("not found"),
        "{text}"
    );
    let text = client.error("what_if", json!({ "paths": [d], "scales": ["kernel:(=2"] }));
    assert!(text.starts_with("what_if: "), "{text}");
    // Arguments that do not fit the schema are refused, naming the one at fault.
    let text = client.error("analyze", json!({ "paths": [d], "sectionz": ["steps"] }));
    assert!(text.contains("unknown field `sectionz`"), "{text}");
    let text = client.error("analyze", json!({ "paths": [d], "sections": ["stepz"] }));
    assert!(text.contains("stepz"), "{text}");
    // After all that, the server still answers.
    assert_eq!(client.request("ping", json!({})), json!({}));
    client.text("analyze", json!({ "paths": [d], "sections": ["steps"] }));
    drop(client);
    std::fs::remove_dir_all(&work).unwrap();
}
