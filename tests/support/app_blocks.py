"""The built app's components and events, found by elem_id: for tests that call the app's handlers without a
server."""


def blocks(demo) -> dict:
    return {b.elem_id: b for b in demo.blocks.values() if getattr(b, "elem_id", None)}


def load_fn(demo, outputs_elem_id: str):
    """The page-load event that writes into the given component (the link restorer of its tab)."""
    target = blocks(demo)[outputs_elem_id]
    (fn,) = [f for f in demo.fns.values() if f.targets and f.targets[0][1] == "load" and target in f.outputs]
    return fn


def click_fn(demo, elem_id: str):
    """The server function a click on the element runs (its first event with one)."""
    target = blocks(demo)[elem_id]
    (fn,) = [f for f in demo.fns.values() if f.targets and f.targets[0][0] == target._id and f.fn is not None]
    return fn


def shared_link(box):
    """The ViewLink in the link box a share button's handler returned."""
    from urllib.parse import urlsplit

    from viz.share import links

    return links.from_query(urlsplit(box.value).query)
