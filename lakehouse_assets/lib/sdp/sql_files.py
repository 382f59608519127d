"""SQL pipeline files, as ``spark-pipelines`` reads them: one dataset or flow per statement.

    CREATE STREAMING TABLE orders_clean COMMENT 'Valid orders' AS
      SELECT * FROM STREAM(bronze_orders) WHERE amount > 0;
    CREATE MATERIALIZED VIEW revenue AS
      SELECT customer_id, SUM(amount) AS revenue FROM orders_clean GROUP BY customer_id;
    CREATE TEMPORARY VIEW big_orders AS SELECT * FROM orders_clean WHERE amount > 100;
    CREATE STREAMING TABLE all_orders;
    CREATE FLOW eu AS INSERT INTO all_orders BY NAME SELECT * FROM STREAM(orders_eu);

Each statement becomes the same graph elements the Python decorators register. Its query is
handed to Spark as written, with each dataset it names bound to the frame the engine read for
it (``STREAM(x)`` / ``STREAM x``: as a stream; a plain name: as a snapshot); SQL's own parser
(``sqlglot``, Databricks dialect) only finds which datasets those are, for the lineage.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlglot
from pyspark.pipelines.flow import Flow
from pyspark.pipelines.output import MaterializedView, StreamingTable, TemporaryView
from pyspark.pipelines.source_code_location import SourceCodeLocation
from sqlglot import exp

from lakehouse_assets.lib.declare.expectations import Expectation
from lakehouse_assets.lib.errors import DeclarationError, first_line
from lakehouse_assets.lib.sdp.api import expect_each
from lakehouse_assets.lib.sdp.graph import PipelineGraph
from lakehouse_assets.lib.sdp.spark_proxy import SPARK, configured
from lakehouse_assets.lib.sdp.sql_cdc import auto_cdc_flow

_NAME = r"[`\w][`\w.]*"
_DATASET = re.compile(
    rf"CREATE\s+(?:OR\s+REFRESH\s+)?(?P<kind>STREAMING\s+TABLE|MATERIALIZED\s+VIEW|TEMP(?:ORARY)?\s+VIEW)\s+"
    rf"(?P<name>{_NAME})(?P<rest>.*)",
    re.IGNORECASE | re.DOTALL,
)
_FLOW = re.compile(
    rf"CREATE\s+FLOW\s+(?P<name>{_NAME})\s+AS\s+INSERT\s+INTO\s+(?P<target>{_NAME})\s+BY\s+NAME\s+(?P<query>.*)",
    re.IGNORECASE | re.DOTALL,
)
_STREAM_CALL = re.compile(rf"\b(FROM|JOIN)\s+STREAM\s*\(\s*({_NAME})\s*\)", re.IGNORECASE)
_STREAM_WORD = re.compile(rf"\b(FROM|JOIN)\s+STREAM\s+({_NAME})", re.IGNORECASE)


def statements(text: str) -> list[tuple[int, str]]:
    """The file's statements with the line each starts on: split at ``;`` outside quotes and
    comments, comments left out."""
    found: list[tuple[int, str]] = []
    current: list[str] = []
    line, start, i, quote = 1, None, 0, ""
    while i < len(text):
        char = text[i]
        if quote:
            current.append(char)
            if char == quote:
                quote = ""
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            skipped = text[i : len(text) if end < 0 else end + 2]
            line += skipped.count("\n")
            i += len(skipped)
            continue
        elif char == ";":
            if "".join(current).strip():
                found.append((start or line, "".join(current).strip()))
            current, start = [], None
        else:
            if char in "'\"`":
                quote = char
            if start is None and not char.isspace():
                start = line
            current.append(char)
        line += char == "\n"
        i += 1
    if "".join(current).strip():
        found.append((start or line, "".join(current).strip()))
    return found


def _group(text: str) -> tuple[str, str]:
    """A parenthesised group at the start of ``text`` (its inside) and what follows it."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return text[1:i], text[i + 1 :]
    raise ValueError("unbalanced parentheses")


def _split_top_level(text: str) -> list[str]:
    """``text`` split at commas outside parentheses and quotes, each part stripped."""
    parts: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif char in "()":
            depth += 1 if char == "(" else -1
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    return [p for p in [*parts, "".join(current).strip()] if p]


