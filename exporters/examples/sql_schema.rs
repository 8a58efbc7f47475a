//! Prints the tables' schema as Markdown (`docs/SQL-schema.md`, see
//! `exporters::tables::schema_markdown`).

fn main() {
    print!("{}", exporters::tables::schema_markdown());
}
