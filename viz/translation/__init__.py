"""The Translation tab's run: a German sentence translated once, the view kept in gr.State, the decoding choice and
the step slider's redraws (handlers.py). The tab itself is built in app.py (translation_tab)."""
