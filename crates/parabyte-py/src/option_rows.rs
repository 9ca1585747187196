//! The one table of options (`parabyte_cli::option_table`) as Python sees it, so that
//! Python's own tests hold every function's keywords, the `.pyi` stubs and the docs to it.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use parabyte_cli::Reach;

/// Every option of every command: `flag`, `value_name`, `default`, `help`, `commands`,
/// `reach` ("client", "call" or "cli") and `keyword` (None for the command line's own).
#[pyfunction]
pub fn option_table(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    parabyte_cli::option_table()
        .into_iter()
        .map(|row| {
            let fields = PyDict::new(py);
            fields.set_item("flag", row.flag)?;
            fields.set_item("value_name", row.value_name)?;
            fields.set_item("default", row.default)?;
            fields.set_item("help", row.help)?;
            fields.set_item("commands", row.commands)?;
            let reach = match row.reach {
                Reach::Client => "client",
                Reach::Call => "call",
                Reach::CliOnly => "cli",
            };
            fields.set_item("reach", reach)?;
            fields.set_item("keyword", row.keyword)?;
            Ok(fields)
        })
        .collect()
}
