"""`Specifiable`: build objects from specs (dicts, type names, dotted paths, JSON/YAML files).

A class family declares `__lookup_classes__` (name -> class). Names are matched after
normalisation (lower case; "-", "_", "." and spaces removed), so "float-box", "FloatBox" and
"float_box" all name the same class. Python types may be keys too (`float` -> FloatBox).
`__default_constructor__` names the class used when a spec gives no "type".

Constructor keys are validated before the constructor runs: an unknown key raises an
`RLGraphSpecError` that lists the valid keys and the closest match.
"""
from __future__ import annotations

import copy
import difflib
import importlib
import inspect
import json
import os
from typing import Any, Callable, Dict as DictT, Iterable, List, Optional, Tuple as TupleT

import yaml

from rlgraph.utils.rlgraph_errors import RLGraphSpecError

_FILE_EXTENSIONS = (".json", ".yaml", ".yml")


def normalize_type_name(name: str) -> str:
    """Lower-cases `name` and strips "-", "_", "." and spaces: "Float-Box" -> "floatbox"."""
    return "".join(ch for ch in str(name).lower() if ch not in "-_. ")


def closest_match(name: str, candidates: Iterable[str]) -> Optional[str]:
    """The candidate most similar to `name`, or None if none is similar enough."""
    candidates = list(candidates)
    matches = difflib.get_close_matches(str(name), candidates, n=1, cutoff=0.5)
    if not matches:
        lowered = {c.lower(): c for c in candidates}
        matches = [lowered[m] for m in difflib.get_close_matches(str(name).lower(), lowered, n=1, cutoff=0.5)]
    return matches[0] if matches else None


def constructor_keys(ctor: Callable) -> TupleT[List[str], bool]:
    """Keyword arguments a constructor accepts, following `**kwargs` up the MRO.

    Returns:
        (names, open): `names` are the named parameters; `open` is True if the chain ends in a
        `**kwargs` that accepts anything (then unknown keys cannot be detected).
    """
    classes = ctor.__mro__ if inspect.isclass(ctor) else (None,)
    names: List[str] = []
    for klass in classes:
        if klass is object:
            return names, False
        fn = ctor if klass is None else klass.__dict__.get("__init__")
        if fn is None:
            continue
        if klass is not None and klass.__dict__.get("__spec_open_kwargs__", False):
            return names, True
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            return names, True
        var_kw = False
        for p in params:
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self" and p.name not in names:
                names.append(p.name)
            var_kw |= p.kind is p.VAR_KEYWORD
        if not var_kw:
            return names, False
        if klass is None:
            return names, True
    return names, False


class Specifiable:
    """Mixin for classes that can be created from a spec.

    Class attributes:
        __lookup_classes__: name (or python type) -> class, for this class family.
        __default_constructor__: class used when a spec gives no "type" (default: the class itself).
    """

    __lookup_classes__: DictT[Any, type] = {}
    __default_constructor__: Optional[Callable] = None

    @classmethod
    def _lookup_table(cls) -> DictT[Any, type]:
        table = {}
        for key, value in cls.__lookup_classes__.items():
            table[normalize_type_name(key) if isinstance(key, str) else key] = value
        return table

    @classmethod
    def resolve_type(cls, type_: Any) -> Callable:
        """Turns a "type" hint (name, python type, dotted path, class or callable) into a constructor.

        Raises:
            RLGraphSpecError: If the hint names nothing known; the message lists the known names.
        """
        if type_ is None:
            return cls.__default_constructor__ or cls
        table = cls._lookup_table()
        if isinstance(type_, str):
            key = normalize_type_name(type_)
            if key in table:
                return table[key]
            if "." in type_.strip("."):
                return _import_dotted(type_, cls)
            names = sorted(k for k in cls.__lookup_classes__ if isinstance(k, str))
            guess = closest_match(key, [normalize_type_name(n) for n in names])
            guess_name = next((n for n in names if normalize_type_name(n) == guess), None)
            raise RLGraphSpecError(
                "unknown type in spec", where=f"{cls.__name__}.from_spec",
                expected="one of: " + ", ".join(names) + " (or a dotted path 'package.module.Class')",
                received=repr(type_), hint=f"did you mean '{guess_name}'?" if guess_name else None)
        try:
            if type_ in table:
                return table[type_]
        except TypeError:
            pass
        if callable(type_):
            return type_
        raise RLGraphSpecError("cannot use this as a type", where=f"{cls.__name__}.from_spec",
                               expected="a type name, a dotted path, a class or a callable", received=repr(type_))

    @classmethod
    def from_spec(cls, spec: Any = None, **kwargs) -> Any:
        """Creates an object from `spec`.

        Args:
            spec: None (everything in `kwargs`), an instance (returned as is), a dict with an
                optional "type" key, a type name / dotted path / JSON or YAML file path, or a
                class/callable. A "_args" list in the spec or kwargs becomes positional args.
            **kwargs: Constructor arguments; they override the same keys in a dict spec.

        Returns:
            The constructed object.

        Raises:
            RLGraphSpecError: Unknown type, unknown or missing constructor keys, unreadable file.
        """
        if isinstance(spec, cls) and not kwargs:
            return spec
        if isinstance(spec, str) and spec.lower().endswith(_FILE_EXTENSIONS):
            return cls.from_file(spec, **kwargs)
        if isinstance(spec, dict) and not isinstance(spec, Specifiable):
            spec = copy.deepcopy(spec)
            type_ = spec.pop("type", None)
            spec.update(kwargs)
            kwargs = spec
        elif spec is not None:
            type_ = spec
        else:
            type_ = kwargs.pop("type", None)
        args = list(kwargs.pop("_args", []))
        return construct(cls.resolve_type(type_), args, kwargs)

    @classmethod
    def from_file(cls, filename: str, *args, **kwargs) -> Any:
        """Creates an object from a JSON or YAML spec file (chosen by the file extension).

        Raises:
            RLGraphSpecError: If the file does not exist or cannot be parsed.
        """
        spec = load_spec_file(filename)
        if args:
            kwargs["_args"] = list(args)
        return cls.from_spec(spec, **kwargs)


