"""SQL checks on the model's output: ``is-sql`` and ``contains-sql``, as promptfoo reads them.

promptfoo parses with node-sql-parser's grammar for the value's ``databaseType`` (MySQL when
none is given); skilleval parses with sqlglot's matching dialect. The two parsers are
different programs, so their verdicts differ at the edges of each grammar; the cases in
``tests/data/promptfoo/sql/`` are pinned from promptfoo and agree. Text a parser reads as a
bare expression (``hello world`` is a column with an alias to sqlglot) is not a statement and
fails, as it does in promptfoo. promptfoo's own checks on top of its parser are kept: an odd
number of backticks, a select list missing a comma (``SELECT id name FROM t``), and MySQL's
lack of ``generate_series``. Where sqlglot forgives what node-sql-parser refuses, the refusal
is added (a trailing comma, an empty select list or SET, a clause word as an alias, ``==``);
statements sqlglot keeps unparsed (``REPLACE INTO``, ``CALL``, ``LOCK TABLES``) are accepted.

``allowedTables`` and ``allowedColumns`` are node-sql-parser's allow-lists: each entry is a
case-insensitive pattern for ``ACTION::DATABASE::TABLE`` (``select::null::users``) or
``ACTION::TABLE::COLUMN`` (``select::users::id``; ``null`` where a column names no table, and
``(.*)`` for ``*``).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import regex

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import clip
from skilleval.suite.template import is_template

if TYPE_CHECKING:
    from sqlglot import exp

DIALECTS: dict[str, str] = {
    "athena": "athena",
    "bigquery": "bigquery",
    "db2": "",
    "flinksql": "",
    "hive": "hive",
    "mariadb": "mysql",
    "mysql": "mysql",
    "noql": "",
    "postgresql": "postgres",
    "redshift": "redshift",
    "snowflake": "snowflake",
    "sqlite": "sqlite",
    "transactsql": "tsql",
    "trino": "trino",
}
"""node-sql-parser's database names (as promptfoo's ``databaseType``, any case) and the
sqlglot dialect each is read with; ``""`` is sqlglot's generic SQL, for the grammars sqlglot
has no dialect of."""

_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string", "minLength": 1}}
_VALUE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "databaseType": {"type": "string", "minLength": 1},
        "allowedTables": _LIST,
        "allowedColumns": _LIST,
    },
    "additionalProperties": False,
    "description": "promptfoo's {databaseType, allowedTables, allowedColumns}",
}

_IDENT = "[A-Za-z_][A-Za-z0-9_]*"
_MODIFIERS = "(?:all|distinct)"
_MYSQL_MODIFIERS = (
    "(?:all|distinct(?:row)?|high_priority|straight_join"
    "|sql_(?:big_result|buffer_result|cache|calc_found_rows|no_cache|small_result))"
)


_RAW_STATEMENT = re.compile(
    r"(?:REPLACE\s+(?:INTO\s+)?[\w`.\"]+|CALL\s+[\w`.\"]+\s*\(|(?:UN)?LOCK\s+TABLES?\b)",
    re.IGNORECASE,
)
_CLAUSE_WORDS = frozenset(
    {"ORDER", "GROUP", "WHERE", "LIMIT", "HAVING", "FROM", "SELECT", "BY", "ON", "JOIN", "UNION"}
)
_TRAILING_COMMA = re.compile(
    r",\s*(?:\)|$|;|\b(?:from|where|group|order|having|limit|union|into|values)\b)",
    re.IGNORECASE,
)


@functools.cache
def _missing_comma(modifiers: str) -> re.Pattern[str]:
    """Two bare names in a row between SELECT (and its modifiers) and FROM."""
    return re.compile(
        rf"\bselect\s+(?:{modifiers}\s+)*(?!{modifiers}\b){_IDENT}\s+{_IDENT}\s+from\b",
        re.IGNORECASE,
    )


def _without_literals(sql: str, database: str) -> str:
    """``sql`` with quoted text replaced by a placeholder and comments by a space, so the
    missing-comma rule sees only the statement's own words."""
    brackets = database in ("transactsql", "sqlite")
    out: list[str] = []
    i = 0
    start = 0
    while i < len(sql):
        c = sql[i]
        end: int | None = None
        placeholder = " "
        if c in "'\"`" or (c == "[" and brackets):
            end = _quote_end(sql, i, "]" if c == "[" else c)
            placeholder = " ? "
        elif sql.startswith("--", i) or c == "#":
            newline = re.compile(r"[\r\n]").search(sql, i)
            end = newline.start() if newline else len(sql)
        elif sql.startswith("/*", i):
            close = sql.find("*/", i + 2)
            end = len(sql) if close < 0 else close + 2
        elif c == "$" and (tag := re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$").match(sql, i)):
            close = sql.find(tag.group(), tag.end())
            end = len(sql) if close < 0 else close + len(tag.group())
            placeholder = " ? "
        if end is None:
            i += 1
            continue
        out.extend((sql[start:i], placeholder))
        i = start = end
    out.append(sql[start:])
    return "".join(out)


def _quote_end(sql: str, at: int, close: str) -> int:
    i = at + 1
    while i < len(sql):
        if close != "]" and sql[i] == "\\":
            i += 2
            continue
        if sql[i] == close:
            if sql[i + 1 : i + 2] == close:
                i += 2
                continue
            return i + 1
        i += 1
    return len(sql)


def _statements(sql: str, dialect: str) -> list[exp.Expr] | str:
    """The statements of ``sql``, or why it is not SQL of ``dialect``."""
    import sqlglot  # lazy: start-up time
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    quiet = logging.getLogger("sqlglot")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its notes on statements it keeps as raw commands
    try:
        parsed = [s for s in sqlglot.parse(sql, read=dialect or None) if s is not None]
    except SqlglotError as exc:
        return clip(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    except RecursionError:
        return "the statement nests too deeply to parse"
    finally:
        quiet.setLevel(level)
    if not parsed:
        return "there is no statement"
    kinds = (
        exp.Query,
        exp.DML,
        exp.DDL,
        exp.Drop,
        exp.Alter,
        exp.Transaction,
        exp.Commit,
        exp.Rollback,
        exp.Use,
        exp.Set,
        exp.Show,
        exp.Describe,
        exp.Pragma,
        exp.TruncateTable,
    )
    for statement in parsed:
        if isinstance(statement, exp.Command) and _RAW_STATEMENT.match(statement.sql()):
            continue  # a statement sqlglot keeps unparsed (REPLACE INTO, CALL, LOCK TABLES)
        if not isinstance(statement, kinds):
            return f"{clip(statement.sql(), 40)!r} is an expression, not a statement"
        if any(not s.expressions for s in statement.find_all(exp.Select)):
            return "a SELECT with nothing to select"
        if isinstance(statement, exp.Update) and not statement.expressions:
            return "an UPDATE with nothing to set"
        for alias in statement.find_all(exp.TableAlias, exp.Alias):
            name = alias.args.get("this" if isinstance(alias, exp.TableAlias) else "alias")
            word = name.name if isinstance(name, exp.Identifier) and not name.quoted else ""
            if word.upper() in _CLAUSE_WORDS:
                return f"{word!r} is a keyword, not a name"
    return parsed


def _action(node: exp.Expr) -> str:
    """The verb an allow-list entry names for a table or column found at ``node``."""
    from sqlglot import exp  # lazy: start-up time

    parent = node.parent
    child = node
    while parent is not None:
        if isinstance(parent, exp.Select | exp.SetOperation):
            return "select"
        if isinstance(parent, exp.Insert):
            return "insert" if child is parent.this else "select"
        if isinstance(parent, exp.Update):
            return "update"
        if isinstance(parent, exp.Delete):
            return "delete"
        if isinstance(parent, exp.Create | exp.Drop | exp.Alter):
            return type(parent).__name__.lower()
        child, parent = parent, parent.parent
    return "select"


def _tables(statements: Sequence[exp.Expr]) -> Iterator[str]:
    from sqlglot import exp  # lazy: start-up time

    for statement in statements:
        ctes = {c.alias_or_name.lower() for c in statement.find_all(exp.CTE)}
        for table in statement.find_all(exp.Table):
            if not table.name or table.name.lower() in ctes:
                continue
            yield f"{_action(table)}::{table.db or 'null'}::{table.name}"


def _columns(statements: Sequence[exp.Expr]) -> Iterator[str]:
    from sqlglot import exp  # lazy: start-up time

    for statement in statements:
        aliases = {t.alias: t.name for t in statement.find_all(exp.Table) if t.alias and t.name}
        for star in statement.find_all(exp.Star):
            if isinstance(star.parent, exp.Select):
                yield f"{_action(star)}::null::(.*)"
        for column in statement.find_all(exp.Column):
            if isinstance(column.this, exp.Star):
                table = aliases.get(column.table, column.table) or "null"
                yield f"{_action(column)}::{table}::(.*)"
                continue
            table = aliases.get(column.table, column.table) or "null"
            yield f"{_action(column)}::{table}::{column.name}"


def _first_denied(found: Iterator[str], allowed: Sequence[str]) -> str | None:
    patterns = []
    for entry in allowed:
        try:
            patterns.append(regex.compile(f"^(?:{entry})$", regex.IGNORECASE))
        except regex.error:
            patterns.append(regex.compile(f"^{regex.escape(entry)}$", regex.IGNORECASE))
    for authority in found:
        if not any(p.search(authority, timeout=1.0) for p in patterns):
            return authority
    return None


def _with_null_tables(columns: Sequence[str]) -> list[str]:
    """``allowedColumns`` with ``ACTION::null::COLUMN`` beside each ``ACTION::TABLE::COLUMN``,
    as promptfoo adds it (a column written without its table is then allowed too)."""
    out = list(columns)
    for entry in columns:
        parts = entry.split("::")
        if len(parts) == 3 and parts[1] != "null":
            alt = f"{parts[0]}::null::{parts[2]}"
            if alt not in out:
                out.append(alt)
    return out


def check_sql_value(value: Any) -> str | None:
    """The database must be one node-sql-parser has a grammar for."""
    if not isinstance(value, Mapping) or "databaseType" not in value:
        return None
    name = str(value["databaseType"])
    if name.lower() not in DIALECTS and not is_template(name):
        known = ", ".join(sorted(DIALECTS))
        return f"databaseType {name!r} is not one promptfoo knows; use one of {known}"
    return None


def sql_problems(sql: str, value: Any) -> list[str]:
    """Why ``sql`` is not a statement of the value's database, or breaks its allow-lists;
    empty when it is fine."""
    spec = value if isinstance(value, Mapping) else {}
    database = str(spec.get("databaseType") or "MySQL")
    key = database.lower()
    syntax = f"SQL statement does not conform to the provided {database} database syntax"
    text = sql.strip()
    if not text:
        return [syntax]
    problems: list[str] = []
    if text.count("`") % 2:
        problems.append(f"{syntax} (an unmatched backtick)")
    modifiers = _MYSQL_MODIFIERS if key in ("mysql", "mariadb") else _MODIFIERS
    if _missing_comma(modifiers).search(_without_literals(text, key)):
        problems.append(f"{syntax} (two names in a row in the select list: a missing comma?)")
    # sqlglot forgives a comma before FROM or a closing parenthesis; SQL grammars do not.
    bare = _without_literals(text, key)
    if _TRAILING_COMMA.search(bare):
        problems.append(f"{syntax} (a comma with nothing after it)")
    if key != "sqlite" and "==" in bare:
        problems.append(f"{syntax} (`==` is not an SQL operator)")
    if key == "mysql" and re.search(r"\bgenerate_series\s*\(", text, re.IGNORECASE):
        problems.append(f"{syntax} (MySQL has no generate_series)")
    parsed = _statements(sql, DIALECTS.get(key, ""))
    if isinstance(parsed, str):
        return [*problems, f"{syntax}: {parsed}"]
    tables = spec.get("allowedTables")
    if tables:
        denied = _first_denied(_tables(parsed), [str(t) for t in tables])
        if denied is not None:
            problems.append(f"SQL uses {denied}, which allowedTables does not allow")
    columns = spec.get("allowedColumns")
    if columns:
        denied = _first_denied(_columns(parsed), _with_null_tables([str(c) for c in columns]))
        if denied is not None:
            problems.append(f"SQL uses {denied}, which allowedColumns does not allow")
    return problems


@assertion("is-sql", value=_VALUE, value_required=False, check_value=check_sql_value)
def is_sql(check: Check) -> Verdict:
    """Whole output is SQL of ``databaseType`` (MySQL by default), within the allow-lists."""
    unknown = check_sql_value(check.value)  # a templated name, once filled in
    if unknown is not None:
        return Verdict.errored(unknown)
    problems = sql_problems(check.output, check.value)
    if problems:
        return Verdict.of(False, "; ".join(problems))
    return Verdict.of(True, "output is SQL")


_FENCE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})(.*)")


