"""The banner of a notebook page names the run shown and what the record holds of the paper preset."""

from __future__ import annotations

from iclbook.record import CARRIED, CURRENT, STALE
from iclbook.sphinx_record import banner_text


def test_a_page_without_a_recorded_run_says_how_to_make_one() -> None:
    text = banner_text("quick", "proof_ladder", None, None)
    assert "`quick`-preset run" in text and "icl-book record refresh --only proof_ladder" in text


def test_a_page_with_a_current_or_carried_run_shows_its_figures() -> None:
    for state in (CURRENT, CARRIED):
        text = banner_text("quick", "gd_probe", "from the committed record ... : " + state, state)
        assert "figures of the paper-size run" in text and state in text


def test_a_stale_run_is_named_and_not_counted() -> None:
    text = banner_text("quick", "gd_probe", "from the committed record ...: stale", STALE)
    assert "stale and not counted" in text and "figures" not in text


def test_a_paper_build_needs_no_record() -> None:
    assert banner_text("paper", "gd_probe", None, None).endswith("executed when the book was built.")


def test_backquoted_parts_of_the_banner_are_code() -> None:
    from docutils import nodes

    from iclbook.sphinx_record import _paragraph

    para = _paragraph("the `quick`-preset run of `gd_probe`.")
    assert [type(c) for c in para.children] == [nodes.Text, nodes.literal, nodes.Text, nodes.literal, nodes.Text]
    assert para.astext() == "the quick-preset run of gd_probe."
