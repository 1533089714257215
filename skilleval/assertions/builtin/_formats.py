"""JSON Schema ``format`` keywords, checked as promptfoo checks them.

promptfoo validates schemas with Ajv and the ``ajv-formats`` package in its full mode, so a
schema's ``format`` is a constraint there, not an annotation. This module gives jsonschema a
format checker with the same readings: the RFC 3339 dates and times (real calendar days,
a leap second only at 23:59:60 UTC), RFC 3986 URIs, dotted IPv4 without leading zeros, IPv6
without a zone, a UUID with its hyphens (``urn:uuid:`` allowed), an e-mail address whose
domain has at least two labels, and the numeric ``int32`` and ``int64``.

A format constrains only values of its own kind: strings for the text formats, numbers for
``int32``, ``int64``, ``float`` and ``double``; any other value passes. A format name this
table does not know is left unchecked, as jsonschema does.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import re
from collections.abc import Callable
from typing import Any

import regex as regex_module

# -- dates and times (RFC 3339, section 5.6) ---------------------------------------------------

_DATE = re.compile(r"(\d{4})-(\d\d)-(\d\d)", re.ASCII)
_TIME = re.compile(r"(\d\d):(\d\d):(\d\d(?:\.\d+)?)(?:([zZ])|([+-])(\d\d)(?::?(\d\d))?)?", re.ASCII)
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def is_date(text: str) -> bool:
    """``full-date``: four-digit year, a month and a day that month has."""
    found = _DATE.fullmatch(text)
    if found is None:
        return False
    year, month, day = (int(g) for g in found.groups())
    if not 1 <= month <= 12:
        return False
    last = 29 if month == 2 and _leap(year) else _MONTH_DAYS[month - 1]
    return 1 <= day <= last


def is_time(text: str, *, zone_required: bool = True) -> bool:
    """``full-time`` (or ``iso-time``, whose zone is optional): a leap second only where it
    falls at 23:59 UTC once the offset is taken away."""
    found = _TIME.fullmatch(text)
    if found is None:
        return False
    hour, minute = int(found.group(1)), int(found.group(2))
    second = float(found.group(3))
    zulu, sign, zone_h, zone_m = found.group(4), found.group(5), found.group(6), found.group(7)
    has_zone = bool(zulu or sign)
    offset_h = int(zone_h or 0)
    offset_m = int(zone_m or 0)
    if offset_h > 23 or offset_m > 59 or (zone_required and not has_zone):
        return False
    if hour <= 23 and minute <= 59 and second < 60:
        return True
    direction = -1 if sign == "-" else 1
    utc_minute = minute - offset_m * direction
    utc_hour = hour - offset_h * direction - (1 if utc_minute < 0 else 0)
    return utc_hour in (23, -1) and utc_minute in (59, -1) and second < 61


def is_date_time(text: str, *, zone_required: bool = True) -> bool:
    """A date and a time joined by ``T``, ``t`` or one whitespace character."""
    parts = re.split(r"[tT\s]", text)
    return len(parts) == 2 and is_date(parts[0]) and is_time(parts[1], zone_required=zone_required)


_DURATION = re.compile(
    r"P(?!$)(?:(?:\d+Y)?(?:\d+M)?(?:\d+D)?(?:T(?=\d)(?:\d+H)?(?:\d+M)?(?:\d+S)?)?|(?:\d+W)?)",
    re.ASCII,
)

# -- URIs (RFC 3986), built from its grammar ---------------------------------------------------

_HEX = "[0-9a-f]"
_PCT = f"%{_HEX}{{2}}"
_UNRESERVED = r"a-z0-9\-._~"
_SUB_DELIMS = "!$&'()*+,;="
_OCTET = r"(?:25[0-5]|2[0-4]\d|[01]?\d\d?)"
_IPV4 = rf"(?:{_OCTET}\.){{3}}{_OCTET}"
_H16 = f"{_HEX}{{1,4}}"
_LS32 = f"(?:{_H16}:{_H16}|{_IPV4})"
_IPV6 = (
    "(?:"
    + "|".join(
        [
            f"(?:{_H16}:){{6}}{_LS32}",
            f"::(?:{_H16}:){{5}}{_LS32}",
            f"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
            f"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
            f"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
            f"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
            f"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
            f"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
            f"(?:(?:{_H16}:){{0,6}}{_H16})?::",
        ]
    )
    + ")"
)
_IP_LITERAL = rf"\[(?:{_IPV6}|v{_HEX}+\.[{_UNRESERVED}{_SUB_DELIMS}:]+)\]"
_USERINFO = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:]|{_PCT})*"
_REG_NAME = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}]|{_PCT})*"
_HOST = f"(?:{_IP_LITERAL}|{_IPV4}|{_REG_NAME})"
_PCHAR = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_AUTHORITY = rf"(?:{_USERINFO}@)?{_HOST}(?::\d*)?"
_PATH_ABEMPTY = rf"(?:/{_PCHAR}*)*"
_HIER_PART = (
    rf"(?:/?//{_AUTHORITY}{_PATH_ABEMPTY}"
    rf"|/(?:{_PCHAR}+{_PATH_ABEMPTY})?"
    rf"|{_PCHAR}+{_PATH_ABEMPTY})"
)
_TAIL = rf"(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?"
_SCHEME = r"[a-z][a-z0-9+\-.]*:"
_URI = re.compile(rf"{_SCHEME}{_HIER_PART}{_TAIL}", re.IGNORECASE)
_URI_REFERENCE = re.compile(rf"(?:{_SCHEME})?(?:{_HIER_PART}|){_TAIL}", re.IGNORECASE)


def is_uri(text: str) -> bool:
    """An absolute URI: a scheme, then RFC 3986's hierarchical part, query and fragment."""
    return ("/" in text or ":" in text) and _URI.fullmatch(text) is not None


