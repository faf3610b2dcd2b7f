"""`Specifiable`: build objects from specs (dicts, type names, dotted paths, JSON/YAML files).

A class family declares `__lookup_classes__` (name -> class). Names are matched after
normalisation (lower case; "-", "_", "." and spaces removed), so "float-box", "FloatBox" and
"float_box" all name the same class. Python types may be keys too (`float` -> FloatBox).
`__default_constructor__` names the class used when a spec gives no "type".
`__unsupported_types__` (name -> reason) lists names that the family knew in the original
RLgraph but does not have here: a spec naming one gets an error with the reason.

Constructor keys are validated before the constructor runs: an unknown key raises an
`RLGraphSpecError` that lists the valid keys and the closest match.

A spec only ever constructs classes of its family (see `Specifiable.spec_family`): a dotted
"type" such as "mypkg.layers.MyLayer" must name a subclass of the family's base class; a function
or a class of another family (e.g. "os.system", "collections.OrderedDict") is refused before
anything is called; a dotted path has at most `MAX_DOTTED_PARTS` parts. Its module is imported
only if it is imported already, rlgraph's, or of a package installed for rlgraph
(`rlgraph.utils.module_imports`): a spec never runs the top-level code of a module lying around. A file path may stand for a spec
anywhere; spec files that name themselves (directly or through others) are refused. Spec files
are read by `rlgraph/utils/spec_files.py` (bounded in size, nesting and YAML aliases; YAML with
safe-load semantics and string keys); `load_spec_file`, `load_json_text`, `load_yaml_text` and
the limits stay importable from here.
"""
from __future__ import annotations

import copy
import difflib
import functools
import importlib
import inspect
import os
import threading
from typing import Any, Callable, Dict as DictT, Iterable, List, Optional, Tuple as TupleT

from rlgraph.utils.module_imports import CONFIG_IMPORT_RULE, may_import, names_main_module, trust_modules
from rlgraph.utils.rlgraph_errors import RLGraphSpecError
from rlgraph.utils.spec_files import (MAX_SPEC_DEPTH, MAX_SPEC_FILE_BYTES, MAX_YAML_ALIAS_NODES, SPEC_FILE_EXTENSIONS,
                                      load_json_text, load_spec_file, load_yaml_text)

# A dotted "type" has at most this many parts (real ones have fewer than ten); importing a longer
# one would recurse through its parent packages until the interpreter's recursion limit.
MAX_DOTTED_PARTS = 32
# A spec file may name another spec file wherever a spec goes ("network_spec": "net.json"), which
# may name another: at most this many are open at once, and none may name one that is being read.
MAX_SPEC_FILE_NESTING = 8
_reading = threading.local()  # .files: the real paths of the spec files being read (outermost first).

__all__ = ["Specifiable", "normalize_type_name", "closest_match", "constructor_keys", "construct", "load_spec_file",
           "load_json_text", "load_yaml_text", "MAX_SPEC_FILE_BYTES", "MAX_SPEC_DEPTH", "MAX_YAML_ALIAS_NODES",
           "MAX_DOTTED_PARTS", "MAX_SPEC_FILE_NESTING"]


def normalize_type_name(name: str) -> str:
    """Lower-cases `name` and strips "-", "_", "." and spaces: "Float-Box" -> "floatbox"."""
    return _normalized(name if type(name) is str else str(name))


