"""Options of the events that follow a run.

A run (the tab's button) is followed by steps chained on it: the overview and the other views, the explanation and
its faithfulness, the head table, inside one head. gradio's page skips a step triggered while the same step still
runs (trigger mode "once", the default), so after two quick runs the second result could miss its overview or head
table and the page kept an earlier review's for good (6 of 9 tries of 3 to 5 clicks within a second, in a browser).
"always_last" runs the step once more when the running one ends, on what the page then holds.
"""

FOLLOW_UP = dict(api_visibility="private", trigger_mode="always_last")
