"""steptable's themes: ``themes/<name>.tcss`` files of Textual CSS variables, turned into Textual ``Theme`` objects.

Where the files are looked up, first hit wins per name:
1. ``$STEPTABLE_THEMES`` (a directory; users drop their own ``<name>.tcss`` there);
2. the installed package's ``steptable/themes`` directory (the wheel ships the repo's ``themes/*.tcss`` there as
   package data);
3. the source checkout: ``<repo>/themes`` next to the ``steptable`` package.

A file holds ``$variable: value;`` lines. Variables named after ``textual.theme.Theme`` fields (``dark``,
``luminosity-spread`` and ``text-alpha`` included) set those fields; any other variable goes to ``Theme.variables``.
Each theme is registered under the file's stem (``dark``, ``light``, ``high-contrast``); ``--theme`` also takes any
built-in Textual theme name, and the command palette's theme picker lists them all.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from textual.css.stylesheet import Stylesheet
from textual.theme import Theme

from steptable.table.formatting import sanitize

DEFAULT_THEME = "dark"
_VAR = re.compile(r"^\s*\$([A-Za-z0-9_-]+)\s*:\s*([^;]+?)\s*;", re.M)
_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def theme_dirs() -> list[Path]:
    """Where theme files are looked for: $STEPTABLE_THEMES, then the themes the wheel carries (steptable/themes), or
    in a source checkout the repository's themes/. The package's directories, not ``importlib.resources``: the
    wheel's themes are a namespace package, whose resource path stringifies as ``MultiplexedPath('...')``, not as a
    directory to look in."""
    out: list[Path] = []
    env = os.environ.get("STEPTABLE_THEMES")
    if env:
        out.append(Path(env))
    out.append(shipped_dir())
    return out


def shipped_dir() -> Path:
    """The themes steptable ships: the wheel's steptable/themes, or a source checkout's repository themes/."""
    package = Path(__file__).resolve().parents[1]  # steptable/
    packaged = package / "themes"
    return packaged if packaged.is_dir() else package.parent / "themes"


def parse_theme(name: str, text: str, check: bool = True) -> Theme:
    """A Theme from the variables of a theme file. Raises ValueError without ``$primary``, and with ``check`` where
    Textual would refuse a value (see ``_check``)."""
    values = {k: v for k, v in _VAR.findall(_COMMENT.sub("", text))}
    if "primary" not in values:
        raise ValueError(f"theme {name!r}: no $primary")
    get = values.pop
    dark = get("dark", "true").strip().lower() not in ("false", "0", "no")
    try:
        spread = float(get("luminosity-spread", "0.15"))
        alpha = float(get("text-alpha", "0.95"))
    except ValueError as e:
        raise ValueError(f"theme {name!r}: {e}") from None
    theme = Theme(
        name=name, primary=get("primary"), secondary=get("secondary", None), warning=get("warning", None),
        error=get("error", None), success=get("success", None), accent=get("accent", None),
        foreground=get("foreground", None), background=get("background", None), surface=get("surface", None),
        panel=get("panel", None), boost=get("boost", None), dark=dark, luminosity_spread=spread, text_alpha=alpha,
        variables=values,
    )
    if check:
        _check(theme)
    return theme


def _check(theme: Theme) -> None:
    """Raise ValueError naming the first value Textual would refuse. A theme is parsed only when it is applied, and
    a value it refuses then (``$primary: notacolor;``) ends the app with a traceback."""
    try:
        variables = {**theme.to_color_system().generate(), **theme.variables}
    except Exception as e:  # ColorParseError from a main colour
        raise ValueError(f"theme {theme.name!r}: {e}") from None
    # each variable checked in the kind of property its name says it is used in (our own are colours)
    props = {name: "text-style" if "style" in name else "background" if "background" in name else "color"
             for name in theme.variables}
    if _parses(variables, " ".join(f"Widget {{ {prop}: ${name}; }}" for name, prop in props.items()), theme.name):
        return  # (all in one sheet: a sheet's variables are tokenized anew for each sheet)
    for name, value in theme.variables.items():
        if not _parses(variables, f"Widget {{ {props[name]}: ${name}; }}", theme.name):
            raise ValueError(f"theme {theme.name!r}: ${name}: {value!r} is not a valid {props[name]}")


def _parses(variables: dict[str, str], css: str, theme: str) -> bool:
    sheet = Stylesheet(variables=variables)
    sheet.add_source(css, read_from=(f"theme {theme}", "variables"))
    try:
        sheet.parse()
    except Exception:
        return False
    return True


def load_themes(dirs: list[Path] | None = None, problems: list[str] | None = None) -> dict[str, Theme]:
    """Every readable theme file, by name (earlier directories win). A file that cannot be used is skipped, and
    said why in ``problems`` (one line each, made inert: a file name is untrusted text). The shipped themes are
    not checked against what Textual accepts (the tests do that; it costs the first frame ~10 ms); users' are."""
    out: dict[str, Theme] = {}
    shipped = shipped_dir()
    for d in theme_dirs() if dirs is None else dirs:
        try:
            files = sorted(d.glob("*.tcss"))
        except OSError:
            continue
        for f in files:
            if f.stem in out:
                continue
            try:
                out[f.stem] = parse_theme(f.stem, f.read_text(encoding="utf-8"), check=d != shipped)
            except (OSError, ValueError, UnicodeDecodeError) as e:  # a broken user theme must not stop the app
                if problems is not None:
                    problems.append(sanitize(f"theme file {f} not used: {e}"))
    return out