_ON_VIOLATION = {"": "warn", "DROP ROW": "drop", "FAIL UPDATE": "fail"}


def _constraint(item: str, place: str) -> Expectation:
    """``CONSTRAINT name EXPECT (condition) [ON VIOLATION DROP ROW | FAIL UPDATE]``."""
    match = re.fullmatch(r"CONSTRAINT\s+(\w+)\s+EXPECT\s*(\(.*\))\s*(?:ON\s+VIOLATION\s+(\w+\s+\w+))?", item,
                         re.IGNORECASE | re.DOTALL)  # fmt: skip
    violation = " ".join((match[3] or "").upper().split()) if match else None
    if match is None or violation not in _ON_VIOLATION:
        raise DeclarationError(
            f"{place}: cannot read {item[:60]!r}; write CONSTRAINT <name> EXPECT (<condition>) "
            "[ON VIOLATION DROP ROW | FAIL UPDATE]"
        )
    condition, _ = _group(match[2])
    return Expectation(match[1], condition.strip(), _ON_VIOLATION[violation])  # type: ignore[arg-type]


def _unquote(name: str) -> str:
    return name.replace("`", "")


def _clauses(rest: str, place: str) -> tuple[dict[str, Any], str | None]:
    """The options between a dataset's name and ``AS`` (schema, COMMENT, TBLPROPERTIES,
    PARTITIONED BY, CLUSTER BY), and the query after ``AS`` (None: a table its flows write)."""
    options: dict[str, Any] = {"table_properties": {}}
    rest = rest.strip()
    while rest:
        upper = rest.upper()
        if rest.startswith("("):
            inside, rest = _group(rest)
            items = _split_top_level(inside)
            options["expectations"] = [_constraint(i, place) for i in items if i.upper().startswith("CONSTRAINT")]
            columns = [i for i in items if not i.upper().startswith("CONSTRAINT")]
            options["schema"] = ", ".join(columns) or None
        elif match := re.match(r"COMMENT\s+'((?:[^']|'')*)'", rest, re.IGNORECASE):
            options["comment"], rest = match.group(1).replace("''", "'"), rest[match.end() :]
        elif match := re.match(r"(TBLPROPERTIES|PARTITIONED\s+BY|CLUSTER\s+BY)\s*(?=\()", rest, re.IGNORECASE):
            inside, rest = _group(rest[match.end() :])
            key = match.group(1).split()[0].upper()
            if key == "TBLPROPERTIES":
                pairs = re.findall(r"'([^']*)'\s*=\s*'([^']*)'", inside)
                options["table_properties"] = dict(pairs)
            else:
                columns = [_unquote(c.strip()) for c in inside.split(",") if c.strip()]
                options["partition_cols" if key == "PARTITIONED" else "cluster_by"] = columns
        elif upper.startswith("AS") and (len(rest) == 2 or rest[2].isspace()):
            return options, rest[2:].strip()
        else:
            raise DeclarationError(f"{place}: cannot read {rest.split()[0]!r} here; expected COMMENT, TBLPROPERTIES, "
                                   "PARTITIONED BY, CLUSTER BY or AS <query>")  # fmt: skip
        rest = rest.strip()
    return options, None


def datasets_read(query: str, place: str) -> dict[str, bool]:
    """The datasets a query reads, each as a stream (``STREAM``) or a snapshot."""
    try:
        tree = sqlglot.parse_one(query, read="databricks")
    except sqlglot.errors.ParseError as error:
        raise DeclarationError(f"{place}: the query does not parse: {first_line(error)}") from None
    own = {cte.alias for cte in tree.find_all(exp.CTE)}
    reads: dict[str, bool] = {}
    for table in tree.find_all(exp.Table):
        if not table.name or table.name in own:
            continue
        name = ".".join(part for part in (table.catalog, table.db, table.name) if part)
        streaming = table.find_ancestor(exp.Stream) is not None
        if reads.get(name, streaming) != streaming:
            raise DeclarationError(f"{place}: the query reads {name} both as a stream and as a snapshot")
        reads[name] = streaming
    return reads