def sql_blocks(text: str) -> list[str]:
    """The bodies of the Markdown code fences tagged ``sql`` or not tagged, in order."""
    blocks: list[str] = []
    body: list[str] | None = None
    fence = ""
    is_sql = False
    for line in re.split(r"\r\n?|\n", text):
        found = _FENCE.match(line)
        if body is None:
            if found:
                fence, is_sql = found.group(1), found.group(2).strip().lower() in ("", "sql")
                body = []
            continue
        if (
            found
            and found.group(2).strip(" \t") == ""
            and found.group(1)[0] == fence[0]
            and len(found.group(1)) >= len(fence)
        ):
            if is_sql:
                blocks.append("\n".join(body).strip())
            body = None
        else:
            body.append(line)
    return blocks


@assertion("contains-sql", value=_VALUE, value_required=False, check_value=check_sql_value)
def contains_sql(check: Check) -> Verdict:
    """Output holds SQL: a fenced block (tagged ``sql`` or untagged) that is SQL, or, when
    there is no such block, the whole output."""
    unknown = check_sql_value(check.value)  # a templated name, once filled in
    if unknown is not None:
        return Verdict.errored(unknown)
    blocks = sql_blocks(check.output)
    candidates = blocks or [check.output]
    last = "output does not contain valid SQL"
    for number, candidate in enumerate(candidates, 1):
        if not candidate.strip():
            continue
        problems = sql_problems(candidate, check.value)
        if not problems:
            where = f"code block {number}" if blocks else "the output"
            return Verdict.of(True, f"{where} is SQL")
        last = "; ".join(problems)
    return Verdict.of(False, last)
