"""steptable.app.themes: theme files parsed into Textual themes, the user's directory first, themes Textual
would refuse left out, an unknown theme falling back to the default."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.app.themes import DEFAULT_THEME, load_themes, parse_theme, theme_dirs
from tests.app.helpers import SIZE, make_runs, manual_app, sync

pytestmark = pytest.mark.anyio


async def test_unknown_theme_falls_back(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("solo",)), theme="no-such-theme")
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        assert app.theme != "no-such-theme"


async def test_an_unknown_theme_falls_back_to_steptables_default(tmp_path: Path) -> None:
    root = make_runs(tmp_path)
    app, follower, _ = manual_app(root, theme="nosuch")
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await sync(pilot, follower)
        assert app.theme == DEFAULT_THEME  # not Textual's textual-dark
        assert any("unknown theme 'nosuch'" in str(n.message) for n in app._notifications)


def test_theme_files_parse() -> None:
    themes = load_themes()
    assert {"dark", "light", "high-contrast"} <= set(themes)
    assert themes["dark"].dark and not themes["light"].dark
    assert themes["light"].variables["text-success"].startswith("#")
    t = parse_theme("mine", "/* $primary: #000000; */\n$primary: #123456;\n$dark: false;\n$my-var: red 50%;\n")
    assert t.primary == "#123456" and not t.dark and t.variables == {"my-var": "red 50%"}
    with pytest.raises(ValueError):
        parse_theme("bad", "$background: #000;")
    assert theme_dirs()[-1].name == "themes"


def test_user_theme_dir_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "dark.tcss").write_text("$primary: #ff0000;\n")
    (tmp_path / "broken.tcss").write_text("no variables here")
    monkeypatch.setenv("STEPTABLE_THEMES", str(tmp_path))
    themes = load_themes()
    assert themes["dark"].primary == "#ff0000" and "broken" not in themes and "light" in themes


@pytest.mark.parametrize(
    ("text", "culprit"),
    [("$primary: notacolor;", "notacolor"), ("$primary: #123456;\n$surface: rgb(1,2;", "rgb(1,2"),
     ("$primary: #123456;\n$text-success: notacolor;", "$text-success"),
     ("$primary: #123456;\n$block-cursor-text-style: purple;", "$block-cursor-text-style"),
     ("$primary: #123456;\n$link-style-hover: purple;", "$link-style-hover"),
     ("$primary: #123456;\n$luminosity-spread: wide;", "wide")],
)  # fmt: skip
def test_a_theme_textual_would_refuse_is_not_offered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, culprit: str
) -> None:
    # Textual parses a theme only when it is applied: such a theme, picked with --theme or from the palette,
    # ended the app with a traceback.
    (tmp_path / "oops.tcss").write_text(text)
    monkeypatch.setenv("STEPTABLE_THEMES", str(tmp_path))
    problems: list[str] = []
    themes = load_themes(problems=problems)
    assert "oops" not in themes and "dark" in themes
    assert len(problems) == 1 and "oops" in problems[0] and culprit in problems[0]


def test_a_theme_with_textual_s_own_style_values_is_offered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fine.tcss").write_text("$primary: #123456;\n$link-style-hover: bold not underline;\n")
    monkeypatch.setenv("STEPTABLE_THEMES", str(tmp_path))
    problems: list[str] = []
    assert "fine" in load_themes(problems=problems) and problems == []


def test_the_shipped_themes_pass_the_check_that_launch_leaves_to_users_themes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import steptable.app.themes as themes

    shipped = sorted(themes.shipped_dir().glob("*.tcss"))
    assert shipped
    for f in shipped:
        themes.parse_theme(f.stem, f.read_text(encoding="utf-8"))  # (checked: raises where Textual would refuse)
    checked: list[str] = []
    real = themes._check
    monkeypatch.setattr(themes, "_check", lambda theme: checked.append(theme.name) or real(theme))
    monkeypatch.delenv("STEPTABLE_THEMES", raising=False)
    assert {"dark", "light", "high-contrast"} <= set(themes.load_themes()) and checked == []
    (tmp_path / "mine.tcss").write_text("$primary: #123456;\n")
    monkeypatch.setenv("STEPTABLE_THEMES", str(tmp_path))
    assert "mine" in themes.load_themes() and checked == ["mine"]