_URI_TEMPLATE = re.compile(
    r"(?:[^\x00-\x20\"'<>%\\^`{|}]|%[0-9a-f]{2}"
    r"|\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?"
    r"(?:,(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?)*\})*",
    re.IGNORECASE,
)

# -- names and addresses -----------------------------------------------------------------------

_ATOM = r"[a-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LABEL = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
_EMAIL = re.compile(rf"{_ATOM}(?:\.{_ATOM})*@(?:{_LABEL}\.)+{_LABEL}", re.IGNORECASE)
_HOSTNAME = re.compile(
    r"(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
    r"(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?",
    re.IGNORECASE,
)
_UUID = re.compile(r"(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}", re.IGNORECASE)


def is_ipv4(text: str) -> bool:
    """Four decimal octets, none with a leading zero."""
    if not re.fullmatch(r"[0-9.]+", text, re.ASCII):
        return False
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def is_ipv6(text: str) -> bool:
    """An IPv6 address, possibly ending in dotted IPv4; no zone (``%eth0``), no brackets."""
    if not re.fullmatch(r"[0-9a-fA-F:.]+", text, re.ASCII):
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


# -- pointers, regexes, bytes, numbers ---------------------------------------------------------

_JSON_POINTER = re.compile(r"(?:/(?:[^~/]|~0|~1)*)*", re.DOTALL)
_JSON_POINTER_FRAGMENT = re.compile(
    r"#(?:/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~0|~1)*)*", re.IGNORECASE
)
_RELATIVE_JSON_POINTER = re.compile(r"(?:0|[1-9][0-9]*)(?:#|(?:/(?:[^~/]|~0|~1)*)*)", re.DOTALL)
_BASE64_LINE = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def is_regex(text: str) -> bool:
    """A pattern that compiles; a ``\\Z`` after another character is refused, as JavaScript
    has no such anchor."""
    if re.search(r"[^\\]\\Z", text):
        return False
    try:
        regex_module.compile(text)
    except (regex_module.error, ValueError, OverflowError):
        return False
    return True


def is_byte(text: str) -> bool:
    """Base64 on at least one line (Ajv tests the pattern line by line, multiline)."""
    return any(_BASE64_LINE.fullmatch(line) for line in text.split("\n"))


def _integral(value: float) -> bool:
    return math.isfinite(value) and float(value).is_integer()


def is_int32(value: float) -> bool:
    return _integral(value) and -(2**31) <= value <= 2**31 - 1


def _whole(rule: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda text: rule.fullmatch(text) is not None


STRING_FORMATS: dict[str, Callable[[str], bool]] = {
    "date": is_date,
    "time": is_time,
    "date-time": is_date_time,
    "iso-time": functools.partial(is_time, zone_required=False),
    "iso-date-time": functools.partial(is_date_time, zone_required=False),
    "duration": _whole(_DURATION),
    "uri": is_uri,
    "uri-reference": _whole(_URI_REFERENCE),
    "uri-template": _whole(_URI_TEMPLATE),
    "email": _whole(_EMAIL),
    "hostname": _whole(_HOSTNAME),
    "ipv4": is_ipv4,
    "ipv6": is_ipv6,
    "regex": is_regex,
    "uuid": _whole(_UUID),
    "json-pointer": _whole(_JSON_POINTER),
    "json-pointer-uri-fragment": _whole(_JSON_POINTER_FRAGMENT),
    "relative-json-pointer": _whole(_RELATIVE_JSON_POINTER),
    "byte": is_byte,
}
"""Formats on strings, by name."""

NUMBER_FORMATS: dict[str, Callable[[float], bool]] = {
    "int32": is_int32,
    "int64": _integral,
    "float": lambda _: True,
    "double": lambda _: True,
}
"""Formats on numbers, by name."""


def _string_rule(rule: Callable[[str], bool]) -> Callable[[object], bool]:
    return lambda value: not isinstance(value, str) or rule(value)


def _number_rule(rule: Callable[[float], bool]) -> Callable[[object], bool]:
    def check(value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return True
        return rule(value)

    return check


@functools.cache
def format_checker() -> Any:
    """A jsonschema ``FormatChecker`` with promptfoo's (ajv-formats') readings."""
    from jsonschema import FormatChecker  # lazy: start-up time

    checker = FormatChecker(())
    for name, rule in STRING_FORMATS.items():
        checker.checks(name)(_string_rule(rule))
    for name, number_rule in NUMBER_FORMATS.items():
        checker.checks(name)(_number_rule(number_rule))
    for name in ("password", "binary"):
        checker.checks(name)(lambda _: True)
    return checker
