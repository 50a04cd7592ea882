"""The Next word tab (task "lm"): the tab built and wired (tab.py) and its handlers (handlers.py): a prompt
continued token by token, streamed, the view kept in gr.State, the step slider's redraw and /generate's answer."""
