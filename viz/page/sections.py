"""The sections under every tab's main view (viz.page.layout) and their elem_ids, apart from the layout so that a
panel can name the section that holds a plot (viz.attention.views_panel) without importing the layout."""

SECTIONS = ("All heads", "Inside one head", "Layer by layer", "What each head does", "Compare", "Training steps")


def slug(name: str) -> str:
    """A section's name in an elem_id or a link: "What each head does" -> "what-each-head-does"."""
    return name.lower().replace(" ", "-")


def section_id(task: str, name: str) -> str:
    """The elem_id (and gr.Tab id) of a tab's section: "sentiment-section-all-heads"."""
    if name not in SECTIONS:
        raise KeyError(f"no section {name!r}; the sections are {SECTIONS}")
    return f"{task}-section-{slug(name)}"