def query_function(query: str, place: str) -> Callable[[], Any]:
    """The flow's function: the query, with every dataset it names bound to the frame
    ``spark.readStream.table`` / ``spark.read.table`` gives for it."""
    reads = datasets_read(query, place)
    if not reads:
        raise DeclarationError(
            f"{place}: the query reads no dataset of this pipeline; read raw sources in a Python @dp.table"
        )
    text = _STREAM_WORD.sub(r"\1 \2", _STREAM_CALL.sub(r"\1 \2", query))

    def build() -> Any:
        from pyspark.sql.connect.dataframe import DataFrame
        from pyspark.sql.connect.plan import SQL, SubqueryAlias

        frames = {n: (SPARK.readStream if streaming else SPARK.read).table(n) for n, streaming in reads.items()}
        session = next(iter(frames.values())).sparkSession
        if not isinstance(next(iter(frames.values())), DataFrame):  # a classic session: temporary views
            for name, frame in frames.items():
                frame.createOrReplaceTempView(name)
            return session.sql(text)
        # A Spark Connect plan, built without a round trip: the SQL and the frames it names.
        views = [SubqueryAlias(frame._plan, name) for name, frame in frames.items()]
        return DataFrame(SQL(text, None, None, views), session)

    return build


_VARIABLE = re.compile(r"\$\{([\w.]+)\}")


def _substituted(statement: str, variables: dict[str, str]) -> str:
    """``${key}`` replaced by a ``SET`` of the file or the spec's ``configuration`` (else kept)."""

    def value(match: re.Match[str]) -> str:
        key = match[1]
        found = variables.get(key, configured(key))
        return match[0] if found is None else str(found)

    return _VARIABLE.sub(value, statement)


def register_sql_file(graph: PipelineGraph, text: str, file: Path) -> None:
    """Register every statement of the SQL file ``file`` in ``graph``. ``SET key = value``
    defines ``${key}`` for the statements after it (as the spec's ``configuration`` does) and,
    as spark-pipelines does, is a Spark setting of every flow the file declares after it."""
    variables: dict[str, str] = {}
    for line, raw in statements(text):
        location = SourceCodeLocation(filename=str(file), line_number=line)
        place = f"{file}:{line}"
        statement = _substituted(raw, variables)
        if match := re.fullmatch(r"SET\s+([\w.]+)\s*=\s*(.*)", statement, re.IGNORECASE | re.DOTALL):
            variables[match[1]] = match[2].strip().strip("'\"")
            continue
        if cdc := auto_cdc_flow(statement, location):
            graph.register_auto_cdc_flow(cdc)
            continue
        if match := _FLOW.fullmatch(statement):
            name, target = _unquote(match["name"]), _unquote(match["target"])
            graph.register_flow(Flow(name, target, dict(variables), location, query_function(match["query"], place)))
            continue
        match = _DATASET.fullmatch(statement)
        if match is None:
            raise DeclarationError(
                f"{place}: not a pipeline statement: {statement.split(chr(10))[0][:80]!r} (CREATE STREAMING TABLE, "
                "CREATE MATERIALIZED VIEW, CREATE TEMPORARY VIEW, CREATE FLOW ... AS INSERT INTO ... BY NAME, "
                "CREATE FLOW ... AS AUTO CDC INTO ..., APPLY CHANGES INTO ... or SET)"
            )
        name, kind = _unquote(match["name"]), " ".join(match["kind"].upper().split())
        options, query = _clauses(match["rest"], place)
        expectations = options.pop("expectations", [])
        if kind.endswith("VIEW") and kind != "MATERIALIZED VIEW":
            graph.register_output(
                TemporaryView(name=name, comment=options.get("comment"), source_code_location=location)
            )
        else:
            cls = StreamingTable if kind == "STREAMING TABLE" else MaterializedView
            defaults = {"comment": None, "partition_cols": None, "cluster_by": None, "schema": None, "format": None}
            graph.register_output(cls(name=name, source_code_location=location, **(defaults | options)))
        if query is None:
            if kind != "STREAMING TABLE":
                raise DeclarationError(f"{place}: {kind.lower()} {name} has no query (AS SELECT ...)")
            if expectations:
                raise DeclarationError(f"{place}: {name} has no query for its CONSTRAINTs to check; put them on a "
                                       "dataset with AS SELECT ...")  # fmt: skip
            continue
        function = expect_each(expectations)(query_function(query, place))
        graph.register_flow(Flow(name, name, dict(variables), location, function))
