"""Python's keywords held to the one table of options.

`parabyte._native.option_table()` is read from the command line's own flags (the one place
an option is declared, crates/parabyte-cli/src/options_table.rs). Each test here fails when
a Python function, the `Client`, or the `.pyi` stubs disagree with it: a flag added to a
command and not to its functions, a keyword that no command knows, a stub that drifted.
"""

import ast
import inspect
from pathlib import Path

import parabyte
from parabyte import _native

ROWS = _native.option_table()

# The Python functions of each command that has them.
FUNCTIONS_OF = {
    "cp": ("download", "upload", "copy"),
    "mv": ("move",),
    "sync": ("sync",),
    "rm": ("remove",),
    "rb": ("remove_bucket",),
}

# What Python takes that no flag is: keys the CLI reads from the environment, an old name
# kept working, a progress callback (the CLI draws a bar), a key range of a split prefix.
PYTHON_ONLY = {
    "Client": {"access_key_id", "secret_access_key", "session_token", "threads"},
    "call": {"progress", "after", "until_after"},
}


def _keywords(function: str) -> set[str]:
    """The keywords `function` takes: its transfer's set, or its own signature's."""
    accepted = parabyte._KEYWORDS_OF.get(function)
    if accepted is not None:
        return set(accepted)
    parameters = inspect.signature(getattr(parabyte, function)).parameters.values()
    return {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_the_client_takes_every_client_option_and_nothing_else() -> None:
    table = {row["keyword"] for row in ROWS if row["reach"] == "client"}
    taken = set(inspect.signature(_native.Client).parameters)
    assert table - taken == set(), "flags the Client lacks"
    assert taken - table == PYTHON_ONLY["Client"], "Client keywords no flag names"


def test_each_function_takes_the_options_of_its_command() -> None:
    for row in ROWS:
        if row["reach"] != "call":
            continue
        for command in row["commands"]:
            functions = FUNCTIONS_OF.get(command, ())
            if not functions:
                continue
            takes = set().union(*(_keywords(function) for function in functions))
            assert row["keyword"] in takes, (
                f"--{row['flag']} of {command} is no keyword of {', '.join(functions)}"
            )


def test_each_keyword_of_a_function_is_an_option_of_its_command() -> None:
    by_command: dict[str, set[str]] = {}
    for row in ROWS:
        if row["reach"] == "call":
            for command in row["commands"]:
                by_command.setdefault(command, set()).add(row["keyword"])
    for command, functions in FUNCTIONS_OF.items():
        for function in functions:
            extra = _keywords(function) - by_command.get(command, set()) - PYTHON_ONLY["call"]
            assert extra == set(), f"{function}() takes {extra}, which {command} does not"


def test_the_stubs_list_the_clients_keywords() -> None:
    stub = Path(_native.__file__).with_name("_native.pyi")
    tree = ast.parse(stub.read_text())
    client = next(
        node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Client"
    )
    init = next(
        node
        for node in client.body
        if isinstance(node, ast.FunctionDef) and node.name == "__init__"
    )
    stubbed = {argument.arg for argument in init.args.kwonlyargs}
    assert stubbed == set(inspect.signature(_native.Client).parameters)


def test_messages_name_flags_as_keywords() -> None:
    # Core messages name CLI flags; Python shows them as the table's keywords.
    try:
        parabyte.Client(workers=0)
    except parabyte.InvalidInputError as error:
        assert "workers" in str(error) and "--workers" not in str(error), str(error)
    else:
        raise AssertionError("workers=0 was taken")


def test_the_summary_has_the_fields_the_cli_json_shows() -> None:
    # One declaration (the core's `Summary`, as `--json` prints it): Python's summary, its
    # dict and its stub name the same fields.
    fields = set(_native.SUMMARY_FIELDS)
    assert "elapsed_seconds" in fields and "sent_with_md5_objects" in fields
    assert set(parabyte.Summary().to_dict()) == fields
    stub = Path(_native.__file__).with_name("_native.pyi")
    tree = ast.parse(stub.read_text())
    summary = next(
        node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Summary"
    )
    stubbed = {
        node.target.id
        for node in summary.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }
    assert stubbed == fields


def test_summaries_add_up_by_the_one_merge() -> None:
    first = parabyte.Summary(
        objects=2, bytes=10, sent_with_md5=1, sent_with_md5_objects=["s3://b/a"]
    )
    second = parabyte.Summary(objects=1, bytes=5, resumed=1, resumed_bytes=3)
    merged = parabyte.Summary.merged([first, second], 2.0, resumed_from=[first])
    assert (merged.objects, merged.bytes, merged.resumed) == (3, 15, 0)
    assert merged.sent_with_md5_objects == ["s3://b/a"]
    assert merged.bytes_per_second == 7.5
    assert merged.elapsed == merged.elapsed_seconds == 2.0
