//! `docs/SQL.md` shows the schema generated from `exporters::tables::SCHEMAS` (the same
//! text as `docs/SQL-schema.md`, which the tables' rustdoc includes) and every ready
//! query of `query/queries/` verbatim, so the documentation is what the tests run.

use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn docs_show_the_schema_and_the_ready_queries() {
    let schema = exporters::tables::schema_markdown();
    let generated = std::fs::read_to_string(repo().join("docs/SQL-schema.md")).unwrap();
    assert!(
        generated == schema,
        "docs/SQL-schema.md is stale: run `cargo run -p exporters --example sql_schema > \
         docs/SQL-schema.md` and paste it into docs/SQL.md between the schema markers"
    );
    let doc = std::fs::read_to_string(repo().join("docs/SQL.md")).unwrap();
    let begin = doc.find("<!-- schema:begin").expect("schema:begin marker");
    let begin = begin + doc[begin..].find("-->\n").unwrap() + 4;
    let end = doc.find("<!-- schema:end -->").expect("schema:end marker");
    assert!(
        doc[begin..end] == schema,
        "docs/SQL.md's schema section is stale"
    );
    let mut queries = 0;
    for entry in std::fs::read_dir(repo().join("query/queries")).unwrap() {
        let path = entry.unwrap().path();
        let sql = std::fs::read_to_string(&path).unwrap();
        assert!(
            doc.contains(&format!("```sql\n{sql}```")),
            "docs/SQL.md lacks {} verbatim",
            path.display()
        );
        queries += 1;
    }
    assert_eq!(queries, 7);
}