def construct(ctor: Callable, args: list, kwargs: dict) -> Any:
    """Calls `ctor(*args, **kwargs)` after checking the keys against its signature."""
    name = getattr(ctor, "__name__", repr(ctor))
    names, open_kwargs = constructor_keys(ctor)
    if not open_kwargs:
        unknown = [k for k in kwargs if k not in names]
        if unknown:
            key = unknown[0]
            guess = closest_match(key, names)
            raise RLGraphSpecError(
                f"unknown key '{key}' in spec", where=name, expected="one of: " + ", ".join(sorted(names)),
                received=", ".join(repr(k) for k in unknown),
                hint=f"did you mean '{guess}'?" if guess else "remove the key.")
    try:
        inspect.signature(ctor).bind(*args, **kwargs)
    except TypeError as error:
        raise RLGraphSpecError(f"spec does not fit the constructor ({error})", where=name,
                               expected=f"arguments of {name}{_signature_text(ctor)}",
                               received=f"args={args!r}, keys={sorted(kwargs)}") from None
    except ValueError:
        pass  # Builtins without a signature: let the call decide.
    return ctor(*args, **kwargs)


def _signature_text(ctor: Callable) -> str:
    try:
        return str(inspect.signature(ctor))
    except (TypeError, ValueError):
        return "(...)"


def _import_dotted(path: str, cls: type) -> Callable:
    module_name, _, attr = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise RLGraphSpecError("cannot import the type named in the spec", where=f"{cls.__name__}.from_spec",
                               expected="an importable 'package.module.Class' path", received=repr(path),
                               hint=str(error)) from None


def load_spec_file(filename: str) -> Any:
    """Reads a JSON or YAML spec file.

    Raises:
        RLGraphSpecError: If the file is missing, has an unknown extension or cannot be parsed.
    """
    path = os.path.expanduser(filename)
    if not os.path.isfile(path):
        raise RLGraphSpecError("spec file not found", where="from_file", received=repr(filename),
                               hint=f"paths are relative to the working directory ({os.getcwd()}).")
    lowered = path.lower()
    try:
        with open(path, "r", encoding="utf-8") as handle:
            if lowered.endswith(".json"):
                return json.load(handle)
            if lowered.endswith((".yaml", ".yml")):
                return yaml.safe_load(handle)
    except (ValueError, yaml.YAMLError) as error:
        raise RLGraphSpecError("cannot parse spec file", where="from_file", received=repr(filename),
                               hint=str(error)) from None
    raise RLGraphSpecError("unknown spec file type", where="from_file", expected="a .json, .yaml or .yml file",
                           received=repr(filename))