@functools.lru_cache(maxsize=4096)
def _normalized(name: str) -> str:
    # Cached: every `from_spec` normalizes its family's whole lookup table (`_lookup_table`), ~130
    # names for components. Constructing the shipped DQN, PPO and SAC agents without their build
    # took 8.7, 7.9 and 12.4 ms of CPU before, 7.3, 5.6 and 8.4 ms with the cache (it matters for
    # tests/test_config_mutation_sweep.py, which constructs ~2,000 of them).
    return "".join(ch for ch in name.lower() if ch not in "-_. ")


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
        __unsupported_types__: name -> why the type is not available (and what to use instead).
    """

    __lookup_classes__: DictT[Any, type] = {}
    __default_constructor__: Optional[Callable] = None
    __unsupported_types__: DictT[str, str] = {}

    @classmethod
    def _lookup_table(cls) -> DictT[Any, type]:
        table = {}
        for key, value in cls.__lookup_classes__.items():
            table[normalize_type_name(key) if isinstance(key, str) else key] = value
        return table

    @classmethod
    def spec_family(cls) -> type:
        """The base class whose subclasses a spec may construct: the nearest class from `cls` up
        that declares its own `__lookup_classes__` (`Component`, `Space`, `Agent`, `Environment`,
        `TimeDependentParameter`, ...), else the most basic `Specifiable` subclass of `cls`
        (`GraphExecutor`, `GraphBuilder`)."""
        chain = [k for k in cls.__mro__ if k is not Specifiable and issubclass(k, Specifiable)]
        for klass in chain:
            if "__lookup_classes__" in klass.__dict__:
                return klass
        return chain[-1] if chain else cls

    @classmethod
    def resolve_type(cls, type_: Any) -> Callable:
        """Turns a "type" hint (name, python type, dotted path or class) into a constructor.

        Names and python types come from the lookup table. A dotted path's module is imported only
        where `rlgraph.utils.module_imports.may_import` allows it, and what it names, like a class
        object, must be a subclass of `spec_family()`: a spec never calls a function or a class of
        another family, nor runs a module lying around.

        Raises:
            RLGraphSpecError: If the hint names nothing known (the message lists the known names),
                a type of the original RLgraph listed in `__unsupported_types__` (the message says
                why), a module that may not be imported, or something that is not a class of the
                family.
        """
        if type_ is None:
            return cls.__default_constructor__ or cls
        table = cls._lookup_table()
        if isinstance(type_, str):
            key = normalize_type_name(type_)
            if key in table:
                return table[key]
            if "." in type_.strip("."):
                return cls._check_family(_import_dotted(type_, cls), type_)
            unsupported = {normalize_type_name(k): v for k, v in cls.__unsupported_types__.items()}
            if key in unsupported:
                raise RLGraphSpecError(f"type {type_!r} of the original RLgraph is not supported",
                                       where=f"{cls.__name__}.from_spec", received=repr(type_),
                                       hint=unsupported[key])
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
        if inspect.isclass(type_):
            return cls._check_family(type_, type_)
        family = cls.spec_family()
        raise RLGraphSpecError("cannot use this as a type", where=f"{cls.__name__}.from_spec",
                               expected=f"a type name, a dotted path or a subclass of {_qualified(family)}",
                               received=repr(type_))

    @classmethod
    def _check_family(cls, found: Any, named: Any) -> type:
        """`found` if it is a class of this family; else an error naming `named` and the family."""
        family = cls.spec_family()
        if inspect.isclass(found) and family in inspect.getmro(found):  # Real subclasses only, not ABC-registered ones.
            return found
        what = "a class of another family" if inspect.isclass(found) else f"not a class ({type(found).__name__})"
        raise RLGraphSpecError(
            f"the type in the spec is {what}", where=f"{cls.__name__}.from_spec",
            expected=f"a subclass of {_qualified(family)}, or one of its type names", received=repr(named),
            hint="a spec only constructs classes of its family; it never calls functions or other classes.")

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
        if isinstance(spec, str) and spec.lower().endswith(SPEC_FILE_EXTENSIONS):
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
        args = kwargs.pop("_args", [])
        if not isinstance(args, (list, tuple)):
            raise RLGraphSpecError('"_args" must be a list (the positional arguments)',
                                   where=f"{cls.__name__}.from_spec(_args)", received=repr(args)[:80])
        return construct(cls.resolve_type(type_), list(args), kwargs)

    @classmethod
    def from_file(cls, filename: str, *args, **kwargs) -> Any:
        """Creates an object from a JSON or YAML spec file (chosen by the file extension).

        A spec inside the file may name further spec files (at most `MAX_SPEC_FILE_NESTING` open
        at once); naming one that is being read (the file itself, or a cycle) is an error.

        Raises:
            RLGraphSpecError: If the file does not exist, cannot be parsed, names a file that is
                being read or nests files too deeply.
        """
        reading = getattr(_reading, "files", ())
        path = os.path.realpath(os.path.expanduser(str(filename)))
        if path in reading or len(reading) >= MAX_SPEC_FILE_NESTING:
            cycle = path in reading
            raise RLGraphSpecError("spec file references itself" if cycle else "spec files nest too deeply",
                                   where="from_file", received=" -> ".join(reading + (path,)),
                                   expected=None if cycle else f"at most {MAX_SPEC_FILE_NESTING} files open at once",
                                   hint="a spec file may name other spec files, never one of those it is read from."
                                   if cycle else None)
        spec = load_spec_file(filename)
        if args:
            kwargs["_args"] = list(args)
        _reading.files = reading + (path,)
        try:
            return cls.from_spec(spec, **kwargs)
        finally:
            _reading.files = reading


def construct(ctor: Callable, args: list, kwargs: dict) -> Any:
    """Calls `ctor(*args, **kwargs)` after checking the keys against its signature."""
    name = getattr(ctor, "__name__", repr(ctor))
    bad = [key for key in kwargs if not isinstance(key, str)]
    if bad:
        raise RLGraphSpecError("the keys of a spec must be strings", where=name,
                               received=f"key {bad[0]!r} ({type(bad[0]).__name__})",
                               hint="quote the key in YAML (\"1\": ..., \"on\": ...).")
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
    if inspect.isabstract(ctor):
        raise RLGraphSpecError(f"{name} is abstract and cannot be built", where=name,
                               expected=f"a \"type\" naming a concrete subclass of {name}",
                               received=f"no type (keys {sorted(kwargs)})")
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


def _qualified(klass: type) -> str:
    return f"{klass.__module__}.{klass.__qualname__}"


def _import_dotted(path: str, cls: type) -> Any:
    """The attribute a "package.module.Name" path names; the caller checks what it is. The module
    is imported only where `rlgraph.utils.module_imports.may_import` allows it (imported already, or
    installed for rlgraph): importing runs a module's top-level code."""
    module_name, _, attr = path.rpartition(".")
    parts = path.split(".")
    if not all(part.isidentifier() for part in parts) or len(parts) > MAX_DOTTED_PARTS:
        raise RLGraphSpecError("malformed dotted path in spec", where=f"{cls.__name__}.from_spec",
                               expected=f"'package.module.Class' (at most {MAX_DOTTED_PARTS} python identifiers "
                                        "joined by '.')", received=repr(path)[:200])
    if names_main_module(module_name):
        raise RLGraphSpecError("a dotted type may not name a __main__ module", where=f"{cls.__name__}.from_spec",
                               expected="'package.module.Class' of a library module", received=repr(path),
                               hint="importing a package's __main__ runs its command line.")
    if not may_import(module_name):
        raise RLGraphSpecError(
            "a dotted type may only name a module that is imported already or installed for rlgraph "
            "(importing any other would run its code)", where=f"{cls.__name__}.from_spec",
            expected=CONFIG_IMPORT_RULE, received=repr(path),
            hint=f"import {module_name} in your own code before the spec is built (then nothing is imported for "
                 "it), or install your package with rlgraph among its requirements (pip install -e .).")
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, RecursionError) as error:
        raise RLGraphSpecError("cannot import the type named in the spec", where=f"{cls.__name__}.from_spec",
                               expected="an importable 'package.module.Class' path", received=repr(path),
                               hint=str(error)) from None
    trust_modules([module_name])  # Processes started from here on may import it for the same spec.
    return found
