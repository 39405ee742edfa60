"""Plain data over a pipe, one JSON document per line (the first part of both programs).

Lists are JSON arrays; every other container and the numbers JSON cannot hold exactly are
tagged objects {"t": kind, "v": ...}. Decoding accepts nothing else, so no code, no object with
custom behaviour and no reference cycle can reach the judge."""

import json as _json
import numbers as _numbers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def encode_value(v: "Any") -> "Any":
    if v is None or v is True or v is False:
        return v
    t = type(v)
    if t is int or (isinstance(v, _numbers.Integral) and not isinstance(v, bool)):
        v = int(v)
        return v if -(1 << 60) < v < (1 << 60) else {"t": "int", "v": format(v, "x")}
    if t is float or isinstance(v, _numbers.Real):
        return float(v)
    if isinstance(v, _numbers.Complex):
        v = complex(v)
        return {"t": "complex", "v": [v.real, v.imag]}
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, (bytes, bytearray)):
        return {"t": "bytes", "v": bytes(v).hex()}
    if isinstance(v, list):
        return [encode_value(x) for x in v]
    if isinstance(v, tuple):
        return {"t": "tuple", "v": [encode_value(x) for x in v]}
    if isinstance(v, dict):
        return {"t": "dict", "v": [[encode_value(k), encode_value(x)] for k, x in v.items()]}
    if isinstance(v, frozenset):
        return {"t": "frozenset", "v": [encode_value(x) for x in v]}
    if isinstance(v, set):
        return {"t": "set", "v": [encode_value(x) for x in v]}
    raise TypeError(f"cannot send a {t.__name__} across the process boundary (plain data only)")


def decode_value(v: "Any") -> "Any":
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, list):
        return [decode_value(x) for x in v]
    if not isinstance(v, dict) or set(v) != {"t", "v"}:
        raise ValueError("malformed value")
    kind, body = v["t"], v["v"]
    if kind == "int" and isinstance(body, str):
        return int(body, 16)
    if kind == "complex" and isinstance(body, list) and len(body) == 2 and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in body):
        return complex(body[0], body[1])
    if kind == "bytes" and isinstance(body, str):
        return bytes.fromhex(body)
    if not isinstance(body, list):
        raise ValueError("malformed value")
    if kind == "tuple":
        return tuple(decode_value(x) for x in body)
    if kind == "set":
        return {decode_value(x) for x in body}
    if kind == "frozenset":
        return frozenset(decode_value(x) for x in body)
    if kind == "dict":
        if not all(isinstance(p, list) and len(p) == 2 for p in body):
            raise ValueError("malformed dict")
        return {decode_value(k): decode_value(x) for k, x in body}
    raise ValueError("malformed value")


def message_bytes(obj: "Any") -> bytes:
    return (_json.dumps(obj) + "\n").encode()
