"""Options of the page's events: the private ones, and those that follow a run (a model's run: hosting.MODEL_EVENTS).

PRIVATE: an event of the page (a redraw from gr.State, a run from the page's button) is not part of the public API:
only /sentiment, /translate and /generate are (hosting.api_endpoint).

A run (the tab's button) is followed by steps chained on it: the overview and the other views, the explanation and
its faithfulness, the head table, inside one head. gradio's page skips a step triggered while the same step still
runs (trigger mode "once", the default), so after two quick runs the second result could miss its overview or head
table and the page kept an earlier review's for good (6 of 9 tries of 3 to 5 clicks within a second, in a browser).
"always_last" runs the step once more when the running one ends, on what the page then holds.
"""

PRIVATE = dict(api_visibility="private")
FOLLOW_UP = dict(**PRIVATE, trigger_mode="always_last")
